/* SPDX-License-Identifier: MIT */
/* Offline binary fuse filters (algorithm binary-fuse-offline,
 * docs/filter-format.md): the params and code table of a file, and the
 * lookups that answer a hit with its count or category (pwfilter.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bfuse_int.h"
#include "core/br_assert.h"
#include "pwfilter_int.h"

/* The code table: at the payload's start, counts or category names. */
uint64_t br_pwo_codes_bytes(const br_pwfilter_build_opts *o)
{
    return o->counts ? BR_COUNT_TABLE_BYTES
                     : (uint64_t)o->categories->count * BR_CATEGORY_ENTRY_BYTES;
}

void br_pwo_header(const br_pwfilter_build_opts *o, uint8_t *p, uint64_t codes_offset)
{
    p[BR_PWP_OFF_FP_BITS] = 24;
    p[BR_PWP_OFF_CODE_BITS] = 8;
    p[BR_PWP_OFF_CODE_KIND] = o->counts ? BR_CODES_COUNTS : BR_CODES_CATEGORIES;
    p[BR_PWP_OFF_DOMAIN_LABELS] = o->counts ? 0 : (uint8_t)o->max_domain_labels;
    br_store_le32(p + BR_PWP_OFF_CODE_COUNT, o->counts ? 255 : o->categories->count);
    br_store_le32(p + BR_PWP_OFF_RATIO_PPM, o->counts ? o->counts->ratio_ppm : 0);
    br_store_le64(p + BR_PWP_OFF_CODES_OFFSET, codes_offset);
    br_store_le64(p + BR_PWP_OFF_CODES_SIZE, br_pwo_codes_bytes(o));
    br_store_le64(p + BR_PWP_OFF_MIN_COUNT, o->min_count);
    if (!o->counts) {
        br_store_le32(p + BR_PWP_OFF_EXACT_ALLOW, (uint32_t)o->n_allow);
        br_store_le32(p + BR_PWP_OFF_EXACT_REMOVED, (uint32_t)o->n_removed);
    }
    p[BR_PWP_OFF_CHECK_BITS] = br_pwo_checked(o) ? BR_PWO_CHECK_BITS : 0;
}

bool br_pwo_checked(const br_pwfilter_build_opts *o)
{
    return !o->counts && !o->no_check;
}

/* A second 64-bit mix (splitmix64's finalizer, not the filters' fmix64) of
 * the key XOR a constant: the check filter hashes it again with its own
 * seed, so that its answer for a key that is not a member is independent
 * of the first filter's. A bijection: distinct keys stay distinct. */
uint64_t br_pwo_check_key(uint64_t key)
{
    uint64_t z = key ^ BR_PWO_CHECK_SEED_BASE;
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

bool br_pwo_check(const br_pwfilter *pf, uint64_t key)
{
    if (!pf->checks)
        return true;
    const br_bfuse *c = &pf->checks[pf->shard_bits ? key >> (64 - pf->shard_bits) : 0];
    return bfuse_contains_inline(c, BR_PWO_CHECK_BITS / 8, br_pwo_check_key(key));
}

bool br_pwo_quick(const br_pwfilter_build_opts *o)
{
    return br_pwo_checked(o) && (o->quick || o->xxh3_keys);
}

bool br_pwo_exact(const br_pwfilter_build_opts *o)
{
    return !o->counts && (o->n_allow || o->n_removed);
}

int br_pwo_split(const br_pwfilter_build_opts *o, const uint64_t *pairs, size_t n, uint64_t *keys,
                 uint8_t *codes)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t key = pairs[2 * i], v = pairs[2 * i + 1];
        if (o->counts) {
            if (v == 0 || v >= o->counts->bound[256])
                return -ERANGE;
            codes[i] = br_count_code(o->counts, v);
        } else {
            if (v == 0 || v > o->categories->count)
                return -ERANGE;
            codes[i] = (uint8_t)v;
        }
        keys[i] = key; /* i <= 2i: the pairs not yet read stay intact */
    }
    return 0;
}

/* Strictly ascending full keys: what the exact table's binary search needs. */
bool br_pwo_keys_sorted(const uint8_t (*k)[32], size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (memcmp(k[i - 1], k[i], 32) >= 0)
            return false;
    return true;
}

/* The exact table after the code table: in the file, sorted, and only in
 * a file of key encoding v3. */
