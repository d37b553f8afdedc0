/* SPDX-License-Identifier: MIT */
/* Range response parser and range set lookup; the layout is described in range.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/nthash.h"
#include "range.h"
#include "core/util.h"

#define MAX_SUFFIX_BYTES 30 /* SHA-256: 32 - 2 */
#define NTLM_SUFFIX_HEX 27  /* an NT hash (32 hex) minus the prefix */
#define SHA1_SUFFIX_HEX 35

static const uint8_t range_magic[4] = {'B', 'R', 'S', 0x01};

size_t br_range_hash_len(br_range_kind kind)
{
    switch (kind) {
    case BR_RANGE_PASSWORD_SHA1:
        return BR_SHA1_LEN;
    case BR_RANGE_URL_SHA256:
        return BR_SHA256_LEN;
    case BR_RANGE_PASSWORD_NTLM:
        return BR_NT_LEN;
    }
    return 0;
}

size_t br_range_suffix_hex(br_range_kind kind)
{
    size_t h = br_range_hash_len(kind);
    return h ? 2 * h - BR_RANGE_PREFIX_HEX : 0;
}

void br_range_prefix_hex(uint32_t prefix20, char out[BR_RANGE_PREFIX_HEX + 1])
{
    static const char digits[] = "0123456789ABCDEF";
    for (int i = 0; i < BR_RANGE_PREFIX_HEX; i++)
        out[i] = digits[(prefix20 >> (4 * (BR_RANGE_PREFIX_HEX - 1 - i))) & 0xF];
    out[BR_RANGE_PREFIX_HEX] = '\0';
}

static inline bool is_category_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* One accepted line while parsing. The suffix is zero-padded to the widest
 * kind so that one comparator serves both. */
typedef struct rec {
    uint8_t suffix[MAX_SUFFIX_BYTES];
    uint32_t value; /* count, or category id in order of first appearance */
    size_t line;    /* 1-based line number: body order, for "first wins" */
} rec;

typedef struct parser {
    br_range_kind kind;
    size_t suffix_hex; /* 35, 27 or 59 */
    size_t width;      /* suffix bytes: 18, 14 or 30 */
    rec *recs;
    size_t n, cap;
    char cats[BR_RANGE_MAX_CATEGORIES][BR_RANGE_CATEGORY_MAX];
    uint8_t cat_len[BR_RANGE_MAX_CATEGORIES];
    size_t n_cats;
    size_t last_cat; /* bodies are usually runs of one category */
    size_t padding;  /* count-0 lines seen */
} parser;

static int bad_line(br_error *err, size_t line, size_t col, const char *what)
{
    if (col)
        return br_error_set(err, -EBADMSG, "range response line %zu, column %zu: %s", line, col,
                            what);
    return br_error_set(err, -EBADMSG, "range response line %zu: %s", line, what);
}

static int intern_category(parser *ps, const char *s, size_t n, uint32_t *id, br_error *err)
{
    if (ps->last_cat < ps->n_cats && ps->cat_len[ps->last_cat] == n &&
        memcmp(ps->cats[ps->last_cat], s, n) == 0) {
        *id = (uint32_t)ps->last_cat;
        return 0;
    }
    for (size_t i = 0; i < ps->n_cats; i++) {
        if (ps->cat_len[i] == n && memcmp(ps->cats[i], s, n) == 0) {
            ps->last_cat = i;
            *id = (uint32_t)i;
            return 0;
        }
    }
    if (ps->n_cats == BR_RANGE_MAX_CATEGORIES)
        return br_error_set(err, -EBADMSG, "range response: more than %d distinct categories",
                            BR_RANGE_MAX_CATEGORIES);
    memcpy(ps->cats[ps->n_cats], s, n);
    ps->cat_len[ps->n_cats] = (uint8_t)n;
    ps->last_cat = ps->n_cats;
    *id = (uint32_t)ps->n_cats++;
    return 0;
}

/* A line whose suffix (s[0..n), BOM removed) has more hex digits than the
 * kind's; a SHA-1 suffix in an NTLM range is named. */
static int suffix_too_long(const parser *ps, const char *s, size_t n, size_t line, br_error *err)
{
    size_t k = 0;
    while (k < n && br_hexval((unsigned char)s[k]) >= 0)
        k++;
    char what[128];
    snprintf(what, sizeof(what), "suffix longer than %zu hex digits%s", ps->suffix_hex,
             ps->kind == BR_RANGE_PASSWORD_NTLM && k == SHA1_SUFFIX_HEX && k < n && s[k] == ':'
                 ? ": this is a SHA-1 range (kind password-sha1)"
                 : "");
    return bad_line(err, line, 0, what);
}

