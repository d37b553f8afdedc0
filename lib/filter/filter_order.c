/* SPDX-License-Identifier: MIT */
/* The order of generations at a path (filter_order.h; docs/filter-format.md,
 * "Generations"): the rule the reloads of breachd and libbreachd-dns share,
 * and the mark `breachctl filter rollback` leaves. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "filter_order.h"
#include "core/hash.h"
#include "core/util.h"

/* PATH.rollback, written by `breachctl filter rollback` (docs/fleet.md):
 * true when it holds sha256 in hex, and belongs to root (or also_uid)
 * with no group or world write bit. */
static bool rollback_marked(const char *path, const uint8_t sha256[32], long also_uid)
{
    char mark[4096];
    if (snprintf(mark, sizeof(mark), "%s.rollback", path) >= (int)sizeof(mark))
        return false;
    _cleanup_close_ int fd = open(mark, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & (S_IWGRP | S_IWOTH)))
        return false;
    if (st.st_uid != 0 && (also_uid < 0 || st.st_uid != (uid_t)also_uid))
        return false;
    char text[80];
    ssize_t n = pread(fd, text, sizeof(text), 0);
    uint8_t sum[32];
    return n >= 64 && br_hex_decode(text, 32, sum) && memcmp(sum, sha256, 32) == 0;
}

void br_filter_id_of(const char *path, const br_filter_header *h, long also_uid, br_filter_id *out)
{
    memset(out, 0, sizeof(*out));
    out->generation = h->generation;
    memcpy(out->header_sha256, h->header_sha256, 32);
    out->rollback = rollback_marked(path, h->header_sha256, also_uid);
}

bool br_filter_generation_ok(const br_filter_id *now, const br_filter_id *serving)
{
    bool same = memcmp(now->header_sha256, serving->header_sha256, 32) == 0;
    return same || now->generation > serving->generation || now->rollback;
}
