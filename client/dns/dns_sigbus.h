/* SPDX-License-Identifier: MIT */
/* A filter file truncated in place under the resolver's mapping (docs/dns.md,
 * "A file changed in place"): reading a page past its new end raises
 * SIGBUS, which would end the resolver. The library installs, once per
 * process, a SIGBUS handler that repairs a fault in one of its own
 * filters' mappings (br_map_guard_fault, core/map_guard.h: the mapping
 * becomes zero pages, the file is marked damaged, the read resumes and the
 * lookup answers "unfiltered") and hands every other SIGBUS to the handler
 * that was there before, or to the default action. No cost on the lookup
 * path: nothing runs until a fault. */
#pragma once

/* Install the handler unless it is the one installed (at each open: a
 * handler the process set since, e.g. its own, is chained to). 0, or
 * -errno when sigaction refused. */
int bdns_sigbus_install(void);
