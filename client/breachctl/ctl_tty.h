/* SPDX-License-Identifier: MIT */
/* breachctl password at a terminal: the prompt on the controlling terminal
 * (/dev/tty), echo off while a password is typed and back on after, also
 * when a signal ends the process (SIGINT, SIGTERM, SIGHUP, SIGQUIT). */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Prompt "Password: " and read one line without echo into buf (size bytes,
 * NUL-terminated, without the line break). Its length, or -EMSGSIZE for a
 * line that does not fit (the rest of it is read and dropped), -EIO when
 * nothing could be read, -errno when there is no terminal. */
ssize_t ctl_tty_read_password(char *buf, size_t size);
