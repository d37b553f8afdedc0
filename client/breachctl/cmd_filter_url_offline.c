/* SPDX-License-Identifier: MIT */
/* breachctl filter build --kind url-sha256 --offline [--base SET], and
 * query of such a filter (filter_url.h): a category code per expression, so
 * that a hit is answered "BLOCKED <category> <expression>" on the host. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder/pwfilter_build.h"
#include "breachctl.h"
#include "filter/filter_delta.h"
#include "filter/filter_file.h"
#include "filter_fleet.h"
#include "filter_url.h"
#include "core/hash.h"
#include "filter/offline_codes.h"
#include "filter/pwfilter.h"
#include "url/url_expr.h"
#include "url/url_feed.h"
#include "url/url_secret.h"
#include "core/util.h"

bool url_offline_file(const char *path)
{
    br_filter_header h; /* a layered file's first layer */
    return br_filter_header_read_first(path, &h) == 0 && h.algorithm == BR_ALGO_FUSE_OFFLINE &&
           h.kind == BR_KIND_URL_SHA256;
}

/* The --input that brought the 256th category, for the refusal. */
static const char *feed_of_category(const char *const *args, size_t n, const char *category)
{
    for (size_t i = 0; i < n; i++) {
        char *path = NULL, cat[BR_FEED_CATEGORY_MAX + 1];
        br_feed_format fmt;
        br_error err = {{0}};
        if (br_feed_split_input(args[i], &path, cat, &fmt, &err) < 0)
            continue;
        free(path);
        if (!strcmp(cat, category))
            return args[i];
    }
    return "?";
}

/* The codes of the feeds' categories into map[] (feed category i has code
 * map[i]): a delta's table starts with its base set's (start), so that a
 * code names the same category in every file of the set, and adds the
 * feeds' new categories after it (docs/filter-format.md, "Sets"). */
static int fill_categories(const char *cmd, const url_offline_args *a,
                           const br_category_table *start, br_category_table *t, uint8_t *map)
{
    unsigned n = br_feedset_category_count(a->fs);
    if (start)
        *t = *start;
    else
        memset(t, 0, sizeof(*t));
    for (unsigned i = 0; i < n; i++) {
        const char *name = br_feedset_category(a->fs, i);
        int code = br_category_code(t, name);
        if (code == -E2BIG) {
            ctl_err("%s: --input %s: category %s would be code %d; an offline filter's code "
                    "holds at most %d categories%s",
                    cmd, feed_of_category(a->inputs, a->n_inputs, name), name, BR_CATEGORY_MAX + 1,
                    BR_CATEGORY_MAX, start ? " (with its base set's)" : "");
            return EXIT_ERROR;
        }
        if (code < 1) {
            ctl_err("%s: category %u: not a category name", cmd, i + 1);
            return EXIT_ERROR;
        }
        map[i] = (uint8_t)code;
    }
    return 0;
}

/* A delta's base set (--base): offline url-sha256 files, as the delta is.
 * 0, or EXIT_ERROR after a message naming the file. */
static int open_base(const char *cmd, const url_offline_args *a, br_pwfilter **base,
                     uint8_t body[32])
{
    br_filter_header h;
    const char *first = a->bases[0];
    if (br_filter_header_read_first(first, &h) == 0 &&
        (h.kind != BR_KIND_URL_SHA256 || h.algorithm != BR_ALGO_FUSE_OFFLINE)) {
        ctl_err("%s --base %s: a %s filter %s: an offline URL delta extends an offline "
                "url-sha256 set (%s)",
                cmd, first, br_filter_kind_name(h.kind),
                h.algorithm == BR_ALGO_FUSE_OFFLINE ? "built offline" : "not built offline",
                h.kind != BR_KIND_URL_SHA256 ? "name a url-sha256 base"
                                             : "a delta is built like its base: drop --offline");
        return EXIT_ERROR;
    }
    if (fleet_pw_set_open(cmd, a->bases, a->n_bases, base, body))
        return EXIT_ERROR;
    if (br_pwfilter_header(*base)->kind != BR_KIND_URL_SHA256 || !br_pwfilter_offline(*base)) {
        ctl_err("%s --base %s: not an offline url-sha256 set", cmd, first);
        return EXIT_ERROR;
    }
    return 0;
}

/* What a delta left out: expressions the base set holds already, and of
 * those the ones it holds under another category than the feeds now give.
 * allow: the allow-list's expressions, for the exact table. */
typedef struct delta_count {
    uint64_t in_base, recategorized;
    uint8_t (*allow)[BR_SHA256_LEN];
    size_t n_allow;
    /* the quick filter's keys: XXH3s of the file's expressions (v5) or of
     * its allow entries (v6); NULL: none */
    uint64_t *quick;
    size_t n_quick;
    bool xxh3_keys; /* key encoding v6: fingerprints keyed by XXH3 */
} delta_count;

static int cmp_key(const void *a, const void *b)
{
    return memcmp(a, b, BR_SHA256_LEN);
}