static int read_exact(br_pwfilter *pf, br_pwo *x, const uint8_t *p, br_error *err)
{
    const br_filter_header *h = br_filter_file_header(pf->file);
    x->n_allow = br_load_le32(p + BR_PWP_OFF_EXACT_ALLOW);
    x->n_removed = br_load_le32(p + BR_PWP_OFF_EXACT_REMOVED);
    uint64_t bytes = 32 * ((uint64_t)x->n_allow + x->n_removed);
    if (bytes && h->key_encoding_version < 3)
        return br_error_set(err, -EINVAL,
                            "param exact_allow_count/exact_removed_count: %u/%u, but key encoding "
                            "v%u has no exact table (v3 has)",
                            x->n_allow, x->n_removed, h->key_encoding_version);
    if (bytes > br_filter_file_size(pf->file) - x->codes_end)
        return br_error_set(err, -EINVAL, "exact table: %u + %u keys at offset %llu out of range",
                            x->n_allow, x->n_removed, (unsigned long long)x->codes_end);
    x->allow = br_filter_file_data(pf->file) + x->codes_end;
    x->removed = x->allow + 32 * (size_t)x->n_allow;
    if (!br_pwo_keys_sorted((const uint8_t(*)[32])x->allow, x->n_allow) ||
        !br_pwo_keys_sorted((const uint8_t(*)[32])x->removed, x->n_removed))
        return br_error_set(err, -EINVAL, "exact table: keys not sorted ascending and distinct");
    x->codes_end += bytes;
    return 0;
}

static int read_codes(br_pwfilter *pf, br_pwo *x, const uint8_t *p, br_error *err)
{
    const br_filter_header *h = br_filter_file_header(pf->file);
    uint32_t ncodes = br_load_le32(p + BR_PWP_OFF_CODE_COUNT);
    uint64_t off = br_load_le64(p + BR_PWP_OFF_CODES_OFFSET);
    uint64_t size = br_load_le64(p + BR_PWP_OFF_CODES_SIZE);
    uint64_t want = x->code_kind == BR_CODES_COUNTS ? BR_COUNT_TABLE_BYTES
                                                    : (uint64_t)ncodes * BR_CATEGORY_ENTRY_BYTES;
    if (x->code_kind == BR_CODES_COUNTS && ncodes != 255)
        return br_error_set(err, -EINVAL, "param code_count: %u, expected 255", ncodes);
    if (x->code_kind == BR_CODES_CATEGORIES && (ncodes == 0 || ncodes > BR_CATEGORY_MAX))
        return br_error_set(err, -EINVAL, "param code_count: %u categories, expected 1..%d", ncodes,
                            BR_CATEGORY_MAX);
    if (off != h->payload_offset || size != want || size > br_filter_file_size(pf->file) - off)
        return br_error_set(err, -EINVAL, "param code_table_offset/size %llu/%llu out of range",
                            (unsigned long long)off, (unsigned long long)size);
    x->codes_end = off + size;
    const uint8_t *raw = br_filter_file_data(pf->file) + off;
    if (x->code_kind == BR_CODES_COUNTS)
        return br_count_codes_decode(raw, &x->counts, err);
    int r = br_category_table_decode(raw, ncodes, &x->cats, err);
    for (unsigned c = 1; r >= 0 && c <= x->cats.count; c++)
        if (strcmp(br_category_name(&x->cats, (uint8_t)c), BR_URL_ALLOW_CATEGORY) == 0)
            x->allow_code = (uint8_t)c;
    return r < 0 ? r : read_exact(pf, x, p, err);
}

