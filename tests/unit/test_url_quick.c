/* SPDX-License-Identifier: MIT */
/* The quick filter of offline URL filters (docs/filter-format.md, "The
 * quick filter"; key encoding v5): the build writes v5 with it and v4
 * without it, readers read v2..v5, it has no false negative for any
 * expression a file holds (fingerprints and allow entries), a set says
 * maybe as soon as one member lacks one; and libbreachd-dns answers every
 * listed, allowed, subdomain and random name through a v5 file exactly as
 * through the v4 file of the same entries (verdict, reason, category,
 * domain, action), while a quick filter that misses an expression makes
 * the library skip it (so the differential test would catch a dropped
 * key). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "breachd-dns.h"
#include "builder/pwfilter_build.h"
#include "core/hash.h"
#include "core/util.h"
#include "filter/filter_file.h"
#include "filter/offline_codes.h"
#include "filter/pwfilter.h"
#include "testutil.h"
#include "url/url_expr.h"
#include "url_helpers.h"

enum { NLISTED = 3000, NALLOW = 300 };
static const char *const cats[] = {"malware", "phishing", "ads"};

/* Listed domain i: a few shapes of 2 to 4 labels; allowed domain i: a
 * subdomain of a listed one (allow wins over its parent's block) or one of
 * its own. */
static void listed_name(char *buf, size_t n, int i)
{
    switch (i % 3) {
    case 0:
        snprintf(buf, n, "l%d-bad.example", i);
        break;
    case 1:
        snprintf(buf, n, "w%d.l%d.test", i % 7, i);
        break;
    default:
        snprintf(buf, n, "a.b%d.l%d.example.org", i % 5, i);
    }
}

static void allowed_name(char *buf, size_t n, int i)
{
    if (i % 2) {
        char parent[64];
        listed_name(parent, sizeof(parent), i * 7);
        snprintf(buf, n, "ok%d.%s", i, parent);
    } else {
        snprintf(buf, n, "fine%d.example.net", i);
    }
}

typedef struct opts {
    bool quick;      /* a quick filter (v5) */
    bool no_check;   /* no check filters (v2, v3) */
    bool no_allow;   /* no allow entries (v2 without check filters) */
    int drop_quick;  /* >= 0: that listed entry's key left out of the quick filter */
    int extra_quick; /* quick keys of expressions whose 64-bit keys the file has already */
    int first, count;
    uint64_t generation;
    const uint8_t *base;
} opts;

static int by_key(const void *a, const void *b)
{
    return memcmp(a, b, BR_SHA256_LEN);
}

/* Listed entries [first, first + count) and, for a full file, the allow
 * entries, built as the feed builder does: allow entries in the exact
 * table, the quick filter over every expression's XXH3. */
static void build(const char *path, const opts *op)
{
    br_category_table t = {0};
    for (size_t c = 0; c < BR_ARRAY_SIZE(cats); c++)
        assert_true(br_category_code(&t, cats[c]) > 0);
    assert_true(br_category_code(&t, BR_URL_ALLOW_CATEGORY) > 0);
    br_keyset *ks = NULL;
    br_error err = {{0}};
    assert_int_equal(br_keyset_new(NULL, 0, &ks, &err), 0);
    uint64_t *quick = calloc(NLISTED + NALLOW + (size_t)op->extra_quick, sizeof(uint64_t));
    uint8_t(*allow)[BR_SHA256_LEN] = calloc(NALLOW + 1, BR_SHA256_LEN);
    size_t nq = 0, na = 0;
    for (int i = op->first; i < op->first + op->count; i++) {
        char expr[160];
        uint8_t key[BR_SHA256_LEN];
        listed_name(expr, sizeof(expr) - 1, i);
        strcat(expr, "/");
        assert_int_equal(br_url_expr_hash(expr, key), 0);
        assert_int_equal(br_keyset_add_counted(ks, br_hash_key64(key), (uint64_t)(i % 3) + 1, &err),
                         0);
        if (i != op->drop_quick)
            quick[nq++] = br_xxh3_64(expr, strlen(expr));
    }
    for (int i = 0; !op->base && !op->no_allow && i < NALLOW; i++) {
        char expr[160];
        allowed_name(expr, sizeof(expr) - 1, i);
        strcat(expr, "/");
        assert_int_equal(br_url_expr_hash(expr, allow[na++]), 0);
        quick[nq++] = br_xxh3_64(expr, strlen(expr));
    }
    for (int i = 0; i < op->extra_quick; i++) /* as if their SHA-256 shared 8 bytes */
        quick[nq++] = UINT64_C(0x5eed000000000000) + (uint64_t)i;
    qsort(allow, na, BR_SHA256_LEN, by_key);
    br_pwfilter_build_opts o = {.kind = BR_KIND_URL_SHA256,
                                .generation = op->generation ? op->generation : 1,
                                .source = "unit",
                                .build_time = 1764892800,
                                .categories = &t,
                                .max_domain_labels = 6,
                                .allow = (const uint8_t(*)[32])allow,
                                .n_allow = na,
                                .no_check = op->no_check,
                                .base_body_sha256 = op->base,
                                .quick = op->quick ? quick : NULL,
                                .n_quick = nq};
    if (br_pwfilter_build(ks, &o, path, NULL, &err) < 0)
        fail_msg("build %s: %s", path, err.text);
    br_keyset_free(ks);
    free(quick);
    free(allow);
}

