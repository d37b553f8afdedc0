/* SPDX-License-Identifier: MIT */
/* One log line handed to a callback; see log_line.h. */
#include <stdio.h>

#include "log_line.h"

void br_vlogf(br_log_fn log, void *ctx, int level, const char *fmt, va_list ap)
{
    if (!log)
        return;
    char msg[BR_LOG_LINE_MAX];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    log(ctx, level, msg);
}
