/* SPDX-License-Identifier: MIT */
/* Deltas, sets and layered files (lib/filter/filter_delta.h): the version 2
 * header fields, a set answering for all its files, deltas of another base
 * refused, layered files answering as their set did, and the golden files
 * of format v2. */
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
#include "builder/filter_layers.h"
#include "filter/filter_delta.h"
#include "filter/filter_file.h"
#include "core/hash.h"
#include "filter/pwfilter.h"
#include "testutil.h"
#include "filter/urlfilter.h"
#include "core/util.h"

typedef struct fx {
    char *dir;
} fx;

static int setup(void **state)
{
    fx *f = tu_xmalloc(sizeof(*f));
    f->dir = tu_mkdtemp();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    tu_rmrf(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static uint64_t key_of(uint64_t i)
{
    uint64_t s = i * 0x9E3779B97F4A7C15ull + 17;
    return br_splitmix64(&s);
}

/* A password filter of keys key_of(lo..hi) at path; a delta when base is set. */
static void build(const char *dir, const char *path, uint64_t lo, uint64_t hi, uint64_t gen,
                  const uint8_t *base)
{
    br_keyset *ks = NULL;
    br_error err = {{0}};
    assert_int_equal(br_keyset_new(dir, 0, &ks, &err), 0);
    for (uint64_t i = lo; i < hi; i++)
        assert_int_equal(br_keyset_add(ks, key_of(i), &err), 0);
    br_pwfilter_build_opts o = {.generation = gen,
                                .build_time = (int64_t)(1000 + gen),
                                .base_body_sha256 = base,
                                .threads = 1};
    if (br_pwfilter_build(ks, &o, path, NULL, &err) < 0)
        fail_msg("build %s: %s", path, err.text);
    br_keyset_free(ks);
}

static br_pwfilter *open_pw(const char *path)
{
    br_pwfilter *pf = NULL;
    br_error err = {{0}};
    if (br_pwfilter_open(path, &pf, &err) < 0)
        fail_msg("open %s: %s", path, err.text);
    return pf;
}

static void body_of(const char *path, uint8_t out[32])
{
    br_pwfilter *pf = open_pw(path);
    memcpy(out, br_pwfilter_file_header(pf)->body_sha256, 32);
    br_pwfilter_free(pf);
}

/* The three files of a chain: base 0..5000, d1 5000..5100 of base, d2
 * 5100..5200 of d1. */
static void chain(const char *dir, char **base, char **d1, char **d2)
{
    uint8_t b[32];
    *base = tu_path("%s/base.bfuse", dir);
    *d1 = tu_path("%s/d1.bfuse", dir);
    *d2 = tu_path("%s/d2.bfuse", dir);
    build(dir, *base, 0, 5000, 1, NULL);
    body_of(*base, b);
    build(dir, *d1, 5000, 5100, 2, b);
    body_of(*d1, b);
    build(dir, *d2, 5100, 5200, 3, b);
}

static void all_maybe(const br_pwfilter *set, uint64_t lo, uint64_t hi)
{
    for (uint64_t i = lo; i < hi; i++)
        if (!br_pwfilter_contains_key(set, key_of(i)))
            fail_msg("key %llu: no", (unsigned long long)i);
    /* The batch path agrees. */
    uint64_t keys[256];
    bool out[256];
    for (uint64_t i = lo; i < hi; i += 256) {
        size_t n = (size_t)BR_MIN(256, hi - i);
        for (size_t j = 0; j < n; j++)
            keys[j] = key_of(i + j);
        br_pwfilter_contains_batch(set, keys, n, out);
        for (size_t j = 0; j < n; j++)
            assert_true(out[j]);
    }
}

static size_t maybes(const br_pwfilter *set, uint64_t lo, uint64_t hi)
{
    size_t n = 0;
    for (uint64_t i = lo; i < hi; i++)
        n += br_pwfilter_contains_key(set, key_of(i));
    return n;
}

static void test_header_v2(void **state)
{
    fx *f = *state;
    char *base, *d1, *d2;
    chain(f->dir, &base, &d1, &d2);
    br_pwfilter *b = open_pw(base), *d = open_pw(d1);
    assert_int_equal(br_pwfilter_file_header(b)->version, 1); /* a full filter stays v1 */
    assert_int_equal(br_pwfilter_file_header(b)->role, BR_ROLE_FULL);
    assert_int_equal(br_pwfilter_file_header(d)->version, 2);
    assert_int_equal(br_pwfilter_file_header(d)->role, BR_ROLE_DELTA);
    assert_memory_equal(br_pwfilter_file_header(d)->base_body_sha256,
                        br_pwfilter_file_header(b)->body_sha256, 32);
    br_pwfilter_free(b);
    br_pwfilter_free(d);

    /* Bad v2 fields, re-summed so that the field check refuses them. */
    size_t len;
    uint8_t *raw = tu_read_file(d1, &len);
    char *bad = tu_path("%s/bad", f->dir);
    static const struct {
        size_t off;
        uint8_t val;
        const char *says;
    } cases[] = {
        {392, 2, "field role: unknown role 2"},
        {396, 1, "reserved header bytes"},
        {440, 1, "reserved header bytes"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]) + 2; i++) {
        uint8_t *c = tu_xmalloc(len);
        memcpy(c, raw, len);
        const char *says;
        if (i < sizeof(cases) / sizeof(cases[0])) {
            c[cases[i].off] = cases[i].val;
            says = cases[i].says;
        } else if (i == 3) {
            memset(c + 400, 0, 32); /* a delta without a base */
            says = "a delta names no base";
        } else {
            c[392] = 0; /* a full filter with a base */
            says = "set in a full filter";
        }
        assert_int_equal(br_sha256(c, 480, c + 480), 0);
        assert_int_equal(tu_write_file(bad, c, len), 0);
        br_filter_file *ff = NULL;
        br_error err = {{0}};
        assert_int_equal(br_filter_file_open(bad, &ff, &err), -EINVAL);
        if (!strstr(err.text, says))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.text, says);
        free(c);
    }
    free(raw);
    free(bad);
    free(base);
    free(d1);
    free(d2);
}

