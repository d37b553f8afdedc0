/* SPDX-License-Identifier: MIT */
/* Offline filters (algorithm binary-fuse-offline): the count code (exact up
 * to 100, never above, less than 10% below beyond; a count that does not
 * fit refused), coded binary fuse filters (every member's code, the measured
 * false-positive rate), counted key sets spilled or not giving the same
 * file, the lookup API, sets never mixing offline and range files, damaged
 * files refused, the golden offline fixtures of data/fixtures/, and a
 * delta raising a count over its base's (the newest member wins). */
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
#include "filter/bfuse.h"
#include "core/hash.h"
#include "filter/offline_codes.h"
#include "filter/pwfilter.h"
#include "testutil.h"
#include "url_helpers.h"
#include "url/url_expr.h"
#include "core/util.h"

static void assert_count_ok(uint64_t got, uint64_t true_count)
{
    if (true_count <= BR_COUNT_EXACT_MAX ? got != true_count
                                         : got > true_count || 10 * got <= 9 * true_count)
        fail_msg("count %llu reported as %llu", (unsigned long long)true_count,
                 (unsigned long long)got);
}

static void test_count_codes(void **state)
{
    (void)state;
    static const uint64_t maxima[] = {1, 100, 101, 5000, 52000000, 0};
    br_count_codes t;
    for (size_t m = 0; maxima[m]; m++) {
        assert_int_equal(br_count_codes_make(maxima[m], &t), 0);
        assert_true(t.bound[256] > maxima[m]);
        assert_true(t.ratio_ppm <= 1100000);
        uint64_t seed = maxima[m];
        for (uint64_t c = 1; c <= BR_MIN(maxima[m], (uint64_t)3000); c++)
            assert_count_ok(br_count_of_code(&t, br_count_code(&t, c)), c);
        for (int i = 0; i < 100000; i++) {
            uint64_t c = 1 + br_splitmix64(&seed) % maxima[m];
            assert_count_ok(br_count_of_code(&t, br_count_code(&t, c)), c);
        }
        assert_count_ok(br_count_of_code(&t, br_count_code(&t, maxima[m])), maxima[m]);
        uint8_t raw[BR_COUNT_TABLE_BYTES];
        br_count_codes_encode(&t, raw);
        br_count_codes back;
        br_error err = {{0}};
        assert_int_equal(br_count_codes_decode(raw, &back, &err), 0);
        assert_memory_equal(&back.bound[101], &t.bound[101], 156 * sizeof(uint64_t));
        /* a step of more than 10% is refused */
        br_store_le64(raw + 100 * 8, br_load_le64(raw + 99 * 8) * 2);
        assert_int_equal(br_count_codes_decode(raw, &back, &err), -EINVAL);
    }
    uint64_t limit = br_count_codes_limit();
    assert_true(limit > 200000000); /* HIBP's largest count is ~5e7 */
    assert_int_equal(br_count_codes_make(limit, &t), 0);
    assert_int_equal(br_count_codes_make(limit + 1, &t), -ERANGE);
}

/* Every member gets its own code; random absent keys over 2^24 queries
 * match about once (2^-24 each). */
