/* SPDX-License-Identifier: MIT */
/* Resolver benchmark:
 *  - ranges fetched per second from a local nginx mirror (HTTP/1.1 keep-alive,
 *    gzip on), and through file://, each fetch parsed, cached and flushed;
 *  - cached lookups per second in-process (br_resolver_resolve answering
 *    synchronously from fresh LMDB entries), next to the bare cache lookup.
 *
 *   bench_resolver [PREFIXES [ENTRIES_PER_PREFIX]]     (default 500 1900)
 *
 * HIBP holds about 2 billion hashes over 2^20 prefixes: ~1900 lines per
 * range, plus padding; the default mirror is sized like that. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "range/range_cache.h"
#include "range/resolver.h"
#include "rtest.h"

#define PW BR_RANGE_PASSWORD_SHA1

static size_t n_prefix = 500, n_entries = 1900;
static rt_range *ranges;

static uint32_t prefix_of(size_t i)
{
    return (uint32_t)((i * 2654435761u) & 0xFFFFF);
}

static double fetch_run(const char *label, const char *tmpl, uint32_t inflight, bool with_cache,
                        const char *cache_dir)
{
    struct event_base *base = event_base_new();
    br_range_cache *cache = NULL;
    if (with_cache) {
        rt_rmrf(cache_dir);
        if (br_range_cache_open(cache_dir, (uint64_t)1 << 30, &cache, NULL) < 0)
            abort();
    }
    br_resolver_config cfg = {0};
    cfg.password_upstream = tmpl;
    cfg.upstream.rate = -1;
    cfg.upstream.max_inflight = inflight;
    cfg.upstream.timeout_ms = 60000;
    br_resolver *r;
    br_error err;
    if (br_resolver_new(base, &cfg, cache, &r, &err) < 0) {
        fprintf(stderr, "%s\n", err.text);
        abort();
    }
    rt_ans *a = calloc(n_prefix, sizeof(*a));
    double t0 = rt_now();
    for (size_t i = 0; i < n_prefix; i++)
        if (rt_resolve(r, PW, ranges[i].e[0].hash, &a[i]) < 0)
            abort();
    if (!rt_wait(base, a, n_prefix, 120000))
        abort();
    br_resolver_flush(r);
    double t = rt_now() - t0;
    size_t bad = 0;
    for (size_t i = 0; i < n_prefix; i++)
        bad += a[i].res.status != BR_RESOLVE_FOUND || a[i].res.count != ranges[i].e[0].count;
    br_upstream_stats us;
    br_upstream_get_stats(br_resolver_upstream(r, PW), &us);
    printf("%-44s %8.0f ranges/s  (%zu ranges in %.3f s, %.1f MB decoded, %zu wrong)\n", label,
           (double)n_prefix / t, n_prefix, t, (double)us.body_bytes / 1e6, bad);
    free(a);
    br_resolver_free(r);
    br_range_cache_free(cache);
    event_base_free(base);
    return (double)n_prefix / t;
}

static void cached_run(const char *cache_dir)
{
    struct event_base *base = event_base_new();
    br_range_cache *cache = NULL;
    if (br_range_cache_open(cache_dir, (uint64_t)1 << 30, &cache, NULL) < 0)
        abort();
    br_resolver_config cfg = {0};
    cfg.password_upstream = "http://127.0.0.1:9/range/{prefix}"; /* never used: all fresh */
    br_resolver *r;
    if (br_resolver_new(base, &cfg, cache, &r, NULL) < 0)
        abort();

    enum { NQ = 1 << 16 };
    uint8_t(*q)[20] = malloc((size_t)NQ * 20);
    uint64_t s = 42;
    for (size_t i = 0; i < NQ; i++) {
        const rt_range *rg = &ranges[br_splitmix64(&s) % n_prefix];
        if (i & 1)
            memcpy(q[i], rg->e[br_splitmix64(&s) % rg->n].hash, 20);
        else
            rt_hash_with_prefix(PW, rg->prefix, br_splitmix64(&s), q[i]);
    }
    size_t rounds = 30, found = 0, sync = 0;
    br_resolve_result res;
    rt_ans dummy;
    double t0 = rt_now();
    for (size_t k = 0; k < rounds; k++)
        for (size_t i = 0; i < NQ; i++) {
            int rc = br_resolver_resolve(r, 0, PW, q[i], rt_ans_cb, &dummy, &res);
            sync += rc == 1;
            found += res.status == BR_RESOLVE_FOUND;
        }
    double t = rt_now() - t0;
    double n = (double)rounds * NQ;
    printf("%-44s %8.2f M lookups/s (%.0f ns each, %zu/%zu synchronous, %.0f%% found)\n",
           "cached lookups, br_resolver_resolve", n / t / 1e6, t / n * 1e9, sync, (size_t)n,
           100.0 * (double)found / n);

    br_range_cache_result cr;
    int64_t now = (int64_t)time(NULL);
    t0 = rt_now();
    for (size_t k = 0; k < rounds; k++)
        for (size_t i = 0; i < NQ; i++)
            br_range_cache_lookup(cache, 0, PW, q[i], now, 0, &cr);
    t = rt_now() - t0;
    printf("%-44s %8.2f M lookups/s (%.0f ns each)\n", "  of which bare br_range_cache_lookup",
           n / t / 1e6, t / n * 1e9);
    free(q);
    br_resolver_free(r);
    br_range_cache_free(cache);
    event_base_free(base);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        n_prefix = strtoul(argv[1], NULL, 10);
    if (argc > 2)
        n_entries = strtoul(argv[2], NULL, 10);
    if (n_prefix == 0 || n_prefix > 100000 || n_entries < 1)
        return 2;
    rt_clean_env();
    char *dir = rt_mkdtemp("bench-resolver");
    rt_nginx ng;
    rt_nginx_start(&ng, dir, false);
    ranges = calloc(n_prefix, sizeof(*ranges));
    double t0 = rt_now();
    size_t bytes = 0;
    for (size_t i = 0; i < n_prefix; i++) {
        rt_range_gen(&ranges[i], PW, prefix_of(i), n_entries, n_entries / 3, i + 1);
        char *path = rt_fmt("%s/range/%05X.txt", ng.www, ranges[i].prefix);
        rt_range_write(&ranges[i], RT_PADDED, path);
        struct stat st;
        if (stat(path, &st) == 0)
            bytes += (size_t)st.st_size;
        free(path);
    }
    printf("mirror: %zu prefixes x %zu entries (+%zu padding), %.1f MB, generated in %.1f s\n",
           n_prefix, n_entries, n_entries / 3, (double)bytes / 1e6, rt_now() - t0);

    char *cache_dir = rt_fmt("%s/cache", dir);
    char *http = rt_fmt("http://127.0.0.1:%d/range/{prefix}", ng.port);
    char *file = rt_fmt("file://%s/range/{prefix}.txt", ng.www);
    fetch_run("nginx http, 16 in flight, no cache", http, 16, false, cache_dir);
    fetch_run("nginx http, 16 in flight, LMDB cache", http, 16, true, cache_dir);
    fetch_run("nginx http, 4 in flight, LMDB cache", http, 4, true, cache_dir);
    fetch_run("file://, LMDB cache", file, 16, true, cache_dir);

    /* the same mirror without gzip (nginx compressing on the fly shares the 2 CPUs) */
    char *dir2 = rt_fmt("%s/plain", dir);
    mkdir(dir2, 0755);
    rt_nginx ng2;
    rt_nginx_start_ex(&ng2, dir2, false, false);
    char *www_range = rt_fmt("%s/range", ng2.www);
    rmdir(www_range);
    char *src_range = rt_fmt("%s/range", ng.www);
    if (symlink(src_range, www_range) < 0)
        abort();
    char *http2 = rt_fmt("http://127.0.0.1:%d/range/{prefix}", ng2.port);
    fetch_run("nginx http, gzip off, 16 in flight, no cache", http2, 16, false, cache_dir);
    fetch_run("nginx http, gzip off, 16 in flight, LMDB", http2, 16, true, cache_dir);
    rt_nginx_stop(&ng2);
    free(dir2);
    free(www_range);
    free(src_range);
    free(http2);
    cached_run(cache_dir);

    rt_nginx_stop(&ng);
    for (size_t i = 0; i < n_prefix; i++)
        rt_range_free(&ranges[i]);
    free(ranges);
    rt_rmrf(dir);
    free(dir);
    free(cache_dir);
    free(http);
    free(file);
    return 0;
}
