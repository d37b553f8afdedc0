/* SPDX-License-Identifier: MIT */
/* The sharded password filter end to end through its file: no false
 * negatives, false-positive rate, determinism (threads, insertion order,
 * in-memory vs spilled keys), corruption and truncation detection, and the
 * golden fixtures of data/fixtures/. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "builder/pwfilter_build.h"
#include "builder/filter_writer.h"
#include "core/hash.h"
#include "filter/pwfilter.h"
#include "testutil.h"
#include "core/util.h"

typedef struct build_spec {
    unsigned fp_bits;
    unsigned arity; /* 0: the default */
    unsigned threads;
    size_t mem_keys;       /* 0: default (no spill for these sizes) */
    uint64_t shard_target; /* 0: default */
} build_spec;

static uint64_t *random_keys(size_t n, uint64_t seed)
{
    uint64_t *k = malloc((n ? n : 1) * sizeof(uint64_t));
    assert_non_null(k);
    for (size_t i = 0; i < n; i++)
        k[i] = br_splitmix64(&seed);
    return k;
}

static void build_file(const char *dir, const char *path, const uint64_t *keys, size_t n,
                       const build_spec *spec)
{
    br_keyset *ks = NULL;
    br_error err = {{0}};
    assert_int_equal(br_keyset_new(dir, spec->mem_keys, &ks, &err), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(br_keyset_add(ks, keys[i], &err), 0);
    if (spec->mem_keys && n > spec->mem_keys)
        assert_true(br_keyset_spilled(ks));
    br_pwfilter_build_opts o = {
        .fp_bits = spec->fp_bits,
        .arity = spec->arity,
        .threads = spec->threads,
        .generation = 3,
        .source = "unit",
        .build_time = 1764460800,
        .shard_target = spec->shard_target,
    };
    br_pwfilter_build_stats st;
    int r = br_pwfilter_build(ks, &o, path, &st, &err);
    if (r < 0)
        fail_msg("build: %s", err.text);
    br_keyset_free(ks);
}

static br_pwfilter *open_ok(const char *path)
{
    br_pwfilter *pf = NULL;
    br_error err = {{0}};
    int r = br_pwfilter_open(path, &pf, &err);
    if (r < 0)
        fail_msg("open %s: %s", path, err.text);
    return pf;
}

static void check_no_false_negatives(const br_pwfilter *pf, const uint64_t *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!br_pwfilter_contains_key(pf, keys[i]))
            fail_msg("false negative for key %zu of %zu", i, n);
    bool *out = malloc(n + 1);
    br_pwfilter_contains_batch(pf, keys, n, out);
    for (size_t i = 0; i < n; i++)
        assert_true(out[i]);
    free(out);
}

static void test_sizes(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 3, 100, 11500, 65537};
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/f", dir);
    for (size_t s = 0; s < BR_ARRAY_SIZE(sizes); s++) {
        size_t n = sizes[s];
        uint64_t *keys = random_keys(n, n * 7919 + 1);
        build_spec spec = {.fp_bits = 16};
        build_file(dir, path, keys, n, &spec);
        br_pwfilter *pf = open_ok(path);
        assert_int_equal(br_pwfilter_header(pf)->key_count, n);
        check_no_false_negatives(pf, keys, n);
        if (n == 0)
            assert_false(br_pwfilter_contains_key(pf, 12345));
        br_pwfilter_free(pf);
        free(keys);
    }
    free(path);
    tu_rmrf(dir);
    free(dir);
}

/* Arity 3, 4 and the default (4) at tiny sizes and on both sides of the
 * sizes where the shard count doubles, every key added twice (shards are
 * sized by the keys added, duplicates included: with shard_target 1000,
 * n = 500 is one shard, 501 two, 1001 four, 2001 eight). */
