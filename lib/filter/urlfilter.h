/* SPDX-License-Identifier: MIT */
/* The URL blocklist filter: a blocked Bloom filter (bloom.h) over the SHA-256
 * of canonical URL expressions, plus a bitmap of the 2^20 range prefixes
 * that hold at least one entry, in one filter file (kind url-sha256,
 * algorithm blocked-bloom, key encoding url-expression-sha256 v2, v1 read;
 * docs/filter-format.md "Algorithm 2: blocked-bloom").
 *
 * br_urlfilter_maybe() is the Bloom probe AND the prefix bit: a Bloom
 * "maybe" in a prefix that holds no entry is a sure "no", answered locally
 * (no range query: better privacy), and a range mirror has a PREFIX.txt for
 * every prefix whose bit is set, so a 404 for such a prefix is a real error.
 *
 * Filters take additions without a rebuild (a draft copied from the open
 * filter, saved as a new generation); removals need a rebuild. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bloom.h"
#include "core/error.h"
#include "filter_file.h"
#include "core/hash.h"
#include "core/util.h"

#define BR_URLFILTER_PREFIX_BITS 20
#define BR_URLFILTER_PREFIXES (UINT32_C(1) << BR_URLFILTER_PREFIX_BITS)
#define BR_URLFILTER_BITMAP_BYTES (BR_URLFILTER_PREFIXES / 8) /* 128 KiB */

/* The 20-bit range prefix (first 5 hex digits) of a SHA-256 key; the same
 * number as br_range_prefix20(). */
static inline uint32_t br_urlfilter_prefix_of(const uint8_t key[BR_SHA256_LEN])
{
    return ((uint32_t)key[0] << 12) | ((uint32_t)key[1] << 4) | ((uint32_t)key[2] >> 4);
}

/* Bit p of a prefix bitmap: bit (p mod 8) of byte p / 8. */
static inline bool br_prefix_bitmap_test(const uint8_t *bitmap, uint32_t prefix20)
{
    return (bitmap[(prefix20 >> 3) & (BR_URLFILTER_BITMAP_BYTES - 1)] >> (prefix20 & 7)) & 1;
}

/* ---- reading ---- */

typedef struct br_urlfilter br_urlfilter;

/* Open and fully verify a url-sha256 filter: the container checks (sizes,
 * both checksums), then every parameter, the exact payload layout, and the
 * bit counts against key_count. Any failure is -EINVAL (or -errno) with the
 * reason in err, prefixed by the path; nothing of a refused file is kept. */
int br_urlfilter_open(const char *path, br_urlfilter **out, br_error *err);
/* The same checks on an already opened container (takes ownership of file). */
int br_urlfilter_from_file(br_filter_file *file, br_urlfilter **out, br_error *err);
void br_urlfilter_free(br_urlfilter *uf);
BR_DEFINE_FREEP(br_urlfilter, br_urlfilter_free)

/* The header of the filter, or of the set it heads (br_urlfilter_attach):
 * the first file's, with the newest generation and build time of the set and
 * the sum of its key counts. */
const br_filter_header *br_urlfilter_header(const br_urlfilter *uf);
/* The header of the first file itself (what a delta of it names). */
const br_filter_header *br_urlfilter_file_header(const br_urlfilter *uf);

/* ---- sets: a base and its deltas (filter_delta.h) ----
 * Add delta to the set headed by uf, taking it over (also on failure), as
 * br_pwfilter_attach does. From then on an expression is maybe when any
 * member says so; the prefix bitmap, the prefixes with entries and the
 * domain label count are those of the whole set. A layered file opens as
 * the set of its layers. */
int br_urlfilter_attach(br_urlfilter *uf, br_urlfilter *delta, br_error *err);
/* Open paths[0..n) as one set: a full filter, then deltas each naming a
 * file before it, attached in order. last_body (may be NULL): the body
 * SHA-256 of paths[n-1], what a new delta of the set names. Errors name
 * the file. */
int br_urlfilter_open_set(const char *const *paths, size_t n, br_urlfilter **out,
                          uint8_t last_body[32], br_error *err);
/* Files in the set (a layered file counts its layers). */
size_t br_urlfilter_members(const br_urlfilter *uf);

/* The largest label count among the filter's domain entries (hosts, domain
 * lists: entries that block their subdomains), as recorded by key encoding
 * v2; 0 for a v1 file or one without domain entries. */
unsigned br_urlfilter_max_domain_labels(const br_urlfilter *uf);
/* How many host components lookups take suffixes of: the above, never
 * fewer than Safe Browsing's 5 (br_url_exprs_of). */
unsigned br_urlfilter_lookup_labels(const br_urlfilter *uf);
/* The prefix bitmap itself (BR_URLFILTER_BITMAP_BYTES, in the mapped file;
 * of a set: the union of its files'): bit p is set when at least one
 * entry's SHA-256 starts with the 20-bit prefix p (br_prefix_bitmap_test). */
