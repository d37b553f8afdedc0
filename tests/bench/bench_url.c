/* SPDX-License-Identifier: MIT */
/* bench_url: URL checks in process.
 *
 *   bench_url [N_URLS [N_LIST]]             default 1M URLs, 1M-entry list
 *   bench_url --emit DIR [N_URLS [N_LIST]]  write the same data as files
 *   bench_url --emit-squid DIR [N_URLS [N_LIST]]  the Squid comparison's data
 *
 * Generates, deterministically (fixed seeds), a blocklist of N_LIST entries
 * (70% domains such as "vorlatim-sekora.com", 30% URL entries such as
 * "kelasuna.net/bamo/trelidu/" or ".../index.php") and a stream of N_URLS
 * realistic URLs: http/https, hosts of 2 to 4 labels made of random
 * syllables under common TLDs (some "www."/"cdn." first labels, a few upper
 * case letters and ports), paths of 0 to 4 segments (words, numbers, files
 * with extensions, trailing slashes), a quarter with a query (some with
 * %-escapes). 1% of the stream is under the list (0.5% a subdomain and path
 * under a listed domain, 0.5% a listed URL entry or a file under it).
 *
 * The filter is built in process with the urlfilter draft API (capacity
 * N_LIST, --fpr 1e-5 as breachctl's default), saved to a temporary file and
 * mapped with br_urlfilter_open, as the daemon does. Then, over the whole
 * stream, single thread:
 *   canon   br_url_canonicalize
 *   +expr   br_url_lookup_expressions (canonicalization, the expressions
 *           with the filter's br_urlfilter_lookup_labels, the e-mail rule)
 *   +sha    ... and br_sha256_many over the expressions
 *   full    ... and br_urlfilter_maybe_batch: the daemon's per-URL work
 *           before any range query (daemon/url_prep.c, url_check.c)
 * (best of 5 runs) reported as ns/URL and URLs/s, with the mean expressions per URL, the URLs
 * with at least one "maybe" and the generated hits among them (every hit
 * must be a maybe: no false negative).
 *
 * --emit-squid DIR [N_URLS [N_LIST]] (default 300k, 200k) writes the Squid
 * comparison's data instead (bench-squid.sh): N_LIST domains and a stream
 * with 10% of its URLs on a listed domain (bench_url_gen.h).
 *
 * --emit DIR writes DIR/list-domains.txt (one domain a line: a breachctl
 * "domains" feed and a squidGuard domainlist), DIR/list-urls.txt
 * ("host/path" lines: a breachctl URL feed and a squidGuard urllist) and
 * DIR/stream.txt (the URLs, one a line), for bench-url.sh. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builder/urlfilter_save.h"
#include "core/error.h"
#include "core/hash.h"
#include "url/url_canon.h"
#include "url/url_expr.h"
#include "url/url_secret.h"
#include "filter/urlfilter.h"
#include "core/util.h"

#include "bench_url_gen.h"

/* ---- the filter ---- */

/* The key of a list entry: the first expression of "http://ENTRY" (what
 * breachctl's feed builder indexes); false when it does not canonicalize. */
static bool entry_key(const char *entry, bool is_domain, uint8_t key[BR_SHA256_LEN])
{
    char url[1024];
    snprintf(url, sizeof(url), "http://%s%s", entry, is_domain ? "/" : "");
    char *canon = NULL;
    br_url_exprs e;
    if (br_url_canonicalize(url, strlen(url), &canon, NULL) < 0)
        return false;
    int r = br_url_exprs_of(canon, strlen(canon), BR_URL_SB_HOST_COMPONENTS, &e, NULL);
    free(canon);
    if (r < 0)
        return false;
    br_url_expr_hash(e.expr[0], key);
    br_url_exprs_clear(&e);
    return true;
}

/* The list's keys (first 8 bytes, sorted), to tell the filter's maybes
 * that are listed from its false positives. */
static uint64_t *g_keys;
static size_t g_n_keys;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static bool listed(const uint8_t key[BR_SHA256_LEN])
{
    uint64_t k = br_load_be64(key);
    return bsearch(&k, g_keys, g_n_keys, sizeof(k), cmp_u64) != NULL;
}

