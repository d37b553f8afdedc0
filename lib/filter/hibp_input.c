/* SPDX-License-Identifier: MIT */
/* Password-input readers for `breachctl filter build`; see hibp_input.h.
 *
 * The input is read with large read() calls into one buffer and split into
 * lines in place: no per-line allocation, no stdio. A line that is cut by the
 * end of the buffer is moved to the front and completed by the next read; a
 * line never exceeds the limit below, so that tail is small. The common line
 * shapes (HASH:COUNT with a short count, or a bare hash once the file is known
 * to be a plain list) take a short path; everything else goes through a slow
 * parser that either accepts the line or says exactly what is wrong with it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/br_assert.h"
#include "filter_file.h"
#include "hibp_input.h"
#include "hibp_input_int.h"
#include "core/util.h"

#define READ_CHUNK (1u << 20)     /* bytes asked for per read() */
#define PROGRESS_STEP (64u << 10) /* report progress about this often */
#define HASH_HEX 40               /* hex digits of a SHA-1, the longer kind */
#define PREFIX_HEX 5              /* hex digits in a prefix file's name */
#define COUNT_FAST_DIGITS 19      /* 10^19 - 1 < 2^64: no overflow check needed */
#define KIND_HEX_DIFF (2 * (BR_SHA1_LEN - BR_NT_LEN)) /* a SHA-1 has 8 more hex digits */
#define BOM_LEN 3                                     /* EF BB BF */

enum { MODE_UNKNOWN, MODE_COUNTED, MODE_PLAIN };

typedef struct reader {
    const br_input_opts *opts;
    br_key_cb cb;
    void *cb_ctx;
    br_error *err;
    br_input_stats st; /* this call's counts, added to the caller's at the end */
    uint8_t *buf;      /* READ_CHUNK + room for a carried-over line */
    size_t buf_size;
    size_t hash_len;      /* bytes of a key: BR_SHA1_LEN or BR_NT_LEN */
    br_hasher *hasher;    /* plaintext only, password-sha1 */
    br_nt_hasher *nt;     /* plaintext only, password-ntlm */
    uint64_t min_count;   /* 0 and 1: every counted line with count >= 1 */
    uint64_t count;       /* the current line's count (0: a line without one) */
    size_t max_line;      /* without the LF and the CR */
    uint64_t done, total; /* progress */
    uint64_t last_progress;
} reader;

typedef struct file_ctx {
    const char *name;      /* for messages */
    uint64_t line;         /* 1-based number of the current line */
    int mode;              /* MODE_*: decided by the first non-blank line */
    bool prefix_file;      /* SUFFIX:COUNT lines, the prefix from the file name */
    size_t hash_len;       /* bytes of a key */
    size_t hexlen;         /* hex digits expected before ':' or the end */
    uint8_t hex[HASH_HEX]; /* prefix file: the name's 5 digits, then a line's suffix */
} file_ctx;

