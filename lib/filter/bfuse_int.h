/* SPDX-License-Identifier: MIT */
/* The hashing and addressing shared by the lookups (lib/filter/bfuse.c) and
 * the construction (lib/builder/bfuse_build.c) of binary fuse filters: the
 * formulas of docs/filter-format.md, in one place so that a built filter and
 * its reader can never disagree. Internal: callers use bfuse.h. */
#pragma once

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "bfuse.h"

#define BFUSE_MAX_SEGMENT_LOG 18

/* MurmurHash3's 64-bit finalizer: a bijection with full avalanche. */
static inline uint64_t bfuse_mix(uint64_t h)
{
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return h;
}

static inline uint32_t bfuse_mulhi(uint64_t h, uint32_t n)
{
    return (uint32_t)(((unsigned __int128)h * n) >> 64);
}

static inline uint32_t bfuse_fp(uint64_t h)
{
    return (uint32_t)(h ^ (h >> 32));
}

/* The addressing parameters of a laid-out, non-empty filter. */
typedef struct bfuse_geom {
    uint32_t seglen;
    uint32_t mask;
    uint32_t scl;
    unsigned shift;
} bfuse_geom;

static inline void bfuse_geom_of(const br_bfuse *f, bfuse_geom *g)
{
    g->seglen = f->segment_length;
    g->mask = f->segment_length - 1;
    g->scl = f->segment_count_length;
    g->shift = (unsigned)__builtin_ctz(f->segment_length);
}

static inline __attribute__((always_inline)) void bfuse_positions(const bfuse_geom *g, uint64_t h,
                                                                  unsigned arity, uint32_t p[4])
{
    uint32_t h0 = bfuse_mulhi(h, g->scl);
    p[0] = h0;
    p[1] = (h0 + g->seglen) ^ ((uint32_t)h & g->mask);
    p[2] = (h0 + 2 * g->seglen) ^ ((uint32_t)(h >> g->shift) & g->mask);
    if (arity == 4)
        p[3] = (h0 + 3 * g->seglen) ^ ((uint32_t)(h >> (2 * g->shift)) & g->mask);
}

/* Fingerprint slots, little-endian, fpb = 1, 2 or 4 bytes. */
static inline __attribute__((always_inline)) uint32_t bfuse_load(const uint8_t *a, uint32_t i,
                                                                 unsigned fpb)
{
    if (fpb == 1)
        return a[i];
    if (fpb == 2) {
        uint16_t v;
        memcpy(&v, a + (size_t)i * 2, 2);
        return le16toh(v);
    }
    uint32_t v;
    memcpy(&v, a + (size_t)i * 4, 4);
    return le32toh(v);
}

static inline __attribute__((always_inline)) void bfuse_store(uint8_t *a, uint32_t i, uint32_t x,
                                                              unsigned fpb)
{
    if (fpb == 1) {
        a[i] = (uint8_t)x;
    } else if (fpb == 2) {
        uint16_t v = htole16((uint16_t)x);
        memcpy(a + (size_t)i * 2, &v, 2);
    } else {
        uint32_t v = htole32(x);
        memcpy(a + (size_t)i * 4, &v, 4);
    }
}

static inline uint32_t bfuse_fp_mask(unsigned fpb)
{
    return fpb == 4 ? UINT32_MAX : (UINT32_C(1) << (8 * fpb)) - 1;
}

static inline __attribute__((always_inline)) bool
bfuse_match(const uint8_t *a, const uint32_t p[4], unsigned arity, unsigned fpb, uint64_t h)
{
    uint32_t v = bfuse_fp(h);
    for (unsigned j = 0; j < arity; j++)
        v ^= bfuse_load(a, p[j], fpb);
    return (v & bfuse_fp_mask(fpb)) == 0;
}

static inline __attribute__((always_inline)) bool bfuse_contains_one(const br_bfuse *f,
                                                                     const bfuse_geom *g,
                                                                     unsigned arity, unsigned fpb,
                                                                     uint64_t key)
{
    uint32_t p[4];
    uint64_t h = bfuse_mix(key + f->seed);
    bfuse_positions(g, h, arity, p);
    return bfuse_match(f->fingerprints, p, arity, fpb, h);
}

/* br_bfuse_contains of a filter whose fingerprints are known to be fpb
 * bytes (a check or quick filter, laid out by the reader), inlined into
 * its caller. */
static inline __attribute__((always_inline)) bool bfuse_contains_inline(const br_bfuse *f,
                                                                        unsigned fpb, uint64_t key)
{
    if (f->array_length == 0)
        return false;
    bfuse_geom g;
    bfuse_geom_of(f, &g);
    return f->arity == 4 ? bfuse_contains_one(f, &g, 4, fpb, key)
                         : bfuse_contains_one(f, &g, 3, fpb, key);
}

/* A coded lookup (fp_bits 32: a 24-bit fingerprint over an 8-bit code,
 * docs/filter-format.md "Algorithm 4"): the code, or 0 when the
 * fingerprint does not match. */
static inline __attribute__((always_inline)) uint8_t
bfuse_code_of(const uint8_t *a, const uint32_t p[4], unsigned arity, uint64_t h)
{
    uint32_t v = bfuse_fp(h) & ~UINT32_C(0xff);
    for (unsigned j = 0; j < arity; j++)
        v ^= bfuse_load(a, p[j], 4);
    return (v >> 8) == 0 ? (uint8_t)v : 0;
}

static inline __attribute__((always_inline)) uint8_t bfuse_code_one(const br_bfuse *f,
                                                                    unsigned arity, uint64_t key)
{
    bfuse_geom g;
    bfuse_geom_of(f, &g);
    uint32_t p[4];
    uint64_t h = bfuse_mix(key + f->seed);
    bfuse_positions(&g, h, arity, p);
    return bfuse_code_of(f->fingerprints, p, arity, h);
}

/* br_bfuse_code of a filter known to hold 32-bit slots, inlined into its
 * caller: a lookup on its own is bound by how many the CPU overlaps, so
 * by its instructions as much as by its reads. */
static inline __attribute__((always_inline)) uint8_t bfuse_code_inline(const br_bfuse *f,
                                                                       uint64_t key)
{
    if (f->array_length == 0)
        return 0;
    return f->arity == 4 ? bfuse_code_one(f, 4, key) : bfuse_code_one(f, 3, key);
}
