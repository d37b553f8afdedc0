/* SPDX-License-Identifier: MIT */
/* The password filter (binary fuse, algorithms 3 and 4): a file's params,
 * shard table and probes, and sets of a base and its deltas and layered
 * files (filter_delta.h); the sharded build is builder/pwfilter_build.c. An offline member's codes
 * are pwfilter_offline.c's. Layout in docs/filter-format.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter_set.h"
#include "pwfilter_int.h"
/* Open a layered file's layers as one set (takes ownership of file). */
static int br_pwfilter_from_layers(br_filter_file *file, br_pwfilter **out, br_error *err);
/* The query path of a range filter's member and of an offline one (below). */
static const br_pwfilter_ops range_ops, offline_ops;

#include "pwfilter_layout.h"

unsigned br_pwfilter_shard_bits(uint64_t n, uint64_t target)
{
    unsigned bits = 0;
    while (bits < MAX_SHARD_BITS && (n >> bits) > target)
        bits++;
    return bits;
}

/* ---- reading ---- */

void br_pwfilter_free(br_pwfilter *pf)
{
    while (pf) {
        br_pwfilter *next = pf->next;
        br_filter_file *outer = pf->outer;
        br_filter_file_free(pf->file);
        free(pf->shards);
        free(pf->checks);
        free(pf->offline);
        br_filter_names_fini(&pf->names);
        free(pf);
        pf = next;
        /* A layered file's views (the members) go before their container. */
        if (outer) {
            br_pwfilter_free(pf);
            br_filter_file_free(outer);
            return;
        }
    }
}

/* Shard i's entry e into f (of fp_bits: the shards', or the check filters'
 * of check_entry below). */
static int read_entry(const br_pwfilter *pf, br_bfuse *f, unsigned fp_bits, uint32_t i,
                      const uint8_t *e, uint64_t table_offset, uint64_t *key_sum, br_error *err)
{
    const br_filter_header *h = br_filter_file_header(pf->file);
    uint32_t keys = br_load_le32(e + E_KEY_COUNT);
    int r = br_bfuse_layout(f, pf->arity, fp_bits, keys);
    if (r < 0)
        return br_error_set(err, -EINVAL, "shard %u: key_count %u out of range", i, keys);
    /* The array size is a pure function of the key count; the segment
     * geometry may differ (construction can fall back to half-length
     * segments over the same array) but must be consistent, which
     * br_bfuse_check() proves, so a file cannot steer a query outside its
     * array. */
    if (br_load_le32(e + E_ARRAY_LENGTH) != f->array_length)
        return br_error_set(err, -EINVAL, "shard %u: array_length %u does not match key_count %u",
                            i, br_load_le32(e + E_ARRAY_LENGTH), keys);
    f->segment_length = br_load_le32(e + E_SEGMENT_LENGTH);
    f->segment_count_length = br_load_le32(e + E_SEGMENT_COUNT_LENGTH);
    f->seed = br_load_le64(e + E_SEED);
    uint64_t off = br_load_le64(e + E_FP_OFFSET);
    uint64_t bytes = br_bfuse_bytes(f);
    if (off < h->payload_offset || off > table_offset || bytes > table_offset - off)
        return br_error_set(err, -EINVAL, "shard %u: fingerprint array offset %llu out of range", i,
                            (unsigned long long)off);
    f->fingerprints = br_filter_file_data(pf->file) + off;
    if (br_bfuse_check(f) < 0)
        return br_error_set(err, -EINVAL, "shard %u: inconsistent filter parameters", i);
    *key_sum += keys;
    return 0;
}

static int check_entry(const br_pwfilter *pf, uint32_t i, const uint8_t *e, uint64_t table_offset,
                       uint64_t *key_sum, br_error *err)
{
    return read_entry(pf, &pf->shards[i], pf->fp_bits, i, e, table_offset, key_sum, err);
}

/* The check filters' table, after the shards' (docs/filter-format.md, "The
 * check filter"): one per shard, over as many keys as it. */