/* Sorted and distinct, as the exact table holds them. */
static void sort_unique(uint8_t (*k)[BR_SHA256_LEN], size_t *n)
{
    if (*n == 0)
        return;
    qsort(k, *n, BR_SHA256_LEN, cmp_key);
    size_t w = 1;
    for (size_t i = 1; i < *n; i++)
        if (memcmp(k[i], k[w - 1], BR_SHA256_LEN) != 0)
            memcpy(k[w++], k[i], BR_SHA256_LEN);
    *n = w;
}

/* Every expression of the feeds with its code, but those base holds; the
 * allow-list's go to dc->allow (the exact table: docs/filter-format.md). */
static int add_keys(const url_offline_args *a, const br_pwfilter *base, const uint8_t *map,
                    br_keyset *ks, delta_count *dc, br_error *err)
{
    const br_feed_entry *e = br_feedset_entries(a->fs);
    dc->allow = calloc(br_feedset_count(a->fs) + 1, BR_SHA256_LEN);
    if (!dc->allow)
        return -ENOMEM;
    /* the quick filter and XXH3 keys need every expression's text (and
     * check filters) */
    bool xxh3 = br_feedset_has_quick(a->fs);
    if (!a->no_quick && !a->no_check && xxh3 &&
        !(dc->quick = calloc(br_feedset_count(a->fs) + 1, sizeof(uint64_t))))
        return -ENOMEM;
    dc->xxh3_keys = dc->quick && !a->sha256;
    for (size_t i = 0; i < br_feedset_count(a->fs); i++) {
        const char *cat = NULL;
        br_url_probe p;
        br_url_probe_hashed(&p, e[i].hash, e[i].quick, xxh3);
        int r = base ? br_pwfilter_lookup_category(base, &p, &cat) : 0;
        if (r < 0)
            return br_error_set(err, r, "--base %s: %s", a->bases[0], strerror(-r));
        if (r > 0) { /* it keeps the base's category until the next full build */
            dc->in_base++;
            dc->recategorized += strcmp(cat, br_feedset_category(a->fs, e[i].category)) != 0;
            continue;
        }
        bool allow = strcmp(br_feedset_category(a->fs, e[i].category), BR_URL_ALLOW_CATEGORY) == 0;
        /* v5: its fingerprints and its allow entries; v6: its allow entries */
        if (dc->quick && (allow || !dc->xxh3_keys))
            dc->quick[dc->n_quick++] = e[i].quick;
        if (allow) {
            memcpy(dc->allow[dc->n_allow++], e[i].hash, BR_SHA256_LEN);
            continue;
        }
        uint64_t key = dc->xxh3_keys ? e[i].quick : br_hash_key64(e[i].hash);
        if ((r = br_keyset_add_counted(ks, key, map[e[i].category], err)) < 0)
            return r;
    }
    return 0;
}

static void offline_report(const url_offline_args *a, const br_pwfilter_build_opts *o,
                           const br_pwfilter_build_stats *st, const delta_count *dc)
{
    fprintf(stderr,
            "wrote %s: %" PRIu64 " expressions and %zu allow-list entries (exact), %u "
            "categories, offline (24-bit fingerprints, a category code each%s%s), %.2f "
            "bits/key, %" PRIu64 " bytes\n",
            a->output, st->keys, o->n_allow, o->categories->count,
            o->no_check ? "" : ", 16-bit check filters",
            !st->quick_bytes && !o->xxh3_keys ? ""
            : o->xxh3_keys                    ? ", keyed by XXH3"
                                              : ", an 8-bit quick filter",
            st->keys ? 8.0 * (double)(st->fingerprint_bytes + st->quick_bytes) / (double)st->keys
                     : 0.0,
            st->file_bytes);
    if (a->n_bases)
        fprintf(stderr,
                "delta of %s (generation %" PRIu64 "): %" PRIu64 " expressions of the feeds are "
                "in the base set already and were left out; %" PRIu64 " of them under another "
                "category there, which they keep until the next full build\n",
                a->bases[a->n_bases - 1], o->generation, dc->in_base, dc->recategorized);
}