/* The suffix of a line and its ':' (s[0..n), BOM removed; bom: its length,
 * for columns) into r->suffix: the first digit in the low nibble of byte 0,
 * then pairs. Returns the offset of the value after the ':', or an error. */
static long parse_suffix(const parser *ps, const char *s, size_t n, size_t bom, size_t line, rec *r,
                         br_error *err)
{
    size_t i = 0;
    for (; i < n && i < ps->suffix_hex; i++) {
        int v = br_hexval((unsigned char)s[i]);
        if (v < 0) {
            if (s[i] == ':') {
                char what[128];
                snprintf(what, sizeof(what), "suffix too short (%zu hex digits, want %zu)%s", i,
                         ps->suffix_hex,
                         ps->kind == BR_RANGE_PASSWORD_SHA1 && i == NTLM_SUFFIX_HEX
                             ? ": this is an NTLM range (kind password-ntlm)"
                             : "");
                return bad_line(err, line, 0, what);
            }
            return bad_line(err, line, bom + i + 1, "not a hex digit in the suffix");
        }
        if (i == 0)
            r->suffix[0] = (uint8_t)v;
        else if (i & 1)
            r->suffix[(i + 1) / 2] = (uint8_t)(v << 4);
        else
            r->suffix[i / 2] |= (uint8_t)v;
    }
    if (i < ps->suffix_hex) {
        char what[128];
        snprintf(what, sizeof(what), "suffix too short (%zu hex digits, want %zu) and no ':'", i,
                 ps->suffix_hex);
        return bad_line(err, line, 0, what);
    }
    if (i == n)
        return bad_line(err, line, 0, "no ':' after the suffix");
    if (s[i] != ':') {
        if (br_hexval((unsigned char)s[i]) >= 0)
            return suffix_too_long(ps, s, n, line, err);
        return bad_line(err, line, bom + i + 1, "expected ':' after the suffix");
    }
    return (long)i + 1;
}

/* A count value (val[0..vlen), starting at column col+1) into *count. */
static int parse_count(const char *val, size_t vlen, size_t col, size_t line, uint32_t *count,
                       br_error *err)
{
    if (vlen == 0)
        return bad_line(err, line, 0, "missing count");
    uint64_t c = 0;
    for (size_t k = 0; k < vlen; k++) {
        unsigned char ch = (unsigned char)val[k];
        if (ch < '0' || ch > '9')
            return bad_line(err, line, col + k + 1, "count is not a decimal number");
        c = c * 10 + (uint64_t)(ch - '0');
        if (c > UINT32_MAX)
            return bad_line(err, line, 0, "count over 4294967295");
    }
    *count = (uint32_t)c;
    return 0;
}

/* A category value (val[0..vlen), starting at column col+1) into its id. */
static int parse_category(parser *ps, const char *val, size_t vlen, size_t col, size_t line,
                          uint32_t *id, br_error *err)
{
    if (vlen == 0)
        return bad_line(err, line, 0, "missing category");
    for (size_t k = 0; k < vlen; k++) {
        if (k == BR_RANGE_CATEGORY_MAX)
            return bad_line(err, line, 0, "category longer than 32 characters");
        if (!is_category_char((unsigned char)val[k]))
            return bad_line(err, line, col + k + 1, "character not allowed in a category name");
    }
    return intern_category(ps, val, vlen, id, err);
}

static int push_rec(parser *ps, const rec *r, br_error *err)
{
    if (ps->n == ps->cap) {
        size_t ncap = ps->cap ? 2 * ps->cap : 1024;
        rec *nr = reallocarray(ps->recs, ncap, sizeof(rec));
        if (!nr)
            return br_error_set(err, -ENOMEM, "range response: out of memory");
        ps->recs = nr;
        ps->cap = ncap;
    }
    ps->recs[ps->n++] = *r;
    return 0;
}

/* Parse one line (terminator already removed). Accepted real lines are
 * appended to ps->recs; padding only counted. */