static int read_checks(br_pwfilter *pf, const uint8_t *table, uint64_t table_offset, br_error *err)
{
    pf->checks = calloc(pf->shard_count, sizeof(br_bfuse));
    if (!pf->checks)
        return -ENOMEM;
    for (uint32_t i = 0; i < pf->shard_count; i++) {
        uint64_t keys = 0;
        int r = read_entry(pf, &pf->checks[i], BR_PWO_CHECK_BITS, i,
                           table + ((size_t)pf->shard_count + i) * ENTRY_SIZE, table_offset, &keys,
                           err);
        if (r < 0)
            return br_error_prefix(err, r, "check filter");
        if (keys != br_load_le32(table + (size_t)i * ENTRY_SIZE + E_KEY_COUNT))
            return br_error_set(err, -EINVAL,
                                "check filter of shard %u: key_count %llu, but the shard holds %u",
                                i, (unsigned long long)keys,
                                br_load_le32(table + (size_t)i * ENTRY_SIZE + E_KEY_COUNT));
    }
    return 0;
}

/* The quick filter's entry, after the check filters' table (docs/filter-format.md,
 * "The quick filter"): not empty when the file holds what it covers (key
 * encoding v5: a key or an allow entry; v6: an allow entry). Its keys
 * are the expressions', which may outnumber the 64-bit keys (two expressions
 * whose SHA-256 share 8 bytes are one key), so no upper bound but the filter's. */
static int read_quick(br_pwfilter *pf, const uint8_t *e, uint64_t table_offset, br_error *err)
{
    const br_filter_header *h = br_filter_file_header(pf->file);
    const br_pwo *x = pf->offline;
    uint64_t keys = 0, held = x->xxh3_keys ? x->n_allow : h->key_count + x->n_allow;
    int r = read_entry(pf, &pf->quick, BR_PWO_QUICK_BITS, 0, e, table_offset, &keys, err);
    if (r < 0)
        return br_error_prefix(err, r, "quick filter");
    if (keys == 0 && held > 0)
        return br_error_set(err, -EINVAL,
                            "quick filter: key_count 0, but the file holds %llu expressions",
                            (unsigned long long)held);
    if (x->xxh3_keys && keys > held) /* as a v5 file's, labelled v6 */
        return br_error_set(err, -EINVAL,
                            "quick filter: key_count %llu, but key encoding v6 holds there its "
                            "%llu allow entries at most",
                            (unsigned long long)keys, (unsigned long long)held);
    pf->has_quick = true;
    pf->offline->quick_keys = (uint32_t)keys;
    return 0;
}

/* The shard table at table_offset (and the check filters' after it, then
 * the quick filter's entry), which ends the file. */
static int read_tables(br_pwfilter *pf, uint64_t table_offset, bool checked, bool quick,
                       br_error *err)
{
    const br_filter_header *h = br_filter_file_header(pf->file);
    uint64_t size = br_filter_file_size(pf->file);
    uint64_t table_bytes =
        (uint64_t)pf->shard_count * ENTRY_SIZE * (checked ? 2 : 1) + (quick ? ENTRY_SIZE : 0);
    if (table_offset < h->payload_offset || table_offset > size ||
        size - table_offset != table_bytes)
        return br_error_set(err, -EINVAL, "param shard_table_offset: %llu out of range",
                            (unsigned long long)table_offset);
    pf->shards = calloc(pf->shard_count, sizeof(br_bfuse));
    if (!pf->shards)
        return -ENOMEM;
    const uint8_t *table = br_filter_file_data(pf->file) + table_offset;
    uint64_t key_sum = 0;
    for (uint32_t i = 0; i < pf->shard_count; i++) {
        int r = check_entry(pf, i, table + (size_t)i * ENTRY_SIZE, table_offset, &key_sum, err);
        if (r < 0)
            return r;
    }
    if (key_sum != h->key_count)
        return br_error_set(err, -EINVAL, "field key_count: %llu, but the shards hold %llu",
                            (unsigned long long)h->key_count, (unsigned long long)key_sum);
    int r = checked ? read_checks(pf, table, table_offset, err) : 0;
    if (r >= 0 && quick)
        r = read_quick(pf, table + (size_t)pf->shard_count * 2 * ENTRY_SIZE, table_offset, err);
    return r;
}