static br_urlfilter *build(const data *d, const char *path, double *ns_per_key, uint64_t *bytes)
{
    br_error err = {{0}};
    br_urlfilter_draft *dr = NULL;
    size_t n = d->domains.n + d->urls.n, bad = 0;
    g_keys = malloc(n * sizeof(*g_keys));
    if (!g_keys)
        return NULL;
    uint64_t t0 = br_now_ns();
    if (br_urlfilter_draft_new(n, 1e-5, &dr, &err) < 0) {
        fprintf(stderr, "bench_url: %s\n", err.text);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t k[BR_SHA256_LEN];
        bool dom = i < d->domains.n;
        if (!entry_key(dom ? str_at(&d->domains, i) : str_at(&d->urls, i - d->domains.n), dom, k)) {
            bad++;
            continue;
        }
        br_urlfilter_draft_add(dr, k, false);
        g_keys[g_n_keys++] = br_load_be64(k);
    }
    br_urlfilter_save_opts o = {.generation = 1, .source = "bench_url", .build_time = -1};
    if (br_urlfilter_draft_save(dr, path, &o, bytes, &err) < 0) {
        fprintf(stderr, "bench_url: %s\n", err.text);
        br_urlfilter_draft_free(dr);
        return NULL;
    }
    uint64_t t1 = br_now_ns();
    *ns_per_key = (double)(t1 - t0) / (double)n;
    qsort(g_keys, g_n_keys, sizeof(*g_keys), cmp_u64);
    br_urlfilter_draft_free(dr);
    if (bad)
        printf("warning: %zu list entries did not canonicalize\n", bad);
    br_urlfilter *uf = NULL;
    if (br_urlfilter_open(path, &uf, &err) < 0) {
        fprintf(stderr, "bench_url: %s\n", err.text);
        return NULL;
    }
    return uf;
}

/* ---- the measurement ---- */

enum { STAGE_CANON, STAGE_EXPR, STAGE_SHA, STAGE_FULL, STAGES };
static const char *const stage_names[] = {"canon", "+expr", "+sha", "full"};

typedef struct result {
    uint64_t ns;
    size_t failed, exprs, maybe_urls, maybe_exprs, hits_maybe, listed_urls, false_pos;
} result;

static volatile uint64_t g_sink;

static result run(const data *d, const br_urlfilter *uf, int stage)
{
    result r = {0};
    uint64_t sink = 0;
    unsigned labels = br_urlfilter_lookup_labels(uf);
    uint64_t t0 = br_now_ns();
    for (size_t i = 0; i < d->stream.n; i++) {
        const char *u = str_at(&d->stream, i);
        if (stage == STAGE_CANON) {
            char *canon = NULL;
            if (br_url_canonicalize(u, strlen(u), &canon, NULL) < 0) {
                r.failed++;
                continue;
            }
            sink += (uint8_t)canon[0];
            free(canon);
            continue;
        }
        /* What bd_url_prep_one does (daemon/url_prep.c). */
        br_url_exprs e;
        if (br_url_lookup_expressions(u, strlen(u), labels, &e, NULL, NULL) < 0) {
            r.failed++;
            continue;
        }
        r.exprs += e.n;
        if (stage == STAGE_EXPR) {
            sink += e.n;
            br_url_exprs_clear(&e);
            continue;
        }
        uint8_t keys[BR_URL_MAX_LOOKUP_EXPRESSIONS][BR_SHA256_LEN];
        br_sha256_many((const void *const *)e.expr, NULL, e.n, keys);
        if (stage == STAGE_SHA) {
            sink += keys[0][0];
            br_url_exprs_clear(&e);
            continue;
        }
        bool maybe[BR_URL_MAX_LOOKUP_EXPRESSIONS];
        br_urlfilter_maybe_batch(uf, (const uint8_t(*)[BR_SHA256_LEN])keys, e.n, maybe);
        size_t m = 0;
        for (size_t k = 0; k < e.n; k++)
            m += maybe[k];
        r.maybe_exprs += m;
        r.maybe_urls += m > 0;
        r.hits_maybe += m > 0 && d->is_hit[i];
        if (m && stage == STAGE_FULL && d->check) { /* outside the timed work when not asked */
            bool any = false;
            for (size_t k = 0; k < e.n; k++) {
                if (!maybe[k])
                    continue;
                bool l = listed(keys[k]);
                any |= l;
                r.false_pos += !l;
            }
            r.listed_urls += any;
        }
        br_url_exprs_clear(&e);
    }
    r.ns = br_now_ns() - t0;
    g_sink += sink;
    return r;
}

