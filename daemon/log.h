/* SPDX-License-Identifier: MIT */
/* Logging to stderr, to syslog in the background, or to [daemon] log_file.
 * Under systemd (JOURNAL_STREAM names our stderr) every line carries a "<N>"
 * priority prefix for the journal. Never log a request
 * argument, hash, URL or password; at debug level only range prefixes. */
#pragma once

#include <stdbool.h>
#include <syslog.h>

#include "core/error.h"

/* level: LOG_ERR .. LOG_DEBUG */
void bd_log_init(int level);
void bd_log_set_level(int level);
/* From now on, log to syslog (LOG_DAEMON) instead of stderr: a daemon that
 * put itself in the background has no stderr any more. */
void bd_log_to_syslog(void);
/* From now on, append every line to path (created 0640 when missing), with a
 * time stamp and the pid, instead of stderr or syslog: a host without a
 * syslog daemon or a journal loses nothing. Called again (a reload), it
 * reopens path in place of the old file (for logrotate); "" keeps the
 * current destination. 0, or a negative errno with err set. */
int bd_log_to_file(const char *path, br_error *err);
bool bd_log_enabled(int level);
void bd_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A br_assert_hook_fn (br_assert.h): logs a failed internal check at error
 * level; STATS counts them as internal_errors. */
void bd_log_assert(const char *expr, const char *file, int line, const char *func);
/* br_trace's hook (br_assert.h): an internal error's code and place in the
 * debug log. */
void bd_log_trace(int r, const char *file, int line, const char *func);
/* A br_log_fn for the resolver and upstream (ctx unused). */
void bd_log_sink(void *ctx, int level, const char *msg);
