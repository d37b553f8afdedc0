/* SPDX-License-Identifier: MIT */
/* `breachctl download --single-file FILE`: the official single-file format
 * (pwned-passwords-sha1-ordered-by-hash): one line "HASH40:COUNT" per hash
 * ("HASH32:COUNT" for the NTLM corpus),
 * in hash order, made from the per-prefix files: the 5-digit prefix (from the
 * file name, uppercase) followed by the line as served. Lines end with CRLF,
 * as in HIBP's published ordered-by-hash files and the official downloader on
 * Windows (on Linux it writes LF: .NET's Environment.NewLine). Empty lines
 * are skipped, as the official downloader does, and a UTF-8 byte order mark
 * at the start of a line (which the range parser accepts) is left out. A prefix file whose lines
 * are not in order is sorted (HIBP's are). Written to FILE.tmp, fsynced, renamed. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "download_int.h"
#include "core/util.h"

#define OUT_BUF (1u << 20)

typedef struct line {
    const char *s;
    size_t len;
} line;

static int line_cmp(const void *a, const void *b)
{
    const line *x = a, *y = b;
    size_t n = BR_MIN(x->len, y->len);
    int c = strncasecmp(x->s, y->s, n);
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

typedef struct out {
    int fd;
    char *buf;
    size_t off;
    int rc;
} out;

static void out_put(out *o, const char *s, size_t n)
{
    if (o->rc)
        return;
    if (o->off + n > OUT_BUF) {
        o->rc = br_write_all(o->fd, o->buf, o->off);
        o->off = 0;
        if (o->rc)
            return;
    }
    if (n > OUT_BUF) {
        o->rc = br_write_all(o->fd, s, n);
        return;
    }
    memcpy(o->buf + o->off, s, n);
    o->off += n;
}

static int read_all(int dirfd, const char *name, char **data, size_t *len)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    *data = buf;
    *len = got;
    return 0;
}

static int write_prefix(out *o, uint32_t p, char *data, size_t len, line **lines, size_t *cap,
                        uint64_t *count)
{
    size_t n = 0;
    bool sorted = true;
    for (size_t i = 0; i < len;) {
        char *nl = memchr(data + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - data) : len;
        size_t l = end - i;
        if (l && data[i + l - 1] == '\r')
            l--;
        const char *start = data + i;
        if (l >= 3 && memcmp(start, "\xEF\xBB\xBF", 3) == 0) { /* a BOM is not data */
            start += 3;
            l -= 3;
        }
        if (l) {
            if (n == *cap) {
                size_t nc = *cap ? *cap * 2 : 4096;
                line *nl2 = realloc(*lines, nc * sizeof(**lines));
                if (!nl2)
                    return -ENOMEM;
                *lines = nl2;
                *cap = nc;
            }
            (*lines)[n] = (line){start, l};
            if (n && sorted && line_cmp(&(*lines)[n - 1], &(*lines)[n]) > 0)
                sorted = false;
            n++;
        }
        i = end + 1;
    }
    if (!sorted)
        qsort(*lines, n, sizeof(**lines), line_cmp);
    char pre[6];
    snprintf(pre, sizeof(pre), "%05X", p);
    for (size_t i = 0; i < n; i++) {
        out_put(o, pre, 5);
        out_put(o, (*lines)[i].s, (*lines)[i].len);
        out_put(o, "\r\n", 2);
    }
    *count += n;
    return o->rc;
}

int dl_write_single(int dirfd, uint32_t first, uint32_t last, const char *path, uint64_t *lines_out,
                    br_error *err)
{
    *lines_out = 0;
    _cleanup_free_ char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp", path) < 0)
        return br_error_set(err, -ENOMEM, "out of memory");
    out o = {.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (o.fd < 0)
        return br_error_set(err, -errno, "%s: %s", tmp, strerror(errno));
    o.buf = malloc(OUT_BUF);
    line *lines = NULL;
    size_t cap = 0;
    int rc = o.buf ? 0 : -ENOMEM;
    uint32_t bad = 0;
    bool read_failed = false;
    for (uint32_t p = first; rc == 0 && p <= last; p++) {
        char name[16];
        dl_name_final(p, name);
        char *data = NULL;
        size_t len = 0;
        rc = read_all(dirfd, name, &data, &len);
        if (rc < 0) {
            bad = p;
            read_failed = true;
            break;
        }
        rc = write_prefix(&o, p, data, len, &lines, &cap, lines_out);
        free(data);
    }
    if (rc == 0 && o.off)
        rc = br_write_all(o.fd, o.buf, o.off);
    if (rc == 0 && fsync(o.fd) < 0)
        rc = -errno;
    if (close(o.fd) < 0 && rc == 0)
        rc = -errno;
    free(o.buf);
    free(lines);
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0) {
        unlink(tmp);
        if (read_failed)
            return br_error_set(err, rc, "single file: reading prefix %05X: %s", bad,
                                strerror(-rc));
        return br_error_set(err, rc, "single file %s: %s", path, strerror(-rc));
    }
    _cleanup_free_ char *dircopy = strdup(path);
    if (dircopy) {
        int dfd = open(dirname(dircopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
    return 0;
}
