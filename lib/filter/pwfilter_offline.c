/* SPDX-License-Identifier: MIT */
/* Offline binary fuse filters (algorithm binary-fuse-offline,
 * docs/filter-format.md): the params and code table of a file, and the
 * lookups that answer a hit with its count or category (pwfilter.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "filter_writer.h"
#include "pwfilter_int.h"

/* The code table: at the payload's start, counts or category names. */
static uint64_t codes_bytes(const br_pwfilter_build_opts *o)
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
    br_store_le64(p + BR_PWP_OFF_CODES_SIZE, codes_bytes(o));
    br_store_le64(p + BR_PWP_OFF_MIN_COUNT, o->min_count);
}

int br_pwo_write_codes(const br_pwfilter_build_opts *o, br_filter_writer *w, uint64_t *offset,
                       br_error *err)
{
    uint8_t raw[BR_CATEGORY_MAX * BR_CATEGORY_ENTRY_BYTES > BR_COUNT_TABLE_BYTES
                    ? BR_CATEGORY_MAX * BR_CATEGORY_ENTRY_BYTES
                    : BR_COUNT_TABLE_BYTES];
    if (!o->counts && (!o->categories || o->categories->count == 0))
        return br_error_set(err, -EINVAL, "an offline URL filter needs at least one category");
    if (o->counts)
        br_count_codes_encode(o->counts, raw);
    else
        br_category_table_encode(o->categories, raw);
    *offset = br_filter_writer_offset(w);
    return br_filter_writer_write(w, raw, codes_bytes(o), err);
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
    return br_category_table_decode(raw, ncodes, &x->cats, err);
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
    for (size_t i = BR_PWP_OFF_END; i < BR_FILTER_PARAMS_SIZE; i++)
        if (p[i])
            return br_error_set(err, -EINVAL, "reserved param byte %zu is not zero", i);
    if (p[3] != 0)
        return br_error_set(err, -EINVAL, "reserved param byte 3 is not zero");
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
    for (; pf; pf = pf->next) {
        if (!pf->offline)
            continue;
        uint8_t code = br_bfuse_code(shard_of(pf, key), key);
        /* a code past a member's table is a false positive's */
        if (code && pf->offline->code_kind == BR_CODES_CATEGORIES && code > pf->offline->cats.count)
            code = 0;
        if (code) {
            *member = pf;
            return code;
        }
    }
    return 0;
}

int br_pwfilter_lookup_count(const br_pwfilter *pf, const uint8_t *hash, uint64_t *count)
{
    if (!pf->offline || pf->offline->code_kind != BR_CODES_COUNTS)
        return -ENOTSUP;
    const br_pwfilter *m = NULL;
    uint8_t code = br_pwfilter_code(pf, br_hash_key64(hash), &m);
    /* probe first, then the flag: a faulted probe read zeros */
    if (br_pwfilter_damaged(pf))
        return -EIO;
    if (!code)
        return 0;
    *count = br_count_of_code(&m->offline->counts, code);
    return 1;
}

int br_pwfilter_lookup_category(const br_pwfilter *pf, const uint8_t sha256[32],
                                const char **category)
{
    if (!pf->offline || pf->offline->code_kind != BR_CODES_CATEGORIES)
        return -ENOTSUP;
    const br_pwfilter *m = NULL;
    uint8_t code = br_pwfilter_code(pf, br_hash_key64(sha256), &m);
    if (br_pwfilter_damaged(pf))
        return -EIO;
    if (!code)
        return 0;
    *category = br_category_name(&m->offline->cats, code);
    return 1;
}

/* One member's codes for the keys still 0, their slots prefetched a block
 * ahead so that the cache misses of a block overlap. */
static void member_codes(const br_pwfilter *pf, const uint64_t *keys, size_t n, uint8_t *codes,
                         const br_pwfilter **members)
{
    enum { BLOCK = 16 };
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t k = BR_MIN((size_t)BLOCK, n - i);
        for (size_t j = 0; j < k; j++)
            if (!codes[i + j])
                br_bfuse_prefetch(shard_of(pf, keys[i + j]), keys[i + j]);
        for (size_t j = 0; j < k; j++) {
            if (codes[i + j])
                continue;
            uint8_t c = br_bfuse_code(shard_of(pf, keys[i + j]), keys[i + j]);
            if (c && pf->offline->code_kind == BR_CODES_CATEGORIES && c > pf->offline->cats.count)
                c = 0;
            codes[i + j] = c;
            members[i + j] = pf;
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