static void test_arity_shard_boundaries(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 100, 500, 501, 1000, 1001, 2000, 2001};
    static const unsigned arities[] = {0, 3, 4};
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/f", dir);
    for (size_t a = 0; a < BR_ARRAY_SIZE(arities); a++) {
        for (size_t s = 0; s < BR_ARRAY_SIZE(sizes); s++) {
            size_t n = sizes[s];
            uint64_t *keys = random_keys(2 * n, n * 31 + a);
            memcpy(keys + n, keys, n * sizeof(*keys)); /* duplicates */
            build_spec spec = {.fp_bits = 16, .arity = arities[a], .shard_target = 1000};
            build_file(dir, path, keys, 2 * n, &spec);
            br_pwfilter *pf = open_ok(path);
            assert_int_equal(br_pwfilter_header(pf)->key_count, n);
            assert_int_equal(br_pwfilter_arity(pf), arities[a] ? arities[a] : 4);
            assert_int_equal(br_pwfilter_shard_count(pf),
                             1u << br_pwfilter_shard_bits(2 * n, 1000));
            check_no_false_negatives(pf, keys, n);
            br_pwfilter_free(pf);
            free(keys);
        }
    }
    free(path);
    tu_rmrf(dir);
    free(dir);
}

/* Many shards, both sides of the spill bucket width (9 bits). */
static void test_sharded_fpr(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/f", dir);
    const size_t n = 100000, probes = 400000;
    uint64_t *keys = random_keys(n, 99);
    uint64_t *absent = random_keys(probes, 100);
    static const uint64_t targets[] = {8192, 64};
    for (size_t t = 0; t < BR_ARRAY_SIZE(targets); t++) {
        build_spec spec = {.fp_bits = 8, .shard_target = targets[t]};
        build_file(dir, path, keys, n, &spec);
        br_pwfilter *pf = open_ok(path);
        assert_true(br_pwfilter_shard_count(pf) > 1);
        check_no_false_negatives(pf, keys, n);
        size_t fp = 0;
        for (size_t i = 0; i < probes; i++)
            fp += br_pwfilter_contains_key(pf, absent[i]);
        double rate = (double)fp / (double)probes;
        print_message("shards %u: FPR %.5f (2^-8 = %.5f)\n", br_pwfilter_shard_count(pf), rate,
                      1.0 / 256);
        assert_true(rate < 1.5 / 256);
        br_pwfilter_free(pf);
    }
    free(absent);
    free(keys);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

static void assert_same_file(const char *a, const char *b)
{
    size_t la, lb;
    uint8_t *da = tu_read_file(a, &la), *db = tu_read_file(b, &lb);
    assert_non_null(da);
    assert_non_null(db);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
    free(da);
    free(db);
}

static void test_determinism(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *a = tu_path("%s/a", dir), *b = tu_path("%s/b", dir);
    const size_t n = 50000;
    uint64_t *keys = random_keys(n, 5);
    /* Same keys, shuffled, with duplicates added. */
    uint64_t *shuffled = malloc((n + 100) * sizeof(uint64_t));
    memcpy(shuffled, keys, n * sizeof(uint64_t));
    uint64_t s = 77;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = br_splitmix64(&s) % (i + 1);
        uint64_t t = shuffled[i];
        shuffled[i] = shuffled[j];
        shuffled[j] = t;
    }
    for (size_t i = 0; i < 100; i++)
        shuffled[n + i] = keys[i * 13];

    static const uint64_t targets[] = {0, 4096, 32};
    for (size_t t = 0; t < BR_ARRAY_SIZE(targets); t++) {
        build_spec one = {.fp_bits = 16, .threads = 1, .shard_target = targets[t]};
        build_spec many = {
            .fp_bits = 16, .threads = 4, .mem_keys = 1000, .shard_target = targets[t]};
        build_file(dir, a, keys, n, &one);
        build_file(dir, b, shuffled, n + 100, &many);
        assert_same_file(a, b);
        br_pwfilter *pf = open_ok(b);
        assert_int_equal(br_pwfilter_header(pf)->key_count, n);
        check_no_false_negatives(pf, keys, n);
        br_pwfilter_free(pf);
    }
    free(shuffled);
    free(keys);
    free(a);
    free(b);
    tu_rmrf(dir);
    free(dir);
}

