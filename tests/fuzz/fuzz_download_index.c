/* SPDX-License-Identifier: MIT */
/* Fuzz target for the download index and journal reader (lib/download/download_index.c,
 * dl_index_load in lib/download/download_int.h; the format is described at the top of
 * download_index.c). The line parser is static, reachable only through
 * dl_index_load, which reads a directory: each input is written as the two
 * files into a private temporary directory and loaded from there.
 *
 * Input: byte 0 selects, the rest is the content.
 *   bit 0  fix the checks: in every line whose last tab is followed by exactly
 *          8 bytes, those become the line's right FNV-1a check (so that the
 *          fuzzer reaches the field parsing at all)
 *   bit 1  the loader's upstream template: 0 the default one (which the seeds'
 *          headers name), 1 another one (validators must then be dropped)
 *   bit 2  with no separator: 0 the content is the index (no journal), 1 it is
 *          the journal (no index)
 * The content is split at the first "\n~journal~\n": the index is what comes
 * before it (with that LF), the journal what comes after.
 *
 * Checked on every input, against a reference model of the format written
 * independently here (a violation aborts):
 *   - no crash, sanitizer report or leak; dl_index_load returns 0;
 *   - a line is applied only when it is complete (ends with LF), its check
 *     is the lowercase FNV-1a of everything before it, it has exactly six
 *     fields, PREFIX is 5 hex, SIZE 1..19 digits <= INT64_MAX, MTIME_NS the
 *     same with an optional '-', HASH 32 hex, and it holds no control byte
 *     but its tabs (the format says ETAG and LAST_MODIFIED cannot hold one);
 *     any other line is ignored and counted as bad, never half-applied;
 *   - the first line is the header when it checks out as one; validators are
 *     kept only under a header naming the loader's upstream; without a usable
 *     header the first line is counted bad and still tried as a record;
 *   - later lines win, the journal over the index; every prefix that starts a
 *     line holds exactly the model's record (size, mtime, hash, validators) or
 *     none; records counted per file, bad lines, the rewrite flag, the
 *     journal's bytes and index_exists as the model says.
 * Hex case is not checked: the reader takes either for PREFIX and HASH (the
 * value is the same), though the writer writes one. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "download/download_int.h"

static void dir_remove(void);

/* A failure removes the temporary directory too (abort skips atexit). */
#define FUZZ_NAME "fuzz_download_index"
#define FUZZ_ON_FAILURE() dir_remove()
#include "fuzz_check.h"

#define UPSTREAM_SEEDS "https://api.pwnedpasswords.com/range/{prefix}"
#define UPSTREAM_OTHER "https://mirror.example/hibp/{prefix}"
#define SEPARATOR "\n~journal~\n"
#define MAGIC "breachd-download-index"

/* ---- the private directory ---------------------------------------------------- */

static char dir_path[4096];
static int dir_fd = -1;

static void dir_remove(void)
{
    if (dir_fd < 0)
        return;
    unlinkat(dir_fd, BR_DOWNLOAD_INDEX_NAME, 0);
    unlinkat(dir_fd, BR_DOWNLOAD_JOURNAL_NAME, 0);
    close(dir_fd);
    dir_fd = -1;
    rmdir(dir_path);
}

static void dir_init(void)
{
    if (dir_fd >= 0)
        return;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir_path, sizeof(dir_path), "%s/fuzz-dlindex-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir_path) != NULL);
    dir_fd = open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(dir_fd >= 0);
    atexit(dir_remove);
}

static void write_file(const char *name, const char *buf, size_t len)
{
    int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, buf + off, len - off);
        CHECK(n > 0);
        off += (size_t)n;
    }
    CHECK(close(fd) == 0);
}

/* ---- the reference model ---------------------------------------------------------- */

