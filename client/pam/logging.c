/* SPDX-License-Identifier: MIT */
/* Where the module's lines go (pam_breachd(8), log_file): syslog through
 * pam_syslog(), or, with log_file=PATH, that file, for hosts without a
 * syslog daemon. The file must be a regular file of the module's effective
 * user (root in passwd and login) that nobody else may write; it is
 * created 0600 and never followed through a link. When it cannot be used
 * the line goes to syslog as usual: a line is never lost for a bad path.
 * Callers never pass a password or a hash (the module's rule). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <security/pam_ext.h>

#include "core/clock.h"
#include "core/log_line.h"
#include "pam_breachd.h"

#define LOG_FILE_DATA "pam_breachd_log_file"

static void free_path(pam_handle_t *pamh, void *data, int status)
{
    (void)pamh;
    (void)status;
    free(data);
}

void pb_log_to(pam_handle_t *pamh, const char *path)
{
    char *copy = path ? strdup(path) : NULL;
    if (pam_set_data(pamh, LOG_FILE_DATA, copy, free_path) != PAM_SUCCESS)
        free(copy);
}

static const char *level_name(int level)
{
    static const char *const names[] = {"emerg",   "alert",  "crit", "err",
                                        "warning", "notice", "info", "debug"};
    return level >= 0 && level <= LOG_DEBUG ? names[level] : "info";
}

/* One line into path: 0, or -1 when the file may not or cannot be used. */
static int to_file(pam_handle_t *pamh, const char *path, int level, const char *msg)
{
    /* never blocks on a FIFO or a device planted there; regular files only */
    struct stat st;
    int fd = br_log_file_open(path, 0600, &st);
    if (fd < 0)
        return -1;
    if (st.st_uid != geteuid() || (st.st_mode & 022)) {
        close(fd);
        return -1;
    }
    const void *service = NULL;
    if (pam_get_item(pamh, PAM_SERVICE, &service) != PAM_SUCCESS || !service)
        service = "?";
    char stamp[32], line[BR_LOG_LINE_MAX + 128];
    time_t now = (time_t)br_clock_now_real();
    struct tm tm;
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    int n = snprintf(line, sizeof(line), "%s pam_breachd[%ld]: %s %s: %s\n", stamp, (long)getpid(),
                     (const char *)service, level_name(level), msg);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof(line)) {
        n = sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    ssize_t w = write(fd, line, (size_t)n); /* one write: lines never interleave */
    close(fd);
    return w == n ? 0 : -1;
}

void pb_syslog(pam_handle_t *pamh, int level, const char *fmt, ...)
{
    const void *path = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (pam_get_data(pamh, LOG_FILE_DATA, &path) == PAM_SUCCESS && path) {
        char msg[BR_LOG_LINE_MAX];
        va_list copy;
        va_copy(copy, ap);
        vsnprintf(msg, sizeof(msg), fmt, copy);
        va_end(copy);
        if (to_file(pamh, path, level, msg) == 0) {
            va_end(ap);
            return;
        }
    }
    pam_vsyslog(pamh, level, fmt, ap);
    va_end(ap);
}
