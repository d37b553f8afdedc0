/* SPDX-License-Identifier: MIT */
/* The url-sha256 filter: the file (params, payload layout, validation,
 * probes), drafts (build, incremental add, and their header; builder/urlfilter_save.c
 * writes them), and sets of a base and its
 * deltas and layered files (filter_delta.h). Layout in
 * docs/filter-format.md. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter_delta.h"
#include "filter_set.h"
#include "url/url_expr.h"
#include "urlfilter.h"

struct br_urlfilter {
    br_filter_file *file;
    const uint8_t *bitmap; /* this member's prefix bitmap, in the mapping */
    br_bloom bloom;
    uint64_t capacity;
    double target_fpr;
    uint64_t base_key_count, base_generation;
    uint32_t prefixes_set;
    uint64_t bloom_bits_set;
    unsigned max_domain_labels;
    /* The set (filter_delta.h): the next member, probed when this one says
     * no; the header the set answers for; the bodies deltas may name; the
     * OR of the members' bitmaps once a delta joined (else NULL); the
     * largest label count of the members. */
    br_urlfilter *next;
    br_filter_header set_hdr;
    br_filter_names names;
    uint8_t *set_bitmap;
    unsigned set_labels;
    br_filter_file *outer; /* a layered file: the container of the members' views */
};

/* This member alone (no delta). */
static bool br_urlfilter_member_maybe(const br_urlfilter *uf, const uint8_t sha256[BR_SHA256_LEN]);
/* Open a layered file's layers as one set (takes ownership of file). */
static int br_urlfilter_from_layers(br_filter_file *file, br_urlfilter **out, br_error *err);

/* params block of the container header. */
enum {
    P_K = 0,
    P_BLOCK_BITS_LOG2 = 1,
    P_PREFIX_BITS = 2,
    P_MAX_DOMAIN_LABELS = 3, /* key encoding v2; reserved (0) in v1 */
    P_RESERVED = 4,          /* 4 bytes */
    P_BLOCK_COUNT = 8,
    P_CAPACITY = 16,
    P_TARGET_FPR = 24,
    P_BITMAP_OFFSET = 32,
    P_BLOCKS_OFFSET = 40,
    P_BASE_KEY_COUNT = 48,
    P_BASE_GENERATION = 56,
    P_END = 64,
};
_Static_assert(P_END == BR_FILTER_PARAMS_SIZE, "params fill the block");
#define BLOCK_BITS_LOG2 9
_Static_assert((1 << BLOCK_BITS_LOG2) == BR_BLOOM_BLOCK_BITS, "block size");

static uint64_t double_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static double bits_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* ---- reading ---- */

void br_urlfilter_free(br_urlfilter *uf)
{
    while (uf) {
        br_urlfilter *next = uf->next;
        br_filter_file *outer = uf->outer;
        br_filter_file_free(uf->file);
        br_filter_names_fini(&uf->names);
        free(uf->set_bitmap);
        free(uf);
        uf = next;
        /* A layered file's views (the members) go before their container. */
        if (outer) {
            br_urlfilter_free(uf);
            br_filter_file_free(outer);
            return;
        }
    }
}

/* The header names a URL range filter: its kind, algorithm and keys. */
static int check_identity(const br_filter_header *h, br_error *err)
{
    if (h->kind != BR_KIND_URL_SHA256)
        return br_error_set(err, -EINVAL, "field kind: %s, expected url-sha256 for blocked-bloom",
                            br_filter_kind_name(h->kind));
    if (h->algorithm != BR_ALGO_BLOCKED_BLOOM)
        return br_error_set(err, -EINVAL, "field algorithm: %s, expected blocked-bloom%s",
                            br_filter_algorithm_name(h->algorithm),
                            h->algorithm == BR_ALGO_FUSE_OFFLINE
                                ? " (an offline filter: a URL range set holds no offline files)"
                                : "");
    if (h->key_encoding != BR_KEYENC_URL_EXPR_SHA256 ||
        h->key_encoding_version > 2) /* v3 to v5: offline */
        return br_error_set(err, -EINVAL,
                            "field key_encoding: %s v%u, expected url-expression-sha256",
                            br_key_encoding_name(h->key_encoding), h->key_encoding_version);
    return 0;
}