int br_pwo_read(br_pwfilter *pf, br_error *err)
{
    const br_filter_header *h = br_filter_file_header(pf->file);
    const uint8_t *p = h->params;
    br_pwo *x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    pf->offline = x;
    if (p[BR_PWP_OFF_FP_BITS] != 24 || p[BR_PWP_OFF_CODE_BITS] != 8)
        return br_error_set(err, -EINVAL, "param fingerprint_bits/code_bits: %u/%u, expected 24/8",
                            p[BR_PWP_OFF_FP_BITS], p[BR_PWP_OFF_CODE_BITS]);
    x->code_kind = p[BR_PWP_OFF_CODE_KIND];
    bool url = h->kind == BR_KIND_URL_SHA256;
    if (x->code_kind != (url ? BR_CODES_CATEGORIES : BR_CODES_COUNTS))
        return br_error_set(err, -EINVAL, "param code_kind: %u, expected %d for kind %s",
                            x->code_kind, url ? BR_CODES_CATEGORIES : BR_CODES_COUNTS,
                            br_filter_kind_name(h->kind));
    x->max_domain_labels = p[BR_PWP_OFF_DOMAIN_LABELS];
    if (x->max_domain_labels > 127 || (!url && x->max_domain_labels))
        return br_error_set(err, -EINVAL, "param max_domain_labels: %u out of range",
                            x->max_domain_labels);
    x->ratio_ppm = br_load_le32(p + BR_PWP_OFF_RATIO_PPM);
    if (url ? x->ratio_ppm != 0 : x->ratio_ppm < 1000000 || x->ratio_ppm > 1100000)
        return br_error_set(err, -EINVAL, "param count_ratio_ppm: %u out of range", x->ratio_ppm);
    x->min_count = br_load_le64(p + BR_PWP_OFF_MIN_COUNT);
    for (size_t i = url ? BR_PWP_OFF_END : BR_PWP_OFF_EXACT_ALLOW; i < BR_FILTER_PARAMS_SIZE; i++)
        if (p[i])
            return br_error_set(err, -EINVAL, "reserved param byte %zu is not zero", i);
    unsigned check = p[BR_PWP_OFF_CHECK_BITS], want = url && h->key_encoding_version >= 4 ? 16 : 0;
    if (check != want)
        return br_error_set(err, -EINVAL, "param check_bits: %u, expected %u for key encoding v%u",
                            check, want, h->key_encoding_version);
    x->check_bits = check;
    return read_codes(pf, x, p, err);
}

bool br_pwfilter_offline(const br_pwfilter *pf)
{
    return pf && pf->offline;
}

const br_pwo *br_pwfilter_offline_info(const br_pwfilter *pf)
{
    return pf ? pf->offline : NULL;
}

static inline const br_bfuse *shard_of(const br_pwfilter *pf, uint64_t key)
{
    return &pf->shards[pf->shard_bits ? key >> (64 - pf->shard_bits) : 0];
}

uint8_t br_pwfilter_code(const br_pwfilter *pf, uint64_t key, const br_pwfilter **member)
{
    uint8_t found = 0;
    for (; pf; pf = pf->next) { /* base first: a later member's code wins */
        if (!pf->offline)
            continue;
        uint8_t code = br_bfuse_code(shard_of(pf, key), key);
        /* a code past a member's table is a false positive's */
        if (code && pf->offline->code_kind == BR_CODES_CATEGORIES && code > pf->offline->cats.count)
            code = 0;
        if (code && !br_pwo_check(pf, key))
            code = 0;
        if (code) {
            *member = pf;
            found = code;
        }
    }
    return found;
}

bool br_pwfilter_count_same(const br_pwfilter *pf, uint64_t key, uint64_t count)
{
    const br_pwfilter *m = NULL;
    uint8_t code = br_pwfilter_code(pf, key, &m);
    if (!code || m->offline->code_kind != BR_CODES_COUNTS)
        return false;
    /* past the member's table: a delta's own table holds it better */
    return count < m->offline->counts.bound[256] &&
           br_count_code(&m->offline->counts, count) == code;
}

/* br_pwfilter_damaged, without its loop for a set of one file. */
static inline bool set_damaged(const br_pwfilter *pf)
{
    return pf->next ? br_pwfilter_damaged(pf) : br_filter_file_damaged(pf->file);
}

/* The code of a set of one member that holds counts: br_pwfilter_code
 * without its loop, checks or calls (a count file has no category table
 * to bound and no check filter, and its shards hold 32-bit slots: see
 * br_pwo_read). Most sets are one file, and a lookup on its own costs
 * its instructions as much as its reads. */
static inline uint8_t lone_count_code(const br_pwfilter *pf, uint64_t key)
{
    return bfuse_code_inline(shard_of(pf, key), key);
}

int br_pwfilter_lookup_count(const br_pwfilter *pf, const uint8_t *hash, uint64_t *count)
{
    if (!pf->offline || pf->offline->code_kind != BR_CODES_COUNTS)
        return -ENOTSUP;
    const br_pwfilter *m = pf;
    uint64_t key = br_hash_key64(hash);
    uint8_t code = pf->next ? br_pwfilter_code(pf, key, &m) : lone_count_code(pf, key);
    /* probe first, then the flag: a faulted probe read zeros */
    if (set_damaged(pf))
        return -EIO;
    if (!code)
        return 0;
    *count = br_count_of_code(&m->offline->counts, code);
    return 1;
}

static int cmp_key(const void *a, const void *b)
{
    return memcmp(a, b, 32);
}

static bool exact_has(const uint8_t *keys, uint32_t n, const uint8_t sha256[32])
{
    return n && bsearch(sha256, keys, n, 32, cmp_key);
}

