/* SPDX-License-Identifier: MIT */
/* The exact table of offline URL filters (docs/filter-format.md, "The
 * exact table"): a fingerprint false positive never reads as allow (the
 * attack: a key found by search whose fingerprint code is the allow
 * category's, in a file that kept its allow entries in the fingerprints),
 * allow entries answered from full SHA-256 keys, a delta's removals
 * checked before the members under it, a later member overriding an
 * earlier one, and exact tables refused when unsorted. */
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

static void expr_hash(const char *prefix, int i, uint8_t key[BR_SHA256_LEN])
{
    char expr[96];
    snprintf(expr, sizeof(expr), "%s-%d.example/", prefix, i);
    assert_int_equal(br_url_expr_hash(expr, key), 0);
}

static int cmp_key(const void *a, const void *b)
{
    return memcmp(a, b, BR_SHA256_LEN);
}

typedef struct build_spec {
    const char *const *names; /* the category table */
    int ncat;
    /* fingerprint entries: "prefix-i.example/" for i < n, code codes[i % nc] */
    const char *prefix;
    int n;
    const uint8_t *codes;
    int nc;
    /* exact entries: "allow_prefix-i" i < n_allow, "removed_prefix-i" i < n_removed */
    const char *allow_prefix, *removed_prefix;
    int n_allow, n_removed;
    const uint8_t *base_body;
    bool no_check; /* the layout before check filters (key encodings v2, v3) */
} build_spec;

/* n expressions of a prefix as sorted SHA-256 keys (NULL for none). */
static uint8_t (*sorted_keys(const char *prefix, int n))[BR_SHA256_LEN]
{
    if (!n)
        return NULL;
    uint8_t(*k)[BR_SHA256_LEN] = calloc((size_t)n, BR_SHA256_LEN);
    assert_non_null(k);
    for (int i = 0; i < n; i++)
        expr_hash(prefix, i, k[i]);
    qsort(k, (size_t)n, BR_SHA256_LEN, cmp_key);
    return k;
}

static int build(const char *path, const build_spec *s, br_error *err)
{
    br_category_table t = {0};
    for (int i = 0; i < s->ncat; i++)
        assert_int_equal(br_category_code(&t, s->names[i]), i + 1);
    br_keyset *ks = NULL;
    assert_int_equal(br_keyset_new(NULL, 0, &ks, err), 0);
    for (int i = 0; i < s->n; i++) {
        uint8_t key[BR_SHA256_LEN];
        expr_hash(s->prefix, i, key);
        assert_int_equal(br_keyset_add_counted(ks, br_hash_key64(key), s->codes[i % s->nc], err),
                         0);
    }
    uint8_t(*allow)[BR_SHA256_LEN] = sorted_keys(s->allow_prefix, s->n_allow);
    uint8_t(*removed)[BR_SHA256_LEN] = sorted_keys(s->removed_prefix, s->n_removed);
    br_pwfilter_build_opts o = {.kind = BR_KIND_URL_SHA256,
                                .generation = s->base_body ? 2 : 1,
                                .source = "unit",
                                .build_time = 1764892800,
                                .categories = &t,
                                .base_body_sha256 = s->base_body,
                                .allow = (const uint8_t(*)[32])allow,
                                .n_allow = (size_t)s->n_allow,
                                .removed = (const uint8_t(*)[32])removed,
                                .n_removed = (size_t)s->n_removed,
                                .no_check = s->no_check};
    int r = br_pwfilter_build(ks, &o, path, NULL, err);
    br_keyset_free(ks);
    free(allow);
    free(removed);
    return r;
}

static void build_ok(const char *path, const build_spec *s)
{
    br_error err = {{0}};
    if (build(path, s, &err) < 0)
        fail_msg("build %s: %s", path, err.text);
}

static br_pwfilter *open_set(const char *const *paths, size_t n)
{
    return open_url_set(paths, n, NULL);
}

/* The body SHA-256 of paths[n-1]: what a delta of the set names. */
static void body_of(const char *const *paths, size_t n, uint8_t body[32])
{
    br_pwfilter_free(open_url_set(paths, n, body));
}

