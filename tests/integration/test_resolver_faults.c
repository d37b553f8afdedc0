/* SPDX-License-Identifier: MIT */
/* The resolver against tests/integration/faultserver, one test per way an
 * upstream can misbehave (slow, dripping, resets, bad lengths, oversized or
 * garbage bodies, 404, 503, closes, nothing listening): every one gives
 * UNKNOWN (never NOT_FOUND) within the deadline, caches nothing, leaks
 * nothing. Also: a retry that succeeds, one failure shared by 50 coalesced
 * lookups, and lookups pending when the resolver is freed. The fixture (one
 * fault server for this program, a resolver per test) is fault_fx.c; the
 * breaker and limits are in test_resolver_limits.c, validators and stale
 * answers in test_resolver_validators.c, the good path in
 * test_resolver_requests.c. */
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

/* ---- one test per misbehaviour ------------------------------------------------------- */

static void fault_case(const char *mode, const char *reason, size_t min_requests,
                       size_t max_requests)
{
    fx x;
    fx_config(&x, mode);
    x.cfg.upstream.timeout_ms = 700;
    fx_open(&x);
    uint32_t p = fresh_prefix();
    uint8_t h[20];
    hash_of(p, S42, h);
    double t0 = rt_now();
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h);
    double took = rt_now() - t0;
    assert_unknown(&res, reason);
    assert_false(res.stale);
    /* within the deadline (plus scheduling slack) */
    assert_true(took < 0.7 + 0.5);
    /* nothing cached, and the next lookup is not answered from anything */
    assert_int_equal(rt_cache_entries(x.cache), 0);
    br_range_cache_result cr;
    assert_int_equal(br_range_cache_lookup(x.cache, 0, PW, h, x.clock.now, 86400, &cr), 0);
    assert_int_equal(cr.state, BR_RANGE_CACHE_MISS);
    size_t seen = rt_fault_count(&g_fault, mode, p);
    if (seen < min_requests || seen > max_requests)
        fail_msg("%s: %zu requests, expected %zu..%zu", mode, seen, min_requests, max_requests);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.unknown, 1);
    assert_int_equal(st.pending_fetches, 0);
    assert_int_equal(st.pending_lookups, 0);
    fx_close(&x);
}

static void test_delay(void **s)
{
    (void)s;
    fault_case("delay", BR_REASON_TIMEOUT, 1, 1);
}
static void test_drip(void **s)
{
    (void)s;
    fault_case("drip", BR_REASON_TIMEOUT, 1, 1);
}
static void test_reset(void **s)
{
    (void)s;
    fault_case("reset", BR_REASON_UNAVAILABLE, 2, 4); /* retried */
}
static void test_badlen(void **s)
{
    (void)s;
    fault_case("badlen", BR_REASON_UNAVAILABLE, 2, 4); /* truncated body: retried */
}
static void test_shortlen(void **s)
{
    (void)s;
    fault_case("shortlen", BR_REASON_ERROR, 1, 1);
}
static void test_big(void **s)
{
    (void)s;
    fault_case("big", BR_REASON_ERROR, 1, 1);
}
static void test_bigchunked(void **s)
{
    (void)s;
    fault_case("bigchunked", BR_REASON_ERROR, 1, 1);
}
static void test_garbage(void **s)
{
    (void)s;
    fault_case("garbage", BR_REASON_ERROR, 1, 1);
}
static void test_empty(void **s)
{
    (void)s;
    fault_case("empty", BR_REASON_ERROR, 1, 1);
}
static void test_notfound(void **s)
{
    (void)s;
    fault_case("notfound", BR_REASON_ERROR, 1, 1); /* a 404 is not retried */
}
static void test_fail(void **s)
{
    (void)s;
    fault_case("fail", BR_REASON_ERROR, 2, 4); /* 503: retried, then given up */
}
static void test_close(void **s)
{
    (void)s;
    fault_case("close", BR_REASON_UNAVAILABLE, 2, 4);
}

/* Nothing listening at all. */
static void test_refused(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "ok");
    snprintf(x.tmpl, sizeof(x.tmpl), "http://127.0.0.1:%d/range/{prefix}", rt_free_port());
    fx_open(&x);
    uint8_t h[20];
    hash_of(fresh_prefix(), S42, h);
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_unknown(&res, BR_REASON_UNAVAILABLE);
    br_upstream_stats us = fx_up_stats(&x);
    assert_true(us.transfers >= 2);
    assert_int_equal(us.retries, us.transfers - 1);
    assert_int_equal(us.err_unavailable, 1);
    assert_int_equal(rt_cache_entries(x.cache), 0);
    fx_close(&x);
}

/* ---- retries --------------------------------------------------------------------------- */

static void test_retry_then_found(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "flaky");
    fx_open(&x);
    uint32_t p = fresh_prefix();
    uint8_t h[20];
    hash_of(p, S42, h);
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_int_equal(res.count, 42);
    assert_int_equal(rt_fault_count(&g_fault, "flaky", p), 2);
    br_upstream_stats us = fx_up_stats(&x);
    assert_int_equal(us.retries, 1);
    assert_int_equal(us.ok, 1);
    assert_true(rt_cache_has(x.cache, PW, p));
    fx_close(&x);
}

/* ---- coalescing of failures, shutdown ------------------------------------------------------ */

static void test_coalesced_failure(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "garbage");
    fx_open(&x);
    uint32_t p = fresh_prefix();
    enum { N = 50 };
    rt_ans a[N];
    for (int i = 0; i < N; i++) {
        uint8_t h[20];
        rt_hash_with_prefix(PW, p, (uint64_t)i, h);
        assert_int_equal(rt_resolve(x.r, PW, h, &a[i]), 0);
    }
    assert_true(rt_wait(x.base, a, N, 3000));
    for (int i = 0; i < N; i++) {
        assert_int_equal(a[i].calls, 1);
        assert_unknown(&a[i].res, BR_REASON_ERROR);
    }
    assert_int_equal(rt_fault_count(&g_fault, "garbage", p), 1);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.fetches, 1);
    assert_int_equal(st.coalesced, N - 1);
    assert_int_equal(st.parse_errors, 1);
    assert_int_equal(rt_cache_entries(x.cache), 0);
    fx_close(&x);
}

static void test_free_answers_pending(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "delay");
    fx_open(&x);
    rt_ans a[3];
    for (int i = 0; i < 3; i++) {
        uint8_t h[20];
        hash_of(fresh_prefix(), S42, h);
        assert_int_equal(rt_resolve(x.r, PW, h, &a[i]), 0);
    }
    rt_run_for(x.base, 50); /* the transfers are on the wire */
    br_resolver_free(x.r);
    x.r = NULL;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(a[i].calls, 1);
        assert_unknown(&a[i].res, BR_REASON_SHUTTING_DOWN);
    }
    fx_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delay),
        cmocka_unit_test(test_drip),
        cmocka_unit_test(test_reset),
        cmocka_unit_test(test_badlen),
        cmocka_unit_test(test_shortlen),
        cmocka_unit_test(test_big),
        cmocka_unit_test(test_bigchunked),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_notfound),
        cmocka_unit_test(test_fail),
        cmocka_unit_test(test_close),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_retry_then_found),
        cmocka_unit_test(test_coalesced_failure),
        cmocka_unit_test(test_free_answers_pending),
    };
    return cmocka_run_group_tests(tests, fault_group_setup, fault_group_teardown);
}