int br_pwfilter_from_file(br_filter_file *file, br_pwfilter **out, br_error *err)
{
    _cleanup_(br_pwfilter_freep) br_pwfilter *pf = calloc(1, sizeof(*pf));
    if (!pf) {
        br_filter_file_free(file);
        return -ENOMEM;
    }
    const br_filter_header *h = br_filter_file_header(file);
    if (h->algorithm == BR_ALGO_LAYERS) {
        free(BR_TAKE_PTR(pf));
        return br_pwfilter_from_layers(file, out, err);
    }
    pf->file = file;
    pf->set_hdr = *h;
    if (br_filter_names_add(&pf->names, h->body_sha256) < 0)
        return -ENOMEM;
    bool offline = h->algorithm == BR_ALGO_FUSE_OFFLINE;
    pf->ops = offline ? &offline_ops : &range_ops;
    if (h->algorithm != BR_ALGO_BINARY_FUSE && !offline)
        return br_error_set(err, -EINVAL, "field algorithm: %s, expected binary-fuse%s",
                            br_filter_algorithm_name(h->algorithm),
                            h->algorithm == BR_ALGO_BLOCKED_BLOOM
                                ? " (a URL range filter, not an offline one: an offline set "
                                  "holds offline files only)"
                                : "");
    if (h->key_encoding != BR_KEYENC_HASH_PREFIX64 &&
        !(offline && h->kind == BR_KIND_URL_SHA256 && h->key_encoding == BR_KEYENC_URL_EXPR_SHA256))
        return br_error_set(err, -EINVAL, "field key_encoding: %s, expected hash-prefix64",
                            br_key_encoding_name(h->key_encoding));
    const uint8_t *p = h->params;
    pf->arity = p[P_ARITY];
    pf->fp_bits = p[P_FP_BITS];
    pf->shard_bits = p[P_SHARD_BITS];
    pf->shard_count = br_load_le32(p + P_SHARD_COUNT);
    uint64_t table_offset = br_load_le64(p + P_TABLE_OFFSET);
    if (pf->arity != 3 && pf->arity != 4)
        return br_error_set(err, -EINVAL, "param arity: %u, expected 3 or 4", pf->arity);
    if (pf->fp_bits != 8 && pf->fp_bits != 16 && pf->fp_bits != 32)
        return br_error_set(err, -EINVAL, "param fingerprint_bits: %u, expected 8, 16 or 32",
                            pf->fp_bits);
    if (pf->shard_bits > MAX_SHARD_BITS || pf->shard_count != (UINT32_C(1) << pf->shard_bits))
        return br_error_set(err, -EINVAL, "param shard_bits %u / shard_count %u out of range",
                            pf->shard_bits, pf->shard_count);
    if ((p[3] != 0 && !offline) || br_load_le32(p + P_ENTRY_SIZE) != ENTRY_SIZE)
        return br_error_set(err, -EINVAL, "param shard_entry_size: %u, expected %d",
                            br_load_le32(p + P_ENTRY_SIZE), ENTRY_SIZE);
    for (size_t i = P_END; i < BR_FILTER_PARAMS_SIZE && !offline; i++)
        if (p[i])
            return br_error_set(err, -EINVAL, "reserved param byte %zu is not zero", i);
    if (offline) {
        if (pf->fp_bits != 32)
            return br_error_set(err, -EINVAL, "param slot_bits: %u, expected 32", pf->fp_bits);
        int r = br_pwo_read(pf, err);
        if (r < 0)
            return r;
    }
    bool checked = offline && p[BR_PWP_OFF_CHECK_BITS] != 0; /* br_pwo_read checked it */
    /* key encoding v5 is v4 and a quick filter: only with check filters */
    bool quick = checked && h->key_encoding_version >= 5;
    if (quick && h->key_encoding_version >= 6) /* v5's layout, fingerprints keyed by XXH3 */
        pf->offline->xxh3_keys = true;
    int r = read_tables(pf, table_offset, checked, quick, err);
    if (r < 0)
        return r;
    *out = BR_TAKE_PTR(pf);
    return 0;
}

