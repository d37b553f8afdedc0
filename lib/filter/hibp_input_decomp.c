/* SPDX-License-Identifier: MIT */
/* The decompression layer of the password-input readers (hibp_input.c; the
 * interface in hibp_input_int.h): bzip2 data through libbz2, gzip data (one
 * or more members) and anything else through zlib, which passes data that
 * is not gzip through as it is.
 *
 * bzip2 is told by its magic ("BZh" and a block size digit) at the start of
 * a seekable input, peeked at with pread() so the bytes stay unread; a pipe
 * cannot be peeked at, so bzip2 data is read from files only: on a pipe it
 * is refused as such (`bzcat FILE |` then). Concatenated bzip2 streams (pbzip2, `cat a.bz2 b.bz2`)
 * are read as one; anything after the last stream, or a stream cut short, is an error like corrupt
 * data. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bzlib.h>
#include <zlib.h>

#include "hibp_input_int.h"
#include "util.h"

#define GZ_BUFFER (128u << 10) /* zlib's input buffer */
#define BZ_IN (128u << 10)     /* compressed bytes read() at a time */

struct br_input_src {
    const char *name;
    gzFile gz;    /* zlib: gzip, or data passed through */
    bool started; /* the first bytes were read */
    /* bzip2 */
    int fd;
    bz_stream bz;
    bool in_stream; /* BZ2_bzDecompressInit done, the stream's end not seen */
    bool eof;       /* read() returned 0 */
    uint64_t consumed;
    char in[BZ_IN];
};

static int io_error(br_error *err, int errnum, const char *name)
{
    return br_error_set(err, -errnum, "%s: %s", name, strerror(errnum));
}

static bool bzip2_magic(const uint8_t *m, size_t n)
{
    return n >= 4 && m[0] == 'B' && m[1] == 'Z' && m[2] == 'h' && m[3] >= '1' && m[3] <= '9';
}

/* "BZh1".."BZh9" at the current offset of a seekable fd. */
static bool is_bzip2(int fd)
{
    off_t at = lseek(fd, 0, SEEK_CUR);
    unsigned char m[4];
    return at >= 0 && pread(fd, m, sizeof(m), at) == (ssize_t)sizeof(m) &&
           bzip2_magic(m, sizeof(m));
}

static int open_gz(br_input_src *s, int fd, br_error *err)
{
    int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0)
        return io_error(err, errno, s->name);
    s->gz = gzdopen(dup_fd, "rb");
    if (!s->gz) {
        close(dup_fd);
        return br_error_set(err, -ENOMEM, "%s: out of memory", s->name);
    }
    gzbuffer(s->gz, GZ_BUFFER);
    return 0;
}

int br_input_src_open(int fd, const char *name, br_input_src **out, br_error *err)
{
    br_input_src *s = calloc(1, sizeof(*s));
    if (!s)
        return br_error_set(err, -ENOMEM, "%s: out of memory", name);
    s->name = name;
    s->fd = fd;
    if (!is_bzip2(fd)) {
        int r = open_gz(s, fd, err);
        if (r < 0) {
            free(s);
            return r;
        }
    }
    *out = s;
    return 0;
}

/* One gzread() into buf: the byte count, 0 at the end, or a negative errno
 * with err set (a read error, or gzip data that is corrupt or cut short;
 * bzip2 data passed through from a pipe, which could not be peeked at). */
static int gz_read(br_input_src *s, uint8_t *buf, size_t size, uint64_t line, br_error *err)
{
    for (;;) {
        int n = gzread(s->gz, buf, (unsigned)BR_MIN(size, (size_t)INT_MAX));
        if (n > 0 && !s->started) {
            s->started = true;
            if (gzdirect(s->gz) && bzip2_magic(buf, (size_t)n))
                return br_error_set(err, -EINVAL,
                                    "%s: bzip2 data cannot be read from a pipe: give its file "
                                    "name, or decompress it with bzcat",
                                    s->name);
        }
        int zerr;
        const char *msg = gzerror(s->gz, &zerr);
        /* A stream cut short ends with 0 bytes and Z_BUF_ERROR. */
        if (n > 0 || (n == 0 && zerr == Z_OK))
            return n;
        if (zerr == Z_ERRNO && errno == EINTR) {
            gzclearerr(s->gz);
            continue;
        }
        if (zerr == Z_ERRNO)
            return io_error(err, errno, s->name);
        if (zerr == Z_MEM_ERROR)
            return br_error_set(err, -ENOMEM, "%s: out of memory", s->name);
        return br_error_set(err, -EINVAL, "%s: not valid gzip data after line %" PRIu64 " (%s)",
                            s->name, line, msg);
    }
}

static int bz_bad(br_input_src *s, uint64_t line, const char *why, br_error *err)
{
    return br_error_set(err, -EINVAL, "%s: not valid bzip2 data after line %" PRIu64 " (%s)",
                        s->name, line, why);
}

/* Refill the compressed input when it is used up: 0, or a negative errno. */
static int bz_fill(br_input_src *s, br_error *err)
{
    if (s->bz.avail_in > 0 || s->eof)
        return 0;
    ssize_t n;
    do
        n = read(s->fd, s->in, sizeof(s->in));
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return io_error(err, errno, s->name);
    s->eof = n == 0;
    s->bz.next_in = s->in;
    s->bz.avail_in = (unsigned)n;
    s->consumed += (uint64_t)n;
    return 0;
}

/* Up to size decompressed bytes: at least one unless at the end (0). */
static int bz_read(br_input_src *s, uint8_t *buf, size_t size, uint64_t line, br_error *err)
{
    unsigned want = (unsigned)BR_MIN(size, (size_t)INT_MAX);
    s->bz.next_out = (char *)buf;
    s->bz.avail_out = want;
    while (s->bz.avail_out == want) {
        int r = bz_fill(s, err);
        if (r < 0)
            return r;
        if (s->bz.avail_in == 0 && s->eof) {
            if (s->in_stream)
                return bz_bad(s, line, "unexpected end of file", err);
            break; /* the end, between streams */
        }
        if (!s->in_stream) {
            r = BZ2_bzDecompressInit(&s->bz, 0, 0);
            if (r != BZ_OK)
                return br_error_set(err, -ENOMEM, "%s: out of memory", s->name);
            s->in_stream = true;
        }
        r = BZ2_bzDecompress(&s->bz);
        if (r == BZ_STREAM_END) { /* another stream may follow */
            BZ2_bzDecompressEnd(&s->bz);
            s->in_stream = false;
        } else if (r == BZ_MEM_ERROR) {
            return br_error_set(err, -ENOMEM, "%s: out of memory", s->name);
        } else if (r != BZ_OK) {
            return bz_bad(s, line,
                          r == BZ_DATA_ERROR_MAGIC ? "no bzip2 stream header: data after the end?"
                                                   : "the data fails its checks",
                          err);
        }
    }
    return (int)(want - s->bz.avail_out);
}

int br_input_src_read(br_input_src *s, uint8_t *buf, size_t size, uint64_t line, br_error *err)
{
    return s->gz ? gz_read(s, buf, size, line, err) : bz_read(s, buf, size, line, err);
}

int64_t br_input_src_offset(const br_input_src *s)
{
    if (s->gz)
        return gzoffset(s->gz); /* -1 on a pipe */
    return s->consumed > INT64_MAX ? -1 : (int64_t)s->consumed;
}

void br_input_src_close(br_input_src *s)
{
    if (!s)
        return;
    if (s->gz)
        gzclose_r(s->gz);
    else if (s->in_stream)
        BZ2_bzDecompressEnd(&s->bz);
    free(s);
}
