/* SPDX-License-Identifier: MIT */
/* Binary fuse filter, after Graf & Lemire, "Binary Fuse Filters: Fast and
 * Smaller Than Xor Filters" (ACM JEA, 2022).
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
 *
 * Construction hashes the keys, orders the hashes by the segment of h0 (one
 * counting-sort pass) so that filling the slot table walks memory forward,
 * then peels: every slot keeps a count and the XOR of the hashes mapped to it,
 * so a slot with count 1 names its only key. Slots are scanned in order and
 * each singleton is peeled depth-first (a stack), which stays within a few
 * segments. Fingerprints are assigned in reverse peel order. The result is a
 * function of the key set and the seed only, not of the key order.
 *
 * Working memory per attempt: slot XORs (8 bytes/slot), slot counts (1
 * byte/slot), the peel order shared with the peel stack (4 bytes/slot) and
 * the sorted hashes (8 bytes/key): about 23 bytes per key for 3-wise. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bfuse.h"
#include "core/br_assert.h"
#include "core/util.h"

#define BFUSE_MAX_SEGMENT_LOG 18
#define BFUSE_MAX_ATTEMPTS 100
#define BFUSE_BATCH 32

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

static void bfuse_geom_of(const br_bfuse *f, bfuse_geom *g)
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

/* ---- construction ---------------------------------------------------- */

typedef struct bfuse_work {
    uint64_t *hashes; /* n: hashes ordered by the segment of h0 */
    uint8_t *codes;   /* coded builds, n: the code of hashes[i] */
    uint8_t *cxor;    /* coded builds, array_length: XOR of the codes mapped to a slot */
    uint64_t *sxor;   /* array_length: XOR of the hashes mapped to a slot */
    uint8_t *count;   /* array_length: number of hashes mapped to a slot */
    uint32_t *order;  /* array_length: peel order from the front, stack from the back */
    uint32_t *bucket; /* segment_count + 1 */
} bfuse_work;

static void bfuse_work_free(bfuse_work *w)
{
    free(w->hashes);
    free(w->codes);
    free(w->cxor);
    free(w->sxor);
    free(w->count);
    free(w->order);
    free(w->bucket);
}

/* Fill w->hashes with the hashes of keys in order of segment (and
 * w->codes with their codes when codes is given). */
static void bfuse_sort_hashes(const bfuse_geom *g, const uint64_t *keys, const uint8_t *codes,
                              size_t n, uint64_t seed, bfuse_work *w)
{
    uint32_t nseg = g->scl >> g->shift;
    uint32_t *b = w->bucket;
    memset(b, 0, ((size_t)nseg + 1) * sizeof(*b));
    for (size_t i = 0; i < n; i++)
        b[bfuse_mulhi(bfuse_mix(keys[i] + seed), g->scl) >> g->shift]++;
    uint32_t sum = 0;
    for (uint32_t s = 0; s < nseg; s++) {
        uint32_t c = b[s];
        b[s] = sum;
        sum += c;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h = bfuse_mix(keys[i] + seed);
        uint32_t at = b[bfuse_mulhi(h, g->scl) >> g->shift]++;
        w->hashes[at] = h;
        if (codes)
            w->codes[at] = codes[i];
    }
}

/* Assign in reverse peel order: each slot is still 0 when its key comes,
 * so XOR-ing over all the key's slots gives the value to store. */
static inline __attribute__((always_inline)) void bfuse_assign(const bfuse_geom *g, unsigned arity,
                                                               unsigned fpb, bool coded,
                                                               size_t peeled, uint32_t m,
                                                               const bfuse_work *w, uint8_t *out)
{
    uint32_t p[4];
    memset(out, 0, (size_t)m * fpb);
    for (size_t k = peeled; k-- > 0;) {
        uint32_t q = w->order[k];
        uint64_t h = w->sxor[q];
        bfuse_positions(g, h, arity, p);
        /* coded: the slots XOR to the fingerprint's top 24 bits and the code */
        uint32_t v = coded ? (bfuse_fp(h) & ~UINT32_C(0xff)) | w->cxor[q] : bfuse_fp(h);
        for (unsigned j = 0; j < arity; j++)
            v ^= bfuse_load(out, p[j], fpb);
        bfuse_store(out, q, v & bfuse_fp_mask(fpb), fpb);
    }
}