static void test_bfuse_coded(void **state)
{
    (void)state;
    enum { N = 300000 };
    uint64_t seed = 25, *keys = tu_xmalloc(N * sizeof(uint64_t));
    uint8_t *codes = tu_xmalloc(N);
    for (size_t i = 0; i < N; i++)
        keys[i] = br_splitmix64(&seed);
    size_t n = br_keys_sort_unique(keys, N);
    for (size_t i = 0; i < n; i++)
        codes[i] = (uint8_t)(1 + keys[i] % 255);
    for (unsigned arity = 3; arity <= 4; arity++) {
        br_bfuse f;
        assert_int_equal(br_bfuse_layout(&f, arity, 32, n), 0);
        void *fp = tu_xmalloc(br_bfuse_bytes(&f));
        assert_int_equal(br_bfuse_build_coded(&f, keys, codes, n, 7, fp), 0);
        for (size_t i = 0; i < n; i++)
            if (br_bfuse_code(&f, keys[i]) != codes[i])
                fail_msg("%u-wise: key %zu: code %u, expected %u", arity, i,
                         br_bfuse_code(&f, keys[i]), codes[i]);
        uint64_t hits = 0, q = UINT64_C(1) << 24, s2 = 99;
        for (uint64_t i = 0; i < q; i++)
            hits += br_bfuse_code(&f, br_splitmix64(&s2) | 1) != 0; /* members are random too */
        /* mean ~1 (255/256 of 2^-24 each): 9 or more has probability ~1e-6 */
        print_message("%u-wise: %llu false positives in 2^24 absent keys\n", arity,
                      (unsigned long long)hits);
        assert_true(hits < 9);
        free(fp);
    }
    /* unsorted keys or a code 0 are refused */
    br_bfuse f;
    assert_int_equal(br_bfuse_layout(&f, 4, 32, 2), 0);
    uint32_t fp[64];
    uint64_t bad[2] = {5, 3};
    uint8_t c2[2] = {1, 1}, c0[2] = {1, 0};
    assert_int_equal(br_bfuse_build_coded(&f, bad, c2, 2, 1, fp), -EINVAL);
    bad[0] = 1;
    assert_int_equal(br_bfuse_build_coded(&f, bad, c0, 2, 1, fp), -EINVAL);
    free(keys);
    free(codes);
}

/* n hashes "offline-i", counts as count_of(i). */
static uint64_t count_of(size_t i)
{
    return i < 150 ? i + 1 : (i * i * 7919) % 40000000 + 1;
}

static void hash_of(size_t i, uint8_t out[BR_SHA1_LEN])
{
    char s[32];
    snprintf(s, sizeof(s), "offline-%zu", i);
    br_sha1((const uint8_t *)s, strlen(s), out);
}

static void build_counted(const char *dir, const char *path, size_t n, size_t mem_keys,
                          uint64_t shard_target, uint64_t min_count)
{
    br_keyset *ks = NULL;
    br_error err = {{0}};
    assert_int_equal(br_keyset_new(dir, mem_keys, &ks, &err), 0);
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t h[BR_SHA1_LEN];
        hash_of(i, h);
        if (count_of(i) < min_count)
            continue;
        max = BR_MAX(max, count_of(i));
        assert_int_equal(br_keyset_add_counted(ks, br_hash_key64(h), count_of(i), &err), 0);
        if (i % 3 == 0) /* a key twice keeps its largest count */
            assert_int_equal(br_keyset_add_counted(ks, br_hash_key64(h), 1, &err), 0);
    }
    assert_int_equal(br_keyset_add(ks, 5, &err), -EINVAL); /* no mixing */
    if (mem_keys)
        assert_true(br_keyset_spilled(ks));
    br_count_codes t;
    assert_int_equal(br_count_codes_make(max, &t), 0);
    br_pwfilter_build_opts o = {.generation = 1,
                                .source = "unit",
                                .build_time = 1764892800,
                                .shard_target = shard_target,
                                .counts = &t,
                                .min_count = min_count};
    if (br_pwfilter_build(ks, &o, path, NULL, &err) < 0)
        fail_msg("build: %s", err.text);
    br_keyset_free(ks);
}

static br_pwfilter *open_ok(const char *path)
{
    br_pwfilter *pf = NULL;
    br_error err = {{0}};
    if (br_pwfilter_open(path, &pf, &err) < 0)
        fail_msg("open %s: %s", path, err.text);
    return pf;
}