static uint32_t fnv(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

typedef struct field {
    const char *s;
    size_t n;
} field;

typedef struct mrec {
    uint32_t prefix;
    uint64_t size;
    int64_t mtime;
    uint8_t hash[DL_HASH_LEN];
    bool has_val;
    field etag, lm;
} mrec;

typedef struct model {
    mrec *r;
    size_t n, cap;
    uint64_t bad;
    bool rewrite;
} model;

/* Split a line that checks out into its fields; -1 when it does not. */
static int split(const char *s, size_t n, field *f, size_t nf)
{
    if (n < 9 || s[n - 9] != '\t')
        return -1;
    char want[9];
    snprintf(want, sizeof(want), "%08x", fnv(s, n - 8));
    if (memcmp(want, s + n - 8, 8) != 0)
        return -1;
    size_t body = n - 9, k = 0, start = 0;
    for (size_t i = 0; i <= body; i++) {
        if (i < body && s[i] != '\t') {
            unsigned char c = (unsigned char)s[i];
            if (c < 0x20 || c == 0x7f)
                return -1;
            continue;
        }
        if (k == nf)
            return -1;
        f[k++] = (field){s + start, i - start};
        start = i + 1;
    }
    return k == nf ? 0 : -1;
}

static bool dec(field f, bool neg_ok, int64_t *out)
{
    bool neg = false;
    if (neg_ok && f.n > 0 && f.s[0] == '-') {
        neg = true;
        f.s++;
        f.n--;
    }
    if (f.n < 1 || f.n > 19)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < f.n; i++) {
        if (f.s[i] < '0' || f.s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(f.s[i] - '0');
    }
    if (v > INT64_MAX)
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

static bool hex(field f, size_t digits, uint8_t *out)
{
    if (f.n != digits)
        return false;
    for (size_t i = 0; i < digits; i++)
        if (hexval((unsigned char)f.s[i]) < 0)
            return false;
    for (size_t i = 0; i + 1 < digits; i += 2)
        out[i / 2] =
            (uint8_t)(hexval((unsigned char)f.s[i]) << 4 | hexval((unsigned char)f.s[i + 1]));
    return true;
}

static bool record(const char *s, size_t n, bool keep, mrec *r)
{
    field f[6];
    if (split(s, n, f, 6) < 0)
        return false;
    uint8_t p[3];
    char p6[6] = {'0'};
    if (f[0].n != 5)
        return false;
    memcpy(p6 + 1, f[0].s, 5);
    if (!hex((field){p6, 6}, 6, p))
        return false;
    r->prefix = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
    int64_t size;
    if (!dec(f[1], false, &size) || !dec(f[2], true, &r->mtime) || !hex(f[3], 32, r->hash))
        return false;
    r->size = (uint64_t)size;
    r->has_val = keep && (f[4].n > 0 || f[5].n > 0);
    r->etag = f[4];
    r->lm = f[5];
    return true;
}

static void model_put(model *m, const mrec *r)
{
    for (size_t i = 0; i < m->n; i++) {
        if (m->r[i].prefix == r->prefix) {
            m->r[i] = *r;
            return;
        }
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->r = realloc(m->r, m->cap * sizeof(mrec));
        CHECK(m->r);
    }
    m->r[m->n++] = *r;
}

/* One file: its records applied to m; the number applied. */
static uint64_t model_file(model *m, const char *s, size_t len, const char *upstream)
{
    uint64_t applied = 0;
    bool first = true, keep = false;
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(s + pos, '\n', len - pos);
        if (!nl) { /* torn */
            m->bad++;
            break;
        }
        size_t n = (size_t)(nl - (s + pos));
        const char *line = s + pos;
        pos += n + 1;
        if (first) {
            first = false;
            field f[3];
            if (split(line, n, f, 3) == 0 && f[0].n == strlen(MAGIC) &&
                memcmp(f[0].s, MAGIC, f[0].n) == 0 && f[1].n == 1 && f[1].s[0] == '1') {
                keep = f[2].n == strlen(upstream) && memcmp(f[2].s, upstream, f[2].n) == 0;
                if (!keep)
                    m->rewrite = true;
                continue;
            }
            m->bad++;
        }
        mrec r;
        if (record(line, n, keep, &r)) {
            model_put(m, &r);
            applied++;
        } else {
            m->bad++;
        }
    }
    return applied;
}

/* ---- checks -------------------------------------------------------------------------- */

static void check_prefix(const dl_index *ix, const model *m, uint32_t p)
{
    const dl_entry *e = &ix->e[p];
    const mrec *r = NULL;
    for (size_t i = 0; i < m->n; i++)
        if (m->r[i].prefix == p)
            r = &m->r[i];
    if (!r) {
        CHECK(e->state == DL_E_NONE && e->val == NULL && e->size == 0 && e->mtime_ns == 0);
        return;
    }
    CHECK(e->state == DL_E_RECORD);
    CHECK(e->size == r->size && e->mtime_ns == r->mtime);
    CHECK(memcmp(e->hash, r->hash, DL_HASH_LEN) == 0);
    if (!r->has_val) {
        CHECK(e->val == NULL);
        return;
    }
    CHECK(e->val != NULL);
    const char *et = dl_entry_etag(e), *lm = dl_entry_lm(e);
    CHECK(strlen(et) == r->etag.n && memcmp(et, r->etag.s, r->etag.n) == 0);
    CHECK(strlen(lm) == r->lm.n && memcmp(lm, r->lm.s, r->lm.n) == 0);
}

/* Call fn for the prefix each line of s starts with (lines whose first 5
 * bytes are not hex are skipped). */
static void each_line_prefix(const char *s, size_t len, void (*fn)(void *ctx, uint32_t p),
                             void *ctx)
{
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(s + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (s + pos)) : len - pos;
        uint8_t pb[3];
        char p6[6] = {'0'};
        if (n >= 5) {
            memcpy(p6 + 1, s + pos, 5);
            if (hex((field){p6, 6}, 6, pb))
                fn(ctx, (uint32_t)pb[0] << 16 | (uint32_t)pb[1] << 8 | pb[2]);
        }
        pos += n + 1;
    }
}

