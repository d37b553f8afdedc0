/* SPDX-License-Identifier: MIT */
/* One log line handed to a callback. lib/ never logs by itself: the daemon
 * and breachctl give each subsystem a br_log_fn (and its ctx), and every
 * layer formats its lines here, so a message is cut at the same length
 * (BR_LOG_LINE_MAX - 1 bytes) wherever it comes from. level is a syslog
 * level (LOG_ERR ... LOG_DEBUG). */
#pragma once

#include <stdarg.h>

#define BR_LOG_LINE_MAX 900 /* bytes of one line, its NUL included */

typedef void (*br_log_fn)(void *ctx, int level, const char *msg);

/* Format fmt with ap and hand the line to log; nothing when log is NULL. */
void br_vlogf(br_log_fn log, void *ctx, int level, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
