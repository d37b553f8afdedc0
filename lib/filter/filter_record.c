/* SPDX-License-Identifier: MIT */
/* PATH.verified: one line of text, written by rename (filter_record.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "filter_record.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/util.h"

#define RECORD_TAG "breachd-verified-v1"
#define RECORD_MAX 512

/* The part of the line that identifies the file's state: everything before
 * " verified_at=". */
static int identity(char *buf, size_t len, const struct stat *st, const br_filter_header *h)
{
    char hex[65];
    br_hex_encode_upper(h->header_sha256, 32, hex);
    int n = snprintf(buf, len,
                     RECORD_TAG " ino=%" PRIu64 " size=%" PRIu64 " mtime=%lld.%09ld"
                                " ctime=%lld.%09ld header_sha256=%s",
                     (uint64_t)st->st_ino, (uint64_t)st->st_size, (long long)st->st_mtim.tv_sec,
                     (long)st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec,
                     (long)st->st_ctim.tv_nsec, hex);
    return n > 0 && (size_t)n < len ? n : -ENAMETOOLONG;
}

static int record_path(char *buf, size_t len, const char *path, br_error *err)
{
    if (snprintf(buf, len, "%s" BR_FILTER_RECORD_SUFFIX, path) >= (int)len)
        return br_error_set(err, -ENAMETOOLONG, "%s: path too long for its record", path);
    return 0;
}

static bool same_state(const struct stat *a, const struct stat *b)
{
    return a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static int write_all_sync(int fd, const char *text, size_t len)
{
    for (size_t off = 0; off < len;) {
        ssize_t n = write(fd, text + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        off += (size_t)n;
    }
    return fsync(fd) < 0 ? -errno : 0;
}

int br_filter_record_write(const br_filter_file *f, const char *path, br_error *err)
{
    const struct stat *was = br_filter_file_stat(f);
    struct stat now;
    if (stat(path, &now) < 0)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    if (!same_state(was, &now))
        return br_error_set(err, -ESTALE,
                            "%s: changed while it was verified (or replaced since): no record "
                            "written",
                            path);
    char line[RECORD_MAX], rec[4096], tmp[4096 + 16];
    int n = identity(line, sizeof(line) - 32, was, br_filter_file_header(f));
    int r = n < 0 ? n : record_path(rec, sizeof(rec), path, err);
    if (n < 0)
        return br_error_set(err, n, "%s: record line too long", path);
    if (r < 0)
        return r;
    snprintf(line + n, sizeof(line) - (size_t)n, " verified_at=%lld\n",
             (long long)br_clock_now_real());
    snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", rec);
    _cleanup_close_ int fd = mkstemp(tmp);
    if (fd < 0)
        return br_error_set(err, -errno, "%s: %s", tmp, strerror(errno));
    r = fchmod(fd, 0644) < 0 ? -errno : write_all_sync(fd, line, strlen(line));
    if (r == 0 && rename(tmp, rec) < 0)
        r = -errno;
    if (r < 0) {
        unlink(tmp);
        return br_error_set(err, r, "%s: %s", rec, strerror(-r));
    }
    return 0;
}

static int check_owner(const char *rec, const struct stat *st, long also_uid, br_error *err)
{
    if (!S_ISREG(st->st_mode))
        return br_error_set(err, -EINVAL, "%s: not a regular file", rec);
    if ((st->st_uid != 0 && (also_uid < 0 || st->st_uid != (uid_t)also_uid)) ||
        (st->st_mode & (S_IWGRP | S_IWOTH)))
        return br_error_set(err, -EPERM,
                            "%s: ignored: it must belong to root and not be group- or "
                            "world-writable (uid %u, mode %04o)",
                            rec, (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777));
    return 0;
}

/* The first field of want and have that differ, for the message. */
static const char *first_difference(const char *want, const char *have)
{
    static const char *const fields[] = {"ino=", "size=", "mtime=", "ctime=", "header_sha256="};
    const char *name = "tag";
    for (size_t i = 0; i < BR_ARRAY_SIZE(fields); i++) {
        const char *a = strstr(want, fields[i]), *b = strstr(have, fields[i]);
        if (!a || !b)
            return name;
        size_t la = strcspn(a, " \n"), lb = strcspn(b, " \n");
        if (la != lb || memcmp(a, b, la) != 0)
            return fields[i];
    }
    return "verified_at=";
}

int br_filter_record_check(const char *path, const struct stat *st, const br_filter_header *h,
                           long also_uid, int64_t *verified_at, br_error *err)
{
    char rec[4096], want[RECORD_MAX], have[RECORD_MAX];
    int r = record_path(rec, sizeof(rec), path, err);
    if (r < 0)
        return r;
    _cleanup_close_ int fd = open(rec, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return br_error_set(err, -e, "%s: %s", rec, strerror(e));
    }
    struct stat rst;
    if (fstat(fd, &rst) < 0)
        return br_error_set(err, -errno, "%s: %s", rec, strerror(errno));
    if ((r = check_owner(rec, &rst, also_uid, err)) < 0)
        return r;
    ssize_t n = pread(fd, have, sizeof(have) - 1, 0);
    if (n < 0)
        return br_error_set(err, -errno, "%s: %s", rec, strerror(errno));
    have[n] = '\0';
    int w = identity(want, sizeof(want), st, h);
    if (w < 0)
        return br_error_set(err, -EINVAL, "%s: record line too long", rec);
    const char *tail = have + w;
    long long at;
    if (strncmp(have, RECORD_TAG " ", strlen(RECORD_TAG) + 1) != 0)
        return br_error_set(err, -EINVAL, "%s: not a verification record", rec);
    if ((size_t)n <= (size_t)w || memcmp(have, want, (size_t)w) != 0 ||
        sscanf(tail, " verified_at=%lld", &at) != 1)
        return br_error_set(err, -ESTALE, "%s: stale: field %.*s differs from the file's", rec,
                            (int)strcspn(first_difference(want, have), "="),
                            first_difference(want, have));
    if (verified_at)
        *verified_at = at;
    return 0;
}
