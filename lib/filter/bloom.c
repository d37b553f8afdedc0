/* SPDX-License-Identifier: MIT */
/* Blocked Bloom filter: insertion, the false-positive model and sizing.
 * The probe rule is inline in bloom.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "bloom.h"
#include "core/util.h"

bool br_bloom_insert(uint8_t *blocks, uint64_t block_count, unsigned k,
                     const uint8_t key[BR_BLOOM_KEY_LEN])
{
    uint8_t *blk = blocks + br_bloom_block_of(key, block_count) * BR_BLOOM_BLOCK_BYTES;
    unsigned fresh = 0;
    for (unsigned i = 0; i < k; i++) {
        unsigned bit = br_bloom_bit_of(key, i);
        uint8_t mask = (uint8_t)(1u << (bit & 7));
        fresh |= !(blk[bit >> 3] & mask);
        blk[bit >> 3] |= mask;
    }
    return fresh != 0;
}

uint64_t br_popcount_bytes(const uint8_t *p, size_t len)
{
    uint64_t n = 0;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        n += (uint64_t)__builtin_popcountll(w);
    }
    for (; i < len; i++)
        n += (uint64_t)__builtin_popcount(p[i]);
    return n;
}

/* ---- the false-positive model ----
 *
 * g[j] = E[(X/512)^k] where X is the number of distinct bits hit by j*k
 * uniform throws into 512 bits: the probability that a block holding j keys
 * answers maybe for an absent key (whose k probes are k more uniform,
 * independent positions, repeats allowed, exactly like the probe rule).
 * The occupancy distribution P_t(x) evolves by
 *   P_{t+1}(x) = P_t(x) * x/512 + P_t(x-1) * (512 - x + 1)/512,
 * which only adds non-negative terms, so it is numerically stable. */

#define M BR_BLOOM_BLOCK_BITS
#define MAX_LAMBDA 4000.0

typedef struct fpr_model {
    unsigned k;
    unsigned jmax;
    double *g; /* jmax + 1 entries */
} fpr_model;

static unsigned jmax_for(double lambda)
{
    return (unsigned)ceil(lambda + 12.0 * sqrt(lambda) + 40.0);
}

static int model_build(fpr_model *mo, unsigned k, unsigned jmax)
{
    double pw[M + 1];
    double *p = calloc(M + 1, sizeof(double));
    mo->g = malloc((size_t)(jmax + 1) * sizeof(double));
    if (!p || !mo->g) {
        free(p);
        free(mo->g);
        mo->g = NULL;
        return -ENOMEM;
    }
    mo->k = k;
    mo->jmax = jmax;
    for (unsigned x = 0; x <= M; x++)
        pw[x] = pow((double)x / M, (double)k);
    p[0] = 1.0;
    mo->g[0] = 0.0;
    uint64_t tmax = (uint64_t)jmax * k;
    for (uint64_t t = 1; t <= tmax; t++) {
        unsigned top = t < M ? (unsigned)t : M;
        for (unsigned x = top; x >= 1; x--)
            p[x] = p[x] * ((double)x / M) + p[x - 1] * ((double)(M - x + 1) / M);
        p[0] = 0.0;
        if (t % k == 0) {
            double s = 0.0;
            for (unsigned x = 1; x <= top; x++)
                s += p[x] * pw[x];
            mo->g[t / k] = s;
        }
    }
    free(p);
    return 0;
}

/* Sum over j of Poisson(j; lambda) * g[j]; the Poisson mass beyond jmax
 * counts as certain false positives (an upper bound, negligible when jmax
 * came from jmax_for(lambda)). */
static double model_eval(const fpr_model *mo, double lambda)
{
    if (lambda <= 0.0)
        return 0.0;
    double sum = 0.0, mass = 0.0, ll = log(lambda);
    for (unsigned j = 0; j <= mo->jmax; j++) {
        double pj = exp(-lambda + j * ll - lgamma((double)j + 1.0));
        mass += pj;
        sum += pj * mo->g[j];
    }
    double tail = 1.0 - mass;
    if (tail > 0.0)
        sum += tail;
    return sum < 1.0 ? sum : 1.0;
}

double br_bloom_fpr(double keys_per_block, unsigned k)
{
    if (!(keys_per_block > 0.0))
        return 0.0;
    if (k < BR_BLOOM_MIN_K || k > BR_BLOOM_MAX_K || keys_per_block > MAX_LAMBDA)
        return 1.0;
    fpr_model mo;
    if (model_build(&mo, k, jmax_for(keys_per_block)) < 0)
        return NAN;
    double f = model_eval(&mo, keys_per_block);
    free(mo.g);
    return f;
}

/* The largest keys per block that keep the model at or under target. */
static double max_lambda(const fpr_model *mo, double hi, double target)
{
    double lo = 0.0;
    if (model_eval(mo, hi) <= target)
        return hi;
    for (int it = 0; it < 100 && hi - lo > 1e-12 * hi; it++) {
        double mid = 0.5 * (lo + hi);
        if (model_eval(mo, mid) <= target)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int br_bloom_size(uint64_t capacity, double target, br_bloom_params *out, br_error *err)
{
    if (capacity == 0)
        capacity = 1;
    if (capacity > BR_BLOOM_MAX_CAPACITY)
        return br_error_set(err, -EINVAL, "capacity %llu out of range (at most %llu)",
                            (unsigned long long)capacity,
                            (unsigned long long)BR_BLOOM_MAX_CAPACITY);
    if (!(target >= BR_BLOOM_MIN_FPR && target <= BR_BLOOM_MAX_FPR))
        return br_error_set(err, -EINVAL, "false-positive rate %g out of range (%g .. %g)", target,
                            BR_BLOOM_MIN_FPR, BR_BLOOM_MAX_FPR);
    /* At the targets allowed every k's break-even load is under 200 keys
     * per block (k = 1 at 0.1 is about 54, the best k at 0.1 about 100). */
    const double hi = 200.0;
    br_bloom_params best = {0};
    for (unsigned k = BR_BLOOM_MIN_K; k <= BR_BLOOM_MAX_K; k++) {
        fpr_model mo;
        if (model_build(&mo, k, jmax_for(hi)) < 0)
            return br_error_set(err, -ENOMEM, "out of memory");
        double lam = max_lambda(&mo, hi, target);
        uint64_t blocks = 0;
        double f = 1.0;
        if (lam > 0.0) {
            double b = ceil((double)capacity / lam);
            blocks =
                b < 1.0 ? 1
                        : (b > (double)BR_BLOOM_MAX_BLOCKS ? BR_BLOOM_MAX_BLOCKS + 1 : (uint64_t)b);
            /* Rounding: make sure the chosen count really meets the target. */
            while (blocks <= BR_BLOOM_MAX_BLOCKS &&
                   (f = model_eval(&mo, (double)capacity / (double)blocks)) > target)
                blocks++;
        }
        free(mo.g);
        if (blocks == 0 || blocks > BR_BLOOM_MAX_BLOCKS)
            continue;
        if (best.k == 0 || blocks < best.block_count) {
            best.k = k;
            best.block_count = blocks;
            best.fpr = f;
        }
    }
    if (best.k == 0)
        return br_error_set(err, -EFBIG,
                            "%llu keys at a false-positive rate of %g need more than "
                            "%llu blocks",
                            (unsigned long long)capacity, target,
                            (unsigned long long)BR_BLOOM_MAX_BLOCKS);
    best.bits_per_key = (double)best.block_count * BR_BLOOM_BLOCK_BITS / (double)capacity;
    *out = best;
    return 0;
}
