/* SPDX-License-Identifier: MIT */
/* When the upstream asks to slow down (upstream.h "Rate limits",
 * docs/upstream.md), against tests/integration/faultserver's mode "limit"
 * (STATEDIR/limit says what to answer, and how many times): a 429 with
 * Retry-After in seconds and as an HTTP-date pauses every new transfer for
 * that long, then the request is answered; a queued interactive lookup whose
 * deadline passes meanwhile answers "rate-limited" (or from a stale entry),
 * a bulk one waits; a storm of 503s with Retry-After neither trips the
 * breaker nor loses a bulk lookup, and the daemon recovers when it ends; a
 * 429 halves the effective rate once for the transfers in flight, the
 * halved rate paces the transfers, and it climbs back to the configured
 * rate; a half-open circuit's trial that gets a 429 closes it. Fixture:
 * fault_fx.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "fault_fx.h"
#include "range/resolver.h"
#include "rtest.h"

/* What the fault server answers next (see faultserver.c, mode "limit"). */
static void limit_set(const char *text)
{
    char *path = rt_fmt("%s/limit", g_fault_dir);
    rt_write_file(path, text, strlen(text));
    free(path);
}

static void limit_clear(void)
{
    char *path = rt_fmt("%s/limit", g_fault_dir);
    unlink(path);
    free(path);
}

static int lookup(fx *x, uint32_t prefix, br_lane lane, rt_ans *a)
{
    uint8_t h[20];
    hash_of(prefix, S42, h);
    memset(a, 0, sizeof(*a));
    int rc = br_resolver_resolve_lane(x->r, 0, PW, h, lane, rt_ans_cb, a, &a->res);
    if (rc == 1)
        a->sync = true;
    return rc;
}

static br_upstream_stats up_stats(fx *x)
{
    br_upstream_stats us;
    br_upstream_get_stats(br_resolver_upstream(x->r, PW), &us);
    return us;
}

static void expect_found(const rt_ans *a)
{
    assert_int_equal(a->calls, 1);
    if (a->res.status != BR_RESOLVE_FOUND)
        fail_msg("expected FOUND, got %d (%s)", a->res.status, a->res.reason ? a->res.reason : "-");
    assert_int_equal(a->res.count, 42);
}

/* rate 20/s, burst 4; the effective rate climbs back slowly (60 s from half),
 * so that the test sees it halved. */
static void limit_config(fx *x)
{
    fx_config(x, "limit");
    x->cfg.upstream.rate = 20;
    x->cfg.upstream.burst = 4;
    x->cfg.upstream.timeout_ms = 5000;
    x->cfg.upstream.rate_recovery_ms = 60000;
}

/* Retry-After: 1 (delta-seconds). */
static void test_429_seconds(void **s)
{
    (void)s;
    limit_clear();
    fx x;
    limit_config(&x);
    fx_open(&x);
    limit_set("429 1\nRetry-After: 1\n");
    uint32_t pa = fresh_prefix(), pb = fresh_prefix();
    rt_ans a, b;
    double t0 = rt_now();
    assert_int_equal(lookup(&x, pa, BR_LANE_INTERACTIVE, &a), 0);
    rt_run_for(x.base, 200);
    assert_int_equal(a.calls, 0);
    assert_int_equal(lookup(&x, pb, BR_LANE_INTERACTIVE, &b), 0);
    rt_run_for(x.base, 300);
    /* paused: b is not sent, a not sent again */
    assert_int_equal(rt_fault_count(&g_fault, "limit", pb), 0);
    assert_int_equal(rt_fault_count(&g_fault, "limit", pa), 1);
    br_upstream_stats us = up_stats(&x);
    assert_int_equal(us.pauses, 1);
    assert_int_equal(us.paused_ms, 1000);
    assert_true(us.pause_left_ms > 0 && us.pause_left_ms <= 1000);
    assert_true(rt_wait(x.base, &a, 1, 3000) && rt_wait(x.base, &b, 1, 3000));
    double took = rt_now() - t0;
    expect_found(&a);
    expect_found(&b);
    if (took < 0.95)
        fail_msg("answered %.3f s after a 429 with Retry-After: 1", took);
    assert_int_equal(rt_fault_count(&g_fault, "limit", pa), 2);
    us = up_stats(&x);
    assert_int_equal(us.rate_limited, 1);
    assert_int_equal(us.rate_decreases, 1);
    assert_int_equal(us.err_rate_limited, 0);
    assert_int_equal(us.pause_left_ms, 0);
    if (us.rate_effective < 10 || us.rate_effective > 11)
        fail_msg("effective rate %.3f after one 429 at 20/s", us.rate_effective);

    /* The halved rate (10/s, burst 2) paces: 8 new lookups take at least
     * 0.6 s where 20/s with a burst of 4 would take 0.2 s. */
    enum { N = 8 };
    rt_ans more[N];
    t0 = rt_now();
    for (int i = 0; i < N; i++)
        assert_int_equal(lookup(&x, fresh_prefix(), BR_LANE_INTERACTIVE, &more[i]), 0);
    assert_true(rt_wait(x.base, more, N, 5000));
    took = rt_now() - t0;
    for (int i = 0; i < N; i++)
        expect_found(&more[i]);
    if (took < 0.5)
        fail_msg("8 lookups at the halved rate took only %.3f s", took);
    fx_close(&x);
}

