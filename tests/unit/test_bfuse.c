/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter/bfuse.h"
#include "core/util.h"

/* Keys are consecutive outputs of one splitmix64 stream: the output is a
 * bijection of the state and the state steps by an odd constant, so all
 * outputs of a stream are distinct. Members take the first n, non-members
 * the following ones, so the two sets are disjoint by construction. */
typedef struct keyset {
    uint64_t *keys;
    size_t n;
    uint64_t next_state; /* the stream, positioned after the members */
} keyset;

static keyset keyset_make(uint64_t stream, size_t n)
{
    keyset ks = {.keys = malloc(n ? n * sizeof(uint64_t) : 1), .n = n, .next_state = stream};
    assert_non_null(ks.keys);
    for (size_t i = 0; i < n; i++)
        ks.keys[i] = br_splitmix64(&ks.next_state);
    return ks;
}

/* A filter with its own fingerprint buffer. */
typedef struct built {
    br_bfuse f;
    void *fp;
} built;

static built build_ok(unsigned arity, unsigned fp_bits, const uint64_t *keys, size_t n,
                      uint64_t seed_base)
{
    built b = {0};
    assert_int_equal(br_bfuse_layout(&b.f, arity, fp_bits, n), 0);
    assert_int_equal(br_bfuse_check(&b.f), 0);
    size_t bytes = br_bfuse_bytes(&b.f);
    b.fp = malloc(bytes ? bytes : 1);
    assert_non_null(b.fp);
    /* build reorders its keys array only when an attempt fails; work on a copy */
    uint64_t *copy = malloc(n ? n * sizeof(uint64_t) : 1);
    assert_non_null(copy);
    if (n)
        memcpy(copy, keys, n * sizeof(uint64_t));
    br_bfuse laid = b.f;
    assert_int_equal(br_bfuse_build(&b.f, copy, n, seed_base, b.fp), 0);
    free(copy);
    assert_int_equal(br_bfuse_check(&b.f), 0);
    assert_ptr_equal(b.f.fingerprints, b.fp);
    /* the byte size never changes; the segment length may halve on a retry */
    assert_int_equal(b.f.array_length, laid.array_length);
    assert_int_equal(br_bfuse_bytes(&b.f), bytes);
    assert_true(b.f.segment_length == laid.segment_length ||
                b.f.segment_length * 2 == laid.segment_length);
    return b;
}

static void assert_all_present(const br_bfuse *f, const uint64_t *keys, size_t n)
{
    size_t missing = 0;
    for (size_t i = 0; i < n; i++)
        missing += !br_bfuse_contains(f, keys[i]);
    assert_int_equal(missing, 0);
}

static const unsigned arities[] = {3, 4};
static const unsigned fpbits[] = {8, 16, 32};

/* ---- layout ---------------------------------------------------------- */