static void test_every_byte_and_length(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/f", dir), *bad = tu_path("%s/bad", dir);
    uint64_t *keys = random_keys(100, 11);
    build_spec spec = {.fp_bits = 16, .shard_target = 32}; /* a few shards: table too */
    build_file(dir, path, keys, 100, &spec);
    size_t len;
    uint8_t *good = tu_read_file(path, &len);
    assert_non_null(good);
    br_error err;
    br_pwfilter *pf = NULL;
    for (size_t i = 0; i < len; i++) {
        good[i] ^= 0x01;
        assert_int_equal(tu_write_file(bad, good, len), 0);
        good[i] ^= 0x01;
        if (br_pwfilter_open(bad, &pf, &err) == 0)
            fail_msg("a flipped byte at offset %zu was not detected", i);
    }
    for (size_t l = 0; l < len; l++) {
        assert_int_equal(tu_write_file(bad, good, l), 0);
        if (br_pwfilter_open(bad, &pf, &err) == 0)
            fail_msg("truncation to %zu bytes was not detected", l);
        /* Shorter than a header: not a filter file at all. */
        assert_non_null(strstr(err.text, l < BR_FILTER_HEADER_SIZE ? "not a breachd filter file"
                                                                   : "truncated"));
    }
    assert_int_equal(tu_write_file(bad, good, len), 0);
    pf = open_ok(bad);
    br_pwfilter_free(pf);
    free(good);
    free(keys);
    free(path);
    free(bad);
    tu_rmrf(dir);
    free(dir);
}

/* Golden files: built once by data/fixtures/make-fixtures and never rebuilt. */
static void check_fixture(const char *filter, const char *keys_file, unsigned fp_bits)
{
    char *fpath = tu_path("%s/%s", FIXTURES_DIR, filter);
    char *kpath = tu_path("%s/%s", FIXTURES_DIR, keys_file);
    br_pwfilter *pf = open_ok(fpath);
    assert_int_equal(br_pwfilter_fp_bits(pf), fp_bits);
    FILE *f = fopen(kpath, "r");
    assert_non_null(f);
    char line[128];
    size_t n = 0;
    while (fgets(line, sizeof(line), f)) {
        uint8_t sha1[BR_SHA1_LEN];
        assert_true(br_hex_decode(line, BR_SHA1_LEN, sha1));
        if (!br_pwfilter_maybe(pf, sha1))
            fail_msg("%s: listed key %zu not found", filter, n + 1);
        n++;
    }
    fclose(f);
    assert_int_equal(n, br_pwfilter_header(pf)->key_count);
    br_pwfilter_free(pf);
    free(fpath);
    free(kpath);
}

static void test_fixtures(void **state)
{
    (void)state;
    check_fixture("password-sha1-v1-fp8.bfuse", "password-sha1-v1.keys", 8);
    check_fixture("password-sha1-v1-fp16.bfuse", "password-sha1-v1.keys", 16);
    check_fixture("password-sha1-v1-fp16-sharded.bfuse", "password-sha1-v1.keys", 16);
    check_fixture("password-sha1-v1-fp16-4wise.bfuse", "password-sha1-v1.keys", 16);
}

/* Build the fixture keys as data/fixtures/make-fixtures did and compare the
 * file byte for byte with the golden one. */
