/* SPDX-License-Identifier: MIT */
/* The quick filter and XXH3 keys of offline URL filters
 * (docs/filter-format.md, "The quick filter", "Key encodings"): the build
 * writes v6 (fingerprints keyed by XXH3, a quick filter of the allow
 * entries), v5 (keyed by SHA-256, a quick filter of every expression) and
 * v4 (none), readers read v2..v6; a lookup computes an expression's
 * SHA-256 only where a quick filter says maybe (seen in the probe), never
 * misses what a file holds, and a set hashes as soon as one member lacks
 * a quick filter; libbreachd-dns answers every listed, allowed, subdomain
 * and random name through a v5 and a v6 file exactly as through the v4
 * file of the same entries (verdict, reason, category, domain, action),
 * while a quick filter that misses an expression makes the library skip
 * it (so the differential test would catch a dropped key). */
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
    bool xxh3;       /* with quick: keys by XXH3, the quick filter of allow entries (v6) */
    bool no_check;   /* no check filters (v2, v3) */
    bool no_allow;   /* no allow entries (v2 without check filters) */
    int drop_quick;  /* >= 0: that listed entry's key left out of the quick filter */
    int extra_quick; /* quick keys of expressions whose 64-bit keys the file has already */
    int first, count;
    uint64_t generation;
    const uint8_t *base;
    const char *removed; /* a delta's one removal: this expression */
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
        uint64_t k = op->xxh3 ? br_xxh3_64(expr, strlen(expr)) : br_hash_key64(key);
        if (op->xxh3 && i == op->drop_quick)
            k ^= 1; /* v6: the dropped expression's fingerprint key */
        assert_int_equal(br_keyset_add_counted(ks, k, (uint64_t)(i % 3) + 1, &err), 0);
        if (i != op->drop_quick && !op->xxh3)
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
    uint8_t removed[BR_SHA256_LEN];
    if (op->removed)
        assert_int_equal(br_url_expr_hash(op->removed, removed), 0);
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
                                .n_quick = nq,
                                .removed = op->removed ? (const uint8_t(*)[32])removed : NULL,
                                .n_removed = op->removed ? 1 : 0,
                                .xxh3_keys = op->xxh3};
    if (br_pwfilter_build(ks, &o, path, NULL, &err) < 0)
        fail_msg("build %s: %s", path, err.text);
    br_keyset_free(ks);
    free(quick);
    free(allow);
}

/* name's domain expression "NAME/" looked up in pf: 1 (*cat) or 0;
 * *hashed: whether the lookup computed its SHA-256. */
static int lookup_name(const br_pwfilter *pf, const char *name, const char **cat, bool *hashed)
{
    char expr[300];
    snprintf(expr, sizeof(expr), "%s/", name);
    br_url_probe p;
    br_url_probe_init(&p, expr, strlen(expr));
    int r = br_pwfilter_lookup_category(pf, &p, cat);
    *hashed = p.hashed;
    return r;
}

/* How many of n absent names "nopeI.example" pf's lookups hash. */
static int absent_hashed(const br_pwfilter *pf, int n)
{
    int hashed = 0;
    for (int i = 0; i < n; i++) {
        char name[64];
        const char *cat = NULL;
        bool h;
        snprintf(name, sizeof(name), "nope%d.example", i);
        assert_int_equal(lookup_name(pf, name, &cat, &h), 0);
        hashed += h;
    }
    return hashed;
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
        {{.quick = true, .xxh3 = true, .count = 100, .drop_quick = -1}, 6, true},
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
        assert_int_equal(br_pwfilter_offline_info(pf)->quick_keys, v[i].o.xxh3  ? NALLOW
                                                                   : v[i].quick ? 100 + NALLOW
                                                                                : 0);
        assert_int_equal(br_pwfilter_offline_info(pf)->xxh3_keys, v[i].enc == 6);
        /* without a quick filter every lookup hashes */
        assert_true(v[i].quick || absent_hashed(pf, 10) == 10);
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
    br_pwfilter_free(pf);
    tu_rmrf(dir);
    free(path);
    free(dir);
}

/* No false negative: every expression the file holds is found; an absent
 * one is hashed about 1 in 256 times (v5: its quick filter holds every
 * expression; v6: the allow entries'), a listed one of v6 never. */