static void want(const br_pwfilter *pf, const char *prefix, int i, const char *category)
{
    uint8_t key[BR_SHA256_LEN];
    const char *cat = NULL;
    expr_hash(prefix, i, key);
    int r = lookup_sha256(pf, key, &cat);
    if (category ? r != 1 || strcmp(cat, category) != 0 : r != 0)
        fail_msg("%s-%d: %d %s, expected %s", prefix, i, r, r > 0 ? cat : "",
                 category ? category : "none");
    /* the same answer by code: the set's table names it, 0 an allow entry */
    uint8_t code = 0xff;
    assert_int_equal(lookup_sha256_code(pf, key, &code), r);
    if (r > 0)
        assert_string_equal(code ? br_category_name(br_pwfilter_categories(pf), code)
                                 : BR_URL_ALLOW_CATEGORY,
                            category);
}

static const char *const allow_malware[] = {BR_URL_ALLOW_CATEGORY, "malware"};

/* The attack: a file whose fingerprints hold allow entries (every offline
 * URL file written before the exact table). A random key whose 24
 * fingerprint bits match reads a code that names "allow" about 1 time in
 * 4 with two categories (the codes' high bits are all zero), so a search
 * of some 2^26 keys finds one; the URL it stands for was SAFE whatever its
 * host's blocklist entry said. Now no fingerprint code says allow. */
static void test_fp_never_allows(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/old.bfuse", dir);
    static const uint8_t codes[] = {1, 2}; /* allow, malware */
    build_spec s = {.names = allow_malware,
                    .ncat = 2,
                    .prefix = "e",
                    .n = 64,
                    .codes = codes,
                    .nc = 2,
                    .no_check = true}; /* a search finds no 40-bit match */
    build_ok(path, &s);
    const char *paths[] = {path};
    br_pwfilter *pf = open_set(paths, 1);
    uint64_t x = 0x9e3779b97f4a7c15u, tries = 0;
    uint8_t fp_key[BR_SHA256_LEN] = {0};
    for (;; tries++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
        const br_pwfilter *m = NULL;
        if (br_pwfilter_code(pf, x, &m) == 1)
            break;
        if (tries > (UINT64_C(1) << 31))
            fail_msg("no false positive in 2^31 keys");
    }
    for (int i = 0; i < 8; i++)
        fp_key[i] = (uint8_t)(x >> (56 - 8 * i)); /* br_hash_key64 reads it back */
    assert_int_equal(br_hash_key64(fp_key), x);
    const char *cat = NULL;
    int r = lookup_sha256(pf, fp_key, &cat);
    if (r > 0 && strcmp(cat, BR_URL_ALLOW_CATEGORY) == 0)
        fail_msg("a false positive (key %016llx, after %llu tries) reads as allow",
                 (unsigned long long)x, (unsigned long long)tries);
    want(pf, "e", 1, "malware"); /* the blocked host */
    want(pf, "e", 0, NULL);      /* a fingerprint's allow entry: no longer read */
    assert_true(br_pwfilter_url_fuse_allow(pf));
    br_pwfilter_free(pf);
    tu_rmrf(dir);
    free(path);
    free(dir);
}

/* Allow entries in the exact table: answered, key encoding v3, and no
 * other key answers allow. */
static void test_exact_allow(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/new.bfuse", dir);
    static const uint8_t malware[] = {2};
    build_spec s = {.names = allow_malware,
                    .ncat = 2,
                    .prefix = "bad",
                    .n = 200,
                    .codes = malware,
                    .nc = 1,
                    .allow_prefix = "good",
                    .n_allow = 100};
    build_ok(path, &s);
    const char *paths[] = {path};
    br_pwfilter *pf = open_set(paths, 1);
    assert_int_equal(br_pwfilter_header(pf)->key_encoding_version, 4);
    assert_false(br_pwfilter_url_fuse_allow(pf));
    for (int i = 0; i < 200; i++)
        want(pf, "bad", i, "malware");
    for (int i = 0; i < 100; i++)
        want(pf, "good", i, BR_URL_ALLOW_CATEGORY);
    for (int i = 0; i < 1000; i++)
        want(pf, "other", i, NULL);
    br_pwfilter_free(pf);
    tu_rmrf(dir);
    free(path);
    free(dir);
}