static void test_layout(void **state)
{
    (void)state;
    br_bfuse f;
    assert_int_equal(br_bfuse_layout(&f, 2, 16, 10), -EINVAL);
    assert_int_equal(br_bfuse_layout(&f, 5, 16, 10), -EINVAL);
    assert_int_equal(br_bfuse_layout(&f, 3, 12, 10), -EINVAL);
    assert_int_equal(br_bfuse_layout(&f, 3, 64, 10), -EINVAL);
    assert_int_equal(br_bfuse_layout(&f, 3, 16, (size_t)BR_BFUSE_MAX_KEYS + 1), -E2BIG);

    static const size_t sizes[] = {0,     1,       2,        3,         4,
                                   5,     10,      100,      1000,      11500,
                                   65537, 1000000, 4u << 20, 100000000, BR_BFUSE_MAX_KEYS};
    for (size_t a = 0; a < BR_ARRAY_SIZE(arities); a++) {
        for (size_t i = 0; i < BR_ARRAY_SIZE(sizes); i++) {
            unsigned arity = arities[a];
            size_t n = sizes[i];
            memset(&f, 0xa5, sizeof(f));
            assert_int_equal(br_bfuse_layout(&f, arity, 16, n), 0);
            assert_int_equal(br_bfuse_check(&f), 0);
            assert_int_equal(f.arity, arity);
            assert_int_equal(f.fp_bits, 16);
            if (n == 0) {
                assert_int_equal(f.segment_length, 0);
                assert_int_equal(f.array_length, 0);
                assert_int_equal(br_bfuse_bytes(&f), 0);
                continue;
            }
            uint32_t L = f.segment_length;
            assert_true(L >= 1 && L <= (1u << 18) && (L & (L - 1)) == 0);
            assert_int_equal(f.segment_count_length % L, 0);
            assert_true(f.segment_count_length >= L);
            assert_int_equal(f.array_length, f.segment_count_length + (arity - 1) * L);
            assert_true(f.array_length >= n); /* room for every key */
            assert_int_equal(br_bfuse_bytes(&f), (size_t)f.array_length * 2);

            /* pure function of (arity, n); fp_bits only scales the bytes */
            br_bfuse g;
            memset(&g, 0, sizeof(g));
            assert_int_equal(br_bfuse_layout(&g, arity, 32, n), 0);
            assert_int_equal(g.segment_length, f.segment_length);
            assert_int_equal(g.array_length, f.array_length);
            assert_int_equal(br_bfuse_bytes(&g), (size_t)f.array_length * 4);
        }
    }

    /* The paper's segment lengths at 1M keys: 2^13 (3-wise), 2^12 (4-wise). */
    assert_int_equal(br_bfuse_layout(&f, 3, 16, 1000000), 0);
    assert_int_equal(f.segment_length, 1u << 13);
    assert_int_equal(br_bfuse_layout(&f, 4, 16, 1000000), 0);
    assert_int_equal(f.segment_length, 1u << 12);
    /* capped at 2^18 */
    assert_int_equal(br_bfuse_layout(&f, 3, 16, BR_BFUSE_MAX_KEYS), 0);
    assert_int_equal(f.segment_length, 1u << 18);
}

/* Size arithmetic: 16-bit 3-wise at 1M keys costs at most 18.5 bits/key
 * (1.125 * 16 = 18 plus the rounding to whole segments). */
static void test_bits_per_key(void **state)
{
    (void)state;
    br_bfuse f;
    assert_int_equal(br_bfuse_layout(&f, 3, 16, 1000000), 0);
    assert_true(8.0 * (double)br_bfuse_bytes(&f) / 1e6 <= 18.5);
    assert_int_equal(br_bfuse_layout(&f, 4, 16, 1000000), 0);
    assert_true(8.0 * (double)br_bfuse_bytes(&f) / 1e6 <= 17.5);
    assert_int_equal(br_bfuse_layout(&f, 3, 16, 4u << 20), 0);
    assert_true(8.0 * (double)br_bfuse_bytes(&f) / (double)(4u << 20) <= 18.5);
    assert_int_equal(br_bfuse_layout(&f, 3, 8, 1000000), 0);
    assert_true(8.0 * (double)br_bfuse_bytes(&f) / 1e6 <= 9.25);
}

/* The default password filter is 4-wise because of this: at 16-bit
 * fingerprints it stays at or under 17.3 bits/key for every shard size from
 * 1M keys up (a sharded filter's shards hold 2M..4.2M keys) and at or under
 * 17.6 from 300k keys, where 3-wise never goes below 18. */
static void test_bits_per_key_4wise(void **state)
{
    (void)state;
    for (double x = 300000; x <= (double)BR_BFUSE_MAX_KEYS; x *= 1.0007) {
        size_t n = (size_t)x;
        br_bfuse f4, f3;
        assert_int_equal(br_bfuse_layout(&f4, 4, 16, n), 0);
        assert_int_equal(br_bfuse_layout(&f3, 3, 16, n), 0);
        double b4 = 8.0 * (double)br_bfuse_bytes(&f4) / (double)n;
        double b3 = 8.0 * (double)br_bfuse_bytes(&f3) / (double)n;
        if (b4 > (n >= 1000000 ? 17.3 : 17.6) || b3 < 18.0)
            fail_msg("%zu keys: %.3f bits/key 4-wise, %.3f 3-wise", n, b4, b3);
    }
}

