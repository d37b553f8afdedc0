/* SPDX-License-Identifier: MIT */
/* Binary fuse filter lookups and layout (bfuse.h); construction is in
 * lib/builder/bfuse_build.c, which only the programs that write filters
 * link. */

/* After Graf & Lemire, "Binary Fuse Filters: Fast and Smaller Than Xor
 * Filters" (ACM JEA, 2022).
 *
 * The array of array_length fingerprints is cut into segments of
 * segment_length slots. A key's hash picks a start h0 in the first
 * segment_count segments; its i-th slot (i = 0 .. arity-1) lies in segment
 * seg(h0) + i, at the offset of h0 XOR a further slice of the hash. A key is
 * reported present when the XOR of the fingerprints at its slots equals its
 * own fingerprint.
 *
 *   hash = fmix64(key + seed)                 (MurmurHash3 finalizer)
 *   h0   = (hash * segment_count_length) >> 64
 *   h1   = (h0 + 1 * L) ^ ( hash               & (L-1))
 *   h2   = (h0 + 2 * L) ^ ((hash >>    shift)  & (L-1))
 *   h3   = (h0 + 3 * L) ^ ((hash >> 2*shift)   & (L-1))     (4-wise only)
 *   fp   = low fp_bits of (hash ^ (hash >> 32))
 *
 * with L = segment_length = 2^shift. h0 takes the top bits of the hash, the
 * offsets the low bits. They use disjoint bits up to ~1e8 keys (3-wise) or
 * ~5M keys (4-wise); past that a few bits are shared, which costs nothing in
 * correctness (construction still peeled first time at 16M and 60M keys).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bfuse_int.h"
#include "core/br_assert.h"
#include "core/util.h"

#define BFUSE_BATCH 32

/* ---- layout ---------------------------------------------------------- */

/* Natural logarithm for x >= 1, in plain IEEE arithmetic (no libm, and the
 * same result on every platform): x = 2^k * m with m in [1, 2), and
 * ln m = 2 atanh(z) = 2 (z + z^3/3 + z^5/5 + ...), z = (m-1)/(m+1) <= 1/3. */
static double bfuse_ln(double x)
{
    int k = 0;
    while (x >= 2.0) {
        x *= 0.5;
        k++;
    }
    double z = (x - 1.0) / (x + 1.0), z2 = z * z, term = z, sum = 0.0;
    for (int i = 1; i < 64; i += 2) {
        sum += term / i;
        term *= z2;
    }
    return 2.0 * sum + k * 0.693147180559945309417232121458;
}

int br_bfuse_layout(br_bfuse *f, unsigned arity, unsigned fp_bits, size_t n)
{
    if ((arity != 3 && arity != 4) || (fp_bits != 8 && fp_bits != 16 && fp_bits != 32))
        return -EINVAL;
    if (n > BR_BFUSE_MAX_KEYS)
        return -E2BIG;
    f->arity = (uint8_t)arity;
    f->fp_bits = (uint8_t)fp_bits;
    if (n == 0) {
        f->segment_length = 0;
        f->segment_count_length = 0;
        f->array_length = 0;
        return 0;
    }

    /* The paper's fits. The size factor grows without bound as n -> 1, so
     * it is evaluated at n >= 2; for such tiny sets it is already ~6. */
    double ln_n = bfuse_ln((double)n), ln_nf = bfuse_ln(n < 2 ? 2.0 : (double)n);
    double e, factor;
    if (arity == 3) {
        e = ln_n / bfuse_ln(3.33) + 2.25;
        factor = 0.875 + 0.25 * bfuse_ln(1e6) / ln_nf;
        if (factor < 1.125)
            factor = 1.125;
    } else {
        e = ln_n / bfuse_ln(2.91) - 0.5;
        factor = 0.77 + 0.305 * bfuse_ln(600000.0) / ln_nf;
        if (factor < 1.075)
            factor = 1.075;
    }
    unsigned seglog = e < 1.0 ? 0 : (unsigned)e; /* floor */
    /* 4-wise below ~40 keys: the fit gives segments of 1 to 4 slots, whose
     * few offset bits often put two keys on the same slots (a build then
     * needs ~3 attempts on average). 8 slots cost at most a few bytes. */
    if (arity == 4 && seglog < 3)
        seglog = 3;
    if (seglog > BFUSE_MAX_SEGMENT_LOG)
        seglog = BFUSE_MAX_SEGMENT_LOG;
    uint64_t seglen = UINT64_C(1) << seglog;

    /* capacity slots in all, the last arity-1 segments being the tail that
     * only the keys of the last segments reach */
    uint64_t capacity = (uint64_t)((double)n * factor + 0.5);
    uint64_t segs = (capacity + seglen - 1) / seglen;
    segs = segs >= arity ? segs - (arity - 1) : 1;
    uint64_t total = (segs + arity - 1) * seglen;
    if (br_fails_assert(total <= UINT32_MAX)) /* n <= BR_BFUSE_MAX_KEYS keeps it so */
        return -EINVAL;
    f->segment_length = (uint32_t)seglen;
    f->segment_count_length = (uint32_t)(segs * seglen);
    f->array_length = (uint32_t)total;
    return 0;
}