static void no_false_negatives(bool xxh3)
{
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/q.off", dir);
    opts o = {.quick = true, .xxh3 = xxh3, .count = NLISTED, .drop_quick = -1};
    build(path, &o);
    const char *p[] = {path};
    br_pwfilter *pf = open_url_set(p, 1, NULL);
    char name[160];
    const char *cat = NULL;
    bool hashed;
    int listed_hashed = 0;
    for (int i = 0; i < NLISTED; i++) {
        listed_name(name, sizeof(name), i);
        if (lookup_name(pf, name, &cat, &hashed) != 1 || strcmp(cat, cats[i % 3]) != 0)
            fail_msg("listed %s: not found", name);
        listed_hashed += hashed;
    }
    /* v6: a listed expression is hashed only where the allow entries'
     * quick filter says maybe (1 in 256); v5: always */
    if (xxh3 ? listed_hashed > NLISTED / 64 : listed_hashed != NLISTED)
        fail_msg("%d of %d listed expressions hashed", listed_hashed, NLISTED);
    for (int i = 0; i < NALLOW; i++) {
        allowed_name(name, sizeof(name), i);
        if (lookup_name(pf, name, &cat, &hashed) != 1 || strcmp(cat, BR_URL_ALLOW_CATEGORY) != 0)
            fail_msg("allowed %s: not found", name);
    }
    int maybe = absent_hashed(pf, 100000);
    if (maybe > 100000 / 128) /* 1/256 expected */
        fail_msg("%d of 100000 absent expressions hashed", maybe);
    br_pwfilter_free(pf);
    tu_rmrf(dir);
    free(path);
    free(dir);
}

static void test_no_false_negatives(void **state)
{
    (void)state;
    no_false_negatives(false);
    no_false_negatives(true);
}

/* The answers of p[0..n) in one br_pwfilter_lookup_codes call: those of
 * one lookup each. */
static void codes_agree(const br_pwfilter *set, const char *const *names, size_t n)
{
    br_url_probe p[8];
    char expr[8][200];
    bool found[8];
    uint8_t code[8];
    for (size_t j = 0; j < n; j++) {
        snprintf(expr[j], sizeof(expr[j]), "%s/", names[j]);
        br_url_probe_init(&p[j], expr[j], strlen(expr[j]));
    }
    assert_int_equal(br_pwfilter_lookup_codes(set, p, n, found, code), 0);
    for (size_t j = 0; j < n; j++) {
        br_url_probe one;
        uint8_t c = 0;
        br_url_probe_init(&one, expr[j], strlen(expr[j]));
        assert_int_equal(br_pwfilter_lookup_code(set, &one, &c), found[j]);
        if (found[j])
            assert_int_equal(c, code[j]);
    }
}

/* A set: a delta's own quick filter covers its keys; a member without one
 * makes every lookup hash; members of v5 and v6 mix. */
static void test_sets(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *base = tu_path("%s/base.off", dir), *d5 = tu_path("%s/d5.off", dir),
         *d4 = tu_path("%s/d4.off", dir), *d6 = tu_path("%s/d6.off", dir);
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
    od.xxh3 = true;
    build(d6, &od);
    od.quick = od.xxh3 = false;
    build(d4, &od);
    const char *p5[] = {base, d5}, *p4[] = {base, d4}, *p6[] = {base, d6};
    br_pwfilter *s5 = open_url_set(p5, 2, NULL), *s4 = open_url_set(p4, 2, NULL),
                *s6 = open_url_set(p6, 2, NULL);
    char name[160];
    const char *cat = NULL;
    bool hashed;
    for (int i = 0; i < 1500; i++) {
        listed_name(name, sizeof(name), i);
        assert_int_equal(lookup_name(s5, name, &cat, &hashed), 1);
        assert_int_equal(lookup_name(s6, name, &cat, &hashed), 1);
        assert_string_equal(cat, cats[i % 3]);
    }
    assert_true(absent_hashed(s5, 10000) < 10000 / 32); /* two members: about 2/256 */
    assert_true(absent_hashed(s6, 10000) < 10000 / 32);
    assert_int_equal(absent_hashed(s4, 10000), 10000);
    char names[7][160];
    const char *np[7];
    for (int i = 0; i < 700; i++) { /* a name's suffixes in one call: the same answers */
        if (i % 2)
            listed_name(names[i % 7], sizeof(names[0]), i % 1500);
        else
            snprintf(names[i % 7], sizeof(names[0]), "nope%d.example", i);
        np[i % 7] = names[i % 7];
        if (i % 7 == 6) {
            codes_agree(s5, np, 7);
            codes_agree(s6, np, 7);
        }
    }
    br_pwfilter_free(s5);
    br_pwfilter_free(s4);
    br_pwfilter_free(s6);
    tu_rmrf(dir);
    free(base);
    free(d5);
    free(d4);
    free(d6);
    free(dir);
}

