/* SPDX-License-Identifier: MIT */
/* The daemon's log (log.h): stderr, syslog or [daemon] log_file, with the
 * journal's priority prefixes; the hooks of the libraries' logs, assertions
 * and traces. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "core/clock.h"
#include "core/log_line.h"
#include "log.h"

static int log_level = LOG_INFO;
static bool journal;
static bool use_syslog;
/* [daemon] log_file's descriptor; a reopen dup2()s the new file onto it, so
 * a thread writing meanwhile never writes to a closed or reused number. */
static int log_fd = -1;

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

int bd_log_to_file(const char *path, br_error *err)
{
    if (!path || !path[0])
        return 0;
    /* never blocks (a FIFO planted there would freeze a reload) */
    int fd = br_log_file_open(path, 0640, NULL);
    if (fd == -EINVAL || fd == -ENXIO)
        return br_error_set(err, -EINVAL, "[daemon] log_file %s: not a regular file", path);
    if (fd < 0)
        return br_error_set(err, fd, "[daemon] log_file %s: %s", path, strerror(-fd));
    if (log_fd < 0) {
        log_fd = fd;
        return 0;
    }
    int r = dup2(fd, log_fd) < 0 ? -errno : 0;
    close(fd);
    if (r < 0)
        return br_error_set(err, r, "[daemon] log_file %s: dup2: %s", path, strerror(-r));
    return 0;
}

void bd_log_set_level(int level)
{
    log_level = level;
}

bool bd_log_enabled(int level)
{
    return level <= log_level;
}

/* The names of log_level (breachd.conf(5)); what is above error is an
 * error, below debug a debug line. */
static const char *level_name(int level)
{
    const char *name = breachd_log_level_name(level < LOG_ERR ? LOG_ERR : level);
    return name ? name : "debug";
}

/* One line to the log file: "2026-12-05T23:55:01+0000 breachd[123]: info: ..." */
static void emit_file(int level, const char *msg)
{
    char line[1024], stamp[40];
    struct timespec ts;
    struct tm tm;
    br_clock_now_real_ts(&ts);
    if (!localtime_r(&ts.tv_sec, &tm) ||
        !strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S%z", &tm))
        snprintf(stamp, sizeof(stamp), "%lld", (long long)ts.tv_sec);
    int n = snprintf(line, sizeof(line), "%s breachd[%d]: %s: %s\n", stamp, (int)getpid(),
                     level_name(level), msg);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line)) {
        n = sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    ssize_t w = write(log_fd, line, (size_t)n); /* O_APPEND: one write, one whole line */
    (void)w;
}

static void emit(int level, const char *msg)
{
    if (log_fd >= 0) {
        emit_file(level, msg);
        return;
    }
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

void bd_log_trace(int r, const char *file, int line, const char *func)
{
    if (bd_log_enabled(LOG_DEBUG))
        bd_log(LOG_DEBUG, "internal error %d (%s) at %s() in %s:%d", r, strerror(-r), func, file,
               line);
}

void bd_log_sink(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (bd_log_enabled(level))
        emit(level, msg);
}
