/* SPDX-License-Identifier: MIT */
/* What breachd does besides answering (breachd(8), docs/privacy.md):
 *  - process hygiene at start: no core dumps, no ptrace or /proc/PID/mem
 *    access by other processes of the same user (PR_SET_DUMPABLE 0);
 *  - a SIGBUS handler for filter files truncated in place while mapped
 *    (filter_file.h): the fault is survived, the filter answers "maybe";
 *    and for the range cache's files (range_cache.h): the cache is set
 *    aside, checks go on uncached;
 *  - a periodic timer that purges range-cache entries past ttl + max_stale
 *    and logs, once per filter or cache, that it was found damaged, and
 *    once per filter that it is past its max_filter_age.
 * Loop thread only (the signal handler: any thread). */
#pragma once

#include "server_types.h"

/* PR_SET_DUMPABLE 0 and the SIGBUS handler. 0 or a negative errno. Call
 * before any filter is mapped or thread started. */
int bd_hygiene_init(void);

typedef struct bd_housekeeping bd_housekeeping;

/* Start the timer on srv's loop; it follows srv->state across reloads. The
 * first run is one tick after the start. NULL on out-of-memory. */
bd_housekeeping *bd_housekeeping_new(bd_server *srv);
void bd_housekeeping_free(bd_housekeeping *hk);

/* One run now: the purge and the damage check. For tests. */
void bd_housekeeping_run(bd_housekeeping *hk);