/* A delta removes what the members under it list (fingerprint or exact),
 * and a later delta lists it again. */
static void test_removals(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *p0 = tu_path("%s/base.bfuse", dir), *p1 = tu_path("%s/d1.bfuse", dir),
         *p2 = tu_path("%s/d2.bfuse", dir);
    static const uint8_t malware[] = {2};
    build_spec s = {.names = allow_malware,
                    .ncat = 2,
                    .prefix = "x",
                    .n = 100,
                    .codes = malware,
                    .nc = 1,
                    .allow_prefix = "ok",
                    .n_allow = 10};
    build_ok(p0, &s);
    const char *paths[] = {p0, p1, p2};
    uint8_t body[32];
    body_of(paths, 1, body);
    /* d1: removes x-0..49 (the removal list's keys); adds y-* */
    build_spec d1 = {.names = allow_malware,
                     .ncat = 2,
                     .prefix = "y",
                     .n = 20,
                     .codes = malware,
                     .nc = 1,
                     .removed_prefix = "x",
                     .n_removed = 50,
                     .base_body = body};
    build_ok(p1, &d1);
    br_pwfilter *set = open_set(paths, 2);
    for (int i = 0; i < 100; i++)
        want(set, "x", i, i < 50 ? NULL : "malware");
    for (int i = 0; i < 20; i++)
        want(set, "y", i, "malware");
    for (int i = 0; i < 10; i++)
        want(set, "ok", i, BR_URL_ALLOW_CATEGORY);
    br_pwfilter_free(set);
    /* d2: lists x-0..9 again, removes ok-0..4 */
    uint8_t body1[32];
    body_of(paths, 2, body1);
    build_spec d2 = {.names = allow_malware,
                     .ncat = 2,
                     .prefix = "x",
                     .n = 10,
                     .codes = malware,
                     .nc = 1,
                     .removed_prefix = "ok",
                     .n_removed = 5,
                     .base_body = body1};
    build_ok(p2, &d2);
    set = open_set(paths, 3);
    for (int i = 0; i < 100; i++)
        want(set, "x", i, i < 10 || i >= 50 ? "malware" : NULL);
    for (int i = 0; i < 10; i++)
        want(set, "ok", i, i < 5 ? NULL : BR_URL_ALLOW_CATEGORY);
    br_pwfilter_free(set);
    tu_rmrf(dir);
    free(p0);
    free(p1);
    free(p2);
    free(dir);
}

/* An exact table out of order is refused by the writer. */
static void test_unsorted_refused(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/bad.bfuse", dir);
    br_category_table t = {0};
    assert_int_equal(br_category_code(&t, "malware"), 1);
    uint8_t keys[2][32];
    expr_hash("k", 0, keys[0]);
    expr_hash("k", 1, keys[1]);
    if (memcmp(keys[0], keys[1], 32) < 0) {
        uint8_t tmp[32];
        memcpy(tmp, keys[0], 32);
        memcpy(keys[0], keys[1], 32);
        memcpy(keys[1], tmp, 32);
    }
    br_keyset *ks = NULL;
    br_error err = {{0}};
    assert_int_equal(br_keyset_new(NULL, 0, &ks, &err), 0);
    assert_int_equal(br_keyset_add_counted(ks, 42, 1, &err), 0);
    br_pwfilter_build_opts o = {.kind = BR_KIND_URL_SHA256,
                                .generation = 1,
                                .build_time = 1,
                                .categories = &t,
                                .allow = (const uint8_t(*)[32])keys,
                                .n_allow = 2};
    assert_int_equal(br_pwfilter_build(ks, &o, path, NULL, &err), -EINVAL);
    assert_non_null(strstr(err.text, "sorted"));
    br_keyset_free(ks);
    tu_rmrf(dir);
    free(path);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp_never_allows),
        cmocka_unit_test(test_exact_allow),
        cmocka_unit_test(test_removals),
        cmocka_unit_test(test_unsorted_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