static void test_set(void **state)
{
    fx *f = *state;
    char *base, *d1, *d2;
    chain(f->dir, &base, &d1, &d2);
    br_pwfilter *set = open_pw(base);
    br_error err = {{0}};
    /* d2 names d1: not yet in the set. */
    assert_int_equal(br_pwfilter_attach(set, open_pw(d2), &err), -EINVAL);
    assert_non_null(strstr(err.text, "a delta of another base"));
    assert_int_equal(br_pwfilter_members(set), 1);
    assert_true(maybes(set, 5000, 5200) < 5); /* the base alone: false positives only */
    assert_int_equal(br_pwfilter_attach(set, open_pw(d1), &err), 0);
    assert_int_equal(br_pwfilter_attach(set, open_pw(d2), &err), 0);
    assert_int_equal(br_pwfilter_members(set), 3);
    all_maybe(set, 0, 5200);
    assert_true(maybes(set, 100000, 200000) < 20); /* about 3 in 65536 each */
    const br_filter_header *h = br_pwfilter_header(set);
    assert_int_equal(h->key_count, 5200);
    assert_int_equal(h->generation, 3);
    assert_int_equal(h->build_time, 1003);
    assert_int_equal(br_pwfilter_file_header(set)->generation, 1);
    /* A full filter is not a delta. */
    assert_int_equal(br_pwfilter_attach(set, open_pw(base), &err), -EINVAL);
    assert_non_null(strstr(err.text, "a full filter, not a delta"));
    br_pwfilter_free(set);
    free(base);
    free(d1);
    free(d2);
}

static void test_delta_check_kind(void **state)
{
    (void)state;
    br_filter_header set = {.kind = BR_KIND_PASSWORD_SHA1, .key_encoding = BR_KEYENC_HASH_PREFIX64};
    set.body_sha256[0] = 1;
    br_filter_names names = {0};
    assert_int_equal(br_filter_names_add(&names, set.body_sha256), 0);
    br_filter_header d = {.kind = BR_KIND_URL_SHA256,
                          .key_encoding = BR_KEYENC_URL_EXPR_SHA256,
                          .role = BR_ROLE_DELTA};
    d.base_body_sha256[0] = 1;
    br_error err = {{0}};
    assert_int_equal(br_filter_delta_check(&set, &names, &d, &err), -EINVAL);
    assert_non_null(strstr(err.text, "a url-sha256 delta in a set of password-sha1 filters"));
    d.kind = BR_KIND_PASSWORD_SHA1;
    assert_int_equal(br_filter_delta_check(&set, &names, &d, &err), -EINVAL);
    assert_non_null(strstr(err.text, "key encoding"));
    d.key_encoding = BR_KEYENC_HASH_PREFIX64;
    assert_int_equal(br_filter_delta_check(&set, &names, &d, &err), 0);
    br_filter_names_fini(&names);
}

static int write_layers(const char *out, char **paths, size_t n, br_error *err)
{
    br_filter_file *files[8] = {0};
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++)
        r = br_filter_file_open(paths[i], &files[i], err);
    br_filter_layers_opts o = {.generation = 9, .source = "merged", .build_time = 2000};
    if (r == 0)
        r = br_filter_layers_write(out, files, n, &o, NULL, err);
    for (size_t i = 0; i < n; i++)
        br_filter_file_free(files[i]);
    return r;
}