static size_t parse_count(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'M' || *end == 'm')
        v *= 1e6, end++;
    else if (*end == 'k' || *end == 'K')
        v *= 1e3, end++;
    if (*end || v < 1 || v > 1e9) {
        fprintf(stderr, "bench_url: bad count '%s'\n", s);
        exit(2);
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    const char *emit_dir = NULL;
    bool squid = false;
    int a = 1;
    if (a < argc && (strcmp(argv[a], "--emit") == 0 || strcmp(argv[a], "--emit-squid") == 0)) {
        if (a + 1 >= argc) {
            fprintf(stderr, "usage: bench_url [--emit|--emit-squid DIR] [N_URLS [N_LIST]]\n");
            return 2;
        }
        squid = strcmp(argv[a], "--emit-squid") == 0;
        emit_dir = argv[a + 1];
        a += 2;
    }
    size_t n_urls = a < argc ? parse_count(argv[a++]) : squid ? 300000 : 1000000;
    size_t n_list = a < argc ? parse_count(argv[a++]) : squid ? 200000 : 1000000;
    if (n_list < 10) {
        fprintf(stderr, "bench_url: N_LIST must be at least 10\n");
        return 2;
    }
    data d = {0};
    uint64_t t0 = br_now_ns();
    if (squid)
        gen_squid(&d, n_urls, n_list);
    else
        gen(&d, n_urls, n_list);
    printf("generated %zu URLs (%zu under the list) and a %zu-entry list (%zu domains, %zu URLs) "
           "in %.1f s\n",
           d.stream.n, d.hits, d.domains.n + d.urls.n, d.domains.n, d.urls.n,
           (double)(br_now_ns() - t0) / 1e9);
    size_t bytes = 0;
    for (size_t i = 0; i < d.stream.n; i++)
        bytes += strlen(str_at(&d.stream, i));
    printf("stream: mean URL length %.1f bytes; examples:\n", (double)bytes / (double)d.stream.n);
    for (size_t i = 0; i < 6 && i < d.stream.n; i++)
        printf("  %s\n", str_at(&d.stream, i * 7919 % d.stream.n));
    if (emit_dir)
        return emit(&d, emit_dir);

    const char *tmp = getenv("TMPDIR");
    char dir[4096], path[4200];
    snprintf(dir, sizeof(dir), "%s/bench_url.XXXXXX", tmp && *tmp ? tmp : "/var/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "bench_url: mkdtemp %s: %s\n", dir, strerror(errno));
        return 1;
    }
    snprintf(path, sizeof(path), "%s/list.bbf", dir);
    double build_ns;
    uint64_t file_bytes = 0;
    br_urlfilter *uf = build(&d, path, &build_ns, &file_bytes);
    unlink(path);
    rmdir(dir);
    if (!uf)
        return 1;
    br_urlfilter_info info;
    br_urlfilter_get_info(uf, &info);
    printf("filter: %llu keys, k=%u, %.2f bits/key, %llu bytes, FPR model %.2e per expression "
           "(Bloom %.2e, %u of %u prefixes hold entries); built in process in %.0f ns/key\n",
           (unsigned long long)info.key_count, info.k, info.bits_per_key,
           (unsigned long long)file_bytes, info.fpr_now, info.bloom_fpr_now,
           info.prefixes_with_entries, (unsigned)BR_URLFILTER_PREFIXES, build_ns);

    printf("\n%-6s %10s %12s %10s\n", "stage", "ns/URL", "URLs/s", "ns/expr");
    result best[STAGES];
    for (int st = 0; st < STAGES; st++) {
        for (int rep = 0; rep < 5; rep++) {
            result r = run(&d, uf, st);
            if (rep == 0 || r.ns < best[st].ns)
                best[st] = r;
        }
        double per = (double)best[st].ns / (double)d.stream.n;
        char pe[32] = "-";
        if (st != STAGE_CANON && best[st].exprs)
            snprintf(pe, sizeof(pe), "%.1f", (double)best[st].ns / (double)best[st].exprs);
        printf("%-6s %10.0f %12.0f %10s\n", stage_names[st], per, 1e9 / per, pe);
    }
    result f = best[STAGE_FULL];
    d.check = true;
    result chk = run(&d, uf, STAGE_FULL);
    double mean_exprs = (double)f.exprs / (double)(d.stream.n - f.failed);
    printf("\nper URL: %.2f expressions; %zu URLs refused by canonicalization\n", mean_exprs,
           f.failed);
    printf("maybes: %zu URLs (%.3f%%) with at least one, %zu expressions; generated hits %zu, of "
           "which maybe %zu%s\n",
           f.maybe_urls, 100.0 * (double)f.maybe_urls / (double)d.stream.n, f.maybe_exprs, d.hits,
           f.hits_maybe, f.hits_maybe == d.hits ? " (no false negative)" : " (FALSE NEGATIVES!)");
    printf("of the maybe URLs, %zu are on the list (the %zu generated hits, and random URLs that "
           "the small "
           "syllable space made equal to listed entries); %zu maybe expressions are filter false "
           "positives "
           "(%.2e per expression; model %.2e)\n",
           chk.listed_urls, d.hits, chk.false_pos, (double)chk.false_pos / (double)chk.exprs,
           info.fpr_now);
    printf("split of the full pipeline: canonicalize %.0f%%, expressions %.0f%%, SHA-256 %.0f%%, "
           "Bloom probes %.0f%%\n",
           100.0 * (double)best[0].ns / (double)f.ns,
           100.0 * ((double)best[1].ns - (double)best[0].ns) / (double)f.ns,
           100.0 * ((double)best[2].ns - (double)best[1].ns) / (double)f.ns,
           100.0 * ((double)f.ns - (double)best[2].ns) / (double)f.ns);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("RESULT urls=%zu list=%zu ns_per_url=%.0f urls_per_s=%.0f exprs_per_url=%.2f "
           "maybe_urls=%zu "
           "listed_urls=%zu false_pos=%zu hits=%zu hits_maybe=%zu peak_rss_mib=%ld\n",
           d.stream.n, n_list, (double)f.ns / (double)d.stream.n,
           1e9 * (double)d.stream.n / (double)f.ns, mean_exprs, f.maybe_urls, chk.listed_urls,
           chk.false_pos, d.hits, f.hits_maybe, ru.ru_maxrss / 1024);
    br_urlfilter_free(uf);
    return f.hits_maybe == d.hits ? 0 : 1;
}