/* Retry-After as an HTTP-date two seconds ahead (whole seconds: the pause
 * is between 1 and 2 s). */
static void test_429_http_date(void **s)
{
    (void)s;
    limit_clear();
    fx x;
    limit_config(&x);
    fx_open(&x);
    char date[64], text[128];
    time_t when = time(NULL) + 2;
    struct tm tm;
    gmtime_r(&when, &tm);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    snprintf(text, sizeof(text), "429 1\nRetry-After: %s\n", date);
    limit_set(text);
    rt_ans a;
    double t0 = rt_now();
    assert_int_equal(lookup(&x, fresh_prefix(), BR_LANE_INTERACTIVE, &a), 0);
    assert_true(rt_wait(x.base, &a, 1, 5000));
    double took = rt_now() - t0;
    expect_found(&a);
    br_upstream_stats us = up_stats(&x);
    assert_int_equal(us.pauses, 1);
    if (us.paused_ms < 1000 || us.paused_ms > 2000)
        fail_msg("paused %llu ms for an HTTP-date 2 s ahead", (unsigned long long)us.paused_ms);
    if (took < 0.95)
        fail_msg("answered %.3f s after a 429 with an HTTP-date", took);
    assert_int_equal(us.rate_decreases, 1);
    fx_close(&x);
}

/* A pause longer than the deadline: queued interactive lookups answer
 * rate-limited (or from a stale entry), a bulk one waits it out. */
static void test_pause_past_deadline(void **s)
{
    (void)s;
    limit_clear();
    fx x;
    limit_config(&x);
    x.cfg.upstream.timeout_ms = 600;
    x.cfg.ttl_s = 100;
    fx_open(&x);
    uint32_t pstale = fresh_prefix();
    rt_ans st;
    assert_int_equal(lookup(&x, pstale, BR_LANE_INTERACTIVE, &st), 0);
    assert_true(rt_wait(x.base, &st, 1, 3000));
    expect_found(&st);
    x.clock.now += 200; /* expired, within max_stale */

    limit_set("429 1\nRetry-After: 2\n");
    rt_ans a, b, stale, bulk;
    assert_int_equal(lookup(&x, fresh_prefix(), BR_LANE_INTERACTIVE, &a), 0);
    rt_run_for(x.base, 100);
    assert_int_equal(lookup(&x, fresh_prefix(), BR_LANE_INTERACTIVE, &b), 0);
    assert_int_equal(lookup(&x, pstale, BR_LANE_INTERACTIVE, &stale), 0);
    assert_int_equal(lookup(&x, fresh_prefix(), BR_LANE_BULK, &bulk), 0);
    assert_true(rt_wait(x.base, &a, 1, 2000) && rt_wait(x.base, &b, 1, 2000) &&
                rt_wait(x.base, &stale, 1, 2000));
    assert_unknown(&a.res, BR_REASON_RATE_LIMITED);
    assert_unknown(&b.res, BR_REASON_RATE_LIMITED);
    expect_found(&stale);
    assert_true(stale.res.stale);
    assert_int_equal(bulk.calls, 0);
    assert_true(rt_wait(x.base, &bulk, 1, 5000));
    expect_found(&bulk);
    br_upstream_stats us = up_stats(&x);
    assert_int_equal(us.err_rate_limited, 3);
    assert_int_equal(us.err_timeout, 0);
    assert_int_equal(us.breaker, BR_BREAKER_CLOSED);
    br_resolver_stats rs = fx_rs_stats(&x);
    assert_int_equal(rs.unknown_rate_limited, 2);
    assert_int_equal(rs.unknown_timeout, 0);
    fx_close(&x);
}

/* A storm of 503s with Retry-After: 1 for about 2.5 s, with a breaker that
 * opens after 3 failures: it stays closed, interactive lookups answer
 * rate-limited, bulk lookups wait the storm out; afterwards all is well. */
static void test_503_storm_and_recovery(void **s)
{
    (void)s;
    limit_clear();
    fx x;
    fx_config(&x, "limit");
    x.cfg.upstream.timeout_ms = 800;
    x.cfg.upstream.breaker_threshold = 3;
    fx_open(&x);
    limit_set("503\nRetry-After: 1\n");
    enum { NB = 10, NI = 3 };
    rt_ans bulk[NB], inter[NI];
    for (int i = 0; i < NB; i++)
        assert_int_equal(lookup(&x, fresh_prefix(), BR_LANE_BULK, &bulk[i]), 0);
    for (int i = 0; i < NI; i++)
        assert_int_equal(lookup(&x, fresh_prefix(), BR_LANE_INTERACTIVE, &inter[i]), 0);
    assert_true(rt_wait(x.base, inter, NI, 3000));
    for (int i = 0; i < NI; i++)
        assert_unknown(&inter[i].res, BR_REASON_RATE_LIMITED);
    rt_run_for(x.base, 1700);
    br_upstream_stats us = up_stats(&x);
    assert_true(us.pauses >= 2);
    assert_int_equal(us.breaker_trips, 0);
    assert_int_equal(us.rate_decreases, 0); /* a 503 pauses, it does not halve the rate */
    for (int i = 0; i < NB; i++)
        assert_int_equal(bulk[i].calls, 0);
    limit_clear(); /* the storm ends */
    assert_true(rt_wait(x.base, bulk, NB, 5000));
    for (int i = 0; i < NB; i++)
        expect_found(&bulk[i]);
    rt_ans after;
    assert_int_equal(lookup(&x, fresh_prefix(), BR_LANE_INTERACTIVE, &after), 0);
    assert_true(rt_wait(x.base, &after, 1, 2000));
    expect_found(&after);
    us = up_stats(&x);
    assert_int_equal(us.breaker, BR_BREAKER_CLOSED);
    assert_int_equal(us.breaker_trips, 0);
    assert_true(us.rate_limited >= (uint64_t)(NB + 2));
    fx_close(&x);
}