static int check_params(br_urlfilter *uf, br_error *err)
{
    const br_filter_header *h = br_filter_file_header(uf->file);
    const uint8_t *p = h->params;
    int rc = check_identity(h, err);
    if (rc < 0)
        return rc;
    unsigned k = p[P_K];
    if (k < BR_BLOOM_MIN_K || k > BR_BLOOM_MAX_K)
        return br_error_set(err, -EINVAL, "param k: %u, expected %d..%d", k, BR_BLOOM_MIN_K,
                            BR_BLOOM_MAX_K);
    if (p[P_BLOCK_BITS_LOG2] != BLOCK_BITS_LOG2)
        return br_error_set(err, -EINVAL, "param block_bits_log2: %u, expected %d",
                            p[P_BLOCK_BITS_LOG2], BLOCK_BITS_LOG2);
    if (p[P_PREFIX_BITS] != BR_URLFILTER_PREFIX_BITS)
        return br_error_set(err, -EINVAL, "param prefix_bits: %u, expected %d", p[P_PREFIX_BITS],
                            BR_URLFILTER_PREFIX_BITS);
    /* Key encoding v1 knew no label count: byte 3 was reserved. */
    uf->max_domain_labels = p[P_MAX_DOMAIN_LABELS];
    if (h->key_encoding_version < 2 && uf->max_domain_labels)
        return br_error_set(err, -EINVAL, "reserved param byte %d is not zero",
                            P_MAX_DOMAIN_LABELS);
    if (uf->max_domain_labels > BR_URL_MAX_HOST_LABELS)
        return br_error_set(err, -EINVAL, "param max_domain_labels: %u, expected 0..%d",
                            uf->max_domain_labels, BR_URL_MAX_HOST_LABELS);
    for (size_t i = P_RESERVED; i < P_BLOCK_COUNT; i++)
        if (p[i])
            return br_error_set(err, -EINVAL, "reserved param byte %zu is not zero", i);
    uint64_t blocks = br_load_le64(p + P_BLOCK_COUNT);
    if (blocks < 1 || blocks > BR_BLOOM_MAX_BLOCKS)
        return br_error_set(err, -EINVAL, "param block_count: %llu out of range (1..%llu)",
                            (unsigned long long)blocks, (unsigned long long)BR_BLOOM_MAX_BLOCKS);
    uf->capacity = br_load_le64(p + P_CAPACITY);
    if (uf->capacity < 1 || uf->capacity > BR_BLOOM_MAX_CAPACITY)
        return br_error_set(err, -EINVAL, "param capacity: %llu out of range",
                            (unsigned long long)uf->capacity);
    uf->target_fpr = bits_double(br_load_le64(p + P_TARGET_FPR));
    if (!(uf->target_fpr >= BR_BLOOM_MIN_FPR && uf->target_fpr <= BR_BLOOM_MAX_FPR))
        return br_error_set(err, -EINVAL, "param target_fpr: %g out of range (%g..%g)",
                            uf->target_fpr, BR_BLOOM_MIN_FPR, BR_BLOOM_MAX_FPR);
    uint64_t bitmap_off = br_load_le64(p + P_BITMAP_OFFSET);
    uint64_t blocks_off = br_load_le64(p + P_BLOCKS_OFFSET);
    if (bitmap_off != h->payload_offset)
        return br_error_set(err, -EINVAL, "param bitmap_offset: %llu, expected %llu",
                            (unsigned long long)bitmap_off, (unsigned long long)h->payload_offset);
    if (blocks_off != bitmap_off + BR_URLFILTER_BITMAP_BYTES)
        return br_error_set(err, -EINVAL, "param blocks_offset: %llu, expected %llu",
                            (unsigned long long)blocks_off,
                            (unsigned long long)(bitmap_off + BR_URLFILTER_BITMAP_BYTES));
    uint64_t size = br_filter_file_size(uf->file);
    if (blocks_off > size || (size - blocks_off) / BR_BLOOM_BLOCK_BYTES != blocks ||
        (size - blocks_off) % BR_BLOOM_BLOCK_BYTES != 0)
        return br_error_set(err, -EINVAL,
                            "param block_count: %llu blocks do not fill the payload (file is %llu "
                            "bytes)",
                            (unsigned long long)blocks, (unsigned long long)size);
    uf->base_key_count = br_load_le64(p + P_BASE_KEY_COUNT);
    uf->base_generation = br_load_le64(p + P_BASE_GENERATION);
    if (uf->base_key_count > h->key_count)
        return br_error_set(err, -EINVAL, "param base_key_count: %llu, more than key_count %llu",
                            (unsigned long long)uf->base_key_count,
                            (unsigned long long)h->key_count);
    if (uf->base_generation > h->generation)
        return br_error_set(err, -EINVAL, "param base_generation: %llu, after generation %llu",
                            (unsigned long long)uf->base_generation,
                            (unsigned long long)h->generation);
    const uint8_t *data = br_filter_file_data(uf->file);
    uf->bitmap = data + bitmap_off;
    uf->bloom.blocks = data + blocks_off;
    uf->bloom.block_count = blocks;
    uf->bloom.k = k;
    return 0;
}

