/* SPDX-License-Identifier: MIT */
/* Start-up helpers for hosts without systemd (startup.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "startup.h"
#include "core/util.h"

int bd_absolute_path(const char *path, char **out, br_error *err)
{
    *out = NULL;
    if (path[0] == '/') {
        *out = strdup(path);
        return *out ? 0 : br_error_set(err, -ENOMEM, "out of memory");
    }
    _cleanup_free_ char *cwd = getcwd(NULL, 0);
    if (!cwd)
        return br_error_set(err, -errno, "%s: cannot tell the current directory: %s", path,
                            strerror(errno));
    if (asprintf(out, "%s/%s", cwd, path) < 0) {
        *out = NULL;
        return br_error_set(err, -ENOMEM, "out of memory");
    }
    return 0;
}

int bd_socket_dir_ensure(const char *socket_path, br_error *err)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(socket_path, '/');
    if (!slash || slash == socket_path)
        return 0; /* "/" or a relative name in the current directory */
    if ((size_t)(slash - socket_path) >= sizeof(dir))
        return br_error_set(err, -ENAMETOOLONG, "socket %s: path too long", socket_path);
    memcpy(dir, socket_path, (size_t)(slash - socket_path));
    dir[slash - socket_path] = '\0';
    struct stat st;
    if (stat(dir, &st) == 0)
        return S_ISDIR(st.st_mode) ? 0
                                   : br_error_set(err, -ENOTDIR, "socket %s: %s is not a directory",
                                                  socket_path, dir);
    /* Each missing component from the top, as mkdir -p. */
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            return br_error_set(err, -errno, "socket %s: cannot create %s: %s", socket_path, dir,
                                strerror(errno));
        *p = c;
        if (!c)
            break;
    }
    /* mkdir() applies the umask: the mode is what the tmpfiles snippet says. */
    if (chmod(dir, 0755) < 0)
        return br_error_set(err, -errno, "socket %s: chmod %s: %s", socket_path, dir,
                            strerror(errno));
    return 0;
}

int bd_pidfile_write(const char *path, br_error *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) >= (int)sizeof(tmp))
        return br_error_set(err, -ENAMETOOLONG, "pid file %s: path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return br_error_set(err, -errno, "pid file %s: %s", tmp, strerror(errno));
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
    bool ok = write(fd, buf, (size_t)n) == n && fchmod(fd, 0644) == 0;
    int e = errno;
    if (close(fd) < 0 && ok) {
        ok = false;
        e = errno;
    }
    if (!ok || rename(tmp, path) < 0) {
        e = ok ? errno : e;
        unlink(tmp);
        return br_error_set(err, -e, "pid file %s: %s", path, strerror(e));
    }
    return 0;
}

void bd_pidfile_remove(const char *path)
{
    char buf[32] = "";
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    bool ours = fgets(buf, sizeof(buf), f) && atoi(buf) == (int)getpid();
    fclose(f);
    if (ours)
        unlink(path);
}
