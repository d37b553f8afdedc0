/* SPDX-License-Identifier: MIT */
/* One log line handed to a callback. lib/ never logs by itself: the daemon
 * and breachctl give each subsystem a br_log_fn (and its ctx), and every
 * layer formats its lines here, so a message is cut at the same length
 * (BR_LOG_LINE_MAX - 1 bytes) wherever it comes from. level is a syslog
 * level (LOG_ERR ... LOG_DEBUG). */
#pragma once

#include <stdarg.h>
#include <sys/stat.h>

#define BR_LOG_LINE_MAX 900 /* bytes of one line, its NUL included */

typedef void (*br_log_fn)(void *ctx, int level, const char *msg);

/* Format fmt with ap and hand the line to log; nothing when log is NULL. */
void br_vlogf(br_log_fn log, void *ctx, int level, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* Open the log file at path to append lines (created with mode; a symlink
 * is refused), never blocking: it is opened with O_NONBLOCK, so that a
 * FIFO or a device planted at the path cannot hold the caller (a FIFO
 * without a reader fails at once with -ENXIO), must be a regular file
 * (else -EINVAL), and the flag is then cleared. The descriptor (close-on-
 * exec), or a negative errno; *st is the file's status when not NULL. */
int br_log_file_open(const char *path, mode_t mode, struct stat *st);