/* What the bits say must agree with key_count: every key sets one prefix
 * bit and at most k Bloom bits, and at least one of each. */
static int check_counts(br_urlfilter *uf, br_error *err)
{
    uint64_t keys = br_filter_file_header(uf->file)->key_count;
    uf->prefixes_set = (uint32_t)br_popcount_bytes(uf->bitmap, BR_URLFILTER_BITMAP_BYTES);
    uf->bloom_bits_set =
        br_popcount_bytes(uf->bloom.blocks, uf->bloom.block_count * BR_BLOOM_BLOCK_BYTES);
    if (uf->prefixes_set > keys || (keys > 0) != (uf->prefixes_set > 0))
        return br_error_set(err, -EINVAL, "prefix bitmap: %u prefixes set for %llu keys",
                            uf->prefixes_set, (unsigned long long)keys);
    if ((uf->bloom_bits_set + uf->bloom.k - 1) / uf->bloom.k > keys ||
        (keys > 0) != (uf->bloom_bits_set > 0))
        return br_error_set(err, -EINVAL, "Bloom blocks: %llu bits set for %llu keys at k=%u",
                            (unsigned long long)uf->bloom_bits_set, (unsigned long long)keys,
                            uf->bloom.k);
    return 0;
}

int br_urlfilter_from_file(br_filter_file *file, br_urlfilter **out, br_error *err)
{
    _cleanup_(br_urlfilter_freep) br_urlfilter *uf = calloc(1, sizeof(*uf));
    if (!uf) {
        br_filter_file_free(file);
        return -ENOMEM;
    }
    if (br_filter_file_header(file)->algorithm == BR_ALGO_LAYERS) {
        free(BR_TAKE_PTR(uf));
        return br_urlfilter_from_layers(file, out, err);
    }
    uf->file = file;
    int r = check_params(uf, err);
    if (r < 0)
        return r;
    r = check_counts(uf, err);
    if (r < 0)
        return r;
    uf->set_hdr = *br_filter_file_header(file);
    uf->set_labels = uf->max_domain_labels;
    if (br_filter_names_add(&uf->names, uf->set_hdr.body_sha256) < 0)
        return -ENOMEM;
    *out = BR_TAKE_PTR(uf);
    return 0;
}

int br_urlfilter_open(const char *path, br_urlfilter **out, br_error *err)
{
    br_filter_file *file = NULL;
    int r = br_filter_file_open(path, &file, err);
    if (r < 0)
        return r;
    r = br_urlfilter_from_file(file, out, err);
    if (r < 0)
        return br_error_prefix(err, r, "%s", path);
    return 0;
}

const br_filter_header *br_urlfilter_header(const br_urlfilter *uf)
{
    return &uf->set_hdr;
}

bool br_urlfilter_changed(const br_urlfilter *uf)
{
    bool changed = false;
    for (; uf; uf = uf->next)
        changed |= br_filter_file_changed(uf->file);
    return changed;
}

