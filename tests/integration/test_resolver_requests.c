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
#include "range_cache.h"
#include "resolver.h"
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

static void test_decoys(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "ok");
    x.cfg.decoys = 3;
    fx_open(&x);
    size_t before = rt_fault_count(&g_fault, "ok", 0xFFFFFFFF);
    uint32_t p = fresh_prefix();
    uint8_t h[20];
    hash_of(p, S42, h);
    assert_int_equal(rt_resolve_wait(x.base, x.r, PW, h).status, BR_RESOLVE_FOUND);
    rt_run_for(x.base, 200); /* let the decoys finish */
    assert_int_equal(rt_fault_count(&g_fault, "ok", 0xFFFFFFFF), before + 4);
    assert_int_equal(rt_fault_count(&g_fault, "ok", p), 1);
    assert_int_equal(rt_cache_entries(x.cache), 1); /* decoy answers are thrown away */
    assert_true(rt_cache_has(x.cache, PW, p));
    br_resolver_stats st;
    br_resolver_get_stats(x.r, &st);
    assert_int_equal(st.decoys, 3);
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
    assert_int_equal(br_resolver_resolve(r, (br_range_kind)7, h, rt_ans_cb, &a, &a.res), -EINVAL);
    br_resolver_free(r);
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ok),         cmocka_unit_test(test_no_padding),
        cmocka_unit_test(test_decoys),     cmocka_unit_test(test_proxy),
        cmocka_unit_test(test_bad_config), cmocka_unit_test(test_no_upstream),
    };
    return cmocka_run_group_tests(tests, fault_group_setup, fault_group_teardown);
}
