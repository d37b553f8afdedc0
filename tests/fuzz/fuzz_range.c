/* SPDX-License-Identifier: MIT */
/* Fuzz target for br_range_parse (the body of an upstream range response,
 * network input) and the range set it builds (lib/range/range.h).
 *
 * Input: byte 0 selects, the rest is the body.
 *   bit 0     kind: 0 BR_RANGE_PASSWORD_SHA1, 1 BR_RANGE_URL_SHA256
 *   bit 1     max_len: 0 (the 8 MiB default) or SMALL_MAX (to reach -EFBIG)
 *   bits 2-7  the 5-hex prefix of the full hashes looked up (the lookup
 *             ignores it, so it must not matter which one)
 *
 * Checked on every input, against a reference model of the body rules of
 * range.h written independently here (a violation aborts):
 *   - no crash or sanitizer report;
 *   - the parser accepts exactly the bodies the model accepts; a refusal is
 *     the model's code (-EFBIG, -ENODATA, -EBADMSG), leaves *out_value NULL
 *     and *out_len 0, and has a reason that says "range response" and holds
 *     no run of 11 or more hex digits (never a hash);
 *   - an accepted body gives a range set of exactly 16 + N*(W+V) + T bytes
 *     with the documented header; N entries strictly ascending, high nibble
 *     of the first suffix byte 0, counts non-zero, category indexes in range,
 *     a category table of C well-formed records sorted by name; the entries
 *     are exactly the model's (padding dropped, duplicates merged: largest
 *     count, first category in body order); br_range_validate agrees;
 *   - every entry is found by br_range_lookup, under any prefix, with its
 *     count / category (count 1 and category "" on the other kind's field);
 *     the same with NULL outputs;
 *   - neighbours of every entry and pseudo-random hashes are found exactly
 *     when the model holds them;
 *   - the set is refused (-EINVAL) by the lookup and the validation of the
 *     other kind, and when one byte shorter or longer. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "range/range.h"

#define FUZZ_NAME "fuzz_range"
#include "fuzz_check.h"

#define SMALL_MAX 256
#define MAX_W 30

/* ---- the reference model ---------------------------------------------------- */

typedef struct ment {
    uint8_t suffix[MAX_W];
    uint32_t count;
    char cat[BR_RANGE_CATEGORY_MAX + 1];
} ment;

typedef struct model {
    ment *e;
    size_t n;
    size_t n_cats; /* distinct categories on all lines, merged away or not */
    char (*cats)[BR_RANGE_CATEGORY_MAX + 1];
} model;

/* One line (no terminator): 0 with *e filled, 1 for padding, -1 when bad. */
static int model_line(br_range_kind kind, const char *s, size_t n, ment *e)
{
    size_t hexd = kind == BR_RANGE_PASSWORD_SHA1 ? 35 : 59;
    memset(e, 0, sizeof(*e));
    if (n >= 3 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
        (unsigned char)s[2] == 0xBF) { /* one byte order mark starting a line is skipped */
        s += 3;
        n -= 3;
    }
    if (n < hexd + 2 || s[hexd] != ':')
        return -1;
    /* A leading 0 digit makes it whole bytes: "0" + suffix. */
    for (size_t i = 0; i < hexd; i++) {
        int v = hexval((unsigned char)s[i]);
        if (v < 0)
            return -1;
        size_t d = i + 1; /* digit index in "0" + suffix */
        e->suffix[d / 2] |= (uint8_t)(d & 1 ? v : v << 4);
    }
    const char *val = s + hexd + 1;
    size_t vl = n - hexd - 1;
    if (kind == BR_RANGE_PASSWORD_SHA1) {
        uint64_t c = 0;
        for (size_t k = 0; k < vl; k++) {
            if (val[k] < '0' || val[k] > '9')
                return -1;
            c = c * 10 + (uint64_t)(val[k] - '0');
            if (c > UINT32_MAX)
                return -1;
        }
        if (c == 0)
            return 1;
        e->count = (uint32_t)c;
        return 0;
    }
    if (vl > BR_RANGE_CATEGORY_MAX)
        return -1;
    for (size_t k = 0; k < vl; k++) {
        char ch = val[k];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
            return -1;
    }
    memcpy(e->cat, val, vl);
    e->count = 1;
    return 0;
}

