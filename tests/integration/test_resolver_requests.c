/* SPDX-License-Identifier: MIT */
/* What the resolver sends and accepts on the good path, against
 * tests/integration/faultserver: counts, padding and absent hashes, the
 * Add-Padding and User-Agent headers, no_padding, batched cache writes,
 * decoy requests, a proxy from the config or from $http_proxy; and the
 * configurations it refuses or answers UNKNOWN for at once. Fixture:
 * fault_fx.c (one fault server for this program, a resolver per test). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <event2/event.h>

#include "config.h"
#include "fault_fx.h"
#include "range/range_cache.h"
#include "range/resolver.h"
#include "rtest.h"

/* ---- the good path, headers ----------------------------------------------------------- */

static void test_ok(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "ok");
    fx_open(&x);
    uint32_t p = fresh_prefix();
    uint8_t h42[20], h7[20], hpad[20], hnone[20];
    hash_of(p, S42, h42);
    hash_of(p, S7, h7);
    hash_of(p, SPAD, hpad);
    hash_of(p, SNONE, hnone);

    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h42);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_int_equal(res.count, 42);
    assert_false(res.from_cache);

    rt_ans a;
    assert_int_equal(rt_resolve(x.r, PW, h7, &a), 1); /* fresh in the cache: synchronous */
    assert_int_equal(a.res.status, BR_RESOLVE_FOUND);
    assert_int_equal(a.res.count, 7);
    assert_true(a.res.from_cache);
    assert_int_equal(rt_resolve(x.r, PW, hpad, &a), 1); /* padding is not an entry */
    assert_int_equal(a.res.status, BR_RESOLVE_NOT_FOUND);
    assert_int_equal(rt_resolve(x.r, PW, hnone, &a), 1);
    assert_int_equal(a.res.status, BR_RESOLVE_NOT_FOUND);
    assert_int_equal(rt_fault_count(&g_fault, "ok", p), 1);

    /* the request carried Add-Padding and our User-Agent */
    char *path = rt_fmt("%s/requests.log", g_fault_dir);
    char *log = rt_read_file(path, NULL);
    free(path);
    char want[128];
    char hex[6];
    rt_prefix_hex(p, hex);
    snprintf(want, sizeof(want), "ok %s padding=true inm=- ims=- ua=breachd/%s\n", hex,
             BREACHD_VERSION);
    assert_non_null(strstr(log, want));
    free(log);

    /* batched writes reached LMDB */
    rt_run_for(x.base, 30);
    br_range_cache_usage u;
    assert_int_equal(br_range_cache_stats(x.cache, &u), 0);
    assert_int_equal(u.entries, 1);
    assert_int_equal(u.pending, 0);
    fx_close(&x);
}

/* no_padding: for the bulk downloader */
static void test_no_padding(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "ok");
    x.cfg.upstream.no_padding = true;
    fx_open(&x);
    uint32_t p = fresh_prefix();
    uint8_t h[20];
    hash_of(p, S42, h);
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    char *path = rt_fmt("%s/requests.log", g_fault_dir);
    char *log = rt_read_file(path, NULL);
    char hex[6], want[64];
    rt_prefix_hex(p, hex);
    snprintf(want, sizeof(want), "ok %s padding=- ", hex);
    assert_non_null(strstr(log, want));
    free(log);
    free(path);
    fx_close(&x);
}

/* ---- decoys, proxies, configuration ------------------------------------------------------- */

/* The requests.log lines from line `from` on (0-based): prefixes and whether
 * each was conditional (If-None-Match sent). Returns how many. */
static size_t log_requests(size_t from, uint32_t *prefix, bool *cond, size_t max)
{
    char *path = rt_fmt("%s/requests.log", g_fault_dir);
    FILE *f = fopen(path, "r");
    free(path);
    assert_non_null(f);
    char line[1024];
    size_t i = 0, n = 0;
    while (fgets(line, sizeof(line), f)) {
        if (i++ < from)
            continue;
        char mode[64], pfx[16];
        assert_int_equal(sscanf(line, "%63s %15s", mode, pfx), 2);
        if (n < max) {
            prefix[n] = (uint32_t)strtoul(pfx, NULL, 16);
            cond[n] = strstr(line, " inm=-") == NULL;
        }
        n++;
    }
    fclose(f);
    return n;
}

