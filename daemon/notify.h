/* SPDX-License-Identifier: MIT */
/* sd_notify and socket activation through libsystemd when it was built in;
 * without it, no notifications and no activation. */
#pragma once

#include <stdbool.h>

/* Send a notify message ("READY=1", "STATUS=...", ...); no-op outside systemd. */
void bd_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The first socket passed by systemd (LISTEN_FDS); -ENOENT when none; another
 * -errno when activation was attempted but is unusable. Unsets the variables. */
int bd_listen_fd(void);