static int parse_line(parser *ps, const char *s, size_t n, size_t line, br_error *err)
{
    /* A UTF-8 byte order mark at the start of a line is skipped (columns
     * still count it): the official downloader writes one before every
     * block of lines (docs/upstream.md). */
    size_t bom = 0;
    if (n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
        bom = 3;
        s += 3;
        n -= 3;
    }
    if (n == 0)
        return bad_line(err, line, 0, "empty line");

    rec r;
    memset(r.suffix, 0, sizeof(r.suffix));
    r.line = line;
    r.value = 0;
    long at = parse_suffix(ps, s, n, bom, line, &r, err);
    if (at < 0)
        return (int)at;
    size_t i = (size_t)at;
    int rc;
    if (br_range_kind_counted(ps->kind)) {
        rc = parse_count(s + i, n - i, bom + i, line, &r.value, err);
        if (rc == 0 && r.value == 0) {
            ps->padding++;
            return 0;
        }
    } else {
        rc = parse_category(ps, s + i, n - i, bom + i, line, &r.value, err);
    }
    return rc < 0 ? rc : push_rec(ps, &r, err);
}

static int rec_cmp(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    int c = memcmp(x->suffix, y->suffix, MAX_SUFFIX_BYTES);
    if (c)
        return c;
    return (x->line > y->line) - (x->line < y->line);
}

typedef struct cat_sort {
    const parser *ps;
    uint32_t id;
} cat_sort;

static int cat_cmp(const void *a, const void *b)
{
    const cat_sort *x = a, *y = b;
    size_t lx = x->ps->cat_len[x->id], ly = y->ps->cat_len[y->id];
    int c = memcmp(x->ps->cats[x->id], y->ps->cats[y->id], BR_MIN(lx, ly));
    if (c)
        return c;
    return (lx > ly) - (lx < ly);
}

static void parser_done(parser *ps)
{
    free(ps->recs);
}

