/* SPDX-License-Identifier: MIT */
/* One log line handed to a callback, and the log files; see log_line.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "log_line.h"

void br_vlogf(br_log_fn log, void *ctx, int level, const char *fmt, va_list ap)
{
    if (!log)
        return;
    char msg[BR_LOG_LINE_MAX];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    log(ctx, level, msg);
}

int br_log_file_open(const char *path, mode_t mode, struct stat *st)
{
    int fd = open(
        path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NONBLOCK, mode);
    if (fd < 0)
        return -errno;
    struct stat own;
    st = st ? st : &own;
    int flags, r = 0;
    if (fstat(fd, st) < 0 || (flags = fcntl(fd, F_GETFL)) < 0 ||
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
        r = -errno;
    else if (!S_ISREG(st->st_mode))
        r = -EINVAL;
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}
