/* SPDX-License-Identifier: MIT */
/* breachctl password at a terminal: the prompt on the controlling terminal
 * (/dev/tty), echo off while a password is typed and back on after, also
 * when a signal ends the process (SIGINT, SIGTERM, SIGHUP, SIGQUIT). */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Prompt "Password: " and read one line without echo into buf (size bytes,
 * NUL-terminated, without the line break). An empty line is asked again
 * once. The password's length (at least 1), or:
 *   -ENODATA   the end of input at the prompt (Ctrl-D): no password given;
 *   -ENOMSG    an empty line twice: no password given;
 *   -EMSGSIZE  a line that does not fit (the rest of it is read and dropped);
 *   -EIO       a read error; -errno when there is no terminal to open. */
ssize_t ctl_tty_read_password(char *buf, size_t size);
