/* SPDX-License-Identifier: MIT */
/* The resolver's circuit breaker and limits against
 * tests/integration/faultserver: the breaker opens after failures (answers
 * at once, stale entries still served), half-opens after the cool-down and
 * recovers; queued requests end when it opens; the fetch rate and in-flight
 * limits hold; a queued request waits until its deadline. Fixture:
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

/* ---- circuit breaker -------------------------------------------------------------------- */

static void test_breaker(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "sw");
    x.cfg.upstream.breaker_threshold = 3;
    x.cfg.upstream.breaker_cooldown_ms = 300;
    x.cfg.upstream.max_attempts = 1;
    x.cfg.ttl_s = 100;
    fx_open(&x);
    br_upstream *up = br_resolver_upstream(x.r, PW);

    /* one good entry, to be answered stale later */
    uint32_t pgood = fresh_prefix();
    uint8_t hgood[20];
    hash_of(pgood, S42, hgood);
    assert_int_equal(rt_resolve_wait(x.base, x.r, PW, hgood).status, BR_RESOLVE_FOUND);

    rt_fault_set_down(&g_fault, true);
    for (int i = 0; i < 3; i++) {
        uint8_t h[20];
        hash_of(fresh_prefix(), S42, h);
        br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h);
        assert_unknown(&res, BR_REASON_ERROR);
    }
    assert_int_equal(br_upstream_breaker(up), BR_BREAKER_OPEN);

    /* open: answered at once, nothing sent */
    size_t before = rt_fault_count(&g_fault, "sw", 0xFFFFFFFF);
    uint32_t pnew = fresh_prefix();
    uint8_t hnew[20];
    hash_of(pnew, S42, hnew);
    rt_ans a;
    assert_int_equal(rt_resolve(x.r, PW, hnew, &a), 1);
    assert_unknown(&a.res, BR_REASON_CIRCUIT_OPEN);
    /* an expired entry within max_stale answers, stale, at once */
    x.clock.now += 200;
    assert_int_equal(rt_resolve(x.r, PW, hgood, &a), 1);
    assert_int_equal(a.res.status, BR_RESOLVE_FOUND);
    assert_int_equal(a.res.count, 42);
    assert_true(a.res.stale);
    assert_int_equal(rt_fault_count(&g_fault, "sw", 0xFFFFFFFF), before);

    /* half-open, still down: the trial fails, open again */
    rt_run_for(x.base, 350);
    assert_int_equal(br_upstream_breaker(up), BR_BREAKER_HALF_OPEN);
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, hnew);
    assert_unknown(&res, BR_REASON_ERROR);
    assert_int_equal(rt_fault_count(&g_fault, "sw", pnew), 1);
    assert_int_equal(br_upstream_breaker(up), BR_BREAKER_OPEN);
    assert_int_equal(rt_resolve(x.r, PW, hnew, &a), 1);
    assert_unknown(&a.res, BR_REASON_CIRCUIT_OPEN);

    /* recovery after the cool-down */
    rt_fault_set_down(&g_fault, false);
    rt_run_for(x.base, 350);
    res = rt_resolve_wait(x.base, x.r, PW, hnew);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_int_equal(br_upstream_breaker(up), BR_BREAKER_CLOSED);
    uint8_t h2[20];
    hash_of(fresh_prefix(), S7, h2);
    res = rt_resolve_wait(x.base, x.r, PW, h2);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_int_equal(res.count, 7);

    br_upstream_stats us;
    br_upstream_get_stats(up, &us);
    assert_int_equal(us.breaker_trips, 2);
    assert_true(us.refused_circuit >= 2);
    /* open or half-open for two cool-downs at least, and no longer counting */
    assert_true(us.breaker_open_ms >= 600);
    rt_run_for(x.base, 50);
    br_upstream_stats us2;
    br_upstream_get_stats(up, &us2);
    assert_int_equal(us2.breaker_open_ms, us.breaker_open_ms);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.unknown_circuit, 2);
    assert_int_equal(st.stale_answers, 1);
    fx_close(&x);
}