int br_pwfilter_open(const char *path, br_pwfilter **out, br_error *err)
{
    br_filter_file *file = NULL;
    int r = br_filter_file_open(path, &file, err);
    if (r < 0)
        return r;
    r = br_pwfilter_from_file(file, out, err);
    if (r < 0)
        return br_error_prefix(err, r, "%s", path);
    return 0;
}

const br_filter_header *br_pwfilter_header(const br_pwfilter *pf)
{
    return &pf->set_hdr;
}

unsigned br_pwfilter_arity(const br_pwfilter *pf)
{
    return pf->arity;
}

unsigned br_pwfilter_fp_bits(const br_pwfilter *pf)
{
    return pf->fp_bits;
}

uint32_t br_pwfilter_shard_count(const br_pwfilter *pf)
{
    return pf->shard_count;
}

uint64_t br_pwfilter_file_size(const br_pwfilter *pf)
{
    return br_filter_file_size(pf->outer ? pf->outer : pf->file);
}

uint64_t br_pwfilter_fingerprint_bytes(const br_pwfilter *pf)
{
    uint64_t sum = 0;
    for (; pf; pf = pf->next)
        for (uint32_t i = 0; i < pf->shard_count; i++)
            sum +=
                br_bfuse_bytes(&pf->shards[i]) + (pf->checks ? br_bfuse_bytes(&pf->checks[i]) : 0);
    return sum;
}

static inline const br_bfuse *shard_for(const br_pwfilter *pf, uint64_t key)
{
    return &pf->shards[pf->shard_bits ? key >> (64 - pf->shard_bits) : 0];
}

/* Probe first, then look at the flag: a probe that faulted read zeros, and
 * the handler set the flag before the probe went on. */
static bool range_member_contains(const br_pwfilter *pf, uint64_t key)
{
    return br_bfuse_contains(shard_for(pf, key), key) || br_filter_file_damaged(pf->file);
}

static bool offline_member_contains(const br_pwfilter *pf, uint64_t key)
{
    return (br_bfuse_code(shard_for(pf, key), key) != 0 && br_pwo_check(pf, key)) ||
           br_filter_file_damaged(pf->file);
}

bool br_pwfilter_contains_key(const br_pwfilter *pf, uint64_t key)
{
    for (; pf; pf = pf->next)
        if (pf->ops->member_contains(pf, key))
            return true;
    return false;
}

bool br_pwfilter_changed(const br_pwfilter *pf)
{
    bool changed = false;
    for (; pf; pf = pf->next)
        changed |= br_filter_file_changed(pf->file);
    return changed;
}

bool br_pwfilter_damaged(const br_pwfilter *pf)
{
    for (; pf; pf = pf->next)
        if (br_filter_file_damaged(pf->file))
            return true;
    return false;
}

/* After the first member's batch: a damaged file says maybe to all, and
 * the deltas get the keys it said no to. */
static void rest_of_set(const br_pwfilter *pf, const uint64_t *keys, size_t n, bool *out)
{
    if (br_filter_file_damaged(pf->file))
        for (size_t i = 0; i < n; i++)
            out[i] = true;
    if (pf->next)
        for (size_t i = 0; i < n; i++)
            if (!out[i])
                out[i] = br_pwfilter_contains_key(pf->next, keys[i]);
}

static void offline_contains_batch(const br_pwfilter *pf, const uint64_t *keys, size_t n, bool *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = br_pwfilter_contains_key(pf, keys[i]);
}

static void range_contains_batch(const br_pwfilter *pf, const uint64_t *keys, size_t n, bool *out)
{
    if (pf->shard_count == 1) {
        br_bfuse_contains_batch(&pf->shards[0], keys, n, out);
        rest_of_set(pf, keys, n, out);
        return;
    }
    /* Keys of a batch fall in different shards: prefetch a block's probes
     * first, then answer them, so their cache misses overlap. */
    enum { BLOCK = 16 };
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t k = BR_MIN((size_t)BLOCK, n - i);
        for (size_t j = 0; j < k; j++)
            br_bfuse_prefetch(shard_for(pf, keys[i + j]), keys[i + j]);
        for (size_t j = 0; j < k; j++)
            out[i + j] = br_bfuse_contains(shard_for(pf, keys[i + j]), keys[i + j]);
    }
    rest_of_set(pf, keys, n, out);
}