static int line_error(reader *r, const file_ctx *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int line_error(reader *r, const file_ctx *f, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return br_error_set(r->err, -EINVAL, "%s:%" PRIu64 ": %s", f->name, f->line, what);
}

static int io_error(br_error *err, int errnum, const char *name)
{
    return br_error_set(err, -errnum, "%s: %s", name, strerror(errnum));
}

/* A name for a byte that is shown without echoing the input, or NULL. */
static const char *byte_name(uint8_t c)
{
    switch (c) {
    case ' ':
        return "a space";
    case '\t':
        return "a tab";
    case '\r':
        return "a carriage return";
    case '\0':
        return "a NUL byte";
    case ':':
        return "a second ':' (extra field)";
    default:
        return NULL;
    }
}

/* "character N is <what>, expected <expected>" for the byte at index i. */
static int bad_char(reader *r, const file_ctx *f, const uint8_t *p, size_t i, const char *expected)
{
    const char *what = byte_name(p[i]);
    if (what)
        return line_error(r, f, "character %zu is %s, expected %s", i + 1, what, expected);
    return line_error(r, f, "character %zu is not %s", i + 1, expected);
}

static bool has_bom(const uint8_t *p, size_t len)
{
    return len >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF;
}

static int cb_stopped(reader *r, const file_ctx *f, int rc)
{
    if (rc < 0)
        return br_error_set(r->err, rc, "%s:%" PRIu64 ": %s", f->name, f->line, strerror(-rc));
    return br_error_set(r->err, rc, "%s:%" PRIu64 ": stopped by the key consumer (%d)", f->name,
                        f->line, rc);
}

static inline int deliver(reader *r, const file_ctx *f, const uint8_t *key)
{
    r->st.keys++;
    if (r->opts->count_cb) {
        int rc = r->opts->count_cb(r->cb_ctx, key, r->count);
        return br_unlikely(rc != 0) ? cb_stopped(r, f, rc) : 0;
    }
    if (!r->cb)
        return 0;
    int rc = r->cb(r->cb_ctx, key);
    if (br_unlikely(rc != 0))
        return cb_stopped(r, f, rc);
    return 0;
}

static inline int deliver_counted(reader *r, const file_ctx *f, const uint8_t *key, uint64_t count)
{
    if (count == 0) {
        r->st.skipped_zero++;
        return 0;
    }
    if (count < r->min_count) {
        r->st.skipped_min++;
        return 0;
    }
    if (br_unlikely(r->opts->max_count && count > r->opts->max_count))
        return line_error(r, f,
                          "the count %" PRIu64 " does not fit an offline filter's count code "
                          "(at most %" PRIu64 ")",
                          count, r->opts->max_count);
    r->count = count;
    int rc = deliver(r, f, key);
    r->count = 0;
    return rc;
}

/* Constant lengths, so that each decode is unrolled (with SSE2, 16 digits
 * at a time: br_hex_decode in core/hash.h). */
static inline bool decode_hex(const uint8_t *p, size_t hash_len, uint8_t key[BR_SHA1_LEN])
{
    if (hash_len == BR_SHA1_LEN)
        return br_hex_decode((const char *)p, BR_SHA1_LEN, key);
    return br_hex_decode((const char *)p, BR_NT_LEN, key);
}

static inline bool decode_key(file_ctx *f, const uint8_t *p, uint8_t key[BR_SHA1_LEN])
{
    if (!f->prefix_file)
        return decode_hex(p, f->hash_len, key);
    memcpy(f->hex + PREFIX_HEX, p, f->hexlen);
    return decode_hex(f->hex, f->hash_len, key);
}

/* The complete parser of a non-blank hash line: accepts it or names the fault. */
__attribute__((noinline, cold)) static int hash_line_slow(reader *r, file_ctx *f, const uint8_t *p,
                                                          size_t len)
{
    /* A byte order mark at the start of a line is not data: the official
     * downloader writes one before every block of lines (docs/corpus.md). */
    if (has_bom(p, len)) {
        p += BOM_LEN;
        len -= BOM_LEN;
        if (len == 0)
            return 0;
    }
    if (len > r->max_line)
        return line_error(r, f, "line is longer than %zu bytes", r->max_line);

    size_t n = 0;
    while (n < len && br_hex_table[p[n]] < 16)
        n++;
    bool counted;
    if (n == len)
        counted = false;
    else if (p[n] == ':')
        counted = true;
    else if (n < f->hexlen)
        return bad_char(r, f, p, n, "a hex digit");
    else
        return bad_char(r, f, p, n, f->mode == MODE_PLAIN ? "the end of the line" : "':'");
    if (f->hash_len == BR_SHA1_LEN && n + KIND_HEX_DIFF == f->hexlen)
        return line_error(r, f,
                          "the hash has %zu hex digits: this is an NTLM corpus; use --kind "
                          "password-ntlm",
                          n);
    if (f->hash_len == BR_NT_LEN && n == f->hexlen + KIND_HEX_DIFF)
        return line_error(r, f,
                          "the hash has %zu hex digits: this is a SHA-1 corpus; use --kind "
                          "password-sha1",
                          n);
    if (n != f->hexlen)
        return line_error(r, f, "the hash has %zu hex digits, expected %zu", n, f->hexlen);

    if (f->mode == MODE_UNKNOWN) {
        f->mode = counted ? MODE_COUNTED : MODE_PLAIN;
        if (!counted && r->opts->need_counts)
            return line_error(r, f,
                              "a plain hash list has no counts, and an offline filter "
                              "keeps each key's count");
        if (!counted && r->min_count > 1)
            return line_error(r, f,
                              "a plain hash list has no counts, so the minimum count %" PRIu64
                              " cannot be applied",
                              r->min_count);
    } else if (f->mode == MODE_COUNTED && !counted) {
        if (f->prefix_file)
            return line_error(r, f, "the count is missing (expected SUFFIX:COUNT)");
        return line_error(r, f, "the count is missing (the first line of the file has one)");
    } else if (f->mode == MODE_PLAIN && counted) {
        return line_error(r, f, "the line has a count, but the first line of the file has none");
    }

    uint64_t count = 0;
    if (counted) {
        if (n + 1 == len)
            return line_error(r, f, "the count after ':' is empty");
        for (size_t i = n + 1; i < len; i++) {
            unsigned d = (unsigned)p[i] - '0';
            if (d > 9)
                return bad_char(r, f, p, i, "a decimal digit");
            if (count > (UINT64_MAX - d) / 10)
                return line_error(r, f, "the count is larger than %" PRIu64, UINT64_MAX);
            count = count * 10 + d;
        }
    }

    uint8_t key[BR_SHA1_LEN];
    if (br_fails_assert(decode_key(f, p, key))) /* the digits were checked above */
        return line_error(r, f, "the hash is not hex");
    return counted ? deliver_counted(r, f, key, count) : deliver(r, f, key);
}

static inline int hash_line(reader *r, file_ctx *f, const uint8_t *p, size_t len)
{
    const size_t hl = f->hexlen;
    uint8_t key[BR_SHA1_LEN];

    if (br_likely(f->mode == MODE_COUNTED && len > hl + 1 && len <= hl + 1 + COUNT_FAST_DIGITS &&
                  p[hl] == ':')) {
        uint64_t count = 0;
        size_t i = hl + 1;
        for (; i < len; i++) {
            unsigned d = (unsigned)p[i] - '0';
            if (d > 9)
                break;
            count = count * 10 + d;
        }
        if (br_likely(i == len && decode_key(f, p, key)))
            return deliver_counted(r, f, key, count);
    } else if (f->mode == MODE_PLAIN && len == hl) {
        if (br_likely(decode_key(f, p, key)))
            return deliver(r, f, key);
    } else if (len == 0) {
        return 0; /* blank */
    }
    return hash_line_slow(r, f, p, len);
}

static int plain_line(reader *r, file_ctx *f, const uint8_t *p, size_t len)
{
    if (len == 0)
        return 0;
    /* Never show the line: it is a password. */
    if (len > r->max_line)
        return line_error(r, f, "line is longer than %zu bytes", r->max_line);
    const uint8_t *nul = memchr(p, '\0', len);
    if (nul)
        return line_error(r, f, "character %zu is a NUL byte (binary or UTF-16 input?)",
                          (size_t)(nul - p) + 1);
    if (f->line == 1 && has_bom(p, len))
        return line_error(r, f, "the file starts with a UTF-8 byte order mark");
    uint8_t key[BR_SHA1_LEN];
    int rc =
        r->nt ? br_nt_hasher_digest(r->nt, p, len, key) : br_hasher_digest(r->hasher, p, len, key);
    if (rc < 0)
        return br_error_set(r->err, rc, "%s:%" PRIu64 ": %s failed", f->name, f->line,
                            r->nt ? "the NT hash (MD4)" : "SHA-1");
    rc = deliver(r, f, key);
    br_wipe(key, sizeof(key));
    return rc;
}

static void progress(reader *r, bool force)
{
    if (!r->opts->progress)
        return;
    if (force || r->done - r->last_progress >= PROGRESS_STEP) {
        r->last_progress = r->done;
        r->opts->progress(r->opts->progress_ctx, r->done, r->total);
    }
}

/* Read fd to its end (decompressing gzip or bzip2: hibp_input_decomp.c),
 * passing every line to the parser of the input kind. */
static int read_stream(reader *r, file_ctx *f, int fd)
{
    const bool plaintext = r->opts->plaintext;
    uint8_t *const buf = r->buf;
    size_t have = 0; /* bytes in buf: an incomplete line carried over */
    int rc = 0;

    r->st.files++;
    br_input_src *src = NULL;
    rc = br_input_src_open(fd, f->name, &src, r->err);
    if (rc < 0)
        return rc;
    int64_t raw_done = 0; /* compressed bytes consumed, for the progress */
    for (;;) {
        int n = br_input_src_read(src, buf + have, READ_CHUNK, f->line, r->err);
        if (n < 0) {
            rc = n;
            break;
        }
        if (n == 0) { /* a last line without LF */
            if (have > 0) {
                size_t len = have;
                if (buf[len - 1] == '\r')
                    len--;
                f->line++;
                rc = plaintext ? plain_line(r, f, buf, len) : hash_line(r, f, buf, len);
            }
            break;
        }
        r->st.bytes += (uint64_t)n;
        int64_t raw = br_input_src_offset(src); /* -1 on a pipe: count what was read */
        if (raw < 0) {
            r->done += (uint64_t)n;
        } else if (raw > raw_done) {
            r->done += (uint64_t)(raw - raw_done);
            raw_done = raw;
        }
        have += (size_t)n;

        uint8_t *p = buf, *const end = buf + have, *nl;
        while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
            size_t len = (size_t)(nl - p);
            if (len > 0 && nl[-1] == '\r')
                len--;
            f->line++;
            rc = plaintext ? plain_line(r, f, p, len) : hash_line(r, f, p, len);
            if (br_unlikely(rc != 0))
                break;
            p = nl + 1;
        }
        if (rc != 0)
            break;

        size_t done = (size_t)(p - buf), tail = (size_t)(end - p);
        if (tail > r->max_line + 1 + BOM_LEN) { /* a BOM, max_line bytes and a CR, no LF yet */
            f->line++;
            rc = line_error(r, f, "line is longer than %zu bytes", r->max_line);
            break;
        }
        if (plaintext)
            br_wipe(buf, done);
        if (done > 0 && tail > 0) {
            memmove(buf, p, tail);
            if (plaintext) /* the part of the old copy that was not overwritten */
                br_wipe(buf + BR_MAX(done, tail), done + tail - BR_MAX(done, tail));
        }
        have = tail;
        progress(r, false);
    }
    br_input_src_close(src);
    r->st.lines += f->line;
    if (plaintext)
        br_wipe(buf, r->buf_size);
    return rc;
}

