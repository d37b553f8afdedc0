/* SPDX-License-Identifier: MIT */
/* One binary fuse filter (Graf & Lemire 2022): an immutable set of 64-bit
 * keys answering "maybe" or "definitely not". 3-wise or 4-wise, with 8, 16 or
 * 32 bit fingerprints; the false-positive rate is about 2^-fp_bits.
 *
 * The descriptor only points at the fingerprint array, so the same struct
 * serves a freshly built filter and one read through mmap from a file. The
 * array is little-endian on disk and in memory. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BR_BFUSE_MAX_KEYS (UINT32_C(1) << 31)

typedef struct br_bfuse {
    uint64_t seed;                 /* hash seed that made construction succeed */
    uint32_t segment_length;       /* power of two, 1 .. 2^18 (0 for an empty filter) */
    uint32_t segment_count_length; /* segment_count * segment_length */
    uint32_t array_length;         /* segment_count_length + (arity-1) * segment_length */
    uint8_t arity;                 /* 3 or 4 */
    uint8_t fp_bits;               /* 8, 16 or 32 */
    const void *fingerprints;      /* array_length entries of fp_bits/8 bytes */
} br_bfuse;

/* Fill the size fields of f for n distinct keys (seed and fingerprints are
 * left as they are). -EINVAL for a bad arity or fp_bits, -E2BIG when n is
 * over BR_BFUSE_MAX_KEYS. The layout is a pure function of (arity, n). */
int br_bfuse_layout(br_bfuse *f, unsigned arity, unsigned fp_bits, size_t n);

/* Bytes of the fingerprint array of a laid-out filter. */
size_t br_bfuse_bytes(const br_bfuse *f);

/* Check that the fields read from a file describe a usable filter (power-of-
 * two segment length, consistent lengths, arity, fp_bits) so that a query
 * can never index outside the array. 0 or -EINVAL. The fingerprints pointer
 * is not looked at: the caller maps br_bfuse_bytes(f) bytes for it. */
int br_bfuse_check(const br_bfuse *f);

/* Build the filter of n distinct keys into fp_out (br_bfuse_bytes() bytes),
 * after br_bfuse_layout(). The keys array may be reordered. Seeds are derived
 * from seed_base and the attempt number, so the same keys and seed_base give
 * the same bytes. Sets f->seed and f->fingerprints = fp_out.
 * 0, -ENOMEM, -EINVAL (a layout for fewer than n keys, or a NULL keys or
 * fp_out), or -EDEADLK if construction failed on every attempt (only with
 * duplicate keys, which callers remove first).
 *
 * The result depends on the set of keys only, not on their order: no sort is
 * needed before the call (construction is order-independent by design).
 * A retry may use half the laid-out segment_length over the same array
 * (segment_count_length grows to match; array_length and the byte size do
 * not change), so store the fields of f after the build, not after the
 * layout. Duplicate keys are detected after the first failed attempt and
 * give -EDEADLK at once. Thread-safe; working memory is about 23 bytes per
 * key (3-wise) on top of fp_out. */
int br_bfuse_build(br_bfuse *f, uint64_t *keys, size_t n, uint64_t seed_base, void *fp_out);

/* f must come from br_bfuse_build() or have passed br_bfuse_check(), with
 * fingerprints pointing at br_bfuse_bytes(f) bytes (may be NULL when empty). */
bool br_bfuse_contains(const br_bfuse *f, uint64_t key);

/* Issue the memory accesses a later br_bfuse_contains(f, key) will make, so
 * that probes into different filters (shards) can overlap their misses. */
void br_bfuse_prefetch(const br_bfuse *f, uint64_t key);

/* out[i] = br_bfuse_contains(f, keys[i]), with the memory accesses of a batch
 * issued ahead (prefetch) so that throughput is not bound by latency. */
void br_bfuse_contains_batch(const br_bfuse *f, const uint64_t *keys, size_t n, bool *out);

/* ---- coded filters: a filter and a retrieval structure in one ----
 * With 32-bit slots, each key carries an 8-bit code (1..255): the XOR of
 * its slots is (the top 24 bits of its fingerprint) | code. A lookup
 * answers the code of a member, or 0 for a key whose 24 fingerprint bits
 * do not match (a non-member matches with probability 2^-24, and then
 * reads a code that may be 0 too; docs/filter-format.md, "Algorithm 4").
 *
 * Build after br_bfuse_layout(f, arity, 32, n): keys sorted ascending and
 * distinct (not reordered), codes[i] the code of keys[i], each 1..255;
 * -EINVAL otherwise. The same seeds and bytes-for-a-key-set rule as
 * br_bfuse_build(); working memory 2 bytes per key more. */
int br_bfuse_build_coded(br_bfuse *f, const uint64_t *keys, const uint8_t *codes, size_t n,
                         uint64_t seed_base, void *fp_out);
/* The code of key, 0: not a member. f built coded or checked with fp_bits 32. */
uint8_t br_bfuse_code(const br_bfuse *f, uint64_t key);
