/* SPDX-License-Identifier: MIT */
/* Binary fuse filter construction: br_bfuse_build() and
 * br_bfuse_build_coded() of bfuse.h (the lookups and the layout are in
 * lib/filter/bfuse.c, the shared formulas in lib/filter/bfuse_int.h). */

/* Construction hashes the keys, orders the hashes by the segment of h0 (one
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
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "filter/bfuse_int.h"

#define BFUSE_MAX_ATTEMPTS 100

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
 * w->codes with their codes when codes is given). Each key is hashed once:
 * the first pass keeps the hashes in w->sxor (m >= n slots), which the
 * attempt clears afterwards. */
static void bfuse_sort_hashes(const bfuse_geom *g, const uint64_t *keys, const uint8_t *codes,
                              size_t n, uint64_t seed, bfuse_work *w)
{
    uint32_t nseg = g->scl >> g->shift;
    uint32_t *b = w->bucket;
    uint64_t *tmp = w->sxor;
    memset(b, 0, ((size_t)nseg + 1) * sizeof(*b));
    for (size_t i = 0; i < n; i++) {
        uint64_t h = bfuse_mix(keys[i] + seed);
        tmp[i] = h;
        b[bfuse_mulhi(h, g->scl) >> g->shift]++;
    }
    uint32_t sum = 0;
    for (uint32_t s = 0; s < nseg; s++) {
        uint32_t c = b[s];
        b[s] = sum;
        sum += c;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h = tmp[i];
        uint32_t at = b[bfuse_mulhi(h, g->scl) >> g->shift]++;
        w->hashes[at] = h;
        if (codes)
            w->codes[at] = codes[i];
    }
}

/* Assign in reverse peel order: each slot is still 0 when its key comes,
 * so XOR-ing over all the key's slots gives the value to store. The k-th
 * peeled key's hash (and code) is w->hashes[k] (w->codes[k]): read in
 * sequence, not from its slot. */
static inline __attribute__((always_inline)) void bfuse_assign(const bfuse_geom *g, unsigned arity,
                                                               unsigned fpb, bool coded,
                                                               size_t peeled, uint32_t m,
                                                               const bfuse_work *w, uint8_t *out)
{
    uint32_t p[4];
    memset(out, 0, (size_t)m * fpb);
    for (size_t k = peeled; k-- > 0;) {
        uint32_t q = w->order[k];
        uint64_t h = w->hashes[k];
        bfuse_positions(g, h, arity, p);
        /* coded: the slots XOR to the fingerprint's top 24 bits and the code */
        uint32_t v = coded ? (bfuse_fp(h) & ~UINT32_C(0xff)) | w->codes[k] : bfuse_fp(h);
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
     * peeled + stack size <= m: the two never meet. Each peel removes one
     * key, so peeled <= n: the k-th peeled key's hash and code overwrite
     * w->hashes[k] and w->codes[k], which the insertion above was the last
     * to read. A peeled slot gets count 0. */
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
            w->hashes[peeled] = h; /* count[q] is now 0 */
            if (codes)
                w->codes[peeled] = code;
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
    /* a layout for fewer keys (the hashing scratch needs m >= n slots) */
    if (f->array_length < n || !keys || !fp_out)
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