bool br_urlfilter_damaged(const br_urlfilter *uf)
{
    for (; uf; uf = uf->next)
        if (br_filter_file_damaged(uf->file))
            return true;
    return false;
}

unsigned br_urlfilter_max_domain_labels(const br_urlfilter *uf)
{
    return uf->set_labels;
}

unsigned br_urlfilter_lookup_labels(const br_urlfilter *uf)
{
    return BR_MAX(uf->set_labels, (unsigned)BR_URL_SB_HOST_COMPONENTS);
}

const uint8_t *br_urlfilter_prefix_bitmap(const br_urlfilter *uf)
{
    return uf->set_bitmap ? uf->set_bitmap : uf->bitmap;
}

static bool br_urlfilter_member_maybe(const br_urlfilter *uf, const uint8_t sha256[BR_SHA256_LEN])
{
    return (br_prefix_bitmap_test(uf->bitmap, br_urlfilter_prefix_of(sha256)) &&
            br_bloom_contains(&uf->bloom, sha256)) ||
           br_filter_file_damaged(uf->file);
}

bool br_urlfilter_maybe(const br_urlfilter *uf, const uint8_t sha256[BR_SHA256_LEN])
{
    for (; uf; uf = uf->next)
        if (br_urlfilter_member_maybe(uf, sha256))
            return true;
    return false;
}

void br_urlfilter_maybe_batch(const br_urlfilter *uf, const uint8_t (*keys)[BR_SHA256_LEN],
                              size_t n, bool *out)
{
    enum { AHEAD = 32 };
    for (size_t i = 0; i < n; i += AHEAD) {
        size_t m = BR_MIN((size_t)AHEAD, n - i);
        for (size_t j = 0; j < m; j++) {
            __builtin_prefetch(uf->bitmap + (br_urlfilter_prefix_of(keys[i + j]) >> 3));
            br_bloom_prefetch(&uf->bloom, keys[i + j]);
        }
        for (size_t j = 0; j < m; j++)
            out[i + j] = br_urlfilter_member_maybe(uf, keys[i + j]) ||
                         (uf->next && br_urlfilter_maybe(uf->next, keys[i + j]));
    }
}

void br_urlfilter_get_info(const br_urlfilter *uf, br_urlfilter_info *info)
{
    const br_filter_header *h = br_filter_file_header(uf->file);
    memset(info, 0, sizeof(*info));
    info->k = uf->bloom.k;
    info->block_count = uf->bloom.block_count;
    info->capacity = uf->capacity;
    info->target_fpr = uf->target_fpr;
    info->key_count = h->key_count;
    info->base_key_count = uf->base_key_count;
    info->base_generation = uf->base_generation;
    info->prefixes_with_entries = uf->prefixes_set;
    info->bloom_bits_set = uf->bloom_bits_set;
    double bits = (double)uf->bloom.block_count * BR_BLOOM_BLOCK_BITS;
    info->bits_per_key = bits / (double)(h->key_count ? h->key_count : 1);
    info->design_fpr =
        br_bloom_fpr((double)uf->capacity / (double)uf->bloom.block_count, uf->bloom.k);
    info->bloom_fpr_now =
        br_bloom_fpr((double)h->key_count / (double)uf->bloom.block_count, uf->bloom.k);
    info->fpr_now = info->bloom_fpr_now * (double)uf->prefixes_set / (double)BR_URLFILTER_PREFIXES;
    info->file_size = br_filter_file_size(uf->file);
}

/* ---- drafts ---- */

struct br_urlfilter_draft {
    uint8_t *bitmap;
    uint8_t *blocks;
    uint64_t block_count;
    unsigned k;
    uint64_t capacity;
    double target_fpr;
    uint64_t keys;
    bool full_build;
    uint64_t base_key_count, base_generation;
    unsigned max_domain_labels;
};

void br_urlfilter_draft_free(br_urlfilter_draft *d)
{
    if (!d)
        return;
    free(d->bitmap);
    free(d->blocks);
    free(d);
}