/* AIMD: two transfers in flight both get a 429 (no Retry-After; the server
 * takes 300 ms to say it, so both are sent before the first 429): one
 * halving; the rate climbs back to the configured one (recovery 1 s); the
 * next 429 halves it again. */
static void test_aimd(void **s)
{
    (void)s;
    limit_clear();
    fx x;
    limit_config(&x);
    x.cfg.upstream.rate = 40;
    x.cfg.upstream.rate_recovery_ms = 1000;
    fx_open(&x);
    limit_set("429 2 300\n");
    rt_ans a[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(lookup(&x, fresh_prefix(), BR_LANE_INTERACTIVE, &a[i]), 0);
    assert_true(rt_wait(x.base, a, 2, 3000));
    expect_found(&a[0]);
    expect_found(&a[1]);
    br_upstream_stats us = up_stats(&x);
    assert_int_equal(us.rate_limited, 2);
    assert_int_equal(us.rate_decreases, 1);
    assert_int_equal(us.pauses, 0);
    if (us.rate_effective < 20 || us.rate_effective > 30)
        fail_msg("effective rate %.3f just after a 429 at 40/s", us.rate_effective);
    /* additive increase: from 20 to 40 in about a second */
    double t0 = rt_now();
    while (up_stats(&x).rate_effective < 40 && rt_now() - t0 < 5)
        rt_run_for(x.base, 50);
    us = up_stats(&x);
    if (us.rate_effective != 40)
        fail_msg("effective rate %.3f, 5 s after a 429, did not climb back to 40",
                 us.rate_effective);
    limit_set("429 1\n");
    rt_ans b;
    assert_int_equal(lookup(&x, fresh_prefix(), BR_LANE_INTERACTIVE, &b), 0);
    assert_true(rt_wait(x.base, &b, 1, 3000));
    expect_found(&b);
    us = up_stats(&x);
    assert_int_equal(us.rate_decreases, 2);
    if (us.rate_effective < 20 || us.rate_effective > 30)
        fail_msg("effective rate %.3f after the second 429", us.rate_effective);
    fx_close(&x);
}

/* The breaker's trial answered 429: the upstream is up, the circuit closes. */
static void test_trial_rate_limited(void **s)
{
    (void)s;
    limit_clear();
    fx x;
    fx_config(&x, "limit");
    x.cfg.upstream.breaker_threshold = 1;
    x.cfg.upstream.breaker_cooldown_ms = 200;
    x.cfg.upstream.max_attempts = 1;
    fx_open(&x);
    br_upstream *up = br_resolver_upstream(x.r, PW);
    limit_set("503 1\n"); /* no Retry-After: a failure */
    rt_ans a;
    assert_int_equal(lookup(&x, fresh_prefix(), BR_LANE_INTERACTIVE, &a), 0);
    assert_true(rt_wait(x.base, &a, 1, 3000));
    assert_unknown(&a.res, BR_REASON_ERROR);
    assert_int_equal(br_upstream_breaker(up), BR_BREAKER_OPEN);
    rt_run_for(x.base, 250);
    limit_set("429 1\n");
    rt_ans t;
    assert_int_equal(lookup(&x, fresh_prefix(), BR_LANE_INTERACTIVE, &t), 0);
    assert_true(rt_wait(x.base, &t, 1, 3000));
    assert_unknown(&t.res, BR_REASON_RATE_LIMITED);
    assert_int_equal(br_upstream_breaker(up), BR_BREAKER_CLOSED);
    rt_ans after;
    assert_int_equal(lookup(&x, fresh_prefix(), BR_LANE_INTERACTIVE, &after), 0);
    assert_true(rt_wait(x.base, &after, 1, 3000));
    expect_found(&after);
    fx_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_429_seconds),
        cmocka_unit_test(test_429_http_date),
        cmocka_unit_test(test_pause_past_deadline),
        cmocka_unit_test(test_503_storm_and_recovery),
        cmocka_unit_test(test_aimd),
        cmocka_unit_test(test_trial_rate_limited),
    };
    return cmocka_run_group_tests(tests, fault_group_setup, fault_group_teardown);
}