static size_t log_lines(void)
{
    uint32_t p[1];
    bool c[1];
    return log_requests(0, p, c, 0);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Decoys are real range fetches nobody waits for: cached, revalidated with
 * the real one after its TTL (conditional like it), the same set every time
 * for one real prefix (in every partition), the real one at a random place. */
static void test_decoys(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "validators"); /* ETag, max-age=60, 304 on a match */
    x.cfg.decoys = 3;
    x.cfg.ttl_s = 60;
    fx_open(&x);
    uint32_t p = fresh_prefix();
    uint8_t h[20];
    hash_of(p, S42, h);
    size_t l0 = log_lines();
    assert_int_equal(rt_resolve_wait(x.base, x.r, PW, h).status, BR_RESOLVE_FOUND);
    rt_run_for(x.base, 200); /* let the decoys finish */
    uint32_t first[8], again[8];
    bool cond[8];
    assert_int_equal(log_requests(l0, first, cond, 8), 4);
    for (int i = 0; i < 4; i++)
        assert_false(cond[i]);
    assert_int_equal(rt_cache_entries(x.cache), 4); /* decoys are cached too */
    for (int i = 0; i < 4; i++)
        assert_true(rt_cache_has(x.cache, PW, first[i]));
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.decoys, 3);
    assert_int_equal(st.fetches, 1);

    /* Fresh: no request at all. */
    rt_ans a;
    assert_int_equal(rt_resolve(x.r, PW, h, &a), 1);
    assert_int_equal(log_lines(), l0 + 4);

    /* Past the ttl: the same four prefixes, every one conditional (304). */
    x.clock.now += 120;
    size_t l1 = log_lines();
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_true(res.from_cache);
    rt_run_for(x.base, 200);
    assert_int_equal(log_requests(l1, again, cond, 8), 4);
    for (int i = 0; i < 4; i++)
        assert_true(cond[i]);
    br_resolver_get_stats(x.r, &st);
    assert_int_equal(st.not_modified, 4);
    assert_int_equal(st.decoys, 6);
    qsort(first, 4, sizeof(first[0]), cmp_u32);
    qsort(again, 4, sizeof(again[0]), cmp_u32);
    assert_memory_equal(first, again, sizeof(first[0]) * 4);

    /* Another partition: its own fetches, the same burst. */
    size_t l2 = log_lines();
    assert_int_equal(rt_resolve_in(x.r, 7, PW, h, &a), 0);
    assert_true(rt_wait(x.base, &a, 1, 10000));
    rt_run_for(x.base, 200);
    assert_int_equal(log_requests(l2, again, cond, 8), 4);
    qsort(again, 4, sizeof(again[0]), cmp_u32);
    assert_memory_equal(first, again, sizeof(first[0]) * 4);
    assert_int_equal(rt_cache_entries(x.cache), 8);
    fx_close(&x);
}

/* The real request's place in its burst is random: over 40 fresh prefixes
 * with 3 decoys it is not always the same (all in one place: 4^-29 at most). */
static void test_decoy_order(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "ok");
    x.cfg.decoys = 3;
    fx_open(&x);
    unsigned seen[4] = {0}, full = 0;
    for (int k = 0; k < 40; k++) {
        uint32_t p = fresh_prefix(), got[8];
        bool cond[8];
        uint8_t h[20];
        hash_of(p, S42, h);
        size_t l0 = log_lines();
        assert_int_equal(rt_resolve_wait(x.base, x.r, PW, h).status, BR_RESOLVE_FOUND);
        rt_run_for(x.base, 50);
        size_t n = log_requests(l0, got, cond, 8);
        /* A prefix already cached and fresh is not sent again, decoy or
         * real (docs/upstream.md "Decoys"): when one of this burst's is one
         * of the earlier bursts' (about one run in a hundred), the burst is
         * short. Only whole bursts tell the real request's place. */
        assert_true(n <= 4);
        if (n < 4)
            continue;
        full++;
        for (unsigned i = 0; i < 4; i++)
            if (got[i] == p)
                seen[i]++;
    }
    unsigned places = 0;
    for (int i = 0; i < 4; i++)
        places += seen[i] > 0;
    assert_true(places >= 2);
    assert_true(full >= 30);
    fx_close(&x);
}

/* Partitions: one partition's entry or pending fetch is never used by
 * another; the shared size bound is. */