static void test_layers(void **state)
{
    fx *f = *state;
    char *base, *d1, *d2;
    chain(f->dir, &base, &d1, &d2);
    char *merged = tu_path("%s/merged.bfuse", f->dir);
    char *paths[] = {base, d1, d2};
    br_error err = {{0}};
    assert_int_equal(write_layers(merged, paths, 3, &err), 0);
    br_pwfilter *m = open_pw(merged);
    const br_filter_header *h = br_pwfilter_header(m);
    assert_int_equal(h->version, 2);
    assert_int_equal(h->algorithm, BR_ALGO_LAYERS);
    assert_int_equal(h->key_count, 5200);
    assert_int_equal(h->generation, 9);
    assert_int_equal(br_pwfilter_members(m), 3);
    all_maybe(m, 0, 5200);
    /* Exactly the set's answers, also for absent keys. */
    br_pwfilter *set = open_pw(base);
    assert_int_equal(br_pwfilter_attach(set, open_pw(d1), &err), 0);
    assert_int_equal(br_pwfilter_attach(set, open_pw(d2), &err), 0);
    for (uint64_t i = 100000; i < 300000; i++)
        assert_int_equal(br_pwfilter_contains_key(m, key_of(i)),
                         br_pwfilter_contains_key(set, key_of(i)));
    br_pwfilter_free(set);
    /* A delta of the merged file attaches to it; so does one of its base. */
    char *d3 = tu_path("%s/d3.bfuse", f->dir);
    build(f->dir, d3, 5200, 5300, 10, br_pwfilter_file_header(m)->body_sha256);
    if (br_pwfilter_attach(m, open_pw(d3), &err) != 0)
        fail_msg("attach d3: %s", err.text);
    all_maybe(m, 0, 5300);
    assert_int_equal(br_pwfilter_header(m)->generation, 10);
    br_pwfilter_free(m);
    /* A merge of the merged file and d3 is flat: 4 layers. */
    char *again = tu_path("%s/again.bfuse", f->dir);
    char *paths2[] = {merged, d3};
    assert_int_equal(write_layers(again, paths2, 2, &err), 0);
    m = open_pw(again);
    assert_int_equal(br_pwfilter_members(m), 4);
    all_maybe(m, 0, 5300);
    br_pwfilter_free(m);
    /* Not a set: a delta first, a delta of another base, a layered file later. */
    char *p1[] = {d1, d2};
    assert_int_equal(write_layers(again, p1, 2, &err), -EINVAL);
    assert_non_null(strstr(err.text, "file 1 is a delta"));
    char *p2[] = {base, d2};
    assert_int_equal(write_layers(again, p2, 2, &err), -EINVAL);
    assert_non_null(strstr(err.text, "a delta of another base"));
    char *p3[] = {base, merged};
    assert_int_equal(write_layers(again, p3, 2, &err), -EINVAL);
    char *p4[] = {base};
    assert_int_equal(write_layers(again, p4, 1, &err), -EINVAL);
    free(again);
    free(d3);
    free(merged);
    free(base);
    free(d1);
    free(d2);
}

/* Re-sum a whole file after an edit: the structure checks, not the sums,
 * must refuse it. */
static void resum(uint8_t *raw, size_t len)
{
    assert_int_equal(br_sha256(raw + 512, len - 512, raw + 448), 0);
    assert_int_equal(br_sha256(raw, 480, raw + 480), 0);
}

static void test_layers_refused(void **state)
{
    fx *f = *state;
    char *base, *d1, *d2;
    chain(f->dir, &base, &d1, &d2);
    char *merged = tu_path("%s/merged.bfuse", f->dir);
    char *paths[] = {base, d1};
    br_error err = {{0}};
    assert_int_equal(write_layers(merged, paths, 2, &err), 0);
    size_t len;
    uint8_t *raw = tu_read_file(merged, &len);
    char *bad = tu_path("%s/bad", f->dir);
    static const struct {
        size_t off;
        uint8_t xor ;
        const char *says;
    } cases[] = {
        {72, 0x03, "param layer_count: 1"}, /* 2 -> 1 */
        {76, 0x01, "reserved param byte"},
        {4096, 0x40, "layer 0: offset"},      /* first offset moved */
        {4096 + 24, 0x01, "layer 1: offset"}, /* second size off by one */
        {48, 0x01, "field key_count"},        /* key count */
        {8192 + 16, 0x02, "layer 0"},         /* layer 0's kind, inside */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t *c = tu_xmalloc(len);
        memcpy(c, raw, len);
        c[cases[i].off] ^= cases[i].xor ;
        resum(c, len);
        assert_int_equal(tu_write_file(bad, c, len), 0);
        br_pwfilter *pf = NULL;
        memset(&err, 0, sizeof(err));
        assert_int_equal(br_pwfilter_open(bad, &pf, &err), -EINVAL);
        if (!strstr(err.text, cases[i].says))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, err.text, cases[i].says);
        free(c);
    }
    /* A layered file is not a URL filter, and the layers say so. */
    br_urlfilter *uf = NULL;
    assert_int_equal(br_urlfilter_open(merged, &uf, &err), -EINVAL);
    free(raw);
    free(bad);
    free(merged);
    free(base);
    free(d1);
    free(d2);
}