static uint64_t quick_of(const char *name)
{
    char expr[300];
    snprintf(expr, sizeof(expr), "%s/", name);
    return br_xxh3_64(expr, strlen(expr));
}

/* The writer's key encoding per layout, and every reader reads them. */
static void test_versions(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    const struct {
        opts o;
        unsigned enc;
        bool quick;
    } v[] = {
        {{.quick = true, .count = 100, .drop_quick = -1}, 5, true},
        {{.count = 100, .drop_quick = -1}, 4, false},
        {{.no_check = true, .count = 100, .drop_quick = -1}, 3, false}, /* allow entries */
        {{.no_check = true, .no_allow = true, .count = 100, .drop_quick = -1}, 2, false},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(v); i++) {
        char *path = tu_path("%s/v%zu.off", dir, i);
        build(path, &v[i].o);
        const char *p[] = {path};
        br_pwfilter *pf = open_url_set(p, 1, NULL);
        assert_int_equal(br_pwfilter_header(pf)->key_encoding_version, v[i].enc);
        assert_int_equal(br_pwfilter_has_quick(pf), v[i].quick);
        assert_int_equal(br_pwfilter_offline_info(pf)->quick_keys, v[i].quick ? 100 + NALLOW : 0);
        /* without a quick filter every hash is a maybe */
        assert_true(v[i].quick || br_pwfilter_quick_maybe(pf, 12345));
        br_pwfilter_free(pf);
        free(path);
    }
    /* a quick filter needs check filters: v5 is v4 and it */
    br_keyset *ks = NULL;
    br_error err = {{0}};
    br_category_table t = {0};
    assert_true(br_category_code(&t, "malware") > 0);
    assert_int_equal(br_keyset_new(NULL, 0, &ks, &err), 0);
    uint64_t q = 1;
    br_pwfilter_build_opts o = {.kind = BR_KIND_URL_SHA256,
                                .categories = &t,
                                .build_time = 1,
                                .no_check = true,
                                .quick = &q,
                                .n_quick = 1};
    char *bad = tu_path("%s/bad.off", dir);
    assert_int_equal(br_pwfilter_build(ks, &o, bad, NULL, &err), -EINVAL);
    br_keyset_free(ks);
    free(bad);
    tu_rmrf(dir);
    free(dir);
}

/* More quick keys than 64-bit keys (two expressions, one 8-byte SHA-256
 * prefix): the file still loads. */
static void test_more_quick_keys(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/more.off", dir);
    opts o = {.quick = true, .count = 50, .drop_quick = -1, .extra_quick = 400};
    build(path, &o);
    const char *p[] = {path};
    br_pwfilter *pf = open_url_set(p, 1, NULL);
    assert_int_equal(br_pwfilter_header(pf)->key_count, 50);
    assert_int_equal(br_pwfilter_offline_info(pf)->quick_keys, 50 + NALLOW + 400);
    assert_true(br_pwfilter_quick_maybe(pf, UINT64_C(0x5eed000000000000) + 399));
    br_pwfilter_free(pf);
    tu_rmrf(dir);
    free(path);
    free(dir);
}

/* No false negative: every expression the file holds passes; others
 * pass about 1 in 256 times. */