/* One construction attempt with one seed: true when every key peeled. */
static inline __attribute__((always_inline)) bool
bfuse_try(const bfuse_geom *g, unsigned arity, unsigned fpb, const uint64_t *keys,
          const uint8_t *codes, size_t n, uint32_t m, uint64_t seed, bfuse_work *w, uint8_t *out)
{
    uint64_t *sxor = w->sxor;
    uint8_t *count = w->count;
    uint8_t *cxor = w->cxor;
    uint32_t *order = w->order;
    uint32_t p[4];

    bfuse_sort_hashes(g, keys, codes, n, seed, w);
    memset(sxor, 0, (size_t)m * sizeof(*sxor));
    memset(count, 0, (size_t)m);
    if (codes)
        memset(cxor, 0, (size_t)m);

    unsigned overflow = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = w->hashes[i];
        bfuse_positions(g, h, arity, p);
        for (unsigned j = 0; j < arity; j++) {
            unsigned c = count[p[j]] + 1u;
            overflow |= c; /* bit 8 set once a count passes 255 (duplicates) */
            count[p[j]] = (uint8_t)c;
            sxor[p[j]] ^= h;
            if (codes)
                cxor[p[j]] ^= w->codes[i];
        }
    }
    if (overflow & 0x100u)
        return false;

    /* Peel. order[0 .. peeled) is the peel order, order[top .. m) the stack.
     * A slot is pushed at most once (when first seen with count 1, or when
     * its count drops from 2 to 1), and every peel pops one push, so
     * peeled + stack size <= m: the two never meet. A peeled slot keeps the
     * hash of its key in sxor and gets count 0. */
    size_t peeled = 0;
    uint32_t top = m;
    for (uint32_t s = 0; s < m; s++) {
        if (count[s] != 1)
            continue;
        order[--top] = s;
        while (top < m) {
            uint32_t q = order[top++];
            if (count[q] != 1)
                continue;
            uint64_t h = sxor[q];
            uint8_t code = codes ? cxor[q] : 0;
            bfuse_positions(g, h, arity, p);
            for (unsigned j = 0; j < arity; j++) {
                uint32_t r = p[j];
                sxor[r] ^= h;
                if (codes)
                    cxor[r] ^= code;
                if (--count[r] == 1)
                    order[--top] = r;
            }
            sxor[q] = h; /* count[q] is now 0 */
            if (codes)
                cxor[q] = code;
            order[peeled++] = q;
        }
    }
    if (peeled != n)
        return false;

    bfuse_assign(g, arity, fpb, codes != NULL, peeled, m, w, out);
    return true;
}

static bool bfuse_try_any(const bfuse_geom *g, unsigned arity, unsigned fpb, const uint64_t *keys,
                          const uint8_t *codes, size_t n, uint32_t m, uint64_t seed, bfuse_work *w,
                          uint8_t *out)
{
    if (codes && arity == 3)
        return bfuse_try(g, 3, 4, keys, codes, n, m, seed, w, out);
    if (codes)
        return bfuse_try(g, 4, 4, keys, codes, n, m, seed, w, out);
#define BFUSE_TRY(A, B)                                                                            \
    if (arity == (A) && fpb == (B))                                                                \
        return bfuse_try(g, A, B, keys, NULL, n, m, seed, w, out);
    BFUSE_TRY(3, 1)
    BFUSE_TRY(3, 2)
    BFUSE_TRY(3, 4)
    BFUSE_TRY(4, 1)
    BFUSE_TRY(4, 2)
    BFUSE_TRY(4, 4)
#undef BFUSE_TRY
    return false;
}

static int bfuse_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static bool bfuse_has_duplicates(uint64_t *keys, size_t n)
{
    qsort(keys, n, sizeof(*keys), bfuse_cmp_u64);
    for (size_t i = 1; i < n; i++)
        if (keys[i] == keys[i - 1])
            return true;
    return false;
}

/* The geometry of one attempt. The paper's segment length is marginal just
 * after it doubles (3-wise around n = 11.5k keys: 12 segments of 1024 at a
 * load where peeling mostly fails). After two failures, every second attempt
 * therefore uses half the segment length over the same array: twice the
 * segments, which peel at that load, and the same byte size. */
static void bfuse_attempt_geom(const br_bfuse *f, unsigned attempt, bfuse_geom *g)
{
    br_bfuse h = *f;
    if (attempt >= 2 && attempt % 2 == 0 && h.segment_length > 1) {
        h.segment_length /= 2;
        h.segment_count_length = h.array_length - (uint32_t)(h.arity - 1) * h.segment_length;
    }
    bfuse_geom_of(&h, g);
}

