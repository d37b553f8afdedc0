/* SPDX-License-Identifier: MIT */
/* The directory modules' server-log lines, at most one a minute
 * (dirmod.h, dm_log_limit; docs/directories.md). No I/O: the modules
 * write what this lets through. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "dirmod.h"

/* line, and the lines held back before it, into out. */
static void with_held(const dm_log_limit *l, const char *line, char *out, size_t out_size)
{
    if (l->held)
        snprintf(out, out_size, "%s (and %" PRIu64 " such line%s in the last minute, not logged)",
                 line, l->held, l->held == 1 ? "" : "s");
    else
        snprintf(out, out_size, "%s", line);
}

bool dm_log_limit_take(dm_log_limit *l, uint64_t now_ns, const char *line, char *out,
                       size_t out_size)
{
    if (l->logged && now_ns - l->last_ns < DM_LOG_INTERVAL_NS) {
        l->held++;
        return false;
    }
    with_held(l, line, out, out_size);
    l->logged = true;
    l->last_ns = now_ns;
    l->held = 0;
    return true;
}

bool dm_log_limit_flush(dm_log_limit *l, char *out, size_t out_size)
{
    if (!l->held)
        return false;
    snprintf(out, out_size,
             "%" PRIu64 " more line%s of the kind above in the last minute, not logged", l->held,
             l->held == 1 ? "" : "s");
    l->held = 0;
    return true;
}