static int draft_alloc(uint64_t block_count, br_urlfilter_draft **out, br_error *err)
{
    _cleanup_(br_urlfilter_draft_freep) br_urlfilter_draft *d = calloc(1, sizeof(*d));
    if (!d)
        return br_error_set(err, -ENOMEM, "out of memory");
    if (block_count > SIZE_MAX / BR_BLOOM_BLOCK_BYTES)
        return br_error_set(err, -ENOMEM, "%llu blocks do not fit in memory",
                            (unsigned long long)block_count);
    size_t bytes = (size_t)block_count * BR_BLOOM_BLOCK_BYTES;
    d->bitmap = calloc(1, BR_URLFILTER_BITMAP_BYTES);
    d->blocks = aligned_alloc(BR_BLOOM_BLOCK_BYTES, bytes);
    if (!d->bitmap || !d->blocks)
        return br_error_set(err, -ENOMEM, "out of memory for %zu bytes of Bloom blocks", bytes);
    memset(d->blocks, 0, bytes);
    d->block_count = block_count;
    *out = BR_TAKE_PTR(d);
    return 0;
}

int br_urlfilter_draft_new(uint64_t capacity, double target_fpr, br_urlfilter_draft **out,
                           br_error *err)
{
    br_bloom_params bp;
    if (capacity == 0)
        capacity = 1;
    int r = br_bloom_size(capacity, target_fpr, &bp, err);
    if (r < 0)
        return r;
    br_urlfilter_draft *d = NULL;
    r = draft_alloc(bp.block_count, &d, err);
    if (r < 0)
        return r;
    d->k = bp.k;
    d->capacity = capacity;
    d->target_fpr = target_fpr;
    d->full_build = true;
    *out = d;
    return 0;
}

int br_urlfilter_draft_from(const br_urlfilter *uf, br_urlfilter_draft **out, br_error *err)
{
    br_urlfilter_draft *d = NULL;
    int r = draft_alloc(uf->bloom.block_count, &d, err);
    if (r < 0)
        return r;
    memcpy(d->bitmap, uf->bitmap, BR_URLFILTER_BITMAP_BYTES);
    memcpy(d->blocks, uf->bloom.blocks, (size_t)uf->bloom.block_count * BR_BLOOM_BLOCK_BYTES);
    d->k = uf->bloom.k;
    d->capacity = uf->capacity;
    d->target_fpr = uf->target_fpr;
    d->keys = br_urlfilter_header(uf)->key_count;
    d->base_key_count = uf->base_key_count;
    d->base_generation = uf->base_generation;
    d->max_domain_labels = uf->max_domain_labels;
    *out = d;
    return 0;
}

bool br_urlfilter_draft_add(br_urlfilter_draft *d, const uint8_t key[BR_SHA256_LEN], bool distinct)
{
    uint32_t p = br_urlfilter_prefix_of(key);
    uint8_t mask = (uint8_t)(1u << (p & 7));
    bool fresh = !(d->bitmap[p >> 3] & mask);
    d->bitmap[p >> 3] |= mask;
    fresh |= br_bloom_insert(d->blocks, d->block_count, d->k, key);
    if (fresh || distinct)
        d->keys++;
    return fresh;
}

void br_urlfilter_draft_note_domain_labels(br_urlfilter_draft *d, unsigned labels)
{
    labels = BR_MIN(labels, (unsigned)BR_URL_MAX_HOST_LABELS);
    d->max_domain_labels = BR_MAX(d->max_domain_labels, labels);
}

uint64_t br_urlfilter_draft_keys(const br_urlfilter_draft *d)
{
    return d->keys;
}

const uint8_t *br_urlfilter_draft_bitmap(const br_urlfilter_draft *d)
{
    return d->bitmap;
}

unsigned br_urlfilter_draft_k(const br_urlfilter_draft *d)
{
    return d->k;
}

uint64_t br_urlfilter_draft_blocks(const br_urlfilter_draft *d)
{
    return d->block_count;
}

uint64_t br_urlfilter_draft_capacity(const br_urlfilter_draft *d)
{
    return d->capacity;
}