static int read_file_fd(reader *r, const char *name, int fd)
{
    file_ctx f = {
        .name = name,
        .mode = MODE_UNKNOWN,
        .hash_len = r->hash_len,
        .hexlen = 2 * r->hash_len,
    };
    return read_stream(r, &f, fd);
}

/* ---- per-prefix directories ---- */

static int read_dir(reader *r, const char *path, int dfd)
{
    br_prefix_list l = {0};
    int rc = br_prefix_list_scan(dfd, path, &l, r->err);
    r->st.ignored_files += l.ignored;
    if (rc < 0)
        goto out;
    r->total = l.bytes;

    char full[PATH_MAX];
    for (size_t i = 0; i < l.n; i++) {
        const char *rel = br_prefix_list_path(&l, i);
        const char *base = strrchr(rel, '/');
        base = base ? base + 1 : rel;
        br_input_join_path(full, sizeof(full), path, rel);
        int fd = openat(dfd, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
            rc = io_error(r->err, errno, full);
            goto out;
        }
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        file_ctx f = {
            .name = full,
            .mode = MODE_COUNTED,
            .prefix_file = true,
            .hash_len = r->hash_len,
            .hexlen = 2 * r->hash_len - PREFIX_HEX,
        };
        memcpy(f.hex, base, PREFIX_HEX);
        rc = read_stream(r, &f, fd);
        close(fd);
        if (rc != 0)
            goto out;
    }
out:
    br_prefix_list_free(&l);
    close(dfd);
    return rc;
}