/* When the circuit opens, requests waiting in the queue end at once. */
static void test_breaker_flushes_queue(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "fail");
    x.cfg.upstream.breaker_threshold = 1;
    x.cfg.upstream.max_inflight = 1;
    x.cfg.upstream.max_attempts = 1;
    fx_open(&x);
    rt_ans a[5];
    for (int i = 0; i < 5; i++) {
        uint8_t h[20];
        hash_of(fresh_prefix(), S42, h);
        assert_int_equal(rt_resolve(x.r, PW, h, &a[i]), 0);
    }
    double t0 = rt_now();
    assert_true(rt_wait(x.base, a, 5, 5000));
    assert_true(rt_now() - t0 < 0.5);
    assert_unknown(&a[0].res, BR_REASON_ERROR);
    for (int i = 1; i < 5; i++) {
        assert_int_equal(a[i].calls, 1);
        assert_unknown(&a[i].res, BR_REASON_CIRCUIT_OPEN);
    }
    fx_close(&x);
}

/* ---- limits ------------------------------------------------------------------------------- */

static void test_rate_and_inflight(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "ok");
    x.cfg.upstream.max_inflight = 2;
    x.cfg.upstream.rate = 20;
    x.cfg.upstream.burst = 2;
    x.cfg.upstream.timeout_ms = 5000;
    fx_open(&x);
    enum { N = 12 };
    rt_ans a[N];
    double t0 = rt_now();
    for (int i = 0; i < N; i++) {
        uint8_t h[20];
        hash_of(fresh_prefix(), S42, h);
        assert_int_equal(rt_resolve(x.r, PW, h, &a[i]), 0);
    }
    assert_true(rt_wait(x.base, a, N, 5000));
    double took = rt_now() - t0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(a[i].calls, 1);
        assert_int_equal(a[i].res.status, BR_RESOLVE_FOUND);
    }
    /* 2 tokens at once, then 20 per second: the last starts after ~0.5 s */
    if (took < 0.45)
        fail_msg("12 fetches at 20/s burst 2 took only %.3f s", took);
    br_upstream_stats us = fx_up_stats(&x);
    assert_true(us.queued_max >= N - 2);
    assert_int_equal(us.queued, 0);
    assert_int_equal(us.inflight, 0);
    assert_int_equal(us.transfers, N);
    fx_close(&x);
}

/* A request queued behind a slow one waits (it is not dropped) until its deadline. */
static void test_queued_until_deadline(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "delay");
    x.cfg.upstream.max_inflight = 1;
    x.cfg.upstream.timeout_ms = 400;
    fx_open(&x);
    uint32_t p1 = fresh_prefix(), p2 = fresh_prefix();
    uint8_t h1[20], h2[20];
    hash_of(p1, S42, h1);
    hash_of(p2, S42, h2);
    rt_ans a[2];
    assert_int_equal(rt_resolve(x.r, PW, h1, &a[0]), 0);
    assert_int_equal(rt_resolve(x.r, PW, h2, &a[1]), 0);
    rt_run_for(x.base, 100);
    br_upstream_stats us = fx_up_stats(&x);
    assert_int_equal(us.inflight, 1);
    assert_int_equal(us.queued, 1);
    assert_true(rt_wait(x.base, a, 2, 3000));
    assert_unknown(&a[0].res, BR_REASON_TIMEOUT);
    assert_unknown(&a[1].res, BR_REASON_TIMEOUT);
    fx_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_breaker),
        cmocka_unit_test(test_breaker_flushes_queue),
        cmocka_unit_test(test_rate_and_inflight),
        cmocka_unit_test(test_queued_until_deadline),
    };
    return cmocka_run_group_tests(tests, fault_group_setup, fault_group_teardown);
}