static void test_pwfilter_offline(void **state)
{
    (void)state;
    enum { N = 50000 };
    char *dir = tu_mkdtemp();
    char *a = tu_path("%s/a", dir), *b = tu_path("%s/b", dir);
    build_counted(dir, a, N, 0, 4096, 0);
    build_counted(dir, b, N, 4096, 4096, 0); /* spilled: the same bytes */
    size_t la, lb;
    uint8_t *da = tu_read_file(a, &la), *db = tu_read_file(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
    br_pwfilter *pf = open_ok(a);
    assert_true(br_pwfilter_offline(pf));
    assert_true(br_pwfilter_shard_count(pf) > 1);
    for (size_t i = 0; i < N; i++) {
        uint8_t h[BR_SHA1_LEN];
        uint64_t got = 0;
        hash_of(i, h);
        assert_int_equal(br_pwfilter_lookup_count(pf, h, &got), 1);
        assert_count_ok(got, count_of(i));
        assert_true(br_pwfilter_maybe(pf, h));
    }
    uint64_t misses = 0;
    for (size_t i = N; i < N + 100000; i++) {
        uint8_t h[BR_SHA1_LEN];
        uint64_t got;
        hash_of(i, h);
        misses += br_pwfilter_lookup_count(pf, h, &got) == 0;
    }
    assert_true(misses >= 99999);
    /* a range filter has no counts; a set never mixes the two */
    br_keyset *ks = NULL;
    br_error err = {{0}};
    assert_int_equal(br_keyset_new(dir, 0, &ks, &err), 0);
    assert_int_equal(br_keyset_add(ks, 42, &err), 0);
    br_pwfilter_build_opts o = {.generation = 2,
                                .build_time = 1,
                                .base_body_sha256 = br_pwfilter_file_header(pf)->body_sha256};
    char *c = tu_path("%s/c", dir);
    assert_int_equal(br_pwfilter_build(ks, &o, c, NULL, &err), 0);
    br_keyset_free(ks);
    br_pwfilter *delta = open_ok(c);
    uint8_t h0[BR_SHA1_LEN] = {0};
    uint64_t got;
    assert_int_equal(br_pwfilter_lookup_count(delta, h0, &got), -ENOTSUP);
    assert_int_equal(br_pwfilter_attach(pf, delta, &err), -EINVAL);
    assert_non_null(strstr(err.text, "offline"));
    br_pwfilter_free(pf);
    /* one flipped byte anywhere in the body, or a cut, is refused */
    for (size_t off = 4096; off < la; off += la / 7) {
        da[off] ^= 0x10;
        assert_int_equal(tu_write_file(c, da, la), 0);
        assert_int_equal(br_pwfilter_open(c, &pf, &err), -EINVAL);
        da[off] ^= 0x10;
    }
    assert_int_equal(tu_write_file(c, da, la - 4), 0);
    assert_true(br_pwfilter_open(c, &pf, &err) < 0);
    free(da);
    free(db);
    free(a);
    free(b);
    free(c);
    tu_rmrf(dir);
    free(dir);
}

/* A lone count file (the lookup's own path, without the set's loop)
 * answers every count; rewritten in place, it says -EIO, never a count or
 * a "no" read from the changed bytes. */
static void test_lone_damaged(void **state)
{
    (void)state;
    enum { N = 3000 };
    char *dir = tu_mkdtemp();
    char *a = tu_path("%s/a", dir);
    build_counted(dir, a, N, 0, 1024, 0);
    br_pwfilter *pf = open_ok(a);
    for (size_t i = 0; i < N + 3000; i++) {
        uint8_t h[BR_SHA1_LEN];
        uint64_t got = 0;
        hash_of(i, h);
        int r = br_pwfilter_lookup_count(pf, h, &got);
        if (i < N) {
            assert_int_equal(r, 1);
            assert_count_ok(got, count_of(i));
        } else {
            assert_true(r == 0 || r == 1); /* 1: a false positive, 2^-24 */
        }
    }
    tu_rewrite_in_place(a, 4096 + 100, 0x5a); /* one byte of the body */
    assert_true(br_pwfilter_changed(pf));
    for (size_t i = 0; i < N + 3000; i += 7) {
        uint8_t h[BR_SHA1_LEN];
        uint64_t got = 0;
        hash_of(i, h);
        assert_int_equal(br_pwfilter_lookup_count(pf, h, &got), -EIO);
    }
    br_pwfilter_free(pf);
    free(a);
    tu_rmrf(dir);
    free(dir);
}

/* A password delta raises counts: base of hashes 0..199, delta of hash 5
 * at a higher count and hash 500 new; the set answers the delta's count
 * (one lookup and the batch), and says which counts a delta would carry. */
static void test_delta_counts(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *base = tu_path("%s/base", dir), *delta = tu_path("%s/delta", dir);
    build_counted(dir, base, 200, 0, 0, 0);
    br_pwfilter *set = open_ok(base);
    br_keyset *ks = NULL;
    br_error err = {{0}};
    uint8_t h5[BR_SHA1_LEN], h500[BR_SHA1_LEN], h7[BR_SHA1_LEN];
    hash_of(5, h5);
    hash_of(500, h500);
    hash_of(7, h7);
    /* what filter build --offline --base keeps out, and carries */
    assert_true(br_pwfilter_count_same(set, br_hash_key64(h7), count_of(7)));
    assert_false(br_pwfilter_count_same(set, br_hash_key64(h5), 5000));
    assert_false(br_pwfilter_count_same(set, br_hash_key64(h500), 3));
    assert_int_equal(br_keyset_new(dir, 0, &ks, &err), 0);
    assert_int_equal(br_keyset_add_counted(ks, br_hash_key64(h5), 5000, &err), 0);
    assert_int_equal(br_keyset_add_counted(ks, br_hash_key64(h500), 3, &err), 0);
    br_count_codes t;
    assert_int_equal(br_count_codes_make(5000, &t), 0);
    br_pwfilter_build_opts o = {.generation = 2,
                                .source = "unit",
                                .build_time = 1764892900,
                                .counts = &t,
                                .base_body_sha256 = br_pwfilter_file_header(set)->body_sha256};
    if (br_pwfilter_build(ks, &o, delta, NULL, &err) < 0)
        fail_msg("build: %s", err.text);
    br_keyset_free(ks);
    br_pwfilter_free(set);
    const char *files[] = {base, delta};
    set = NULL;
    if (br_pwfilter_open_set(files, 2, &set, NULL, &err) < 0)
        fail_msg("open the set: %s", err.text);
    uint64_t got = 0, batch[3];
    assert_int_equal(br_pwfilter_lookup_count(set, h5, &got), 1);
    assert_count_ok(got, 5000); /* the delta's, not the base's 6 */
    assert_int_equal(br_pwfilter_lookup_count(set, h500, &got), 1);
    assert_int_equal(got, 3);
    uint64_t keys[3] = {br_hash_key64(h5), br_hash_key64(h500), br_hash_key64(h7)};
    assert_int_equal(br_pwfilter_count_batch(set, keys, 3, batch), 0);
    assert_count_ok(batch[0], 5000);
    assert_int_equal(batch[1], 3);
    assert_int_equal(batch[2], count_of(7));
    br_pwfilter_free(set);
    tu_rmrf(dir);
    free(base);
    free(delta);
    free(dir);
}

/* Golden file: built once by data/fixtures/make-fixtures, never rebuilt. */
static void test_fixture(void **state)
{
    (void)state;
    char *fpath = tu_path("%s/password-sha1-v2-offline.bfuse", FIXTURES_DIR);
    char *ipath = tu_path("%s/password-sha1-v2-offline.input", FIXTURES_DIR);
    br_pwfilter *pf = open_ok(fpath);
    assert_true(br_pwfilter_offline(pf));
    assert_int_equal(br_pwfilter_header(pf)->version, 2);
    assert_int_equal(br_pwfilter_shard_count(pf), 16);
    FILE *f = fopen(ipath, "r");
    assert_non_null(f);
    char line[128];
    size_t n = 0;
    while (fgets(line, sizeof(line), f)) {
        uint8_t sha1[BR_SHA1_LEN];
        uint64_t got = 0;
        assert_true(br_hex_decode(line, BR_SHA1_LEN, sha1));
        assert_int_equal(br_pwfilter_lookup_count(pf, sha1, &got), 1);
        assert_count_ok(got, strtoull(line + 41, NULL, 10));
        n++;
    }
    fclose(f);
    assert_int_equal(n, 1000);
    uint8_t absent[BR_SHA1_LEN];
    uint64_t got;
    br_sha1((const uint8_t *)"not in the fixture", 18, absent);
    assert_int_equal(br_pwfilter_lookup_count(pf, absent, &got), 0);
    br_pwfilter_free(pf);
    free(fpath);
    free(ipath);
}

static void check_url(const br_pwfilter *pf, const char *expr, const char *want)
{
    const char *cat = NULL;
    int r = lookup_expr(pf, expr, &cat);
    if (want ? r != 1 || strcmp(cat, want) : r != 0)
        fail_msg("%s: %d %s, expected %s", expr, r, r > 0 ? cat : "", want ? want : "none");
}

/* An offline URL fixture: every entry of the two feeds with its category;
 * key encoding keyenc, with check filters from v4 on. */
static void url_fixture(const char *name, unsigned keyenc)
{
    char *fpath = tu_path("%s/%s", FIXTURES_DIR, name);
    br_pwfilter *pf = open_ok(fpath);
    assert_true(br_pwfilter_offline(pf));
    assert_int_equal(br_pwfilter_header(pf)->kind, BR_KIND_URL_SHA256);
    assert_int_equal(br_pwfilter_header(pf)->key_encoding_version, keyenc);
    assert_int_equal(br_pwfilter_offline_info(pf)->check_bits, keyenc >= 4 ? 16 : 0);
    assert_int_equal(br_pwfilter_header(pf)->key_count, 1050);
    uint64_t count;
    assert_int_equal(br_pwfilter_lookup_count(pf, (const uint8_t *)"01234567", &count), -ENOTSUP);
    char expr[128];
    for (int i = 0; i < 1000; i++) {
        if (i % 2 == 0)
            snprintf(expr, sizeof(expr), "breachd-fixture-%d.example/", i);
        else
            snprintf(expr, sizeof(expr), "breachd-fixture-%d.example/p/%d?q", i, i);
        check_url(pf, expr, "malware");
    }
    for (int i = 0; i < 50; i++) {
        snprintf(expr, sizeof(expr), "breachd-fixture-delta-%d.example/d", i);
        check_url(pf, expr, "phishing");
    }
    check_url(pf, "breachd-fixture-1.example/", NULL);
    /* v5: the quick filter holds every expression (docs/filter-format.md);
     * v6: its allow entries' (none here), the fingerprints keyed by XXH3 */
    const br_pwo *x = br_pwfilter_offline_info(pf);
    assert_int_equal(x->quick_keys, keyenc == 5 ? 1050 : 0);
    assert_int_equal(x->xxh3_keys, keyenc >= 6);
    br_pwfilter_free(pf);
    free(fpath);
}

static void test_url_fixture(void **state)
{
    (void)state;
    url_fixture("url-sha256-v2-offline.bfuse", 2);
}

/* Key encoding v4: the same entries, with check filters. */
static void test_url_fixture_keyenc4(void **state)
{
    (void)state;
    url_fixture("url-sha256-v2-offline-keyenc4.bfuse", 4);
}

static void test_url_fixture_keyenc5(void **state)
{
    (void)state;
    url_fixture("url-sha256-v2-offline-keyenc5.bfuse", 5);
}

/* Key encoding v6: the same entries, the fingerprints keyed by XXH3. */
static void test_url_fixture_keyenc6(void **state)
{
    (void)state;
    url_fixture("url-sha256-v2-offline-keyenc6.bfuse", 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_count_codes),         cmocka_unit_test(test_bfuse_coded),
        cmocka_unit_test(test_pwfilter_offline),    cmocka_unit_test(test_fixture),
        cmocka_unit_test(test_url_fixture),         cmocka_unit_test(test_delta_counts),
        cmocka_unit_test(test_url_fixture_keyenc4), cmocka_unit_test(test_url_fixture_keyenc5),
        cmocka_unit_test(test_url_fixture_keyenc6), cmocka_unit_test(test_lone_damaged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
