/* SPDX-License-Identifier: MIT */
/* fuzz_filter.c's writer: valid filter files made from a few parameters,
 * written here from docs/filter-format.md (not through the library's
 * writers, so that a disagreement between the document, the writers and the
 * loaders shows), then edited byte by byte, and their checksums recomputed.
 * Include after fuzz_check.h and fuzz_bytes.h. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "filter/bfuse.h"
#include "filter/bloom.h"
#include "filter/filter_file.h"
#include "core/hash.h"
#include "filter/urlfilter.h"
#include "core/util.h"

enum { FZ_BUILT_PASSWORD = 1, FZ_BUILT_URL = 2 };
#define FZ_MAX_SHARD_BITS 3
#define FZ_MAX_EDITS 8

typedef struct fz_built {
    int kind;
    uint8_t *file;
    size_t len;
    bool edited; /* a byte edit changed the file: it may be refused */
    size_t n_keys;
    uint64_t *keys64;                  /* password: every key it holds */
    uint8_t (*keys256)[BR_SHA256_LEN]; /* URL: every key it holds */
} fz_built;

static inline void fz_built_free(fz_built *b)
{
    free(b->file);
    free(b->keys64);
    free(b->keys256);
}

/* Both checksums of the container, recomputed over the file as it is. */
static inline void fz_fix_checksums(uint8_t *file, size_t len)
{
    if (len < BR_FILTER_HEADER_SIZE)
        return;
    CHECK(br_sha256(file + BR_FILTER_HEADER_SIZE, len - BR_FILTER_HEADER_SIZE, file + 448) == 0);
    CHECK(br_sha256(file, 480, file + 480) == 0);
}

/* The header fields of docs/filter-format.md, "Header"; checksums later. */
static inline void fz_header(uint8_t *file, uint32_t kind, uint32_t algorithm, uint32_t keyenc,
                             uint32_t keyenc_version, uint64_t generation, uint64_t key_count,
                             uint64_t payload_offset, uint64_t len)
{
    memcpy(file, BR_FILTER_MAGIC, 8);
    br_store_le32(file + 8, BR_FILTER_VERSION);
    br_store_le32(file + 12, BR_FILTER_HEADER_SIZE);
    br_store_le32(file + 16, kind);
    br_store_le32(file + 20, algorithm);
    br_store_le32(file + 24, keyenc);
    br_store_le32(file + 28, keyenc_version);
    br_store_le64(file + 32, generation);
    br_store_le64(file + 40, 1700000000);
    br_store_le64(file + 48, key_count);
    br_store_le64(file + 56, payload_offset);
    br_store_le64(file + 64, len - payload_offset);
    memcpy(file + 136, "fuzz", 4);
}

static int fz_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static inline size_t fz_align64(size_t x)
{
    return (x + 63) & ~(size_t)63;
}

/* A sharded binary fuse filter ("Algorithm 1"). Input: flags (arity 4, the
 * fingerprint width, payload at 512 rather than 4096, kind password-ntlm),
 * shard bits (0..3), then per shard a key count (0..255), and a seed. */
static inline void fz_build_password(fz_bytes *in, fz_built *b)
{
    memset(b, 0, sizeof(*b));
    b->kind = FZ_BUILT_PASSWORD;
    uint8_t flags = fz_u8(in);
    unsigned arity = flags & 1 ? 4 : 3;
    unsigned fp_bits = (flags >> 1 & 3) == 0 ? 8 : (flags >> 1 & 3) == 1 ? 16 : 32;
    size_t payload = flags & 8 ? 512 : BR_FILTER_PAYLOAD_ALIGN;
    uint32_t kind = flags & 16 ? BR_KIND_PASSWORD_NTLM : BR_KIND_PASSWORD_SHA1;
    unsigned shard_bits = fz_u8(in) % (FZ_MAX_SHARD_BITS + 1);
    uint32_t shards = UINT32_C(1) << shard_bits;
    size_t counts[1u << FZ_MAX_SHARD_BITS];
    size_t total = 0;
    for (uint32_t s = 0; s < shards; s++)
        total += counts[s] = fz_u8(in);
    uint64_t seed = fz_u64(in);

    b->keys64 = malloc((total ? total : 1) * sizeof(uint64_t));
    br_bfuse f[1u << FZ_MAX_SHARD_BITS];
    uint64_t off[1u << FZ_MAX_SHARD_BITS];
    uint32_t held[1u << FZ_MAX_SHARD_BITS];
    void *fp[1u << FZ_MAX_SHARD_BITS] = {0};
    CHECK(b->keys64);
    size_t pos = payload;
    for (uint32_t s = 0; s < shards; s++) {
        /* Distinct keys of this shard: the top shard_bits bits are s. */
        uint64_t *k = b->keys64 + b->n_keys;
        for (size_t i = 0; i < counts[s]; i++) {
            uint64_t x = br_splitmix64(&seed);
            k[i] = shard_bits ? ((uint64_t)s << (64 - shard_bits)) | (x >> shard_bits) : x;
        }
        qsort(k, counts[s], sizeof(uint64_t), fz_cmp_u64);
        size_t n = 0;
        for (size_t i = 0; i < counts[s]; i++)
            if (n == 0 || k[n - 1] != k[i])
                k[n++] = k[i];
        CHECK(br_bfuse_layout(&f[s], arity, fp_bits, n) == 0);
        fp[s] = calloc(1, br_bfuse_bytes(&f[s]) + 1);
        CHECK(fp[s]);
        uint64_t *work = malloc((n ? n : 1) * sizeof(uint64_t));
        CHECK(work);
        memcpy(work, k, n * sizeof(uint64_t));
        CHECK(br_bfuse_build(&f[s], work, n, seed ^ s, fp[s]) == 0);
        free(work);
        b->n_keys += n;
        held[s] = (uint32_t)n;
        off[s] = pos;
        pos = fz_align64(pos + br_bfuse_bytes(&f[s]));
    }
    size_t table = pos;
    b->len = table + (size_t)shards * 32;
    b->file = calloc(1, b->len);
    CHECK(b->file);
    fz_header(b->file, kind, BR_ALGO_BINARY_FUSE, BR_KEYENC_HASH_PREFIX64, 1, seed, b->n_keys,
              payload, b->len);
    uint8_t *p = b->file + 72;
    p[0] = (uint8_t)arity;
    p[1] = (uint8_t)fp_bits;
    p[2] = (uint8_t)shard_bits;
    br_store_le32(p + 4, shards);
    br_store_le64(p + 8, table);
    br_store_le32(p + 16, 32);
    for (uint32_t s = 0; s < shards; s++) {
        memcpy(b->file + off[s], fp[s], br_bfuse_bytes(&f[s]));
        uint8_t *e = b->file + table + (size_t)s * 32;
        br_store_le64(e, f[s].seed);
        br_store_le64(e + 8, off[s]);
        br_store_le32(e + 16, held[s]);
        br_store_le32(e + 20, f[s].segment_length);
        br_store_le32(e + 24, f[s].segment_count_length);
        br_store_le32(e + 28, f[s].array_length);
        free(fp[s]);
    }
}