int url_offline_build(const char *cmd, const url_offline_args *a)
{
    _cleanup_(br_pwfilter_freep) br_pwfilter *base = NULL;
    uint8_t base_body[32], map[BR_CATEGORY_MAX + 1] = {0};
    if (a->n_bases && open_base(cmd, a, &base, base_body))
        return EXIT_ERROR;
    char defsrc[BR_FILTER_SOURCE_SIZE];
    if (base)
        snprintf(defsrc, sizeof(defsrc), "delta of %s", a->bases[a->n_bases - 1]);
    br_pwfilter_build_opts o = {
        .kind = BR_KIND_URL_SHA256,
        .generation = a->generation,
        .source = a->source ? a->source : (base ? defsrc : a->default_source),
        .build_time = -1,
        .max_domain_labels = br_feedset_max_domain_labels(a->fs),
        .base_body_sha256 = base ? base_body : NULL,
        .no_check = a->no_check,
    };
    uint64_t dflt = ctl_generation_after(base ? br_pwfilter_header(base)->generation : 0);
    if (ctl_generation_for(cmd, a->output, dflt, &o.generation) < 0)
        return EXIT_ERROR;
    _cleanup_free_ br_category_table *cats = calloc(1, sizeof(*cats));
    if (!cats)
        return EXIT_ERROR;
    o.categories = cats;
    int status = fill_categories(cmd, a, base ? br_pwfilter_categories(base) : NULL, cats, map);
    br_error err = {{0}};
    _cleanup_(br_keyset_freep) br_keyset *ks = NULL;
    delta_count dc = {0};
    if (!status &&
        (br_keyset_new(NULL, 0, &ks, &err) < 0 || add_keys(a, base, map, ks, &dc, &err) < 0))
        status = EXIT_ERROR;
    sort_unique(dc.allow, &dc.n_allow);
    o.allow = (const uint8_t(*)[32])dc.allow;
    o.n_allow = dc.n_allow;
    o.quick = dc.quick;
    o.n_quick = dc.n_quick;
    o.xxh3_keys = dc.xxh3_keys;
    br_pwfilter_build_stats st = {0};
    if (!status && br_pwfilter_build(ks, &o, a->output, &st, &err) < 0)
        status = EXIT_ERROR;
    free(dc.allow);
    free(dc.quick);
    if (status && err.text[0])
        ctl_err("%s: %s", cmd, err.text);
    else if (!status)
        offline_report(a, &o, &st, &dc);
    return status;
}

/* One query, as breachd would answer it: "no", "allowed[ EXPRESSION]", or
 * "blocked CATEGORY[ EXPRESSION]" (the most specific expression listed). */
static int offline_one(const br_pwfilter *pf, const char *s, size_t len, bool by_url, br_error *err)
{
    const char *cat = NULL;
    int r;
    if (!by_url) {
        uint8_t key[BR_SHA256_LEN];
        if (len != 2 * BR_SHA256_LEN || !br_hex_decode(s, BR_SHA256_LEN, key))
            return br_error_set(err, -EINVAL, "not a 64-hex SHA-256");
        br_url_probe p;
        br_url_probe_hashed(&p, key, 0, false);
        if ((r = br_pwfilter_lookup_category(pf, &p, &cat)) == -ENOTSUP)
            return br_error_set(err, r,
                                "the set keys its fingerprints by XXH3 (key encoding v6): "
                                "query it by URL (--url)");
        if (r < 0)
            return br_error_set(err, r, "%s", strerror(-r));
        if (r > 0 && strcmp(cat, BR_URL_ALLOW_CATEGORY) == 0)
            puts("allowed");
        else
            r > 0 ? printf("blocked %s\n", cat) : puts("no");
        return 0;
    }
    br_url_exprs ex = {0};
    unsigned labels =
        BR_MAX(br_pwfilter_max_domain_labels(pf), (unsigned)BR_URL_SB_HOST_COMPONENTS);
    if ((r = br_url_lookup_expressions(s, len, labels, &ex, NULL, err)) < 0)
        return r;
    size_t blocked = ex.n; /* the most specific blocked expression */
    const char *blocked_cat = NULL;
    for (size_t i = 0; i < ex.n; i++) { /* most specific first */
        br_url_probe p;
        br_url_probe_init(&p, ex.expr[i], strlen(ex.expr[i]));
        r = br_pwfilter_lookup_category(pf, &p, &cat);
        if (r < 0) {
            br_url_exprs_clear(&ex);
            return br_error_set(err, r, "%s", strerror(-r));
        }
        if (r > 0 && strcmp(cat, BR_URL_ALLOW_CATEGORY) == 0) { /* overrides every blocklist */
            printf("allowed %s\n", ex.expr[i]);
            br_url_exprs_clear(&ex);
            return 0;
        }
        if (r > 0 && blocked == ex.n) {
            blocked = i;
            blocked_cat = cat;
        }
    }
    if (blocked < ex.n)
        printf("blocked %s %s\n", blocked_cat, ex.expr[blocked]);
    else
        puts("no");
    br_url_exprs_clear(&ex);
    return 0;
}

int url_offline_query(const char *path, int nkeys, char **keys, bool by_url)
{
    _cleanup_(br_pwfilter_freep) br_pwfilter *pf = NULL;
    br_error err = {{0}};
    if (br_pwfilter_open(path, &pf, &err) < 0) {
        ctl_err("%s", err.text);
        return EXIT_ERROR;
    }
    for (int i = 0; i < nkeys; i++)
        if (offline_one(pf, keys[i], strlen(keys[i]), by_url, &err) < 0) {
            fflush(stdout);
            ctl_err("filter query: %s %d: %s", by_url ? "URL" : "key", i + 1, err.text);
            return EXIT_ERROR;
        }
    if (nkeys > 0)
        return fflush(stdout) == 0 ? 0 : EXIT_ERROR;
    _cleanup_free_ char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    for (uint64_t lineno = 1; (len = getline(&line, &cap, stdin)) >= 0; lineno++) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (offline_one(pf, line, (size_t)len, by_url, &err) < 0) {
            fflush(stdout);
            ctl_err("filter query: stdin:%" PRIu64 ": %s", lineno, err.text);
            return EXIT_ERROR;
        }
    }
    return fflush(stdout) == 0 ? 0 : EXIT_ERROR;
}