/* ---- membership ------------------------------------------------------ */

static void check_no_false_negatives(unsigned arity, unsigned fp_bits, size_t n, uint64_t stream)
{
    keyset ks = keyset_make(stream, n);
    built b = build_ok(arity, fp_bits, ks.keys, n, stream ^ 0x1234);
    assert_all_present(&b.f, ks.keys, n);
    free(b.fp);
    free(ks.keys);
}

static void test_no_false_negatives_sizes(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 3, 100, 11500, 65537, 1000000};
    for (size_t i = 0; i < BR_ARRAY_SIZE(sizes); i++)
        check_no_false_negatives(3, 16, sizes[i], 1000 + i);
}

static void test_no_false_negatives_combos(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 2, 3, 100, 11500, 65537};
    for (size_t a = 0; a < BR_ARRAY_SIZE(arities); a++)
        for (size_t b = 0; b < BR_ARRAY_SIZE(fpbits); b++)
            for (size_t i = 0; i < BR_ARRAY_SIZE(sizes); i++)
                check_no_false_negatives(arities[a], fpbits[b], sizes[i],
                                         2000 + 100 * a + 10 * b + i);
    check_no_false_negatives(4, 8, 1000000, 2999);
}

/* Many small sets of every size up to 300: construction must succeed. */
static void test_small_sets(void **state)
{
    (void)state;
    uint64_t stream = 3000;
    for (size_t a = 0; a < BR_ARRAY_SIZE(arities); a++)
        for (size_t n = 1; n <= 300; n++)
            for (int rep = 0; rep < 3; rep++)
                check_no_false_negatives(arities[a], fpbits[(n + rep) % 3], n, stream++);
}

/* Just after the 3-wise segment length doubles to 1024 (n ~ 11.2k .. 11.5k)
 * the paper's layout has 12 segments and rarely peels; the build must still
 * succeed every time (it falls back to half-length segments). */
static void test_segment_doubling_window(void **state)
{
    (void)state;
    static const size_t sizes[] = {3551, 11500, 11511, 11521, 12372, 40937};
    unsigned halved = 0;
    for (size_t i = 0; i < BR_ARRAY_SIZE(sizes); i++) {
        for (int rep = 0; rep < 8; rep++) {
            keyset ks = keyset_make(7000 + 10 * i + (size_t)rep, sizes[i]);
            br_bfuse laid;
            assert_int_equal(br_bfuse_layout(&laid, 3, 8, sizes[i]), 0);
            built b = build_ok(3, 8, ks.keys, sizes[i], (uint64_t)rep);
            halved += b.f.segment_length != laid.segment_length;
            assert_all_present(&b.f, ks.keys, sizes[i]);
            free(b.fp);
            free(ks.keys);
        }
    }
    assert_true(halved > 0); /* the fallback was exercised */
}

static void test_empty(void **state)
{
    (void)state;
    br_bfuse f;
    memset(&f, 0xa5, sizeof(f));
    assert_int_equal(br_bfuse_layout(&f, 3, 16, 0), 0);
    assert_int_equal(br_bfuse_bytes(&f), 0);
    assert_int_equal(br_bfuse_build(&f, NULL, 0, 7, NULL), 0);
    assert_int_equal(br_bfuse_check(&f), 0);
    assert_null(f.fingerprints);
    uint64_t st = 5;
    uint64_t q[40];
    bool out[40];
    for (size_t i = 0; i < BR_ARRAY_SIZE(q); i++) {
        q[i] = br_splitmix64(&st);
        assert_false(br_bfuse_contains(&f, q[i]));
    }
    memset(out, 1, sizeof(out));
    br_bfuse_contains_batch(&f, q, BR_ARRAY_SIZE(q), out);
    for (size_t i = 0; i < BR_ARRAY_SIZE(q); i++)
        assert_false(out[i]);

    /* a layout for no keys cannot take keys */
    uint64_t k = 1;
    uint8_t buf[8];
    assert_int_equal(br_bfuse_build(&f, &k, 1, 7, buf), -EINVAL);
}

