/* SPDX-License-Identifier: MIT */
/* breachctl filter info on a file that failed its checks
 * (cmd_filter_info.c), for cmd_filter.c and cmd_filter_url_query.c. */
#pragma once

#include <stdbool.h>

#include "core/error.h"

/* Reports why path was refused (r, err from opening it) on stderr; with
 * force, also prints on stdout what its header says, each value marked
 * unverified (breachctl(1), filter info --force). Returns EXIT_ERROR. */
int filter_info_refused(const char *path, bool force, int r, const br_error *err);