static void rebuild_fixture(const char *filter, unsigned arity, uint64_t shard_target,
                            const char *source)
{
    char *kpath = tu_path("%s/password-sha1-v1.keys", FIXTURES_DIR);
    char *fpath = tu_path("%s/%s", FIXTURES_DIR, filter);
    char *dir = tu_mkdtemp();
    char *out = tu_path("%s/f", dir);
    br_keyset *ks = NULL;
    br_error err = {{0}};
    assert_int_equal(br_keyset_new(dir, 0, &ks, &err), 0);
    FILE *f = fopen(kpath, "r");
    assert_non_null(f);
    char line[128];
    while (fgets(line, sizeof(line), f)) {
        uint8_t sha1[BR_SHA1_LEN];
        assert_true(br_hex_decode(line, BR_SHA1_LEN, sha1));
        assert_int_equal(br_keyset_add(ks, br_load_be64(sha1), &err), 0);
    }
    fclose(f);
    br_pwfilter_build_opts o = {
        .arity = arity,
        .generation = 1,
        .source = source,
        .build_time = 1764460800,
        .shard_target = shard_target,
    };
    if (br_pwfilter_build(ks, &o, out, NULL, &err) < 0)
        fail_msg("build: %s", err.text);
    br_keyset_free(ks);
    size_t la, lb;
    uint8_t *a = tu_read_file(out, &la), *b = tu_read_file(fpath, &lb);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(la, lb);
    if (memcmp(a, b, la) != 0)
        fail_msg("%s: a rebuild gives other bytes", filter);
    free(a);
    free(b);
    free(out);
    tu_rmrf(dir);
    free(dir);
    free(fpath);
    free(kpath);
}

/* The 3-wise build (the default until 2026-12-01) still makes the golden
 * 3-wise files; the default makes the 4-wise one. */
static void test_fixture_rebuild(void **state)
{
    (void)state;
    rebuild_fixture("password-sha1-v1-fp16.bfuse", 3, 0,
                    "breachd golden fixture, format v1, 1000 keys");
    rebuild_fixture("password-sha1-v1-fp16-sharded.bfuse", 3, 64,
                    "breachd golden fixture, format v1, 1000 keys, 16 shards");
    rebuild_fixture("password-sha1-v1-fp16-4wise.bfuse", 0, 64,
                    "breachd golden fixture, format v1, 4-wise, 1000 keys, 16 shards");
}

static void test_refuses_other_algorithms(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/bloom", dir);
    br_filter_writer *w = NULL;
    assert_int_equal(br_filter_writer_new(path, &w, NULL), 0);
    br_filter_header h = {.kind = BR_KIND_URL_SHA256,
                          .algorithm = BR_ALGO_BLOCKED_BLOOM,
                          .key_encoding = BR_KEYENC_URL_EXPR_SHA256,
                          .key_encoding_version = 1};
    assert_int_equal(br_filter_writer_commit(w, &h, NULL), 0);
    br_filter_writer_free(w);
    br_pwfilter *pf = NULL;
    br_error err = {{0}};
    assert_int_equal(br_pwfilter_open(path, &pf, &err), -EINVAL);
    assert_non_null(strstr(err.text, "expected binary-fuse"));
    free(path);
    tu_rmrf(dir);
    free(dir);
}

static void test_sort_unique(void **state)
{
    (void)state;
    uint64_t k[] = {5, 3, UINT64_MAX, 3, 0, 5, 1, UINT64_C(1) << 63, 0};
    size_t n = br_keys_sort_unique(k, BR_ARRAY_SIZE(k));
    uint64_t want[] = {0, 1, 3, 5, UINT64_C(1) << 63, UINT64_MAX};
    assert_int_equal(n, BR_ARRAY_SIZE(want));
    assert_memory_equal(k, want, sizeof(want));
    /* already in order (the sort is skipped), with duplicates */
    uint64_t sorted[] = {0, 0, 1, 3, 3, 3, 5, UINT64_C(1) << 63, UINT64_MAX, UINT64_MAX};
    n = br_keys_sort_unique(sorted, BR_ARRAY_SIZE(sorted));
    assert_int_equal(n, BR_ARRAY_SIZE(want));
    assert_memory_equal(sorted, want, sizeof(want));
    /* in order but for the last key */
    uint64_t late[] = {1, 3, 5, UINT64_C(1) << 63, UINT64_MAX, 0, 3};
    n = br_keys_sort_unique(late, BR_ARRAY_SIZE(late));
    assert_int_equal(n, BR_ARRAY_SIZE(want));
    assert_memory_equal(late, want, sizeof(want));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort_unique),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_arity_shard_boundaries),
        cmocka_unit_test(test_sharded_fpr),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_every_byte_and_length),
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_fixture_rebuild),
        cmocka_unit_test(test_refuses_other_algorithms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