size_t br_bfuse_bytes(const br_bfuse *f)
{
    return (size_t)f->array_length * (f->fp_bits / 8u);
}

int br_bfuse_check(const br_bfuse *f)
{
    if (!f)
        return -EINVAL;
    if (f->arity != 3 && f->arity != 4)
        return -EINVAL;
    if (f->fp_bits != 8 && f->fp_bits != 16 && f->fp_bits != 32)
        return -EINVAL;
    if (f->segment_length == 0) /* the empty filter */
        return f->segment_count_length == 0 && f->array_length == 0 ? 0 : -EINVAL;
    if (f->segment_length > (UINT32_C(1) << BFUSE_MAX_SEGMENT_LOG) ||
        (f->segment_length & (f->segment_length - 1)) != 0)
        return -EINVAL;
    if (f->segment_count_length == 0 || f->segment_count_length % f->segment_length != 0)
        return -EINVAL;
    uint64_t total =
        (uint64_t)f->segment_count_length + (uint64_t)(f->arity - 1) * f->segment_length;
    if (total != f->array_length)
        return -EINVAL;
    return 0;
}

/* ---- queries --------------------------------------------------------- */

bool br_bfuse_contains(const br_bfuse *f, uint64_t key)
{
    if (f->array_length == 0)
        return false;
    bfuse_geom g;
    bfuse_geom_of(f, &g);
    unsigned fpb = f->fp_bits / 8u;
    if (f->arity == 3) {
        if (fpb == 1)
            return bfuse_contains_one(f, &g, 3, 1, key);
        if (fpb == 2)
            return bfuse_contains_one(f, &g, 3, 2, key);
        return bfuse_contains_one(f, &g, 3, 4, key);
    }
    if (fpb == 1)
        return bfuse_contains_one(f, &g, 4, 1, key);
    if (fpb == 2)
        return bfuse_contains_one(f, &g, 4, 2, key);
    return bfuse_contains_one(f, &g, 4, 4, key);
}

static inline __attribute__((always_inline)) void bfuse_prefetch_one(const br_bfuse *f,
                                                                     unsigned arity, uint64_t key)
{
    bfuse_geom g;
    bfuse_geom_of(f, &g);
    uint32_t p[4];
    bfuse_positions(&g, bfuse_mix(key + f->seed), arity, p);
    const uint8_t *a = f->fingerprints;
    unsigned fpb = f->fp_bits / 8u;
    for (unsigned t = 0; t < arity; t++)
        __builtin_prefetch(a + (size_t)p[t] * fpb);
}

void br_bfuse_prefetch(const br_bfuse *f, uint64_t key)
{
    if (f->array_length == 0)
        return;
    if (f->arity == 4)
        bfuse_prefetch_one(f, 4, key);
    else
        bfuse_prefetch_one(f, 3, key);
}

static inline __attribute__((always_inline)) void bfuse_batch(const br_bfuse *f,
                                                              const bfuse_geom *g, unsigned arity,
                                                              unsigned fpb, const uint64_t *keys,
                                                              size_t n, bool *out)
{
    const uint8_t *a = f->fingerprints;
    uint64_t hs[BFUSE_BATCH];
    uint32_t ps[BFUSE_BATCH][4];
    for (size_t i = 0; i < n; i += BFUSE_BATCH) {
        size_t k = BR_MIN((size_t)BFUSE_BATCH, n - i);
        for (size_t j = 0; j < k; j++) {
            uint64_t h = bfuse_mix(keys[i + j] + f->seed);
            hs[j] = h;
            bfuse_positions(g, h, arity, ps[j]);
            for (unsigned t = 0; t < arity; t++)
                __builtin_prefetch(a + (size_t)ps[j][t] * fpb);
        }
        for (size_t j = 0; j < k; j++)
            out[i + j] = bfuse_match(a, ps[j], arity, fpb, hs[j]);
    }
}

void br_bfuse_contains_batch(const br_bfuse *f, const uint64_t *keys, size_t n, bool *out)
{
    if (f->array_length == 0) {
        for (size_t i = 0; i < n; i++)
            out[i] = false;
        return;
    }
    bfuse_geom g;
    bfuse_geom_of(f, &g);
    unsigned fpb = f->fp_bits / 8u;
    if (f->arity == 3) {
        if (fpb == 1)
            bfuse_batch(f, &g, 3, 1, keys, n, out);
        else if (fpb == 2)
            bfuse_batch(f, &g, 3, 2, keys, n, out);
        else
            bfuse_batch(f, &g, 3, 4, keys, n, out);
    } else {
        if (fpb == 1)
            bfuse_batch(f, &g, 4, 1, keys, n, out);
        else if (fpb == 2)
            bfuse_batch(f, &g, 4, 2, keys, n, out);
        else
            bfuse_batch(f, &g, 4, 4, keys, n, out);
    }
}

/* ---- coded lookups (fp_bits 32) --------------------------------------- */

/* One body per arity: its slot loads unrolled, issued back to back. */
uint8_t br_bfuse_code(const br_bfuse *f, uint64_t key)
{
    return f->fp_bits == 32 ? bfuse_code_inline(f, key) : 0;
}