/* Keys that share everything but a few bits, and other structured sets. */
static void test_structured_keys(void **state)
{
    (void)state;
    size_t n = 50000;
    uint64_t *k = malloc(n * sizeof(*k));
    assert_non_null(k);
    for (int kind = 0; kind < 3; kind++) {
        for (size_t i = 0; i < n; i++)
            k[i] = kind == 0   ? i
                   : kind == 1 ? (uint64_t)i << 40
                               : UINT64_C(0xABCDE00000000000) | (i * 4096);
        for (size_t a = 0; a < BR_ARRAY_SIZE(arities); a++) {
            built b = build_ok(arities[a], 16, k, n, 99);
            assert_all_present(&b.f, k, n);
            free(b.fp);
        }
    }
    free(k);
}

/* ---- false-positive rate --------------------------------------------- */

static double measure_fpr(const br_bfuse *f, uint64_t *state, size_t queries)
{
    size_t fp = 0;
    for (size_t i = 0; i < queries; i++)
        fp += br_bfuse_contains(f, br_splitmix64(state));
    return (double)fp / (double)queries;
}

static void test_fpr_1m(void **state)
{
    (void)state;
    size_t n = 1000000;
    keyset ks = keyset_make(4242, n);
    static const struct {
        unsigned arity, fp_bits;
        size_t queries;
    } cases[] = {
        {3, 8, 2000000}, {4, 8, 2000000}, {3, 16, 10000000}, {4, 16, 4000000}, {3, 32, 2000000},
    };
    for (size_t c = 0; c < BR_ARRAY_SIZE(cases); c++) {
        built b = build_ok(cases[c].arity, cases[c].fp_bits, ks.keys, n, 77);
        uint64_t qs = ks.next_state; /* non-members: the stream after the members */
        double fpr = measure_fpr(&b.f, &qs, cases[c].queries);
        double ideal = 1.0 / (double)(UINT64_C(1) << cases[c].fp_bits);
        print_message("%u-wise %2u-bit: fpr %.3g (ideal %.3g) over %zu queries, %.2f bits/key\n",
                      cases[c].arity, cases[c].fp_bits, fpr, ideal, cases[c].queries,
                      8.0 * (double)br_bfuse_bytes(&b.f) / n);
        if (cases[c].fp_bits == 32) {
            assert_true(fpr * (double)cases[c].queries <= 3.0);
        } else {
            assert_true(fpr <= 1.5 * ideal);
            assert_true(fpr >= ideal / 1.5);
        }
        free(b.fp);
    }
    free(ks.keys);
}

/* ---- determinism ----------------------------------------------------- */

static void test_determinism(void **state)
{
    (void)state;
    for (size_t a = 0; a < BR_ARRAY_SIZE(arities); a++) {
        for (size_t bi = 0; bi < BR_ARRAY_SIZE(fpbits); bi++) {
            size_t n = 20000;
            keyset ks = keyset_make(5000 + a * 3 + bi, n);
            built b1 = build_ok(arities[a], fpbits[bi], ks.keys, n, 11);
            built b2 = build_ok(arities[a], fpbits[bi], ks.keys, n, 11);
            size_t bytes = br_bfuse_bytes(&b1.f);
            assert_int_equal(b1.f.seed, b2.f.seed);
            assert_memory_equal(b1.fp, b2.fp, bytes);

            /* another order: reversed, then a shuffle */
            uint64_t st = 17;
            for (int pass = 0; pass < 2; pass++) {
                for (size_t i = 0; i < n; i++) {
                    size_t j = pass == 0 ? n - 1 - i : (size_t)(br_splitmix64(&st) % n);
                    if (pass == 0 && j <= i)
                        break;
                    uint64_t t = ks.keys[i];
                    ks.keys[i] = ks.keys[j];
                    ks.keys[j] = t;
                }
                built b3 = build_ok(arities[a], fpbits[bi], ks.keys, n, 11);
                assert_int_equal(b3.f.seed, b1.f.seed);
                assert_memory_equal(b3.fp, b1.fp, bytes);
                free(b3.fp);
            }

            /* another seed_base gives another filter */
            built b4 = build_ok(arities[a], fpbits[bi], ks.keys, n, 12);
            assert_int_not_equal(b4.f.seed, b1.f.seed);
            assert_true(memcmp(b4.fp, b1.fp, bytes) != 0);
            assert_all_present(&b4.f, ks.keys, n);
            free(b4.fp);
            free(b1.fp);
            free(b2.fp);
            free(ks.keys);
        }
    }
}