typedef struct {
    dl_index *ix;
    const model *m;
} check_ctx;

static void check_one(void *ctx, uint32_t p)
{
    check_ctx *c = ctx;
    check_prefix(c->ix, c->m, p);
}

/* Every prefix a line of s starts with: check it. */
static void check_lines(dl_index *ix, const model *m, const char *s, size_t len)
{
    check_ctx c = {ix, m};
    each_line_prefix(s, len, check_one, &c);
}

static void free_one(void *ctx, uint32_t p)
{
    dl_index *ix = ctx;
    free(ix->e[p].val);
    ix->e[p].val = NULL;
}

/* Every prefix a line of s starts with: free its validators. */
static void free_lines(dl_index *ix, const char *s, size_t len)
{
    each_line_prefix(s, len, free_one, ix);
}

/* In place: the right check after the last tab of every line that has 8 bytes there. */
static void fix_checks(char *s, size_t len)
{
    size_t pos = 0;
    while (pos < len) {
        char *nl = memchr(s + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (s + pos)) : len - pos;
        char *line = s + pos;
        if (n >= 9 && memrchr(line, '\t', n) == line + n - 9) {
            char c[9];
            snprintf(c, sizeof(c), "%08x", fnv(line, n - 8));
            memcpy(line + n - 8, c, 8);
        }
        pos += n + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    dir_init();
    uint8_t sel = data[0];
    const char *upstream = sel & 2 ? UPSTREAM_OTHER : UPSTREAM_SEEDS;
    size_t len = size - 1;
    char *buf = malloc(len + 1);
    CHECK(buf);
    memcpy(buf, data + 1, len);
    if (sel & 1)
        fix_checks(buf, len);

    const char *idx = NULL, *jrn = NULL;
    size_t idx_len = 0, jrn_len = 0;
    const char *sep = memmem(buf, len, SEPARATOR, strlen(SEPARATOR));
    if (sep) {
        idx = buf;
        idx_len = (size_t)(sep - buf) + 1;
        jrn = sep + strlen(SEPARATOR);
        jrn_len = len - (size_t)(jrn - buf);
    } else if (sel & 4) {
        jrn = buf;
        jrn_len = len;
    } else {
        idx = buf;
        idx_len = len;
    }
    unlinkat(dir_fd, BR_DOWNLOAD_INDEX_NAME, 0);
    unlinkat(dir_fd, BR_DOWNLOAD_JOURNAL_NAME, 0);
    if (idx)
        write_file(BR_DOWNLOAD_INDEX_NAME, idx, idx_len);
    if (jrn)
        write_file(BR_DOWNLOAD_JOURNAL_NAME, jrn, jrn_len);

    model m = {0};
    uint64_t idx_records = idx ? model_file(&m, idx, idx_len, upstream) : 0;
    uint64_t jrn_records = jrn ? model_file(&m, jrn, jrn_len, upstream) : 0;
    (void)idx_records;
    if (m.bad)
        m.rewrite = true;

    dl_index ix;
    br_error err = {{0}};
    int rc = dl_index_load(&ix, dir_fd, upstream, &err);
    if (rc == -ENOMEM) {
        dl_index_free(&ix);
        free(m.r);
        free(buf);
        return 0;
    }
    if (rc != 0)
        fprintf(stderr, "fuzz_download_index: load: %s\n", err.text);
    CHECK(rc == 0);
    CHECK(ix.dirfd == dir_fd && ix.jfd == -1);
    CHECK(strcmp(ix.upstream, upstream) == 0);
    CHECK(ix.index_exists == (idx != NULL));
    CHECK(ix.jrecords == jrn_records);
    CHECK(ix.jbytes == jrn_len);
    if (ix.bad_lines != m.bad)
        fprintf(stderr, "fuzz_download_index: bad lines %llu, model %llu\n",
                (unsigned long long)ix.bad_lines, (unsigned long long)m.bad);
    CHECK(ix.bad_lines == m.bad);
    CHECK(ix.rewrite == m.rewrite);
    CHECK(!ix.session_resumed && !ix.session_dirty);
    if (idx)
        check_lines(&ix, &m, idx, idx_len);
    if (jrn)
        check_lines(&ix, &m, jrn, jrn_len);

    /* dl_index_free would visit all 2^20 entries: only the lines' prefixes
     * can hold validators, so free those and the rest directly (a leak here
     * means a record landed on a prefix no line starts with). */
    if (idx)
        free_lines(&ix, idx, idx_len);
    if (jrn)
        free_lines(&ix, jrn, jrn_len);
    free(ix.e);
    free(ix.bits);
    free(ix.placed);
    free(ix.upstream);
    free(m.r);
    free(buf);
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
