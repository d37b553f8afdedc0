/* SPDX-License-Identifier: MIT */
/* Offline URL sets (docs/filter-format.md, "Sets"): a base and a delta
 * with their category tables (each expression keeps its member's
 * category; a delta's table starts with its base's, and one that
 * disagrees is refused), the set's table, a layered (merged) offline URL
 * file read through its first layer, and the refusals naming why: a range
 * (Bloom) delta in an offline set and the reverse, a delta of another
 * base. */
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
#include "builder/urlfilter_save.h"
#include "core/hash.h"
#include "filter/filter_delta.h"
#include "filter/offline_codes.h"
#include "filter/pwfilter.h"
#include "filter/urlfilter.h"
#include "testutil.h"
#include "url_helpers.h"
#include "url/url_expr.h"
#include "core/util.h"

static void expr_hash(const char *prefix, int i, uint8_t key[BR_SHA256_LEN])
{
    char expr[96];
    snprintf(expr, sizeof(expr), "%s-%d.example/", prefix, i);
    assert_int_equal(br_url_expr_hash(expr, key), 0);
}

/* n expressions "prefix-i.example/", expression i with code codes[i % nc],
 * under the category table names[0..ncat), as a full filter or a delta of
 * base_body. */
static void build(const char *path, const char *prefix, int n, const uint8_t *codes, int nc,
                  const char *const *names, int ncat, const uint8_t *base_body)
{
    br_category_table t = {0};
    for (int i = 0; i < ncat; i++)
        assert_int_equal(br_category_code(&t, names[i]), i + 1);
    br_keyset *ks = NULL;
    br_error err = {{0}};
    assert_int_equal(br_keyset_new(NULL, 0, &ks, &err), 0);
    for (int i = 0; i < n; i++) {
        uint8_t key[BR_SHA256_LEN];
        expr_hash(prefix, i, key);
        assert_int_equal(br_keyset_add_counted(ks, br_hash_key64(key), codes[i % nc], &err), 0);
    }
    br_pwfilter_build_opts o = {.kind = BR_KIND_URL_SHA256,
                                .generation = base_body ? 2 : 1,
                                .source = "unit",
                                .build_time = 1764892800,
                                .categories = &t,
                                .base_body_sha256 = base_body};
    if (br_pwfilter_build(ks, &o, path, NULL, &err) < 0)
        fail_msg("build %s: %s", path, err.text);
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

static void want(const br_pwfilter *pf, const char *prefix, int i, const char *category)
{
    uint8_t key[BR_SHA256_LEN];
    const char *cat = NULL;
    expr_hash(prefix, i, key);
    int r = lookup_sha256(pf, key, &cat);
    if (category ? r != 1 || strcmp(cat, category) != 0 : r != 0)
        fail_msg("%s-%d: %d %s, expected %s", prefix, i, r, r > 0 ? cat : "",
                 category ? category : "none");
}

static const char *const base_names[] = {"malware", "phishing"};
static const char *const delta_names[] = {"malware", "phishing", "ads"};

typedef struct paths {
    char *dir, *base, *delta;
} paths;

static void paths_free(paths *p)
{
    tu_rmrf(p->dir);
    free(p->dir);
    free(p->base);
    free(p->delta);
}

/* base: 300 expressions, malware and phishing; delta: 200 others, all
 * three categories (ads new). */
static void make_set(paths *p)
{
    p->dir = tu_mkdtemp();
    p->base = tu_path("%s/base.bfuse", p->dir);
    p->delta = tu_path("%s/delta.bfuse", p->dir);
    const uint8_t bc[] = {1, 2}, dc[] = {3, 2, 1};
    build(p->base, "b", 300, bc, 2, base_names, 2, NULL);
    br_pwfilter *b = open_ok(p->base);
    build(p->delta, "d", 200, dc, 3, delta_names, 3, br_pwfilter_file_header(b)->body_sha256);
    br_pwfilter_free(b);
}

static void test_set_categories(void **state)
{
    (void)state;
    paths p;
    make_set(&p);
    br_pwfilter *set = NULL;
    br_error err = {{0}};
    const char *const files[] = {p.base, p.delta};
    if (br_pwfilter_open_set(files, 2, &set, NULL, &err) < 0)
        fail_msg("set: %s", err.text);
    for (int i = 0; i < 300; i++)
        want(set, "b", i, i % 2 ? "phishing" : "malware");
    for (int i = 0; i < 200; i++)
        want(set, "d", i, (const char *[]){"ads", "phishing", "malware"}[i % 3]);
    want(set, "absent", 1, NULL);
    const br_category_table *t = br_pwfilter_categories(set);
    assert_non_null(t);
    assert_int_equal(t->count, 3);
    assert_string_equal(t->names[2], "ads");
    assert_int_equal(br_pwfilter_header(set)->key_count, 500);
    br_pwfilter_free(set);

    /* A merge: one layered file, read through its first layer. */
    char *merged = tu_path("%s/merged.bfuse", p.dir);
    br_filter_file *ff[2] = {NULL, NULL};
    assert_int_equal(br_filter_file_open(p.base, &ff[0], &err), 0);
    assert_int_equal(br_filter_file_open(p.delta, &ff[1], &err), 0);
    br_filter_layers_opts lo = {.generation = 3, .source = "unit", .build_time = 1764892800};
    if (br_filter_layers_write(merged, ff, 2, &lo, NULL, &err) < 0)
        fail_msg("merge: %s", err.text);
    br_filter_file_free(ff[0]);
    br_filter_file_free(ff[1]);
    br_filter_header h;
    assert_int_equal(br_filter_header_read(merged, &h), 0);
    assert_int_equal(h.algorithm, BR_ALGO_LAYERS);
    assert_int_equal(br_filter_header_read_first(merged, &h), 0);
    assert_int_equal(h.algorithm, BR_ALGO_FUSE_OFFLINE);
    assert_int_equal(h.kind, BR_KIND_URL_SHA256);
    assert_int_equal(br_filter_header_read_first(p.base, &h), 0);
    assert_int_equal(h.algorithm, BR_ALGO_FUSE_OFFLINE);
    set = open_ok(merged);
    assert_int_equal(br_pwfilter_members(set), 2);
    want(set, "b", 3, "phishing");
    want(set, "d", 0, "ads");
    assert_int_equal(br_pwfilter_categories(set)->count, 3);
    br_pwfilter_free(set);
    free(merged);
    paths_free(&p);
}

/* A delta whose table gives a code another category than its base's is
 * refused: its answers would mean one thing in the delta, another in the
 * base. */
static void test_table_disagrees(void **state)
{
    (void)state;
    paths p;
    make_set(&p);
    const char *const swapped[] = {"phishing", "malware"};
    const uint8_t c[] = {1};
    br_pwfilter *b = open_ok(p.base);
    build(p.delta, "d", 10, c, 1, swapped, 2, br_pwfilter_file_header(b)->body_sha256);
    br_error err = {{0}};
    assert_int_equal(br_pwfilter_attach(b, open_ok(p.delta), &err), -EINVAL);
    assert_non_null(strstr(err.text, "category code 1 is 'phishing' in this delta but 'malware'"));
    /* a table that extends the base's joins (a shorter one too) */
    const char *const shorter[] = {"malware"};
    build(p.delta, "d", 10, c, 1, shorter, 1, br_pwfilter_file_header(b)->body_sha256);
    if (br_pwfilter_attach(b, open_ok(p.delta), &err) < 0)
        fail_msg("attach: %s", err.text);
    want(b, "d", 3, "malware");
    br_pwfilter_free(b);
    paths_free(&p);
}

/* Mixed sets and other bases are refused, with the file named. */
static void test_refusals(void **state)
{
    (void)state;
    paths p;
    make_set(&p);
    br_error err = {{0}};
    br_pwfilter *set = NULL;
    /* a delta of another base */
    char *other = tu_path("%s/other.bfuse", p.dir);
    const uint8_t c[] = {1};
    build(other, "o", 10, c, 1, base_names, 2, NULL);
    const char *const wrong[] = {other, p.delta};
    assert_int_equal(br_pwfilter_open_set(wrong, 2, &set, NULL, &err), -EINVAL);
    assert_non_null(strstr(err.text, p.delta));
    assert_non_null(strstr(err.text, "another base"));
    /* a range (Bloom) delta of the offline base */
    br_pwfilter *b = open_ok(p.base);
    char *bloom = tu_path("%s/delta.bbf", p.dir);
    br_urlfilter_draft *d = NULL;
    assert_int_equal(br_urlfilter_draft_new(10, 1e-5, &d, &err), 0);
    uint8_t key[BR_SHA256_LEN];
    expr_hash("bloom", 1, key);
    br_urlfilter_draft_add(d, key, true);
    br_urlfilter_save_opts so = {.generation = 2,
                                 .source = "unit",
                                 .build_time = 1764892800,
                                 .base_body_sha256 = br_pwfilter_file_header(b)->body_sha256};
    assert_int_equal(br_urlfilter_draft_save(d, bloom, &so, NULL, &err), 0);
    br_urlfilter_draft_free(d);
    br_pwfilter_free(b);
    const char *const mixed[] = {p.base, bloom};
    assert_int_equal(br_pwfilter_open_set(mixed, 2, &set, NULL, &err), -EINVAL);
    assert_non_null(strstr(err.text, bloom));
    assert_non_null(strstr(err.text, "offline set holds offline files only"));
    /* the reverse: an offline delta in a Bloom set */
    char *bbase = tu_path("%s/base.bbf", p.dir);
    assert_int_equal(br_urlfilter_draft_new(10, 1e-5, &d, &err), 0);
    br_urlfilter_draft_add(d, key, true);
    so.base_body_sha256 = NULL;
    assert_int_equal(br_urlfilter_draft_save(d, bbase, &so, NULL, &err), 0);
    br_urlfilter_draft_free(d);
    br_urlfilter *uset = NULL;
    const char *const rev[] = {bbase, p.delta};
    assert_int_equal(br_urlfilter_open_set(rev, 2, &uset, NULL, &err), -EINVAL);
    assert_non_null(strstr(err.text, p.delta));
    assert_non_null(strstr(err.text, "an offline filter"));
    free(other);
    free(bloom);
    free(bbase);
    paths_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_categories),
        cmocka_unit_test(test_table_disagrees),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