static uint64_t fnv1a(const void *p, size_t len)
{
    const uint8_t *b = p;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    return h;
}

/* The bytes are a file format: pin the hash, the slot addressing and the
 * fingerprint derivation, and the little-endian order of the entries. */
static void test_golden(void **state)
{
    (void)state;
    uint64_t keys[1000];
    for (size_t i = 0; i < BR_ARRAY_SIZE(keys); i++)
        keys[i] = i * UINT64_C(0x9E3779B97F4A7C15);
    built b = build_ok(3, 16, keys, BR_ARRAY_SIZE(keys), 42);
    uint64_t st = 42;
    uint64_t first_seed = br_splitmix64(&st);
    print_message("golden: seed %#llx (first %#llx) length %u hash %#llx\n",
                  (unsigned long long)b.f.seed, (unsigned long long)first_seed, b.f.array_length,
                  (unsigned long long)fnv1a(b.fp, br_bfuse_bytes(&b.f)));
    assert_int_equal(b.f.segment_length, 128);
    assert_int_equal(b.f.array_length, 1408);
    assert_int_equal(b.f.seed, first_seed);
    assert_int_equal(fnv1a(b.fp, br_bfuse_bytes(&b.f)), UINT64_C(0x6cf011cee4092b00));

    /* A member's entries XOR to the low 16 bits of hash ^ (hash >> 32),
     * read as little-endian 16-bit words. */
    const uint8_t *a = b.fp;
    uint64_t h = keys[7] + b.f.seed;
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    uint32_t L = b.f.segment_length;
    uint32_t h0 = (uint32_t)(((unsigned __int128)h * b.f.segment_count_length) >> 64);
    unsigned shift = (unsigned)__builtin_ctz(L);
    uint32_t p[3] = {h0, (h0 + L) ^ ((uint32_t)h & (L - 1)),
                     (h0 + 2 * L) ^ ((uint32_t)(h >> shift) & (L - 1))};
    uint16_t v = (uint16_t)(h ^ (h >> 32));
    for (int j = 0; j < 3; j++)
        v ^= (uint16_t)(a[2 * p[j]] | (a[2 * p[j] + 1] << 8));
    assert_int_equal(v, 0);
    free(b.fp);
}

/* ---- batch ----------------------------------------------------------- */

static void test_batch_agrees(void **state)
{
    (void)state;
    for (size_t a = 0; a < BR_ARRAY_SIZE(arities); a++) {
        for (size_t bi = 0; bi < BR_ARRAY_SIZE(fpbits); bi++) {
            size_t n = 30000, nq = 20011;
            keyset ks = keyset_make(6000 + 10 * a + bi, n);
            built b = build_ok(arities[a], fpbits[bi], ks.keys, n, 5);
            uint64_t *q = malloc(nq * sizeof(*q));
            bool *out = malloc(nq);
            assert_non_null(q);
            assert_non_null(out);
            uint64_t st = ks.next_state;
            for (size_t i = 0; i < nq; i++)
                q[i] = (i % 3 == 0) ? ks.keys[(i * 7919) % n] : br_splitmix64(&st);
            /* whole, and in awkward lengths (below, at and around a block) */
            static const size_t lens[] = {20011, 1, 31, 32, 33, 64, 65, 1000};
            for (size_t l = 0; l < BR_ARRAY_SIZE(lens); l++) {
                size_t off = (l * 977) % (nq - lens[l] + 1);
                memset(out, 0x55, nq);
                br_bfuse_contains_batch(&b.f, q + off, lens[l], out);
                for (size_t i = 0; i < lens[l]; i++)
                    assert_int_equal(out[i], br_bfuse_contains(&b.f, q[off + i]));
                if (lens[l] < nq) /* nothing written past the end */
                    assert_int_equal(((const uint8_t *)out)[lens[l]], 0x55);
            }
            br_bfuse_contains_batch(&b.f, q, 0, out);
            free(q);
            free(out);
            free(b.fp);
            free(ks.keys);
        }
    }
}