static void test_partitions(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "ok");
    fx_open(&x);
    uint32_t p = fresh_prefix();
    uint8_t h[20];
    hash_of(p, S42, h);
    /* Coalescing within a partition, not across. */
    rt_ans a[3];
    assert_int_equal(rt_resolve_in(x.r, 1, PW, h, &a[0]), 0);
    assert_int_equal(rt_resolve_in(x.r, 1, PW, h, &a[1]), 0);
    assert_int_equal(rt_resolve_in(x.r, 2, PW, h, &a[2]), 0);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.coalesced, 1);
    assert_int_equal(st.fetches, 2);
    assert_true(rt_wait(x.base, a, 3, 10000));
    assert_int_equal(rt_fault_count(&g_fault, "ok", p), 2);
    /* Each partition has its entry now; a third has none. */
    assert_int_equal(rt_resolve_in(x.r, 1, PW, h, &a[0]), 1);
    assert_int_equal(rt_resolve_in(x.r, 2, PW, h, &a[1]), 1);
    assert_int_equal(rt_resolve_in(x.r, BR_RESOLVER_PARTITION_SHARED, PW, h, &a[2]), 0);
    assert_true(rt_wait(x.base, &a[2], 1, 10000));
    assert_int_equal(rt_fault_count(&g_fault, "ok", p), 3);
    assert_int_equal(rt_cache_entries(x.cache), 3);
    fx_close(&x);
}

/* The proxy from the config, else from the environment: the fault server
 * plays the proxy for an address that is not reachable otherwise. */
static void test_proxy(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "ok");
    snprintf(x.tmpl, sizeof(x.tmpl), "http://192.0.2.1/ok/{prefix}"); /* TEST-NET-1 */
    char *proxy = rt_fmt("http://127.0.0.1:%d", g_fault.port);
    x.cfg.upstream.proxy = proxy;
    fx_open(&x);
    uint32_t p = fresh_prefix();
    uint8_t h[20];
    hash_of(p, S42, h);
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_int_equal(rt_fault_count(&g_fault, "proxied-ok", p), 1);
    fx_close(&x);

    fx_config(&x, "ok");
    snprintf(x.tmpl, sizeof(x.tmpl), "http://192.0.2.1/ok/{prefix}");
    setenv("http_proxy", proxy, 1);
    fx_open(&x);
    p = fresh_prefix();
    hash_of(p, S7, h);
    res = rt_resolve_wait(x.base, x.r, PW, h);
    unsetenv("http_proxy");
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_int_equal(res.count, 7);
    assert_int_equal(rt_fault_count(&g_fault, "proxied-ok", p), 1);
    fx_close(&x);
    free(proxy);
}

static void test_bad_config(void **s)
{
    (void)s;
    struct event_base *base = event_base_new();
    br_resolver *r = NULL;
    br_error err = {{0}};
    br_resolver_config cfg = {0};
    cfg.password_upstream = "ftp://example.org/{prefix}";
    assert_int_equal(br_resolver_new(base, &cfg, NULL, &r, &err), -EINVAL);
    cfg.password_upstream = "http://127.0.0.1/range/";
    assert_int_equal(br_resolver_new(base, &cfg, NULL, &r, &err), -EINVAL);
    assert_non_null(strstr(err.text, "{prefix}"));
    cfg.password_upstream = "http://127.0.0.1/range/{prefix}";
    cfg.decoys = 1000;
    assert_int_equal(br_resolver_new(base, &cfg, NULL, &r, &err), -EINVAL);
    assert_null(r);
    event_base_free(base);
}

/* No upstream for a kind, no cache: UNKNOWN at once. */
static void test_no_upstream(void **s)
{
    (void)s;
    struct event_base *base = event_base_new();
    br_resolver *r = NULL;
    br_resolver_config cfg = {0};
    assert_int_equal(br_resolver_new(base, &cfg, NULL, &r, NULL), 0);
    uint8_t h[32] = {0};
    rt_ans a;
    assert_int_equal(rt_resolve(r, BR_RANGE_URL_SHA256, h, &a), 1);
    assert_unknown(&a.res, BR_REASON_UNAVAILABLE);
    assert_int_equal(br_resolver_resolve(r, 0, (br_range_kind)7, h, rt_ans_cb, &a, &a.res),
                     -EINVAL);
    br_resolver_free(r);
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ok),         cmocka_unit_test(test_no_padding),
        cmocka_unit_test(test_decoys),     cmocka_unit_test(test_decoy_order),
        cmocka_unit_test(test_partitions), cmocka_unit_test(test_proxy),
        cmocka_unit_test(test_bad_config), cmocka_unit_test(test_no_upstream),
    };
    return cmocka_run_group_tests(tests, fault_group_setup, fault_group_teardown);
}
