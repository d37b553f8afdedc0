/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log_line.h"
#include "log.h"

static int log_level = LOG_INFO;
static bool journal;
static bool use_syslog;

/* JOURNAL_STREAM is "DEV:INODE" of the stream systemd connected; only when
 * it is still our stderr do the "<N>" prefixes mean anything. */
static bool stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    struct stat st;
    unsigned long long dev, ino;
    if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
        return false;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void bd_log_init(int level)
{
    log_level = level;
    journal = stderr_is_journal();
}

void bd_log_to_syslog(void)
{
    openlog("breachd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
    use_syslog = true;
}

void bd_log_set_level(int level)
{
    log_level = level;
}

bool bd_log_enabled(int level)
{
    return level <= log_level;
}

static const char *level_name(int level)
{
    switch (level) {
    case LOG_EMERG:
    case LOG_ALERT:
    case LOG_CRIT:
    case LOG_ERR:
        return "error";
    case LOG_WARNING:
        return "warning";
    case LOG_NOTICE:
        return "notice";
    case LOG_INFO:
        return "info";
    default:
        return "debug";
    }
}

static void emit(int level, const char *msg)
{
    if (use_syslog) {
        syslog(level, "%s", msg);
        return;
    }
    /* One write per line so lines from concurrent writers never interleave. */
    char line[BR_LOG_LINE_MAX + 64];
    int n = journal ? snprintf(line, sizeof(line), "<%d>%s\n", level, msg)
                    : snprintf(line, sizeof(line), "breachd: %s: %s\n", level_name(level), msg);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line)) {
        n = sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}

void bd_log(int level, const char *fmt, ...)
{
    if (!bd_log_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    br_vlogf(bd_log_sink, NULL, level, fmt, ap); /* cut where lib/'s lines are */
    va_end(ap);
}

void bd_log_assert(const char *expr, const char *file, int line, const char *func)
{
    bd_log(LOG_ERR, "internal error: %s failed in %s() at %s:%d", expr, func, file, line);
}

void bd_log_sink(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (bd_log_enabled(level))
        emit(level, msg);
}
