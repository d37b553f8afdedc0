/* SPDX-License-Identifier: MIT */
/* The check filter of offline URL filters (docs/filter-format.md, "The
 * check filter"; docs/dns.md, "False blocks"): a key found by search whose
 * 24 fingerprint bits and code match a member's, a false block in a file
 * without check filters (key encoding v2/v3), is answered not listed by the
 * same keys' file with them (v4); members keep their categories; sets mix
 * both layouts; a header that disagrees with the layout is refused. */
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
#include "core/hash.h"
#include "filter/filter_file.h"
#include "filter/offline_codes.h"
#include "filter/pwfilter.h"
#include "testutil.h"
#include "url/url_expr.h"
#include "core/util.h"
#include "url_helpers.h"

enum { NCAT = 255, NKEYS = 64 };

static void expr_hash(const char *prefix, int i, uint8_t key[BR_SHA256_LEN])
{
    char expr[96];
    snprintf(expr, sizeof(expr), "%s-%d.example/", prefix, i);
    assert_int_equal(br_url_expr_hash(expr, key), 0);
}

/* Every code 1..255 names a blocking category, so that any 24-bit match
 * is a false block (with fewer categories most codes are past the table). */
static void categories(br_category_table *t)
{
    memset(t, 0, sizeof(*t));
    for (int c = 1; c <= NCAT; c++) {
        char name[16];
        snprintf(name, sizeof(name), "cat%d", c);
        assert_int_equal(br_category_code(t, name), c);
    }
}

/* NKEYS expressions "prefix-i.example/" with code i % 255 + 1; no_check:
 * the layout before check filters. base: a delta of that body. */
static void build(const char *path, const char *prefix, bool no_check, const uint8_t *base)
{
    br_category_table t;
    categories(&t);
    br_error err = {{0}};
    br_keyset *ks = NULL;
    assert_int_equal(br_keyset_new(NULL, 0, &ks, &err), 0);
    for (int i = 0; i < NKEYS; i++) {
        uint8_t key[BR_SHA256_LEN];
        expr_hash(prefix, i, key);
        assert_int_equal(
            br_keyset_add_counted(ks, br_hash_key64(key), (uint64_t)(i % NCAT) + 1, &err), 0);
    }
    br_pwfilter_build_opts o = {.kind = BR_KIND_URL_SHA256,
                                .generation = base ? 2 : 1,
                                .source = "unit",
                                .build_time = 1764892800,
                                .categories = &t,
                                .base_body_sha256 = base,
                                .no_check = no_check};
    if (br_pwfilter_build(ks, &o, path, NULL, &err) < 0)
        fail_msg("build %s: %s", path, err.text);
    br_keyset_free(ks);
}

static void want(const br_pwfilter *pf, const char *prefix, int i, bool listed)
{
    uint8_t key[BR_SHA256_LEN];
    const char *cat = NULL;
    expr_hash(prefix, i, key);
    int r = lookup_sha256(pf, key, &cat);
    char name[16];
    snprintf(name, sizeof(name), "cat%d", i % NCAT + 1);
    if (listed ? r != 1 || strcmp(cat, name) != 0 : r != 0)
        fail_msg("%s-%d: %d %s, expected %s", prefix, i, r, r > 0 ? cat : "",
                 listed ? name : "none");
}

/* The attack: search random keys for one the file without check filters
 * blocks (some 2^24 tries); the file of the same keys with them answers
 * it not listed, in every lookup a URL check or a DNS lookup makes. */