static void test_no_false_negatives(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/q.off", dir);
    opts o = {.quick = true, .count = NLISTED, .drop_quick = -1};
    build(path, &o);
    const char *p[] = {path};
    br_pwfilter *pf = open_url_set(p, 1, NULL);
    assert_true(br_pwfilter_has_quick(pf));
    char name[160];
    for (int i = 0; i < NLISTED; i++) {
        listed_name(name, sizeof(name), i);
        if (!br_pwfilter_quick_maybe(pf, quick_of(name)))
            fail_msg("listed %s: quick filter says no", name);
    }
    for (int i = 0; i < NALLOW; i++) {
        allowed_name(name, sizeof(name), i);
        if (!br_pwfilter_quick_maybe(pf, quick_of(name)))
            fail_msg("allowed %s: quick filter says no", name);
    }
    int maybe = 0;
    for (int i = 0; i < 100000; i++) {
        snprintf(name, sizeof(name), "nope%d.example", i);
        maybe += br_pwfilter_quick_maybe(pf, quick_of(name));
    }
    if (maybe > 100000 / 128) /* 1/256 expected */
        fail_msg("%d of 100000 absent expressions pass the quick filter", maybe);
    br_pwfilter_free(pf);
    tu_rmrf(dir);
    free(path);
    free(dir);
}

/* A set: a delta's own quick filter covers its keys; a member without
 * one makes the whole set a maybe. */
static void test_sets(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *base = tu_path("%s/base.off", dir), *d5 = tu_path("%s/d5.off", dir),
         *d4 = tu_path("%s/d4.off", dir);
    opts ob = {.quick = true, .count = 1000, .drop_quick = -1};
    build(base, &ob);
    uint8_t body[32];
    const char *p1[] = {base};
    br_pwfilter_free(open_url_set(p1, 1, body));
    opts od = {.quick = true,
               .first = 1000,
               .count = 500,
               .drop_quick = -1,
               .generation = 2,
               .base = body};
    build(d5, &od);
    od.quick = false;
    build(d4, &od);
    const char *p5[] = {base, d5}, *p4[] = {base, d4};
    br_pwfilter *s5 = open_url_set(p5, 2, NULL), *s4 = open_url_set(p4, 2, NULL);
    assert_true(br_pwfilter_has_quick(s5));
    assert_false(br_pwfilter_has_quick(s4));
    char name[160];
    for (int i = 0; i < 1500; i++) {
        listed_name(name, sizeof(name), i);
        assert_true(br_pwfilter_quick_maybe(s5, quick_of(name)));
    }
    int maybe5 = 0, maybe4 = 0;
    uint64_t batch[7];
    bool many[7];
    for (int i = 0; i < 10000; i++) {
        snprintf(name, sizeof(name), "nope%d.example", i);
        maybe5 += br_pwfilter_quick_maybe(s5, quick_of(name));
        maybe4 += br_pwfilter_quick_maybe(s4, quick_of(name));
        /* a name's suffixes in one call: the same answers, listed or not */
        if (i % 7 == 6) {
            if (i / 7 % 2)
                listed_name(name, sizeof(name), i % 1500);
            batch[i % 7] = quick_of(name);
            br_pwfilter_quick_maybe_many(s5, batch, 7, many);
            for (int j = 0; j < 7; j++)
                assert_int_equal(many[j], br_pwfilter_quick_maybe(s5, batch[j]));
            if (i / 7 % 2)
                assert_true(many[6]);
        } else {
            batch[i % 7] = quick_of(name);
        }
    }
    assert_true(maybe5 < 10000 / 32); /* two members: about 2/256 */
    assert_int_equal(maybe4, 10000);
    br_pwfilter_free(s5);
    br_pwfilter_free(s4);
    tu_rmrf(dir);
    free(base);
    free(d5);
    free(d4);
    free(dir);
}

/* A header whose key encoding disagrees with the layout: refused. */
static void test_header_disagrees(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *v5 = tu_path("%s/v5.off", dir), *v4 = tu_path("%s/v4.off", dir),
         *bad = tu_path("%s/bad.off", dir);
    opts o = {.quick = true, .count = 200, .drop_quick = -1};
    build(v5, &o);
    o.quick = false;
    build(v4, &o);
    /* the quick entry ends a v5 file: without it the tables do not */
    expect_header_refused(v5, bad, set_key_encoding, 4, "param shard_table_offset");
    expect_header_refused(v4, bad, set_key_encoding, 5, "param shard_table_offset");
    /* what a reader that predates v5 says of one (this one, of v6) */
    expect_header_refused(v5, bad, set_key_encoding, 6,
                          "key_encoding_version: 6 not supported (this build reads 1..5)");
    tu_rmrf(dir);
    free(v5);
    free(v4);
    free(bad);
    free(dir);
}

