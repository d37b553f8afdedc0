/* SPDX-License-Identifier: MIT */
/* The range cache's files on disk (range_cache.h, "Files and owners"): the
 * directory and LMDB's data.mdb and lock.mdb must belong to the process's
 * effective uid, must not be group- or world-writable, and must not be
 * symbolic links, so that no other user can read, plant or redirect what the
 * cache holds (docs/privacy.md). Checked before LMDB opens them, in the
 * manner of sshd's StrictModes; every refusal names the path and the fix. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "range_cache_int.h"

static int check_one(const char *path, bool dir, br_error *err)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        int e = errno;
        if (e == ENOENT && !dir)
            return 0; /* LMDB creates it, mode 0600 */
        return br_error_set(err, -e, "range cache: %s: %s", path, strerror(e));
    }
    if (S_ISLNK(st.st_mode))
        return br_error_set(err, -ELOOP,
                            "range cache: %s is a symbolic link; the cache is never opened through one "
                            "(set [cache] path to the real directory, or remove the link)",
                            path);
    if (dir && !S_ISDIR(st.st_mode))
        return br_error_set(err, -ENOTDIR, "range cache: %s is not a directory", path);
    if (!dir && !S_ISREG(st.st_mode))
        return br_error_set(err, -EINVAL, "range cache: %s is not a regular file; remove it", path);
    uid_t me = geteuid();
    if (st.st_uid != me)
        return br_error_set(err, -EPERM,
                            "range cache: %s belongs to uid %u, not to this process's uid %u; "
                            "fix: chown %u %s (or remove it)",
                            path, (unsigned)st.st_uid, (unsigned)me, (unsigned)me, path);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return br_error_set(err, -EPERM,
                            "range cache: %s is group- or world-writable (mode %04o); fix: chmod go-w %s",
                            path, (unsigned)(st.st_mode & 07777), path);
    return 0;
}

int br_rc_check_files(const char *path, br_error *err)
{
    int rc = check_one(path, true, err);
    if (rc < 0)
        return rc;
    static const char *const names[] = {"data.mdb", "lock.mdb"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char file[4096];
        int n = snprintf(file, sizeof(file), "%s/%s", path, names[i]);
        if (n < 0 || (size_t)n >= sizeof(file))
            return br_error_set(err, -ENAMETOOLONG, "range cache: %s: path too long", path);
        rc = check_one(file, false, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}