/* Golden files of format v2 (data/fixtures/make-fixtures). */
static void fixture_keys(const char *name, uint64_t **keys, size_t *n)
{
    char *path = tu_path("%s/%s", FIXTURES_DIR, name);
    size_t len;
    char *text = (char *)tu_read_file(path, &len);
    assert_non_null(text);
    *n = 0;
    *keys = tu_xmalloc((len / 41 + 1) * sizeof(uint64_t));
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        uint8_t sha1[BR_SHA1_LEN];
        assert_true(br_hex_decode(line, BR_SHA1_LEN, sha1));
        (*keys)[(*n)++] = br_hash_key64(sha1);
    }
    free(text);
    free(path);
}

static void test_golden_v2(void **state)
{
    (void)state;
    uint64_t *k1, *k2;
    size_t n1, n2;
    fixture_keys("password-sha1-v1.keys", &k1, &n1);
    fixture_keys("password-sha1-v2-delta.keys", &k2, &n2);
    assert_int_equal(n1, 1000);
    assert_int_equal(n2, 100);
    br_pwfilter *set = open_pw(FIXTURES_DIR "/password-sha1-v1-fp16.bfuse");
    br_pwfilter *delta = open_pw(FIXTURES_DIR "/password-sha1-v2-delta.bfuse");
    const br_filter_header *dh = br_pwfilter_file_header(delta);
    assert_int_equal(dh->version, 2);
    assert_int_equal(dh->key_count, 100);
    assert_int_equal(dh->generation, 2);
    assert_int_equal(dh->build_time, 1767225600);
    for (size_t i = 0; i < n2; i++)
        assert_true(br_pwfilter_contains_key(delta, k2[i]));
    br_error err = {{0}};
    assert_int_equal(br_pwfilter_attach(set, delta, &err), 0);
    br_pwfilter *layers = open_pw(FIXTURES_DIR "/password-sha1-v2-layers.bfuse");
    assert_int_equal(br_pwfilter_header(layers)->key_count, 1100);
    assert_int_equal(br_pwfilter_members(layers), 2);
    for (size_t i = 0; i < n1 + n2; i++) {
        uint64_t k = i < n1 ? k1[i] : k2[i - n1];
        assert_true(br_pwfilter_contains_key(set, k));
        assert_true(br_pwfilter_contains_key(layers, k));
    }
    br_pwfilter_free(layers);
    br_pwfilter_free(set);

    br_urlfilter *uset = NULL, *ud = NULL;
    assert_int_equal(br_urlfilter_open(FIXTURES_DIR "/url-sha256-v1.bbf", &uset, &err), 0);
    assert_int_equal(br_urlfilter_open(FIXTURES_DIR "/url-sha256-v2-delta.bbf", &ud, &err), 0);
    assert_int_equal(br_urlfilter_file_header(ud)->key_count, 50);
    assert_int_equal(br_urlfilter_attach(uset, ud, &err), 0);
    assert_int_equal(br_urlfilter_header(uset)->key_count, 1050);
    for (int i = 0; i < 50; i++) {
        char expr[96];
        uint8_t key[32];
        snprintf(expr, sizeof(expr), "breachd-fixture-delta-%d.example/d", i);
        assert_int_equal(br_sha256(expr, strlen(expr), key), 0);
        assert_true(br_urlfilter_maybe(uset, key));
        assert_true(
            br_prefix_bitmap_test(br_urlfilter_prefix_bitmap(uset), br_urlfilter_prefix_of(key)));
    }
    br_urlfilter_free(uset);
    free(k1);
    free(k2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_header_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set, setup, teardown),
        cmocka_unit_test(test_delta_check_kind),
        cmocka_unit_test_setup_teardown(test_layers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_layers_refused, setup, teardown),
        cmocka_unit_test(test_golden_v2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