static int model_parse(br_range_kind kind, const char *body, size_t len, size_t max_len, model *m)
{
    memset(m, 0, sizeof(*m));
    if (len > (max_len ? max_len : BR_RANGE_DEFAULT_MAX_BODY))
        return -EFBIG;
    bool only_terminators = true;
    for (size_t i = 0; i < len; i++)
        if (body[i] != '\r' && body[i] != '\n')
            only_terminators = false;
    if (only_terminators)
        return -ENODATA;
    size_t max_lines = 1;
    for (size_t i = 0; i < len; i++)
        max_lines += body[i] == '\n';
    m->e = calloc(max_lines, sizeof(ment));
    m->cats = calloc(max_lines, sizeof(*m->cats));
    CHECK(m->e && m->cats);
    size_t pos = 0;
    while (pos < len) {
        size_t end = pos;
        while (end < len && body[end] != '\n')
            end++;
        size_t n = end - pos;
        /* LF or CRLF; a last line may end with a lone CR */
        if (n > 0 && body[pos + n - 1] == '\r')
            n--;
        ment e;
        int r = model_line(kind, body + pos, n, &e);
        if (r < 0)
            return -EBADMSG;
        pos = end + 1;
        if (r == 1)
            continue;
        if (kind == BR_RANGE_URL_SHA256) {
            size_t c = 0;
            while (c < m->n_cats && strcmp(m->cats[c], e.cat) != 0)
                c++;
            if (c == m->n_cats) {
                if (m->n_cats == BR_RANGE_MAX_CATEGORIES)
                    return -EBADMSG;
                strcpy(m->cats[m->n_cats++], e.cat);
            }
        }
        size_t k = 0;
        while (k < m->n && memcmp(m->e[k].suffix, e.suffix, MAX_W) != 0)
            k++;
        if (k == m->n)
            m->e[m->n++] = e;
        else if (kind == BR_RANGE_PASSWORD_SHA1 && e.count > m->e[k].count)
            m->e[k].count = e.count; /* URLs: the first line wins */
    }
    return 0;
}

static void model_free(model *m)
{
    free(m->e);
    free(m->cats);
}

static int ment_cmp(const void *a, const void *b)
{
    return memcmp(((const ment *)a)->suffix, ((const ment *)b)->suffix, MAX_W);
}

static const ment *model_find(const model *m, const uint8_t *suffix)
{
    ment key;
    memset(&key, 0, sizeof(key));
    memcpy(key.suffix, suffix, MAX_W);
    return bsearch(&key, m->e, m->n, sizeof(ment), ment_cmp);
}

/* ---- checks ------------------------------------------------------------------- */

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The full hash of a suffix under a prefix. */
static void full_hash(uint32_t prefix20, const uint8_t *suffix, size_t w, uint8_t *h)
{
    h[0] = (uint8_t)(prefix20 >> 12);
    h[1] = (uint8_t)(prefix20 >> 4);
    h[2] = (uint8_t)((prefix20 & 0xF) << 4 | (suffix[0] & 0x0F));
    memcpy(h + 3, suffix + 1, w - 1);
}

/* Look a hash up and compare with the model. */
static void check_lookup(br_range_kind kind, const uint8_t *v, size_t len, const model *m,
                         const uint8_t *h, size_t w)
{
    uint8_t suffix[MAX_W] = {0};
    memcpy(suffix, h + 2, w);
    suffix[0] &= 0x0F;
    const ment *want = model_find(m, suffix);
    uint32_t count = 12345;
    char cat[BR_RANGE_CATEGORY_MAX + 1];
    memset(cat, 'X', sizeof(cat));
    int r = br_range_lookup(kind, v, len, h, &count, cat);
    CHECK(r == (want ? 1 : 0));
    CHECK(br_range_lookup(kind, v, len, h, NULL, NULL) == r);
    if (!want)
        return;
    if (kind == BR_RANGE_PASSWORD_SHA1) {
        CHECK(count == want->count);
        CHECK(cat[0] == '\0');
    } else {
        CHECK(count == 1);
        CHECK(memchr(cat, '\0', sizeof(cat)) != NULL);
        CHECK(strcmp(cat, want->cat) == 0);
    }
}