/* ---- check ----------------------------------------------------------- */

static void test_check_rejects(void **state)
{
    (void)state;
    br_bfuse good, f;
    assert_int_equal(br_bfuse_layout(&good, 3, 16, 100000), 0);
    assert_int_equal(br_bfuse_check(&good), 0);
    assert_int_equal(br_bfuse_check(NULL), -EINVAL);

#define BAD(field, value)                                                                          \
    do {                                                                                           \
        f = good;                                                                                  \
        f.field = (value);                                                                         \
        assert_int_equal(br_bfuse_check(&f), -EINVAL);                                             \
    } while (0)
    BAD(arity, 0);
    BAD(arity, 2);
    BAD(arity, 5);
    BAD(arity, 255);
    BAD(fp_bits, 0);
    BAD(fp_bits, 4);
    BAD(fp_bits, 12);
    BAD(fp_bits, 24);
    BAD(fp_bits, 64);
    BAD(segment_length, good.segment_length + 1);             /* not a power of two */
    BAD(segment_length, good.segment_length * 3);             /* not a power of two */
    BAD(segment_length, UINT32_C(1) << 19);                   /* too long */
    BAD(segment_length, UINT32_C(1) << 31);                   /* too long */
    BAD(segment_length, 0);                                   /* empty, but lengths set */
    BAD(segment_count_length, 0);                             /* no segment */
    BAD(segment_count_length, good.segment_count_length + 1); /* not whole segments */
    BAD(segment_count_length,
        good.segment_count_length + good.segment_length); /* exceeds the array */
    BAD(array_length, good.array_length + 1);
    BAD(array_length, good.array_length - 1);
    BAD(array_length, good.array_length + good.segment_length);
    BAD(array_length, good.segment_count_length); /* no tail segments */
    BAD(array_length, 0);
    BAD(array_length, UINT32_MAX);
    BAD(segment_count_length, UINT32_MAX - (UINT32_MAX % good.segment_length)); /* overflow */

    /* the right lengths for 3-wise are wrong for 4-wise */
    BAD(arity, 4);

    /* empty filter */
    br_bfuse empty;
    assert_int_equal(br_bfuse_layout(&empty, 4, 8, 0), 0);
    assert_int_equal(br_bfuse_check(&empty), 0);
    f = empty;
    f.array_length = 1;
    assert_int_equal(br_bfuse_check(&f), -EINVAL);
    f = empty;
    f.segment_count_length = 4;
    assert_int_equal(br_bfuse_check(&f), -EINVAL);
    f = empty;
    f.arity = 7;
    assert_int_equal(br_bfuse_check(&f), -EINVAL);
    f = empty;
    f.fp_bits = 9;
    assert_int_equal(br_bfuse_check(&f), -EINVAL);

    /* a laid-out filter that check() accepts is safe to query whatever its
     * contents and seed: every slot address stays in the array (ASan) */
    static const uint32_t seglens[] = {1, 2, 1024, 1u << 18};
    for (size_t i = 0; i < BR_ARRAY_SIZE(seglens); i++) {
        for (unsigned arity = 3; arity <= 4; arity++) {
            f.arity = (uint8_t)arity;
            f.fp_bits = 32;
            f.segment_length = seglens[i];
            f.segment_count_length = seglens[i] * 3;
            f.array_length = f.segment_count_length + (arity - 1) * seglens[i];
            assert_int_equal(br_bfuse_check(&f), 0);
            uint8_t *buf = calloc(br_bfuse_bytes(&f), 1);
            assert_non_null(buf);
            f.fingerprints = buf;
            uint64_t st = i;
            for (int k = 0; k < 20000; k++) {
                f.seed = br_splitmix64(&st);
                (void)br_bfuse_contains(&f, br_splitmix64(&st));
            }
            /* key + seed = 0 hashes to 0: fingerprint 0, and the array is all 0 */
            assert_true(br_bfuse_contains(&f, (uint64_t)0 - f.seed));
            free(buf);
        }
    }
#undef BAD
}