static breachd_dns *dns_open(const char *dir, const char *filter, const char *tag)
{
    char *conf = tu_path("%s/%s.conf", dir, tag);
    char *text = tu_path("[dns]\nfilter = %s\naction.phishing = sinkhole\naction.ads = log\n"
                         "sinkhole = 10.0.0.1, ::1\n",
                         filter);
    assert_int_equal(tu_write_file(conf, text, strlen(text)), 0);
    char err[512];
    breachd_dns *h = breachd_dns_open(conf, err, sizeof(err));
    if (!h)
        fail_msg("open %s: %s", conf, err);
    free(conf);
    free(text);
    return h;
}

/* Name i of the differential run: listed, allowed, a subdomain of either,
 * or random (of 2 to 4 labels). */
static void name_of(char *buf, size_t n, int i, uint64_t *x)
{
    char d[128];
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    switch (i % 6) {
    case 0:
        listed_name(buf, n, (int)(*x % NLISTED));
        break;
    case 1:
        allowed_name(buf, n, (int)(*x % NALLOW));
        break;
    case 2:
        listed_name(d, sizeof(d), (int)(*x % NLISTED));
        snprintf(buf, n, "s%d.x.%s", i, d);
        break;
    case 3:
        allowed_name(d, sizeof(d), (int)(*x % NALLOW));
        snprintf(buf, n, "deep.s%d.%s", i, d);
        break;
    case 4:
        snprintf(buf, n, "r%llx.example", (unsigned long long)*x);
        break;
    default:
        snprintf(buf, n, "r%llx.s%llx.t%x.net", (unsigned long long)*x,
                 (unsigned long long)(*x >> 17), (unsigned)i);
    }
}

static bool same(const breachd_dns_result *a, int va, const breachd_dns_result *b, int vb)
{
    return va == vb && a->verdict == b->verdict && a->reason == b->reason &&
           a->action == b->action && strcmp(a->category, b->category) == 0 &&
           strcmp(a->domain, b->domain) == 0;
}

/* The v4 file and the v5 file of the same entries: the same answer for
 * thousands of names; and a v5 file whose quick filter misses one listed
 * expression passes that name (what the comparison would catch). */
static void test_dns_differential(void **state)
{
    (void)state;
    setenv("BREACHD_TRUST_OWN_FILTERS", "1", 1);
    char *dir = tu_mkdtemp();
    char *f4 = tu_path("%s/v4.off", dir), *f5 = tu_path("%s/v5.off", dir),
         *fd = tu_path("%s/dropped.off", dir);
    opts o = {.count = NLISTED, .drop_quick = -1};
    build(f4, &o);
    o.quick = true;
    build(f5, &o);
    o.drop_quick = 42;
    build(fd, &o);
    breachd_dns *h4 = dns_open(dir, f4, "v4"), *h5 = dns_open(dir, f5, "v5"),
                *hd = dns_open(dir, fd, "dropped");
    uint64_t x = 0x9e3779b97f4a7c15u;
    int counts[3] = {0};
    for (int i = 0; i < 12000; i++) {
        char name[256];
        name_of(name, sizeof(name), i, &x);
        breachd_dns_result r4, r5;
        int v4 = breachd_dns_check(h4, name, strlen(name), &r4);
        int v5 = breachd_dns_check(h5, name, strlen(name), &r5);
        if (!same(&r4, v4, &r5, v5))
            fail_msg("%s: v4 %d/%d %s %s, v5 %d/%d %s %s", name, v4, r4.reason, r4.category,
                     r4.domain, v5, r5.reason, r5.category, r5.domain);
        counts[v4 == BREACHD_DNS_BLOCK ? 0 : r4.reason == BREACHD_DNS_ALLOWED ? 1 : 2]++;
    }
    /* every kind of answer was compared */
    assert_true(counts[0] > 1000 && counts[1] > 1000 && counts[2] > 1000);
    char name[160];
    listed_name(name, sizeof(name), 42);
    breachd_dns_result r;
    assert_int_equal(breachd_dns_check(h5, name, strlen(name), &r), BREACHD_DNS_BLOCK);
    assert_int_equal(breachd_dns_check(hd, name, strlen(name), &r), BREACHD_DNS_PASS);
    assert_int_equal(r.reason, BREACHD_DNS_UNLISTED);
    breachd_dns_close(h4);
    breachd_dns_close(h5);
    breachd_dns_close(hd);
    tu_rmrf(dir);
    free(f4);
    free(f5);
    free(fd);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versions),         cmocka_unit_test(test_no_false_negatives),
        cmocka_unit_test(test_more_quick_keys),  cmocka_unit_test(test_sets),
        cmocka_unit_test(test_header_disagrees), cmocka_unit_test(test_dns_differential),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
