/* SPDX-License-Identifier: MIT */
/* Writing a filter file (filter_writer.h): the payload to a temporary name,
 * then the header with its SHA-256 checksums, fsync and a rename into place. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "filter_writer.h"
#include "core/util.h"

/* Writes of 2 MiB from the file's start: where the file system keeps large
 * folios, each becomes one huge page of the page cache, and readers map
 * the file in huge pages (docs/filter-format.md, "Huge pages"). */
#define WBUF_SIZE (2u << 20)

struct br_filter_writer {
    int fd;
    char *path;
    char *tmp_path;
    EVP_MD_CTX *body_ctx;
    uint8_t *buf;
    size_t buf_len;
    uint64_t offset; /* logical offset of the next byte */
    bool committed;
};

void br_filter_writer_free(br_filter_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd);
    if (!w->committed && w->tmp_path)
        unlink(w->tmp_path);
    EVP_MD_CTX_free(w->body_ctx);
    free(w->buf);
    free(w->path);
    free(w->tmp_path);
    free(w);
}

static int writer_flush(br_filter_writer *w, br_error *err)
{
    if (w->buf_len == 0)
        return 0;
    int r = br_write_all(w->fd, w->buf, w->buf_len);
    if (r < 0)
        return br_error_set(err, r, "%s: write: %s", w->tmp_path, strerror(-r));
    w->buf_len = 0;
    return 0;
}

static int writer_put(br_filter_writer *w, const void *data, size_t len, bool hashed, br_error *err)
{
    if (hashed && EVP_DigestUpdate(w->body_ctx, data, len) != 1)
        return br_error_set(err, -EIO, "SHA-256 failed");
    const uint8_t *p = data;
    while (len > 0) {
        if (w->buf_len == WBUF_SIZE) {
            int r = writer_flush(w, err);
            if (r < 0)
                return r;
        }
        size_t n = BR_MIN(len, WBUF_SIZE - w->buf_len);
        memcpy(w->buf + w->buf_len, p, n);
        w->buf_len += n;
        p += n;
        len -= n;
        w->offset += n;
    }
    return 0;
}

int br_filter_writer_new(const char *path, br_filter_writer **out, br_error *err)
{
    _cleanup_(br_filter_writer_freep) br_filter_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->fd = -1;
    w->path = strdup(path);
    w->buf = malloc(WBUF_SIZE);
    w->body_ctx = EVP_MD_CTX_new();
    if (!w->path || !w->buf || !w->body_ctx || asprintf(&w->tmp_path, "%s.tmp.XXXXXX", path) < 0) {
        w->tmp_path = NULL;
        return -ENOMEM;
    }
    w->fd = mkostemp(w->tmp_path, O_CLOEXEC);
    if (w->fd < 0) {
        int r = -errno;
        free(w->tmp_path);
        w->tmp_path = NULL;
        return br_error_set(err, r, "%s: cannot create a temporary file beside it: %s", path,
                            strerror(-r));
    }
    if (EVP_DigestInit_ex2(w->body_ctx, EVP_sha256(), NULL) != 1)
        return br_error_set(err, -EIO, "SHA-256 failed");
    /* Header placeholder (not hashed into the body), then zeros up to the payload. */
    static const uint8_t zero[BR_FILTER_PAYLOAD_ALIGN];
    int r = writer_put(w, zero, BR_FILTER_HEADER_SIZE, false, err);
    if (r < 0)
        return r;
    r = writer_put(w, zero, BR_FILTER_PAYLOAD_ALIGN - BR_FILTER_HEADER_SIZE, true, err);
    if (r < 0)
        return r;
    *out = BR_TAKE_PTR(w);
    return 0;
}

int br_filter_writer_write(br_filter_writer *w, const void *buf, size_t len, br_error *err)
{
    return writer_put(w, buf, len, true, err);
}

int br_filter_writer_align(br_filter_writer *w, size_t align, br_error *err)
{
    static const uint8_t zero[4096];
    if (align == 0 || align > sizeof(zero))
        return br_error_set(err, -EINVAL, "bad alignment %zu", align);
    size_t pad = (size_t)((align - w->offset % align) % align);
    return pad ? writer_put(w, zero, pad, true, err) : 0;
}

uint64_t br_filter_writer_offset(const br_filter_writer *w)
{
    return w->offset;
}

static int fsync_dir_of(const char *path)
{
    _cleanup_free_ char *copy = strdup(path);
    if (!copy)
        return -ENOMEM;
    _cleanup_close_ int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    return fsync(dfd) < 0 ? -errno : 0;
}

int br_filter_writer_commit(br_filter_writer *w, br_filter_header *hdr, br_error *err)
{
    int r = writer_flush(w, err);
    if (r < 0)
        return r;
    hdr->version = hdr->role != BR_ROLE_FULL || hdr->algorithm == BR_ALGO_LAYERS ||
                           hdr->algorithm == BR_ALGO_FUSE_OFFLINE
                       ? 2
                       : 1;
    hdr->header_size = BR_FILTER_HEADER_SIZE;
    hdr->payload_offset = BR_FILTER_PAYLOAD_ALIGN;
    hdr->payload_size = w->offset - BR_FILTER_PAYLOAD_ALIGN;
    if (EVP_DigestFinal_ex(w->body_ctx, hdr->body_sha256, NULL) != 1)
        return br_error_set(err, -EIO, "SHA-256 failed");
    uint8_t raw[BR_FILTER_HEADER_SIZE];
    if (br_filter_header_encode(hdr, raw) < 0)
        return br_error_set(err, -EIO, "SHA-256 failed");
    if (pwrite(w->fd, raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        return br_error_set(err, -EIO, "%s: writing the header failed", w->tmp_path);
    if (fchmod(w->fd, 0644) < 0 || fsync(w->fd) < 0)
        return br_error_set(err, -errno, "%s: %s", w->tmp_path, strerror(errno));
    if (rename(w->tmp_path, w->path) < 0)
        return br_error_set(err, -errno, "rename %s -> %s: %s", w->tmp_path, w->path,
                            strerror(errno));
    w->committed = true;
    r = fsync_dir_of(w->path);
    if (r < 0)
        return br_error_set(err, r, "%s: fsync of its directory: %s", w->path, strerror(-r));
    return 0;
}