static void check_reason(const br_error *err)
{
    CHECK(memchr(err->text, '\0', sizeof(err->text)) != NULL);
    CHECK(strstr(err->text, "range response") != NULL);
    size_t run = 0;
    for (const char *p = err->text; *p; p++) {
        run = hexval((unsigned char)*p) >= 0 ? run + 1 : 0;
        CHECK(run < 11);
    }
}

static void check_set(br_range_kind kind, uint32_t prefix20, const uint8_t *v, size_t len, model *m,
                      const uint8_t *data, size_t size)
{
    size_t w = kind == BR_RANGE_PASSWORD_SHA1 ? 18 : 30;
    size_t vw = kind == BR_RANGE_PASSWORD_SHA1 ? 4 : 1;
    size_t hl = br_range_hash_len(kind);
    CHECK(hl == w + 2);

    /* Header and sizes. */
    CHECK(len >= BR_RANGE_HEADER_SIZE);
    CHECK(memcmp(v, "BRS\x01", 4) == 0);
    CHECK(v[4] == (uint8_t)kind && v[5] == w && v[6] == vw);
    size_t c = v[7];
    uint32_t n = le32(v + 8), t = le32(v + 12);
    CHECK(n == m->n);
    CHECK(len == BR_RANGE_HEADER_SIZE + (size_t)n * (w + vw) + t);

    /* Category table: C records, sorted by name, well formed. */
    const uint8_t *table = v + BR_RANGE_HEADER_SIZE + (size_t)n * (w + vw);
    const uint8_t *names[BR_RANGE_MAX_CATEGORIES];
    size_t name_len[BR_RANGE_MAX_CATEGORIES];
    if (kind == BR_RANGE_PASSWORD_SHA1) {
        CHECK(c == 0 && t == 0);
    } else {
        CHECK(n == 0 || c >= 1);
        CHECK(c <= m->n_cats);
        size_t off = 0;
        for (size_t i = 0; i < c; i++) {
            CHECK(off < t);
            size_t l = table[off];
            CHECK(l >= 1 && l <= BR_RANGE_CATEGORY_MAX && off + 1 + l <= t);
            names[i] = table + off + 1;
            name_len[i] = l;
            for (size_t k = 0; k < l; k++) {
                uint8_t ch = names[i][k];
                CHECK((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                      ch == '-');
            }
            if (i > 0) {
                size_t ml = name_len[i - 1] < l ? name_len[i - 1] : l;
                int cmp = memcmp(names[i - 1], names[i], ml);
                CHECK(cmp < 0 || (cmp == 0 && name_len[i - 1] < l));
            }
            off += 1 + l;
        }
        CHECK(off == t);
    }

    /* Entries: exactly the model's, in ascending order. */
    if (m->n > 1)
        qsort(m->e, m->n, sizeof(ment), ment_cmp);
    const uint8_t *e = v + BR_RANGE_HEADER_SIZE;
    for (size_t i = 0; i < n; i++, e += w + vw) {
        CHECK((e[0] & 0xF0) == 0);
        if (i > 0)
            CHECK(memcmp(e - (w + vw), e, w) < 0);
        CHECK(memcmp(e, m->e[i].suffix, w) == 0);
        if (kind == BR_RANGE_PASSWORD_SHA1) {
            CHECK(le32(e + w) != 0);
            CHECK(le32(e + w) == m->e[i].count);
        } else {
            size_t idx = e[w];
            CHECK(idx < c);
            CHECK(name_len[idx] == strlen(m->e[i].cat));
            CHECK(memcmp(names[idx], m->e[i].cat, name_len[idx]) == 0);
        }
    }

    uint32_t nv = 0;
    CHECK(br_range_validate(kind, v, len, &nv) == 0);
    CHECK(nv == n);
    CHECK(br_range_validate(kind, v, len, NULL) == 0);

    /* Every entry found under this prefix and under another one; its
     * neighbours found exactly when the model holds them. */
    uint8_t h[32];
    for (size_t i = 0; i < m->n; i++) {
        full_hash(prefix20, m->e[i].suffix, w, h);
        check_lookup(kind, v, len, m, h, w);
        full_hash(prefix20 ^ 0xFFFFF, m->e[i].suffix, w, h);
        check_lookup(kind, v, len, m, h, w);
        h[hl - 1] ^= 1;
        check_lookup(kind, v, len, m, h, w);
        h[hl - 1] ^= 1;
        h[2] ^= 0x01;
        check_lookup(kind, v, len, m, h, w);
        h[2] ^= 0x11;
        check_lookup(kind, v, len, m, h, w);
    }
    /* Pseudo-random hashes seeded by the input, and the extremes. */
    uint64_t x = 0xcbf29ce484222325u;
    for (size_t i = 0; i < size; i++)
        x = (x ^ data[i]) * 0x100000001b3u;
    for (int k = 0; k < 8; k++) {
        for (size_t i = 0; i < hl; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            h[i] = (uint8_t)x;
        }
        check_lookup(kind, v, len, m, h, w);
    }
    memset(h, 0, sizeof(h));
    check_lookup(kind, v, len, m, h, w);
    memset(h, 0xFF, sizeof(h));
    check_lookup(kind, v, len, m, h, w);

    /* Not a set of the other kind; not one byte shorter or longer. */
    br_range_kind other =
        kind == BR_RANGE_PASSWORD_SHA1 ? BR_RANGE_URL_SHA256 : BR_RANGE_PASSWORD_SHA1;
    CHECK(br_range_lookup(other, v, len, h, NULL, NULL) == -EINVAL);
    CHECK(br_range_validate(other, v, len, NULL) == -EINVAL);
    CHECK(br_range_lookup(kind, v, len - 1, h, NULL, NULL) == -EINVAL);
    CHECK(br_range_validate(kind, v, len - 1, NULL) == -EINVAL);
    uint8_t *longer = malloc(len + 1);
    CHECK(longer);
    memcpy(longer, v, len);
    longer[len] = 0;
    CHECK(br_range_lookup(kind, longer, len + 1, h, NULL, NULL) == -EINVAL);
    CHECK(br_range_validate(kind, longer, len + 1, NULL) == -EINVAL);
    free(longer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    br_range_kind kind = data[0] & 1 ? BR_RANGE_URL_SHA256 : BR_RANGE_PASSWORD_SHA1;
    size_t max_len = data[0] & 2 ? SMALL_MAX : 0;
    uint32_t prefix20 = (uint32_t)(data[0] >> 2) * 0x4D2F1u & 0xFFFFF;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;

    model m;
    int want = model_parse(kind, body, len, max_len, &m);

    br_error err = {{0}};
    static uint8_t junk[1];
    uint8_t *v = junk;
    size_t vlen = 999;
    int r = br_range_parse(kind, len ? body : NULL, len, max_len, &v, &vlen, &err);
    if (r == -ENOMEM) {
        CHECK(v == NULL);
        model_free(&m);
        return 0;
    }
    if (r != want)
        fprintf(stderr, "fuzz_range: parse %d, model %d (%s)\n", r, want, err.text);
    CHECK(r == want);
    if (r < 0) {
        CHECK(v == NULL && vlen == 0);
        check_reason(&err);
    } else {
        CHECK(v != NULL);
        check_set(kind, prefix20, v, vlen, &m, data, size);
        free(v);
    }
    model_free(&m);
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