void br_url_probe_init(br_url_probe *p, const char *expr, size_t len)
{
    p->expr = expr;
    p->len = len;
    p->xxh3 = br_xxh3_64(expr, len);
    p->has_xxh3 = true;
    p->hashed = false;
}

void br_url_probe_hashed(br_url_probe *p, const uint8_t sha256[BR_SHA256_LEN], uint64_t xxh3,
                         bool has_xxh3)
{
    p->expr = NULL;
    p->len = 0;
    p->xxh3 = xxh3;
    p->has_xxh3 = has_xxh3;
    p->hashed = true;
    memcpy(p->sha256, sha256, BR_SHA256_LEN);
}

/* The probe's SHA-256, computed once. */
static int probe_sha256(br_url_probe *p)
{
    if (p->hashed)
        return 0;
    if (br_fails_assert(p->expr)) /* a probe of hashes only is hashed */
        return -EINVAL;
    int r = br_sha256(p->expr, p->len, p->sha256);
    p->hashed = r >= 0;
    return r;
}

/* A member's word on an expression: none, removed, listed (its code; 0 for
 * an allow entry), or an error (*err). */
enum { WORD_ERROR = -2, WORD_NONE = -1, WORD_REMOVED = 0, WORD_LISTED = 1 };

/* The fingerprints' word on a 64-bit key: listed with a category's code,
 * or none. */
static inline __attribute__((always_inline)) int fingerprint_word(const br_pwfilter *m,
                                                                  uint64_t key, uint8_t *code)
{
    const br_pwo *x = m->offline;
    uint8_t c = bfuse_code_inline(shard_of(m, key), key);
    /* 0 or past the table; a fingerprint never says allow */
    if (c == 0 || c > x->cats.count || c == x->allow_code)
        return WORD_NONE;
    if (!br_pwo_check(m, key))
        return WORD_NONE; /* 24 bits matched by chance; the check filter's 16 did not */
    *code = c;
    return WORD_LISTED;
}

/* The exact table's word, from the SHA-256: a removal (only asked when
 * an earlier member lists the expression: else it takes nothing away),
 * an allow entry, or none. */
static int exact_word(const br_pwfilter *m, br_url_probe *p, bool removal, uint8_t *code, int *err)
{
    const br_pwo *x = m->offline;
    if ((*err = probe_sha256(p)) < 0)
        return WORD_ERROR;
    if (removal && exact_has(x->removed, x->n_removed, p->sha256))
        return WORD_REMOVED;
    if (!exact_has(x->allow, x->n_allow, p->sha256))
        return WORD_NONE;
    *code = 0;
    return WORD_LISTED;
}

static inline bool quick_maybe(const br_pwfilter *m, uint64_t xxh3)
{
    return bfuse_contains_inline(&m->quick, BR_PWO_QUICK_BITS / 8, xxh3);
}

/* Key encoding v6: the fingerprints by XXH3; the exact table only where
 * the quick filter (its allow entries' XXH3s) says maybe, or for a
 * removal of what an earlier member lists. */
static inline __attribute__((always_inline)) int
member_word_xxh3(const br_pwfilter *m, br_url_probe *p, bool listed, uint8_t *code, int *err)
{
    const br_pwo *x = m->offline;
    if (!p->has_xxh3) {
        *err = -ENOTSUP;
        return WORD_ERROR;
    }
    bool removal = listed && x->n_removed;
    if (removal || (x->n_allow && quick_maybe(m, p->xxh3))) {
        int w = exact_word(m, p, removal, code, err);
        if (w != WORD_NONE)
            return w;
    }
    return fingerprint_word(m, p->xxh3, code);
}

/* One member's word on an expression (docs/filter-format.md, "The quick
 * filter", "The exact table"); listed: whether an earlier member lists
 * it. v1..v5 key by SHA-256: computed unless a v5 quick filter says the
 * member holds neither a fingerprint nor an allow entry of it and it has
 * no removal to check. */
static inline __attribute__((always_inline)) int member_word(const br_pwfilter *m, br_url_probe *p,
                                                             bool listed, uint8_t *code, int *err)
{
    const br_pwo *x = m->offline;
    if (x->xxh3_keys)
        return member_word_xxh3(m, p, listed, code, err);
    bool held = !m->has_quick || !p->has_xxh3 || quick_maybe(m, p->xxh3);
    bool removal = listed && x->n_removed;
    if (!held && !removal)
        return WORD_NONE;
    int w = exact_word(m, p, removal, code, err);
    if (w != WORD_NONE || !held)
        return w;
    return fingerprint_word(m, br_hash_key64(p->sha256), code);
}

