/* SPDX-License-Identifier: MIT */
/* breachctl filter build of a password filter (cmd_filter_build.c), for
 * cmd_filter.c: argv[0] = "build"; see breachctl(1). Returns an exit status. */
#pragma once

int pw_filter_build(int argc, char **argv);
