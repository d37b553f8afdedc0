/* SPDX-License-Identifier: MIT */
/* What a daemon needs on a host without systemd (breachd(8), "Without
 * systemd"): an absolute config path that later reloads can re-read after
 * the daemon changed its directory, the socket's directory, a pid file.
 *
 * Errors: 0 or a negative errno, with err naming the path. */
#pragma once

#include <sys/types.h>

#include "core/error.h"

/* path as an absolute path: itself when it starts with '/', else joined to
 * the current directory (symbolic links are kept, so a reload follows a
 * link that was changed). *out is malloc'ed. */
int bd_absolute_path(const char *path, char **out, br_error *err);

/* Create the directory of a socket path when it is missing (its parents
 * too), mode 0755 and the caller's owner, as the tmpfiles snippet makes
 * /run/breachd. An existing directory is left as it is. */
int bd_socket_dir_ensure(const char *socket_path, br_error *err);

/* Write the process id to path, atomically (a temporary file renamed over
 * it), mode 0644. bd_pidfile_remove() removes it if it still holds our pid. */
int bd_pidfile_write(const char *path, br_error *err);
void bd_pidfile_remove(const char *path);