const uint8_t *br_urlfilter_prefix_bitmap(const br_urlfilter *uf);
/* false: the key is definitely not in the blocklist (no range query needed);
 * true: maybe (resolve with a range query for its prefix). One 64-byte block
 * and one bitmap byte are read. */
bool br_urlfilter_maybe(const br_urlfilter *uf, const uint8_t sha256[BR_SHA256_LEN]);
/* out[i] = br_urlfilter_maybe(uf, keys[i]), with the memory reads of all the
 * keys issued ahead (a URL has up to 30 expressions). */
void br_urlfilter_maybe_batch(const br_urlfilter *uf, const uint8_t (*keys)[BR_SHA256_LEN],
                              size_t n, bool *out);
/* True once the file was found truncated under its mapping (filter_file.h);
 * from then on br_urlfilter_maybe() and br_urlfilter_prefix_has_entries()
 * answer true for every key, and the bitmap reads as zeros. Any thread. */
bool br_urlfilter_damaged(const br_urlfilter *uf);
/* br_filter_file_changed() of every file of the set (pwfilter.h). */
bool br_urlfilter_changed(const br_urlfilter *uf);

typedef struct br_urlfilter_info {
    unsigned k;
    uint64_t block_count;
    uint64_t capacity;       /* keys the filter was sized for */
    double target_fpr;       /* per expression, at capacity keys */
    uint64_t key_count;      /* keys now */
    uint64_t base_key_count; /* keys at the last full build */
    uint64_t base_generation;
    uint32_t prefixes_with_entries; /* of BR_URLFILTER_PREFIXES */
    uint64_t bloom_bits_set;
    double bits_per_key;  /* Bloom bits / max(key_count, 1) */
    double design_fpr;    /* model at capacity keys (<= target_fpr) */
    double bloom_fpr_now; /* model at key_count keys */
    double fpr_now;       /* bloom_fpr_now * fraction of prefixes with entries */
    uint64_t file_size;
} br_urlfilter_info;

/* Fill info (computes the false-positive model: about a millisecond). */
void br_urlfilter_get_info(const br_urlfilter *uf, br_urlfilter_info *info);

/* ---- writing: a draft in memory, saved as a new file ---- */

typedef struct br_urlfilter_draft br_urlfilter_draft;

/* An empty filter sized for capacity keys (0: 1) at target_fpr per key. */
int br_urlfilter_draft_new(uint64_t capacity, double target_fpr, br_urlfilter_draft **out,
                           br_error *err);
/* A copy of an open filter, to add keys to: same parameters, keys and bits. */
int br_urlfilter_draft_from(const br_urlfilter *uf, br_urlfilter_draft **out, br_error *err);
void br_urlfilter_draft_free(br_urlfilter_draft *d);
BR_DEFINE_FREEP(br_urlfilter_draft, br_urlfilter_draft_free)

/* Record a domain entry of this many labels (the file keeps the largest;
 * a draft copied from a filter starts from that filter's value). */
void br_urlfilter_draft_note_domain_labels(br_urlfilter_draft *d, unsigned labels);
/* Insert a key; returns true when it was not already a maybe. distinct: the
 * caller guarantees the key was never inserted (a full build from a
 * deduplicated set), so it is counted even when it was a false positive;
 * otherwise it is counted only when it set a new bit. */
bool br_urlfilter_draft_add(br_urlfilter_draft *d, const uint8_t key[BR_SHA256_LEN], bool distinct);
uint64_t br_urlfilter_draft_keys(const br_urlfilter_draft *d);
const uint8_t *br_urlfilter_draft_bitmap(const br_urlfilter_draft *d);
unsigned br_urlfilter_draft_k(const br_urlfilter_draft *d);
uint64_t br_urlfilter_draft_blocks(const br_urlfilter_draft *d);
uint64_t br_urlfilter_draft_capacity(const br_urlfilter_draft *d);

typedef struct br_urlfilter_save_opts {
    uint64_t generation;
    const char *source;
    int64_t build_time; /* < 0: now (SOURCE_DATE_EPOCH when set) */
    /* Called when the complete file is written under its temporary name,
     * just before it is renamed into place; a negative return abandons the
     * new file (the old one stays). The range mirror is written here, so
     * that the mirror is never behind the filter. May be NULL. */
    int (*before_commit)(void *ctx, br_error *err);
    void *ctx;
    /* A delta (filter_delta.h): the body SHA-256 of the filter it extends;
     * the caller adds only keys that filter does not answer maybe for.
     * NULL: a full filter. */
    const uint8_t *base_body_sha256;
} br_urlfilter_save_opts;

/* The header of a file of the draft, its bitmap and blocks at the offsets
 * given (builder/urlfilter_save.h writes it). */
void br_urlfilter_draft_header(const br_urlfilter_draft *d, const br_urlfilter_save_opts *opts,
                               uint64_t bitmap_off, uint64_t blocks_off, br_filter_header *out);
/* The draft's Bloom blocks (br_urlfilter_draft_blocks() of them). */
const uint8_t *br_urlfilter_draft_block_data(const br_urlfilter_draft *d);