/* Every line of the body into ps. */
static int parse_lines(parser *ps, const char *body, size_t len, br_error *err)
{
    size_t pos = 0, line = 0;
    while (pos < len) {
        line++;
        const char *start = body + pos;
        const char *nl = memchr(start, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - start) : len - pos;
        pos += n + (nl ? 1 : 0);
        if (n > 0 && start[n - 1] == '\r')
            n--;
        int rc = parse_line(ps, start, n, line, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Sort by suffix, then body order; merge duplicates in place. Returns the
 * number of records left. */
static size_t merge_duplicates(parser *ps)
{
    if (ps->n > 1)
        qsort(ps->recs, ps->n, sizeof(rec), rec_cmp);
    size_t m = 0;
    for (size_t i = 0; i < ps->n; i++) {
        if (m > 0 && memcmp(ps->recs[m - 1].suffix, ps->recs[i].suffix, MAX_SUFFIX_BYTES) == 0) {
            if (br_range_kind_counted(ps->kind) && ps->recs[i].value > ps->recs[m - 1].value)
                ps->recs[m - 1].value = ps->recs[i].value;
            continue; /* URLs: the first line in body order wins */
        }
        ps->recs[m++] = ps->recs[i];
    }
    return m;
}

/* The category table of a URL range: the categories still used by the m
 * records, sorted by name (rank[id] is a category's place in it). */
typedef struct cat_table {
    uint8_t rank[BR_RANGE_MAX_CATEGORIES];
    cat_sort order[BR_RANGE_MAX_CATEGORIES];
    size_t n_used, len;
} cat_table;

static void category_table(const parser *ps, size_t m, cat_table *t)
{
    bool used[BR_RANGE_MAX_CATEGORIES] = {false};
    memset(t->rank, 0, sizeof(t->rank));
    t->n_used = t->len = 0;
    if (ps->kind != BR_RANGE_URL_SHA256)
        return;
    for (size_t i = 0; i < m; i++)
        used[ps->recs[i].value] = true;
    for (uint32_t id = 0; id < ps->n_cats; id++) {
        if (used[id]) {
            t->order[t->n_used++] = (cat_sort){.ps = ps, .id = id};
            t->len += 1 + ps->cat_len[id];
        }
    }
    qsort(t->order, t->n_used, sizeof(t->order[0]), cat_cmp);
    for (size_t r = 0; r < t->n_used; r++)
        t->rank[t->order[r].id] = (uint8_t)r;
}

/* The range set value (range.h) of the first m records and the table. */
static int encode(const parser *ps, size_t m, const cat_table *t, uint8_t **out_value,
                  size_t *out_len, br_error *err)
{
    size_t vw = br_range_kind_counted(ps->kind) ? 4 : 1;
    size_t recw = ps->width + vw;
    size_t total = BR_RANGE_HEADER_SIZE + m * recw + t->len;
    uint8_t *v = malloc(total);
    if (!v)
        return br_error_set(err, -ENOMEM, "range response: out of memory");
    memcpy(v, range_magic, 4);
    v[4] = (uint8_t)ps->kind;
    v[5] = (uint8_t)ps->width;
    v[6] = (uint8_t)vw;
    v[7] = (uint8_t)t->n_used;
    br_store_le32(v + 8, (uint32_t)m);
    br_store_le32(v + 12, (uint32_t)t->len);
    uint8_t *p = v + BR_RANGE_HEADER_SIZE;
    for (size_t i = 0; i < m; i++) {
        memcpy(p, ps->recs[i].suffix, ps->width);
        if (br_range_kind_counted(ps->kind))
            br_store_le32(p + ps->width, ps->recs[i].value);
        else
            p[ps->width] = t->rank[ps->recs[i].value];
        p += recw;
    }
    for (size_t r = 0; r < t->n_used; r++) {
        uint32_t id = t->order[r].id;
        *p++ = ps->cat_len[id];
        memcpy(p, ps->cats[id], ps->cat_len[id]);
        p += ps->cat_len[id];
    }
    *out_value = v;
    *out_len = total;
    return 0;
}

int br_range_parse(br_range_kind kind, const char *body, size_t len, size_t max_len,
                   uint8_t **out_value, size_t *out_len, br_error *err)
{
    if (!out_value || !out_len || (!body && len > 0))
        return br_error_set(err, -EINVAL, "range response: bad arguments");
    *out_value = NULL;
    *out_len = 0;
    size_t hash_len = br_range_hash_len(kind);
    if (!hash_len)
        return br_error_set(err, -EINVAL, "range response: unknown kind %d", (int)kind);
    if (max_len == 0)
        max_len = BR_RANGE_DEFAULT_MAX_BODY;
    if (len > max_len)
        return br_error_set(err, -EFBIG, "range response body too large (%zu bytes, limit %zu)",
                            len, max_len);

    size_t k = 0;
    while (k < len && (body[k] == '\r' || body[k] == '\n'))
        k++;
    if (k == len) {
        if (kind != BR_RANGE_URL_SHA256)
            return br_error_set(err, -ENODATA, "empty range response body");
        len = 0; /* a URL mirror's answer for a prefix without entries */
    }

    _cleanup_(parser_done) parser ps = {
        .kind = kind,
        .suffix_hex = br_range_suffix_hex(kind),
        .width = hash_len - 2,
    };
    int rc = parse_lines(&ps, body, len, err);
    if (rc < 0)
        return rc;
    size_t m = merge_duplicates(&ps);
    if (m > UINT32_MAX)
        return br_error_set(err, -EFBIG, "range response: too many entries");
    cat_table t;
    category_table(&ps, m, &t);
    return encode(&ps, m, &t, out_value, out_len, err);
}

/* The decoded header of a range set whose sizes add up. */
typedef struct rs_view {
    size_t width, vw, recw;
    uint32_t n, n_cats;
    const uint8_t *entries;
    const uint8_t *table;
    size_t table_len;
} rs_view;

static int rs_open(br_range_kind kind, const uint8_t *value, size_t len, rs_view *rv)
{
    size_t hash_len = br_range_hash_len(kind);
    if (!hash_len || !value || len < BR_RANGE_HEADER_SIZE)
        return -EINVAL;
    if (memcmp(value, range_magic, 4) != 0 || value[4] != (uint8_t)kind)
        return -EINVAL;
    rv->width = hash_len - 2;
    rv->vw = br_range_kind_counted(kind) ? 4 : 1;
    rv->recw = rv->width + rv->vw;
    if (value[5] != rv->width || value[6] != rv->vw)
        return -EINVAL;
    rv->n_cats = value[7];
    rv->n = br_load_le32(value + 8);
    rv->table_len = br_load_le32(value + 12);
    size_t body = len - BR_RANGE_HEADER_SIZE;
    if (rv->table_len > body)
        return -EINVAL;
    size_t ebytes = body - rv->table_len;
    if (ebytes % rv->recw != 0 || ebytes / rv->recw != rv->n)
        return -EINVAL;
    if (br_range_kind_counted(kind)) {
        if (rv->n_cats != 0 || rv->table_len != 0)
            return -EINVAL;
    } else {
        if (rv->table_len < 2 * (size_t)rv->n_cats ||
            rv->table_len > (1 + BR_RANGE_CATEGORY_MAX) * (size_t)rv->n_cats)
            return -EINVAL;
        if (rv->n > 0 && rv->n_cats == 0)
            return -EINVAL;
    }
    rv->entries = value + BR_RANGE_HEADER_SIZE;
    rv->table = rv->entries + ebytes;
    return 0;
}

/* Find category record idx in the table, checking every record passed. */
static int rs_category(const rs_view *rv, size_t idx, const uint8_t **name, size_t *name_len)
{
    if (idx >= rv->n_cats)
        return -EINVAL;
    const uint8_t *p = rv->table, *end = rv->table + rv->table_len;
    for (size_t i = 0;; i++) {
        if (p >= end)
            return -EINVAL;
        size_t l = *p;
        if (l == 0 || l > BR_RANGE_CATEGORY_MAX || (size_t)(end - p) < 1 + l)
            return -EINVAL;
        if (i == idx) {
            for (size_t k = 0; k < l; k++)
                if (!is_category_char(p[1 + k]))
                    return -EINVAL;
            *name = p + 1;
            *name_len = l;
            return 0;
        }
        p += 1 + l;
    }
}

int br_range_lookup(br_range_kind kind, const uint8_t *value, size_t len, const uint8_t *full_hash,
                    uint32_t *count_out, char *category_out)
{
    rs_view rv;
    int rc = rs_open(kind, value, len, &rv);
    if (rc < 0 || !full_hash)
        return -EINVAL;

    uint8_t key[MAX_SUFFIX_BYTES];
    memcpy(key, full_hash + 2, rv.width);
    key[0] &= 0x0F;

    size_t lo = 0, hi = rv.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const uint8_t *e = rv.entries + mid * rv.recw;
        int c = memcmp(e, key, rv.width);
        if (c < 0) {
            lo = mid + 1;
        } else if (c > 0) {
            hi = mid;
        } else {
            if (br_range_kind_counted(kind)) {
                uint32_t count = br_load_le32(e + rv.width);
                if (count == 0)
                    return -EINVAL;
                if (count_out)
                    *count_out = count;
                if (category_out)
                    category_out[0] = '\0';
            } else {
                const uint8_t *name;
                size_t name_len;
                rc = rs_category(&rv, e[rv.width], &name, &name_len);
                if (rc < 0)
                    return rc;
                if (count_out)
                    *count_out = 1;
                if (category_out) {
                    memcpy(category_out, name, name_len);
                    category_out[name_len] = '\0';
                }
            }
            return 1;
        }
    }
    return 0;
}

int br_range_validate(br_range_kind kind, const uint8_t *value, size_t len, uint32_t *n_entries)
{
    rs_view rv;
    int rc = rs_open(kind, value, len, &rv);
    if (rc < 0)
        return rc;

    /* Category table: exactly n_cats well-formed records, strictly ascending. */
    const uint8_t *p = rv.table, *end = rv.table + rv.table_len;
    const uint8_t *prev = NULL;
    size_t prev_len = 0;
    for (size_t i = 0; i < rv.n_cats; i++) {
        const uint8_t *name;
        size_t l;
        if (p >= end)
            return -EINVAL;
        l = *p;
        if (l == 0 || l > BR_RANGE_CATEGORY_MAX || (size_t)(end - p) < 1 + l)
            return -EINVAL;
        name = p + 1;
        for (size_t k = 0; k < l; k++)
            if (!is_category_char(name[k]))
                return -EINVAL;
        if (prev) {
            int c = memcmp(prev, name, BR_MIN(prev_len, l));
            if (c > 0 || (c == 0 && prev_len >= l))
                return -EINVAL;
        }
        prev = name;
        prev_len = l;
        p += 1 + l;
    }
    if (p != end)
        return -EINVAL;

    for (size_t i = 0; i < rv.n; i++) {
        const uint8_t *e = rv.entries + i * rv.recw;
        if (e[0] & 0xF0)
            return -EINVAL;
        if (i > 0 && memcmp(e - rv.recw, e, rv.width) >= 0)
            return -EINVAL;
        if (br_range_kind_counted(kind)) {
            if (br_load_le32(e + rv.width) == 0)
                return -EINVAL;
        } else if (e[rv.width] >= rv.n_cats) {
            return -EINVAL;
        }
    }
    if (n_entries)
        *n_entries = rv.n;
    return 0;
}