static void test_false_block_refused(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *old_path = tu_path("%s/v3.bfuse", dir), *new_path = tu_path("%s/v4.bfuse", dir);
    build(old_path, "e", true, NULL);
    build(new_path, "e", false, NULL);
    const char *op[] = {old_path}, *np[] = {new_path};
    br_pwfilter *old = open_url_set(op, 1, NULL), *new = open_url_set(np, 1, NULL);
    assert_int_equal(br_pwfilter_header(old)->key_encoding_version, 2);
    assert_int_equal(br_pwfilter_header(new)->key_encoding_version, 4);
    uint64_t x = 0x9e3779b97f4a7c15u, tries = 0;
    const br_pwfilter *m = NULL;
    for (; br_pwfilter_code(old, x, &m) == 0; tries++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
        if (tries > (UINT64_C(1) << 30))
            fail_msg("no false positive in 2^30 keys");
    }
    uint8_t fp_key[BR_SHA256_LEN] = {0};
    for (int i = 0; i < 8; i++)
        fp_key[i] = (uint8_t)(x >> (56 - 8 * i)); /* br_hash_key64 reads it back */
    const char *cat = NULL;
    assert_int_equal(lookup_sha256(old, fp_key, &cat), 1); /* blocked before */
    cat = NULL;
    int r = lookup_sha256(new, fp_key, &cat);
    if (r != 0)
        fail_msg("key %016llx (found in %llu tries) is still blocked as %s", (unsigned long long)x,
                 (unsigned long long)tries, cat ? cat : "?");
    assert_int_equal(br_pwfilter_code(new, x, &m), 0);
    assert_false(br_pwfilter_contains_key(new, x));
    assert_true(br_pwfilter_contains_key(old, x));
    for (int i = 0; i < NKEYS; i++)
        want(new, "e", i, true);
    br_pwfilter_free(old);
    br_pwfilter_free(new);
    tu_rmrf(dir);
    free(old_path);
    free(new_path);
    free(dir);
}

/* The check filters cost 16 bits a slot beside the 32 of the shards. */
static void test_size(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *old_path = tu_path("%s/v3.bfuse", dir), *new_path = tu_path("%s/v4.bfuse", dir);
    build(old_path, "s", true, NULL);
    build(new_path, "s", false, NULL);
    const char *op[] = {old_path}, *np[] = {new_path};
    br_pwfilter *old = open_url_set(op, 1, NULL), *new = open_url_set(np, 1, NULL);
    assert_int_equal(br_pwfilter_header(new)->params[3], 16);
    assert_int_equal(br_pwfilter_header(old)->params[3], 0);
    uint64_t a = br_pwfilter_fingerprint_bytes(old), b = br_pwfilter_fingerprint_bytes(new);
    assert_int_equal(2 * b, 3 * a); /* same layout: array lengths equal, 16/32 bits more */
    br_pwfilter_free(old);
    br_pwfilter_free(new);
    tu_rmrf(dir);
    free(old_path);
    free(new_path);
    free(dir);
}

/* A set mixes both layouts either way round; each member answers its keys. */
static void test_mixed_sets(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    for (int newer_base = 0; newer_base < 2; newer_base++) {
        char *base = tu_path("%s/base%d.bfuse", dir, newer_base);
        char *delta = tu_path("%s/delta%d.bfuse", dir, newer_base);
        build(base, "b", !newer_base, NULL);
        const char *bp[] = {base};
        uint8_t body[32];
        br_pwfilter_free(open_url_set(bp, 1, body));
        build(delta, "d", newer_base, body);
        const char *sp[] = {base, delta};
        br_pwfilter *pf = open_url_set(sp, 2, NULL);
        for (int i = 0; i < NKEYS; i++) {
            want(pf, "b", i, true);
            want(pf, "d", i, true);
        }
        for (int i = 0; i < 1000; i++)
            want(pf, "other", i, false);
        br_pwfilter_free(pf);
        free(base);
        free(delta);
    }
    tu_rmrf(dir);
    free(dir);
}

static void test_header_disagrees(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/v4.bfuse", dir), *bad = tu_path("%s/bad.bfuse", dir);
    build(path, "h", false, NULL);
    expect_header_refused(path, bad, set_check_bits, 0, "param check_bits: 0, expected 16");
    expect_header_refused(path, bad, set_check_bits, 8, "param check_bits: 8, expected 16");
    expect_header_refused(path, bad, set_key_encoding, 3, "param check_bits: 16, expected 0");
    tu_rmrf(dir);
    free(path);
    free(bad);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_false_block_refused),
        cmocka_unit_test(test_size),
        cmocka_unit_test(test_mixed_sets),
        cmocka_unit_test(test_header_disagrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