uint64_t br_input_size(const char *path)
{
    if (!path || strcmp(path, "-") == 0)
        return 0;
    struct stat st;
    if (stat(path, &st) < 0)
        return 0;
    if (S_ISREG(st.st_mode))
        return (uint64_t)st.st_size;
    if (!S_ISDIR(st.st_mode))
        return 0;
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return 0;
    br_prefix_list l = {0};
    int rc = br_prefix_list_scan(dfd, path, &l, NULL);
    br_prefix_list_free(&l);
    close(dfd);
    return rc < 0 ? 0 : l.bytes;
}

static void stats_add(br_input_stats *to, const br_input_stats *s)
{
    to->files += s->files;
    to->lines += s->lines;
    to->keys += s->keys;
    to->skipped_zero += s->skipped_zero;
    to->skipped_min += s->skipped_min;
    to->bytes += s->bytes;
    to->ignored_files += s->ignored_files;
}

static int input_read(reader *r, const char *path)
{
    if (strcmp(path, "-") == 0)
        return read_file_fd(r, "<stdin>", STDIN_FILENO);

    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return io_error(r->err, errno, path);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return io_error(r->err, e, path);
    }
    if (S_ISDIR(st.st_mode)) {
        if (r->opts->plaintext) {
            close(fd);
            return br_error_set(r->err, -EINVAL,
                                "%s: is a directory; plaintext input must be a file", path);
        }
        return read_dir(r, path, fd); /* takes fd */
    }
    if (S_ISREG(st.st_mode)) {
        r->total = (uint64_t)st.st_size;
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    int rc = read_file_fd(r, path, fd);
    close(fd);
    return rc;
}

