/* SPDX-License-Identifier: MIT */
/* sd_notify and socket activation through libsystemd when built in
 * (notify.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>

#include "config.h"
#include "notify.h"

#if HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

void bd_notify(const char *fmt, ...)
{
#if HAVE_LIBSYSTEMD
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    (void)sd_notify(0, msg);
#else
    (void)fmt;
#endif
}

int bd_listen_fd(void)
{
#if HAVE_LIBSYSTEMD
    int n = sd_listen_fds(1);
    if (n < 0)
        return n == -ENOENT ? -EINVAL : n; /* -ENOENT means "none" here */
    if (n == 0)
        return -ENOENT;
    if (n > 1)
        return -EINVAL; /* one socket only: breachd.socket has one ListenStream */
    int fd = SD_LISTEN_FDS_START;
    if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
        return -ENOTSOCK;
    return fd;
#else
    return -ENOENT;
#endif
}