static const br_pwfilter_ops range_ops = {range_member_contains, range_contains_batch};
static const br_pwfilter_ops offline_ops = {offline_member_contains, offline_contains_batch};

void br_pwfilter_contains_batch(const br_pwfilter *pf, const uint64_t *keys, size_t n, bool *out)
{
    pf->ops->contains_batch(pf, keys, n, out);
}

/* ---- sets: a base and its deltas, layered files ---- */

const br_filter_header *br_pwfilter_file_header(const br_pwfilter *pf)
{
    return pf->outer ? br_filter_file_header(pf->outer) : br_filter_file_header(pf->file);
}

size_t br_pwfilter_members(const br_pwfilter *pf)
{
    size_t n = 0;
    for (; pf; pf = pf->next)
        n++;
    return n;
}

/* An offline url-sha256 delta's categories must agree with every member's
 * before it: a code names the same category in all (the shorter table is
 * the start of the longer one; docs/filter-format.md, "Sets"). */
static int categories_agree(const br_pwfilter *pf, const br_pwfilter *delta, br_error *err)
{
    if (!delta->offline || delta->offline->code_kind != BR_CODES_CATEGORIES)
        return 0;
    const br_category_table *d = &delta->offline->cats;
    for (const br_pwfilter *m = pf; m; m = m->next) {
        if (!m->offline || m->offline->code_kind != BR_CODES_CATEGORIES)
            continue;
        const br_category_table *t = &m->offline->cats;
        for (unsigned c = 0; c < t->count && c < d->count; c++)
            if (strcmp(t->names[c], d->names[c]) != 0)
                return br_error_set(err, -EINVAL,
                                    "category code %u is '%s' in this delta but '%s' in the set "
                                    "before it: a delta's category table starts with its "
                                    "base's (rebuild the delta with filter build --base)",
                                    c + 1, d->names[c], t->names[c]);
    }
    return 0;
}

const br_category_table *br_pwfilter_categories(const br_pwfilter *pf)
{
    const br_category_table *best = NULL;
    for (; pf; pf = pf->next)
        if (pf->offline && pf->offline->code_kind == BR_CODES_CATEGORIES &&
            (!best || pf->offline->cats.count > best->count))
            best = &pf->offline->cats;
    return best;
}

int br_pwfilter_attach(br_pwfilter *pf, br_pwfilter *delta, br_error *err)
{
    const br_filter_header *dh = br_pwfilter_file_header(delta);
    int r = br_filter_set_admit(&pf->set_hdr, &pf->names, dh, delta->next != NULL, err);
    if (r == 0 && !pf->offline != !delta->offline)
        r = br_error_set(err, -EINVAL,
                         "a delta built %s of a base built %s: an offline set holds offline "
                         "files only (rebuild the delta %s --offline)",
                         delta->offline ? "offline" : "not offline",
                         pf->offline ? "offline" : "not offline", pf->offline ? "with" : "without");
    if (r == 0)
        r = categories_agree(pf, delta, err);
    if (r == 0)
        r = br_filter_names_add(&pf->names, dh->body_sha256);
    if (r < 0) {
        br_pwfilter_free(delta);
        return r;
    }
    br_pwfilter *last = pf;
    while (last->next)
        last = last->next;
    last->next = delta;
    br_filter_set_fold(&pf->set_hdr, dh);
    return 0;
}

BR_FILTER_SET_OPS(br_pwfilter, set_ops);

static int br_pwfilter_from_layers(br_filter_file *file, br_pwfilter **out, br_error *err)
{
    void *set = NULL;
    int r = br_filter_set_from_layers(file, &set_ops, &set, err);
    *out = set;
    return r;
}

int br_pwfilter_open_set(const char *const *paths, size_t n, br_pwfilter **out,
                         uint8_t last_body[32], br_error *err)
{
    void *set = NULL;
    int r = br_filter_set_open(paths, n, &set_ops, &set, last_body, err);
    *out = set;
    return r;
}