void br_urlfilter_draft_header(const br_urlfilter_draft *d, const br_urlfilter_save_opts *o,
                               uint64_t bitmap_off, uint64_t blocks_off, br_filter_header *out)
{
    br_filter_header hdr = {0};
    hdr.kind = BR_KIND_URL_SHA256;
    hdr.algorithm = BR_ALGO_BLOCKED_BLOOM;
    hdr.key_encoding = BR_KEYENC_URL_EXPR_SHA256;
    hdr.key_encoding_version = 2;
    hdr.generation = o->generation;
    hdr.build_time = o->build_time >= 0 ? o->build_time : br_build_time_now();
    hdr.key_count = d->keys;
    hdr.role = o->base_body_sha256 ? BR_ROLE_DELTA : BR_ROLE_FULL;
    if (o->base_body_sha256)
        memcpy(hdr.base_body_sha256, o->base_body_sha256, 32);
    uint8_t *p = hdr.params;
    p[P_K] = (uint8_t)d->k;
    p[P_BLOCK_BITS_LOG2] = BLOCK_BITS_LOG2;
    p[P_PREFIX_BITS] = BR_URLFILTER_PREFIX_BITS;
    p[P_MAX_DOMAIN_LABELS] = (uint8_t)d->max_domain_labels;
    br_store_le64(p + P_BLOCK_COUNT, d->block_count);
    br_store_le64(p + P_CAPACITY, d->capacity);
    br_store_le64(p + P_TARGET_FPR, double_bits(d->target_fpr));
    br_store_le64(p + P_BITMAP_OFFSET, bitmap_off);
    br_store_le64(p + P_BLOCKS_OFFSET, blocks_off);
    br_store_le64(p + P_BASE_KEY_COUNT, d->full_build ? d->keys : d->base_key_count);
    br_store_le64(p + P_BASE_GENERATION, d->full_build ? o->generation : d->base_generation);
    if (o->source)
        snprintf(hdr.source, sizeof(hdr.source), "%s", o->source);
    *out = hdr;
}

const uint8_t *br_urlfilter_draft_block_data(const br_urlfilter_draft *d)
{
    return d->blocks;
}

/* ---- sets: a base and its deltas, layered files ---- */

const br_filter_header *br_urlfilter_file_header(const br_urlfilter *uf)
{
    return uf->outer ? br_filter_file_header(uf->outer) : br_filter_file_header(uf->file);
}

size_t br_urlfilter_members(const br_urlfilter *uf)
{
    size_t n = 0;
    for (; uf; uf = uf->next)
        n++;
    return n;
}

int br_urlfilter_attach(br_urlfilter *uf, br_urlfilter *delta, br_error *err)
{
    const br_filter_header *dh = br_urlfilter_file_header(delta);
    int r = br_filter_set_admit(&uf->set_hdr, &uf->names, dh, delta->next != NULL, err);
    if (r == 0 && !uf->set_bitmap) {
        uf->set_bitmap = malloc(BR_URLFILTER_BITMAP_BYTES);
        if (uf->set_bitmap)
            memcpy(uf->set_bitmap, uf->bitmap, BR_URLFILTER_BITMAP_BYTES);
        else
            r = -ENOMEM;
    }
    if (r == 0)
        r = br_filter_names_add(&uf->names, dh->body_sha256);
    if (r < 0) {
        br_urlfilter_free(delta);
        return r;
    }
    for (size_t i = 0; i < BR_URLFILTER_BITMAP_BYTES; i++)
        uf->set_bitmap[i] |= delta->bitmap[i];
    uf->set_labels = BR_MAX(uf->set_labels, delta->max_domain_labels);
    br_urlfilter *last = uf;
    while (last->next)
        last = last->next;
    last->next = delta;
    br_filter_set_fold(&uf->set_hdr, dh);
    return 0;
}

BR_FILTER_SET_OPS(br_urlfilter, set_ops);

static int br_urlfilter_from_layers(br_filter_file *file, br_urlfilter **out, br_error *err)
{
    void *set = NULL;
    int r = br_filter_set_from_layers(file, &set_ops, &set, err);
    *out = set;
    return r;
}

int br_urlfilter_open_set(const char *const *paths, size_t n, br_urlfilter **out,
                          uint8_t last_body[32], br_error *err)
{
    void *set = NULL;
    int r = br_filter_set_open(paths, n, &set_ops, &set, last_body, err);
    *out = set;
    return r;
}