static int bfuse_build(br_bfuse *f, uint64_t *keys, const uint8_t *codes, size_t n,
                       uint64_t seed_base, void *fp_out)
{
    int r = br_bfuse_check(f);
    if (r < 0)
        return r;
    if (n > BR_BFUSE_MAX_KEYS)
        return -E2BIG;
    uint64_t state = seed_base;
    if (n == 0) {
        f->seed = br_splitmix64(&state);
        f->fingerprints = fp_out;
        return 0;
    }
    if (f->array_length == 0 || !keys || !fp_out)
        return -EINVAL;

    uint32_t m = f->array_length;
    unsigned fpb = f->fp_bits / 8u;
    /* segments of the finest geometry tried, plus one */
    size_t nseg = (size_t)(f->segment_count_length / f->segment_length) * 2 + 1;
    _cleanup_(bfuse_work_free) bfuse_work w = {0};
    w.hashes = malloc(n * sizeof(*w.hashes));
    w.sxor = malloc((size_t)m * sizeof(*w.sxor));
    w.count = malloc(m);
    w.order = malloc((size_t)m * sizeof(*w.order));
    w.bucket = malloc((nseg + f->arity) * sizeof(*w.bucket));
    if (!w.hashes || !w.sxor || !w.count || !w.order || !w.bucket)
        return -ENOMEM;
    if (codes && (!(w.codes = malloc(n)) || !(w.cxor = malloc(m))))
        return -ENOMEM;

    for (unsigned attempt = 0; attempt < BFUSE_MAX_ATTEMPTS; attempt++) {
        uint64_t seed = br_splitmix64(&state);
        bfuse_geom g;
        bfuse_attempt_geom(f, attempt, &g);
        if (bfuse_try_any(&g, f->arity, fpb, keys, codes, n, m, seed, &w, fp_out)) {
            f->seed = seed;
            f->segment_length = g.seglen;
            f->segment_count_length = g.scl;
            f->fingerprints = fp_out;
            return 0;
        }
        /* Distinct keys rarely fail even once; equal keys always fail, so
         * look for them the first time instead of trying 100 seeds. */
        if (attempt == 0 && !codes && bfuse_has_duplicates(keys, n))
            return -EDEADLK;
    }
    return -EDEADLK;
}

int br_bfuse_build(br_bfuse *f, uint64_t *keys, size_t n, uint64_t seed_base, void *fp_out)
{
    return bfuse_build(f, keys, NULL, n, seed_base, fp_out);
}

int br_bfuse_build_coded(br_bfuse *f, const uint64_t *keys, const uint8_t *codes, size_t n,
                         uint64_t seed_base, void *fp_out)
{
    if (f->fp_bits != 32 || (n && !codes))
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (codes[i] == 0 || (i && keys[i] <= keys[i - 1]))
            return -EINVAL;
    /* not reordered: the keys are sorted and distinct, and only a
     * duplicate search (not needed here) would sort them */
    return bfuse_build(f, (uint64_t *)keys, codes, n, seed_base, fp_out);
}

/* ---- queries --------------------------------------------------------- */

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

void br_bfuse_prefetch(const br_bfuse *f, uint64_t key)
{
    if (f->array_length == 0)
        return;
    bfuse_geom g;
    bfuse_geom_of(f, &g);
    uint32_t p[4];
    bfuse_positions(&g, bfuse_mix(key + f->seed), f->arity, p);
    const uint8_t *a = f->fingerprints;
    unsigned fpb = f->fp_bits / 8u;
    for (unsigned t = 0; t < f->arity; t++)
        __builtin_prefetch(a + (size_t)p[t] * fpb);
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

static inline __attribute__((always_inline)) uint8_t
bfuse_code_of(const uint8_t *a, const uint32_t p[4], unsigned arity, uint64_t h)
{
    uint32_t v = bfuse_fp(h) & ~UINT32_C(0xff);
    for (unsigned j = 0; j < arity; j++)
        v ^= bfuse_load(a, p[j], 4);
    return (v >> 8) == 0 ? (uint8_t)v : 0;
}

uint8_t br_bfuse_code(const br_bfuse *f, uint64_t key)
{
    if (f->array_length == 0 || f->fp_bits != 32)
        return 0;
    bfuse_geom g;
    bfuse_geom_of(f, &g);
    uint32_t p[4];
    uint64_t h = bfuse_mix(key + f->seed);
    bfuse_positions(&g, h, f->arity, p);
    return bfuse_code_of(f->fingerprints, p, f->arity, h);
}
