/* SPDX-License-Identifier: MIT */
/* Cache-line-blocked Bloom filter over SHA-256 keys (docs/filter-format.md,
 * "Algorithm 2: blocked-bloom").
 *
 * The filter is an array of 64-byte (512-bit) blocks. A key sets and probes
 * k bits, all in one block, so a probe touches one cache line. Keys are
 * SHA-256 hashes, already uniform, so the block and the bit positions are
 * read from the key's own bytes (no second hash), from bytes that do not
 * overlap each other nor the 20-bit range prefix (bytes 0..2):
 *
 *   block = (le64(key[24..31]) * block_count) >> 64     (128-bit product)
 *   bit i = 9-bit field i of the little-endian bit string key[3..23],
 *           i = 0..k-1: (le16(key[3 + 9i/8]) >> (9i mod 8)) & 511
 *   bit b of a block is bit (b mod 8) of its byte b / 8.
 *
 * Sizing (br_bloom_size) picks k and the block count from a capacity and a
 * target false-positive rate with the exact model of br_bloom_fpr(): the
 * number of keys in a block is Poisson(lambda = keys / blocks), and a block
 * holding j keys answers a random absent key "maybe" with probability
 * E[(X/512)^k], X the number of set bits after j*k uniform bit throws
 * (computed exactly by dynamic programming over the occupancy distribution). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define BR_BLOOM_BLOCK_BYTES 64
#define BR_BLOOM_BLOCK_BITS 512
#define BR_BLOOM_KEY_LEN 32
#define BR_BLOOM_MIN_K 1
#define BR_BLOOM_MAX_K 18                       /* 18 fields of 9 bits fit in key bytes 3..23 */
#define BR_BLOOM_MAX_BLOCKS (UINT64_C(1) << 32) /* 256 GiB of blocks */
#define BR_BLOOM_MAX_CAPACITY (UINT64_C(1) << 36)
#define BR_BLOOM_MIN_FPR 1e-9
#define BR_BLOOM_MAX_FPR 0.1
#define BR_BLOOM_DEFAULT_FPR 1e-5

/* A filter in memory (or in a mapped file): block_count blocks of 64 bytes. */
typedef struct br_bloom {
    const uint8_t *blocks;
    uint64_t block_count;
    unsigned k;
} br_bloom;

static inline uint64_t br_bloom_block_of(const uint8_t key[BR_BLOOM_KEY_LEN], uint64_t block_count)
{
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--)
        h = (h << 8) | key[24 + i];
    return (uint64_t)(((unsigned __int128)h * block_count) >> 64);
}

/* Bit position (0..511) of probe i (0 <= i < BR_BLOOM_MAX_K). */
static inline unsigned br_bloom_bit_of(const uint8_t key[BR_BLOOM_KEY_LEN], unsigned i)
{
    unsigned off = 9 * i;
    const uint8_t *p = key + 3 + (off >> 3);
    return ((unsigned)p[0] | ((unsigned)p[1] << 8)) >> (off & 7) & 511u;
}

/* false: definitely not inserted; true: maybe. */
static inline bool br_bloom_contains(const br_bloom *b, const uint8_t key[BR_BLOOM_KEY_LEN])
{
    const uint8_t *blk = b->blocks + br_bloom_block_of(key, b->block_count) * BR_BLOOM_BLOCK_BYTES;
    unsigned miss = 0;
    for (unsigned i = 0; i < b->k; i++) {
        unsigned bit = br_bloom_bit_of(key, i);
        miss |= ~(unsigned)blk[bit >> 3] >> (bit & 7) & 1u;
    }
    return miss == 0;
}

/* Prefetch the cache line a key probes (for batched lookups). */
static inline void br_bloom_prefetch(const br_bloom *b, const uint8_t key[BR_BLOOM_KEY_LEN])
{
    __builtin_prefetch(b->blocks + br_bloom_block_of(key, b->block_count) * BR_BLOOM_BLOCK_BYTES);
}

/* Set a key's k bits in blocks (block_count blocks). Returns true when at
 * least one bit was newly set, i.e. the filter did not already answer maybe. */
bool br_bloom_insert(uint8_t *blocks, uint64_t block_count, unsigned k,
                     const uint8_t key[BR_BLOOM_KEY_LEN]);

/* Expected false-positive rate per absent key of a filter with keys_per_block
 * = keys / block_count and k probes, by the model above. k in 1..MAX_K,
 * keys_per_block >= 0; beyond about 4000 keys per block it returns 1. */
double br_bloom_fpr(double keys_per_block, unsigned k);

typedef struct br_bloom_params {
    unsigned k;
    uint64_t block_count;
    double fpr;          /* br_bloom_fpr() at the capacity */
    double bits_per_key; /* at the capacity */
} br_bloom_params;

/* The fewest blocks, and for them the k, whose modelled false-positive rate at
 * capacity keys is at most target_fpr (ties: the smaller k). capacity 1..
 * BR_BLOOM_MAX_CAPACITY (0 is taken as 1), target_fpr in [BR_BLOOM_MIN_FPR,
 * BR_BLOOM_MAX_FPR]. -EINVAL otherwise, -EFBIG when the blocks would exceed
 * BR_BLOOM_MAX_BLOCKS. */
int br_bloom_size(uint64_t capacity, double target_fpr, br_bloom_params *out, br_error *err);

/* Number of set bits in len bytes. */
uint64_t br_popcount_bytes(const uint8_t *p, size_t len);