int br_input_read(const char *path, const br_input_opts *opts, br_key_cb cb, void *cb_ctx,
                  br_input_stats *stats, br_error *err)
{
    static const br_input_opts defaults;
    if (!opts)
        opts = &defaults;
    if (!path)
        return br_error_set(err, -EINVAL, "no input path");
    bool ntlm = opts->kind == BR_KIND_PASSWORD_NTLM;
    if (opts->kind != 0 && opts->kind != BR_KIND_PASSWORD_SHA1 && !ntlm)
        return br_error_set(err, -EINVAL, "%s: kind %s is not a password kind", path,
                            br_filter_kind_name(opts->kind) ? br_filter_kind_name(opts->kind)
                                                            : "?");
    if (opts->plaintext && opts->need_counts)
        return br_error_set(err, -EINVAL,
                            "%s: plaintext input has no counts, and an offline filter keeps each "
                            "key's count",
                            strcmp(path, "-") == 0 ? "<stdin>" : path);
    if (opts->plaintext && opts->min_count > 1)
        return br_error_set(err, -EINVAL,
                            "%s: plaintext input has no counts, so the minimum count %" PRIu64
                            " cannot be applied",
                            strcmp(path, "-") == 0 ? "<stdin>" : path, opts->min_count);

    reader r = {
        .opts = opts,
        .cb = cb,
        .cb_ctx = cb_ctx,
        .err = err,
        .min_count = opts->min_count,
        .hash_len = ntlm ? BR_NT_LEN : BR_SHA1_LEN,
        .max_line = opts->plaintext ? BR_INPUT_MAX_PLAIN_LINE : BR_INPUT_MAX_HASH_LINE,
    };
    /* A carried-over line is at most BOM + max_line + CR bytes. */
    r.buf_size = READ_CHUNK + BR_INPUT_MAX_PLAIN_LINE + 2 + BOM_LEN;
    r.buf = malloc(r.buf_size);
    if (!r.buf)
        return br_error_set(err, -ENOMEM, "%s: out of memory", path);
    int rc = 0;
    if (opts->plaintext && ntlm) {
        r.nt = br_nt_hasher_new(err);
        if (!r.nt) {
            rc = br_error_prefix(err, br_md4_check(NULL) < 0 ? -ENOSYS : -ENOMEM, "%s", path);
            goto out;
        }
    } else if (opts->plaintext) {
        r.hasher = br_hasher_new_sha1();
        if (!r.hasher) {
            rc = br_error_set(err, -ENOMEM, "%s: cannot set up SHA-1", path);
            goto out;
        }
    }

    rc = input_read(&r, path);
    if (rc == 0)
        progress(&r, true);
out:
    if (stats)
        stats_add(stats, &r.st);
    br_hasher_free(r.hasher);
    br_nt_hasher_free(r.nt);
    free(r.buf);
    return rc;
}