/* The set's word on p: found (1, *code) or not (0), or an error. */
static inline __attribute__((always_inline)) int set_word(const br_pwfilter *pf, br_url_probe *p,
                                                          uint8_t *code)
{
    int found = 0, err = 0;
    for (const br_pwfilter *m = pf; m; m = m->next) { /* base first: a later member overrides */
        uint8_t c = 0;
        int w = m->offline ? member_word(m, p, found > 0, &c, &err) : WORD_NONE;
        if (w == WORD_ERROR)
            return err;
        if (w >= 0) {
            found = w;
            *code = c;
        }
    }
    return found;
}

static bool url_set(const br_pwfilter *pf)
{
    return pf->offline && pf->offline->code_kind == BR_CODES_CATEGORIES;
}

int br_pwfilter_lookup_code(const br_pwfilter *pf, br_url_probe *p, uint8_t *code)
{
    if (!url_set(pf))
        return -ENOTSUP;
    int found = set_word(pf, p, code);
    if (set_damaged(pf)) /* probe first, then the flag: a faulted probe read zeros */
        return -EIO;
    return found;
}

int br_pwfilter_lookup_codes(const br_pwfilter *pf, br_url_probe *p, size_t n, bool *found,
                             uint8_t *code)
{
    if (!url_set(pf))
        return -ENOTSUP;
    for (size_t i = 0; i < n; i++) {
        int r = set_word(pf, &p[i], &code[i]);
        if (r < 0)
            return r;
        found[i] = r > 0;
    }
    return set_damaged(pf) ? -EIO : 0;
}

int br_pwfilter_lookup_category(const br_pwfilter *pf, br_url_probe *p, const char **category)
{
    uint8_t code = 0;
    int r = br_pwfilter_lookup_code(pf, p, &code);
    if (r > 0) /* a code names the same category in every member */
        *category =
            code ? br_category_name(br_pwfilter_categories(pf), code) : BR_URL_ALLOW_CATEGORY;
    return r;
}

bool br_pwfilter_url_fuse_allow(const br_pwfilter *pf)
{
    for (; pf; pf = pf->next) {
        const br_filter_header *h = br_filter_file_header(pf->file);
        if (pf->offline && pf->offline->code_kind == BR_CODES_CATEGORIES &&
            h->key_encoding_version < 3 && pf->offline->allow_code)
            return true;
    }
    return false;
}

/* One member's codes over those of the members before it (the newest
 * member's count wins: a delta raises counts), the slots prefetched a
 * block ahead so that the cache misses of a block overlap. */
static void member_codes(const br_pwfilter *pf, const uint64_t *keys, size_t n, uint8_t *codes,
                         const br_pwfilter **members)
{
    enum { BLOCK = 16 };
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t k = BR_MIN((size_t)BLOCK, n - i);
        for (size_t j = 0; j < k; j++)
            br_bfuse_prefetch(shard_of(pf, keys[i + j]), keys[i + j]);
        for (size_t j = 0; j < k; j++) {
            uint8_t c = br_bfuse_code(shard_of(pf, keys[i + j]), keys[i + j]);
            if (c && pf->offline->code_kind == BR_CODES_CATEGORIES && c > pf->offline->cats.count)
                c = 0;
            if (c) {
                codes[i + j] = c;
                members[i + j] = pf;
            }
        }
    }
}

int br_pwfilter_count_batch(const br_pwfilter *pf, const uint64_t *keys, size_t n, uint64_t *counts)
{
    if (!pf->offline || pf->offline->code_kind != BR_CODES_COUNTS)
        return -ENOTSUP;
    enum { CHUNK = 256 };
    uint8_t codes[CHUNK];
    const br_pwfilter *members[CHUNK];
    for (size_t i = 0; i < n; i += CHUNK) {
        size_t k = BR_MIN((size_t)CHUNK, n - i);
        memset(codes, 0, k);
        for (const br_pwfilter *m = pf; m; m = m->next)
            member_codes(m, keys + i, k, codes, members);
        for (size_t j = 0; j < k; j++)
            counts[i + j] = codes[j] ? br_count_of_code(&members[j]->offline->counts, codes[j]) : 0;
    }
    return br_pwfilter_damaged(pf) ? -EIO : 0;
}

unsigned br_pwfilter_max_domain_labels(const br_pwfilter *pf)
{
    unsigned m = 0;
    for (; pf; pf = pf->next)
        if (pf->offline)
            m = BR_MAX(m, pf->offline->max_domain_labels);
    return m;
}