/* A blocked-Bloom URL filter ("Algorithm 2"). Input: flags (payload at 512
 * rather than 4096, key encoding v1), k, blocks - 1, max_domain_labels, the
 * number of keys (0..511) and a seed. */
static inline void fz_build_url(fz_bytes *in, fz_built *b)
{
    memset(b, 0, sizeof(*b));
    b->kind = FZ_BUILT_URL;
    uint8_t flags = fz_u8(in);
    size_t payload = flags & 1 ? 512 : BR_FILTER_PAYLOAD_ALIGN;
    uint32_t keyenc_version = flags & 2 ? 1 : 2;
    unsigned k = BR_BLOOM_MIN_K + fz_u8(in) % BR_BLOOM_MAX_K;
    uint64_t blocks = 1 + (uint64_t)fz_u8(in);
    unsigned labels = keyenc_version == 2 ? fz_u8(in) % 128 : (fz_u8(in), 0);
    size_t n = fz_u16(in) % 512;
    uint64_t seed = fz_u64(in);
    size_t bitmap = payload, blk = payload + BR_URLFILTER_BITMAP_BYTES;
    b->len = blk + blocks * BR_BLOOM_BLOCK_BYTES;
    b->file = calloc(1, b->len);
    b->keys256 = malloc((n ? n : 1) * BR_SHA256_LEN);
    CHECK(b->file && b->keys256);
    for (size_t i = 0; i < n; i++) {
        for (int j = 0; j < BR_SHA256_LEN; j += 8)
            br_store_le64(b->keys256[i] + j, br_splitmix64(&seed));
        uint32_t pfx = br_urlfilter_prefix_of(b->keys256[i]);
        b->file[bitmap + pfx / 8] |= (uint8_t)(1u << (pfx % 8));
        br_bloom_insert(b->file + blk, blocks, k, b->keys256[i]);
    }
    b->n_keys = n;
    fz_header(b->file, BR_KIND_URL_SHA256, BR_ALGO_BLOCKED_BLOOM, BR_KEYENC_URL_EXPR_SHA256,
              keyenc_version, 7, n, payload, b->len);
    uint8_t *p = b->file + 72;
    p[0] = (uint8_t)k;
    p[1] = 9;
    p[2] = BR_URLFILTER_PREFIX_BITS;
    p[3] = (uint8_t)labels;
    br_store_le64(p + 8, blocks);
    br_store_le64(p + 16, n ? n : 1);
    double fpr = 1e-5;
    uint64_t fpr_bits;
    memcpy(&fpr_bits, &fpr, 8);
    br_store_le64(p + 24, fpr_bits);
    br_store_le64(p + 32, bitmap);
    br_store_le64(p + 40, blk);
    br_store_le64(p + 48, n);
    br_store_le64(p + 56, 7);
}

/* Up to FZ_MAX_EDITS edits: a 24-bit offset into the file (modulo its
 * length) and a byte to XOR there; a length change (truncate or extend by
 * up to 255 zero bytes) when the offset's top bit is set. */
static inline void fz_apply_edits(fz_bytes *in, fz_built *b)
{
    unsigned n = fz_u8(in) % (FZ_MAX_EDITS + 1);
    for (unsigned i = 0; i < n && in->n > 0; i++) {
        uint32_t off = fz_u16(in) | (uint32_t)fz_u8(in) << 16;
        uint8_t x = fz_u8(in);
        if (off & 0x800000) {
            size_t nlen = off & 1 ? b->len + x : (b->len > x ? b->len - x : 0);
            uint8_t *nf = realloc(b->file, nlen ? nlen : 1);
            CHECK(nf);
            if (nlen > b->len)
                memset(nf + b->len, 0, nlen - b->len);
            b->edited |= nlen != b->len;
            b->file = nf;
            b->len = nlen;
        } else if (b->len > 0 && x) {
            b->file[off % b->len] ^= x;
            b->edited = true;
        }
    }
}