/* expr's code in set, looked up as a name whose expression has the XXH3
 * of as_xxh3 (a crafted collision: XXH3 is not collision resistant): 1
 * (*code) or 0; *hashed: whether the lookup took its SHA-256. */
static int crafted(const br_pwfilter *set, const char *expr, const char *as_xxh3, uint8_t *code,
                   bool *hashed)
{
    br_url_probe p;
    br_url_probe_init(&p, expr, strlen(expr));
    p.xxh3 = br_xxh3_64(as_xxh3, strlen(as_xxh3));
    int r = br_pwfilter_lookup_code(set, &p, code);
    *hashed = p.hashed;
    return r;
}

/* The attack on XXH3 keys (key encoding v6): names crafted to share the
 * XXH3 of an allow entry, of a listed entry and of a removed one. A
 * collision never allows: allow entries and removals are matched by
 * SHA-256 (docs/filter-format.md, "The quick filter"); it can only block
 * the crafted name, as the entry it collides with. */
static void test_crafted_xxh3(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *base = tu_path("%s/base.off", dir), *delta = tu_path("%s/delta.off", dir);
    opts o = {.quick = true, .xxh3 = true, .count = 300, .drop_quick = -1};
    build(base, &o);
    uint8_t body[32];
    const char *p1[] = {base};
    br_pwfilter *set = open_url_set(p1, 1, body);
    char allowed[160], listed[160], removed[160];
    allowed_name(allowed, sizeof(allowed) - 1, 1); /* under listed entry 7 */
    strcat(allowed, "/");
    listed_name(listed, sizeof(listed) - 1, 7);
    strcat(listed, "/");
    uint8_t code = 0;
    bool hashed;
    /* as an allow entry: the quick filter says maybe, the SHA-256 says no */
    assert_int_equal(crafted(set, allowed, allowed, &code, &hashed), 1);
    assert_int_equal(code, 0); /* the real one is allowed */
    assert_int_equal(crafted(set, "crafted.evil.example/", allowed, &code, &hashed), 0);
    assert_true(hashed);
    /* as a listed entry: blocked as it (fails closed) */
    assert_int_equal(crafted(set, "crafted.evil.example/", listed, &code, &hashed), 1);
    assert_int_equal(code, 7 % 3 + 1);
    br_pwfilter_free(set);
    /* a delta removes a listed entry; a name crafted as it stays blocked */
    listed_name(removed, sizeof(removed) - 1, 8);
    strcat(removed, "/");
    opts od = {.quick = true,
               .xxh3 = true,
               .first = 300,
               .count = 10,
               .drop_quick = -1,
               .generation = 2,
               .base = body,
               .removed = removed};
    build(delta, &od);
    const char *p2[] = {base, delta};
    set = open_url_set(p2, 2, NULL);
    assert_int_equal(crafted(set, removed, removed, &code, &hashed), 0);
    assert_true(hashed);
    assert_int_equal(crafted(set, "crafted.evil.example/", removed, &code, &hashed), 1);
    assert_int_equal(code, 8 % 3 + 1);
    /* an unlisted name costs no SHA-256 with the delta's removal: no
     * member lists it */
    assert_int_equal(crafted(set, "nope.example/", "nope.example/", &code, &hashed), 0);
    assert_false(hashed);
    br_pwfilter_free(set);
    tu_rmrf(dir);
    free(base);
    free(delta);
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
    /* v6 has v5's layout, but its quick filter holds the exact entries only */
    expect_header_refused(v5, bad, set_key_encoding, 6, "quick filter: key_count");
    /* what a reader that predates v6 says of one (this one, of v7) */
    expect_header_refused(v5, bad, set_key_encoding, 7,
                          "key_encoding_version: 7 not supported (this build reads 1..6)");
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

/* The v4 file and the v5 and v6 files of the same entries: the same
 * answer for thousands of names; and a v5 file whose quick filter misses
 * one listed expression (a v6 file whose fingerprints miss one) passes
 * that name (what the comparison would catch). */
static void test_dns_differential(void **state)
{
    (void)state;
    setenv("BREACHD_TRUST_OWN_FILTERS", "1", 1);
    char *dir = tu_mkdtemp();
    char *f4 = tu_path("%s/v4.off", dir), *f5 = tu_path("%s/v5.off", dir),
         *f6 = tu_path("%s/v6.off", dir), *fd = tu_path("%s/dropped.off", dir),
         *fd6 = tu_path("%s/dropped6.off", dir);
    opts o = {.count = NLISTED, .drop_quick = -1};
    build(f4, &o);
    o.quick = true;
    build(f5, &o);
    o.xxh3 = true;
    build(f6, &o);
    o.drop_quick = 42;
    build(fd6, &o);
    o.xxh3 = false;
    build(fd, &o);
    breachd_dns *h4 = dns_open(dir, f4, "v4"), *h5 = dns_open(dir, f5, "v5"),
                *h6 = dns_open(dir, f6, "v6"), *hd = dns_open(dir, fd, "dropped"),
                *hd6 = dns_open(dir, fd6, "dropped6");
    uint64_t x = 0x9e3779b97f4a7c15u;
    int counts[3] = {0};
    for (int i = 0; i < 12000; i++) {
        char name[256];
        name_of(name, sizeof(name), i, &x);
        breachd_dns_result r4, r5, r6;
        int v4 = breachd_dns_check(h4, name, strlen(name), &r4);
        int v5 = breachd_dns_check(h5, name, strlen(name), &r5);
        int v6 = breachd_dns_check(h6, name, strlen(name), &r6);
        if (!same(&r4, v4, &r5, v5) || !same(&r4, v4, &r6, v6))
            fail_msg("%s: v4 %d/%d %s %s, v5 %d/%d %s %s, v6 %d/%d %s %s", name, v4, r4.reason,
                     r4.category, r4.domain, v5, r5.reason, r5.category, r5.domain, v6, r6.reason,
                     r6.category, r6.domain);
        counts[v4 == BREACHD_DNS_BLOCK ? 0 : r4.reason == BREACHD_DNS_ALLOWED ? 1 : 2]++;
    }
    /* every kind of answer was compared */
    assert_true(counts[0] > 1000 && counts[1] > 1000 && counts[2] > 1000);
    char name[160];
    listed_name(name, sizeof(name), 42);
    breachd_dns_result r;
    assert_int_equal(breachd_dns_check(h5, name, strlen(name), &r), BREACHD_DNS_BLOCK);
    assert_int_equal(breachd_dns_check(h6, name, strlen(name), &r), BREACHD_DNS_BLOCK);
    assert_int_equal(breachd_dns_check(hd, name, strlen(name), &r), BREACHD_DNS_PASS);
    assert_int_equal(r.reason, BREACHD_DNS_UNLISTED);
    assert_int_equal(breachd_dns_check(hd6, name, strlen(name), &r), BREACHD_DNS_PASS);
    assert_int_equal(r.reason, BREACHD_DNS_UNLISTED);
    breachd_dns_close(h4);
    breachd_dns_close(h5);
    breachd_dns_close(h6);
    breachd_dns_close(hd);
    breachd_dns_close(hd6);
    tu_rmrf(dir);
    free(f4);
    free(f5);
    free(f6);
    free(fd);
    free(fd6);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versions),         cmocka_unit_test(test_no_false_negatives),
        cmocka_unit_test(test_more_quick_keys),  cmocka_unit_test(test_sets),
        cmocka_unit_test(test_header_disagrees), cmocka_unit_test(test_dns_differential),
        cmocka_unit_test(test_crafted_xxh3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
