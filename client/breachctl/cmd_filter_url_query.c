/* SPDX-License-Identifier: MIT */
/* breachctl filter info|verify|query for url-sha256 filters. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "breachctl.h"
#include "filter/filter_file.h"
#include "filter_info.h"
#include "filter_url.h"
#include "core/clock.h"
#include "core/hash.h"
#include "url/url_expr.h"
#include "url/url_secret.h"
#include "filter/urlfilter.h"
#include "core/util.h"

/* ---- info / verify / query ---- */

static int open_url_filter(const char *path, br_urlfilter **uf)
{
    br_error err = {{0}};
    int r = br_urlfilter_open(path, uf, &err);
    if (r < 0) {
        ctl_err("%s", err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    return 0;
}

int url_filter_info(const char *path, bool force)
{
    _cleanup_(br_urlfilter_freep) br_urlfilter *uf = NULL;
    br_error err = {{0}};
    int r = br_urlfilter_open(path, &uf, &err);
    if (r < 0)
        return filter_info_refused(path, force, r, &err);
    const br_filter_header *h = br_urlfilter_header(uf);
    br_urlfilter_info in;
    br_urlfilter_get_info(uf, &in);
    char when[64];
    time_t t = (time_t)h->build_time;
    struct tm tm;
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    double age_days = difftime((time_t)br_clock_now_real(), t) / 86400.0;
    printf("%-18s %s\n", "file:", path);
    printf("%-18s %u\n", "format version:", h->version);
    printf("%-18s %s\n", "kind:", br_filter_kind_name(h->kind));
    printf("%-18s %s, %d-bit blocks, k=%u\n", "algorithm:", br_filter_algorithm_name(h->algorithm),
           BR_BLOOM_BLOCK_BITS, in.k);
    printf("%-18s %s v%u\n", "key encoding:", br_key_encoding_name(h->key_encoding),
           h->key_encoding_version);
    if (h->key_encoding_version >= 2)
        printf("%-18s %u (lookups try host suffixes of up to %u labels)\n",
               "domain labels:", br_urlfilter_max_domain_labels(uf),
               br_urlfilter_lookup_labels(uf));
    else
        printf("%-18s not recorded (key encoding v1: lookups try up to %u labels)\n",
               "domain labels:", br_urlfilter_lookup_labels(uf));
    printf("%-18s %" PRIu64 "\n", "generation:", h->generation);
    printf("%-18s %s\n", "source:", h->source);
    printf("%-18s %s (%.1f days ago)\n", "build time:", when, age_days);
    printf("%-18s %" PRIu64 " (capacity %" PRIu64 "%s)\n", "keys:", in.key_count, in.capacity,
           in.key_count > in.capacity ? ", OVER CAPACITY" : "");
    printf("%-18s %" PRIu64 " of 64 bytes, %.2f bits per key now, %.2f at capacity\n",
           "blocks:", in.block_count, in.bits_per_key,
           (double)in.block_count * BR_BLOOM_BLOCK_BITS / (double)in.capacity);
    printf("%-18s %u of %u hold entries (%.2f%%)\n", "prefixes:", in.prefixes_with_entries,
           BR_URLFILTER_PREFIXES, 100.0 * in.prefixes_with_entries / BR_URLFILTER_PREFIXES);
    printf("%-18s target %g per expression at capacity (model: %.3g)\n",
           "false positives:", in.target_fpr, in.design_fpr);
    printf("%-18s expected now %.4g per expression (Bloom), %.4g with the prefix bitmap%s\n", "",
           in.bloom_fpr_now, in.fpr_now,
           in.bloom_fpr_now > in.target_fpr * 1.0000001
               ? ": ABOVE TARGET, rebuild with a larger --capacity"
               : "");
    if (in.key_count > in.base_key_count || h->generation != in.base_generation)
        printf("%-18s %" PRIu64
               " keys added by filter add since the full build (generation %" PRIu64 ", %" PRIu64
               " keys)\n",
               "updates:", in.key_count - in.base_key_count, in.base_generation, in.base_key_count);
    else
        printf("%-18s none since the full build\n", "updates:");
    printf("%-18s additions: breachctl filter add; removals need a rebuild\n", "");
    printf("%-18s %" PRIu64 " bytes\n", "file size:", in.file_size);
    ctl_print_hex("body sha256:", h->body_sha256, 32);
    ctl_print_hex("header sha256:", h->header_sha256, 32);
    return 0;
}

/* One query: a 64-hex key, or a URL (maybe when any of its expressions is). */
static int query_one(const br_urlfilter *uf, const char *s, size_t len, bool by_url, bool *maybe,
                     br_error *err)
{
    if (!by_url) {
        uint8_t key[BR_SHA256_LEN];
        if (len != 2 * BR_SHA256_LEN || !br_hex_decode(s, BR_SHA256_LEN, key))
            return br_error_set(err, -EINVAL, "not a 64-hex SHA-256");
        *maybe = br_urlfilter_maybe(uf, key);
        return 0;
    }
    /* As the daemon looks it up: expressions free of e-mail addresses. */
    br_url_exprs ex = {0};
    int r = br_url_lookup_expressions(s, len, br_urlfilter_lookup_labels(uf), &ex, NULL, err);
    if (r < 0)
        return r;
    uint8_t keys[BR_URL_MAX_LOOKUP_EXPRESSIONS][BR_SHA256_LEN];
    bool out[BR_URL_MAX_LOOKUP_EXPRESSIONS];
    for (size_t i = 0; i < ex.n && r >= 0; i++)
        r = br_url_expr_hash(ex.expr[i], keys[i]);
    size_t n = ex.n;
    br_url_exprs_clear(&ex);
    if (r < 0)
        return br_error_set(err, r, "SHA-256 failed");
    br_urlfilter_maybe_batch(uf, (const uint8_t(*)[BR_SHA256_LEN])keys, n, out);
    *maybe = false;
    for (size_t i = 0; i < n; i++)
        *maybe |= out[i];
    return 0;
}

int url_filter_query(const char *path, int nkeys, char **keys, bool by_url)
{
    _cleanup_(br_urlfilter_freep) br_urlfilter *uf = NULL;
    if (open_url_filter(path, &uf))
        return EXIT_ERROR;
    br_error err = {{0}};
    bool maybe;
    for (int i = 0; i < nkeys; i++) {
        if (query_one(uf, keys[i], strlen(keys[i]), by_url, &maybe, &err) < 0) {
            fflush(stdout);
            ctl_err("filter query: %s %d: %s", by_url ? "URL" : "key", i + 1, err.text);
            return EXIT_ERROR;
        }
        puts(maybe ? "maybe" : "no");
    }
    if (nkeys > 0)
        return fflush(stdout) == 0 ? 0 : EXIT_ERROR;
    _cleanup_free_ char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    uint64_t lineno = 0;
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        if (len > 0 && line[len - 1] == '\n')
            len--;
        if (len > 0 && line[len - 1] == '\r')
            len--;
        if (query_one(uf, line, (size_t)len, by_url, &maybe, &err) < 0) {
            fflush(stdout);
            ctl_err("filter query: stdin:%" PRIu64 ": %s", lineno, err.text);
            return EXIT_ERROR;
        }
        puts(maybe ? "maybe" : "no");
    }
    return fflush(stdout) == 0 ? 0 : EXIT_ERROR;
}