/* ---- bad input ------------------------------------------------------- */

static void test_duplicates(void **state)
{
    (void)state;
    br_bfuse f;
    size_t n = 5000;
    uint64_t *k = malloc(n * sizeof(*k));
    assert_non_null(k);
    /* one duplicate pair */
    uint64_t st = 77;
    for (size_t i = 0; i < n; i++)
        k[i] = br_splitmix64(&st);
    k[4000] = k[17];
    assert_int_equal(br_bfuse_layout(&f, 3, 16, n), 0);
    void *buf = malloc(br_bfuse_bytes(&f));
    assert_non_null(buf);
    assert_int_equal(br_bfuse_build(&f, k, n, 1, buf), -EDEADLK);
    free(buf);

    /* the same key many times: more than a slot count can hold */
    for (unsigned arity = 3; arity <= 4; arity++) {
        for (size_t i = 0; i < n; i++)
            k[i] = i < 600 ? 12345 : br_splitmix64(&st);
        assert_int_equal(br_bfuse_layout(&f, arity, 8, n), 0);
        buf = malloc(br_bfuse_bytes(&f));
        assert_non_null(buf);
        assert_int_equal(br_bfuse_build(&f, k, n, 1, buf), -EDEADLK);
        free(buf);
        for (size_t i = 0; i < 300; i++)
            k[i] = 999;
        assert_int_equal(br_bfuse_layout(&f, arity, 8, 300), 0);
        buf = malloc(br_bfuse_bytes(&f));
        assert_non_null(buf);
        assert_int_equal(br_bfuse_build(&f, k, 300, 1, buf), -EDEADLK);
        free(buf);
    }
    free(k);
}

static void test_bad_args(void **state)
{
    (void)state;
    br_bfuse f;
    uint64_t k[4] = {1, 2, 3, 4};
    uint8_t buf[4096];
    assert_int_equal(br_bfuse_layout(&f, 3, 16, 4), 0);
    f.arity = 9;
    assert_int_equal(br_bfuse_build(&f, k, 4, 0, buf), -EINVAL);
    assert_int_equal(br_bfuse_layout(&f, 3, 16, 4), 0);
    assert_int_equal(br_bfuse_build(&f, k, 4, 0, NULL), -EINVAL);
    assert_int_equal(br_bfuse_build(&f, NULL, 4, 0, buf), -EINVAL);
    assert_int_equal(br_bfuse_build(&f, k, 4, 0, buf), 0);
    for (size_t i = 0; i < 4; i++)
        assert_true(br_bfuse_contains(&f, k[i]));
    /* more keys than the layout was made for */
    enum { MANY = 4096 };
    uint64_t *many = calloc(MANY, sizeof(*many));
    assert_non_null(many);
    for (size_t i = 0; i < MANY; i++)
        many[i] = i + 1;
    assert_int_equal(br_bfuse_layout(&f, 3, 16, 4), 0);
    assert_true(br_bfuse_bytes(&f) <= sizeof(buf));
    assert_int_equal(br_bfuse_build(&f, many, MANY, 0, buf), -EINVAL);
    free(many);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_bits_per_key),
        cmocka_unit_test(test_bits_per_key_4wise),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_no_false_negatives_sizes),
        cmocka_unit_test(test_no_false_negatives_combos),
        cmocka_unit_test(test_small_sets),
        cmocka_unit_test(test_segment_doubling_window),
        cmocka_unit_test(test_structured_keys),
        cmocka_unit_test(test_fpr_1m),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_batch_agrees),
        cmocka_unit_test(test_check_rejects),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
