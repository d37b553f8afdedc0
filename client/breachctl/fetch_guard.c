/* SPDX-License-Identifier: MIT */
/* What filter fetch checks before it writes or installs (fetch.h): the
 * directory it writes into, a download's header as soon as it arrives, the
 * order of generations, and the mark `filter rollback` leaves. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch.h"
#include "hash.h"
#include "util.h"

int fetch_dir_check(const char *path, br_error *err)
{
    _cleanup_free_ char *copy = strdup(path);
    if (!copy)
        return -ENOMEM;
    const char *dir = dirname(copy);
    struct stat st;
    if (stat(dir, &st) < 0)
        return br_error_set(err, -errno, "%s: %s", dir, strerror(errno));
    uid_t me = geteuid();
    if (!S_ISDIR(st.st_mode))
        return br_error_set(err, -ENOTDIR, "%s: not a directory", dir);
    if (st.st_uid != 0 && st.st_uid != me)
        return br_error_set(err, -EPERM,
                            "%s belongs to uid %u: the filters' directory must be writable by "
                            "root only, or another user could plant links and files in it; fix: "
                            "chown root %s",
                            dir, (unsigned)st.st_uid, dir);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return br_error_set(err, -EPERM,
                            "%s is group- or world-writable (mode %04o): the filters' directory "
                            "must be writable by root only; fix: chmod go-w %s",
                            dir, (unsigned)(st.st_mode & 07777), dir);
    return 0;
}

int fetch_generation_check(const br_filter_header *old, const br_filter_header *h, br_error *err)
{
    if (memcmp(old->header_sha256, h->header_sha256, 32) == 0)
        return 1; /* the installed file itself */
    if (h->generation <= old->generation)
        return br_error_set(err, -EINVAL,
                            "generation %" PRIu64 " is not newer than the installed %" PRIu64
                            " (an old file served again?)",
                            h->generation, old->generation);
    return 0;
}

int fetch_head_check(void *ctx, const uint8_t *head, size_t len, uint64_t *limit, char *reason,
                     size_t reason_len)
{
    const fetch_head *fh = ctx;
    br_filter_header h;
    br_error err = {{0}};
    int r = br_filter_header_decode(head, len, &h, &err);
    if (r == 0 && fh->kind && h.kind != fh->kind)
        r = br_error_set(&err, -EINVAL, "a %s filter, not %s", br_filter_kind_name(h.kind),
                         br_filter_kind_name(fh->kind));
    if (r == 0 && fh->have_old && fetch_generation_check(&fh->old, &h, &err) < 0)
        r = -EINVAL;
    if (r < 0) {
        snprintf(reason, reason_len, "%s: stopped after its first %zu bytes", err.text, len);
        return r;
    }
    *limit = h.payload_offset + h.payload_size; /* decode checked it does not overflow */
    return 0;
}

void fetch_rollback_unmark(const char *path)
{
    _cleanup_free_ char *mark = fetch_path(path, ".rollback");
    if (mark)
        unlink(mark);
}

int fetch_rollback_mark(const char *path, br_error *err)
{
    uint8_t raw[BR_FILTER_HEADER_SIZE];
    br_filter_header h;
    _cleanup_close_ int in = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in < 0 || pread(in, raw, sizeof(raw), 0) != (ssize_t)sizeof(raw) ||
        br_filter_header_decode(raw, sizeof(raw), &h, err) < 0)
        return br_error_set(err, -EIO, "%s: cannot read its header", path);
    _cleanup_free_ char *mark = fetch_path(path, ".rollback");
    if (!mark)
        return -ENOMEM;
    char hex[65];
    br_hex_encode_upper(h.header_sha256, 32, hex);
    int fd = fetch_create(mark, err);
    if (fd < 0)
        return fd;
    FILE *f = fdopen(fd, "we");
    if (!f) {
        close(fd);
        return br_error_set(err, -errno, "%s: %s", mark, strerror(errno));
    }
    fprintf(f, "%s\n", hex);
    int r = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -errno;
    if (fclose(f) != 0 && r == 0)
        r = -errno;
    if (r < 0)
        return br_error_set(err, r, "%s: %s", mark, strerror(-r));
    return 0;
}
