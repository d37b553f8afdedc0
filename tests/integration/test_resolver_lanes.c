/* SPDX-License-Identifier: MIT */
/* The resolver's two lanes against tests/integration/faultserver (resolver.h
 * and upstream.h "Lanes", docs/upstream.md "Lanes"): bulk lookups wait past
 * the deadline and end with answers where interactive ones time out; an
 * interactive lookup goes before a queued bulk one; bulk transfers use at
 * most bulk_share of the slots; an interactive lookup promotes the queued
 * bulk fetch it joins; a bulk lookup that joined an interactive fetch which
 * ended by its deadline is fetched again on the bulk lane (and a lookup made
 * from the interactive answer's callback joins that fetch); partitions keep
 * the lanes apart. Fixture: fault_fx.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/event.h>

#include "fault_fx.h"
#include "range/resolver.h"
#include "rtest.h"

#define BULK BR_LANE_BULK
#define INTER BR_LANE_INTERACTIVE

/* Look hash of prefix (suffix S42) up on lane in partition; 0: pending. */
static int lookup(fx *x, uint32_t partition, uint32_t prefix, br_lane lane, rt_ans *a)
{
    uint8_t h[20];
    hash_of(prefix, S42, h);
    memset(a, 0, sizeof(*a));
    int rc = br_resolver_resolve_lane(x->r, partition, PW, h, lane, rt_ans_cb, a, &a->res);
    if (rc == 1)
        a->sync = true;
    return rc;
}

/* n lookups in partition, each of a new prefix, on lane: all waiting. */
static void lookup_fresh(fx *x, uint32_t partition, br_lane lane, rt_ans *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        assert_int_equal(lookup(x, partition, fresh_prefix(), lane, &a[i]), 0);
}

static size_t answered(const rt_ans *a, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += a[i].calls;
    return k;
}

/* At 10/s (5/s for bulk) eight lookups take longer than the 300 ms
 * deadline: on the bulk lane all of them are answered, on the interactive
 * lane the later ones time out. */
static void test_bulk_waits_past_deadline(void **s)
{
    (void)s;
    enum { N = 8 };
    for (int lane = INTER; lane <= BULK; lane++) {
        fx x;
        fx_config(&x, "ok");
        x.cfg.upstream.timeout_ms = 300;
        x.cfg.upstream.rate = 10;
        x.cfg.upstream.burst = 1;
        fx_open(&x);
        rt_ans a[N];
        lookup_fresh(&x, 0, (br_lane)lane, a, N);
        assert_true(rt_wait(x.base, a, N, 10000));
        size_t found = 0, timeouts = 0;
        for (int i = 0; i < N; i++) {
            assert_int_equal(a[i].calls, 1);
            found += a[i].res.status == BR_RESOLVE_FOUND;
            timeouts += a[i].res.status == BR_RESOLVE_UNKNOWN &&
                        !strcmp(a[i].res.reason, BR_REASON_TIMEOUT);
        }
        if (lane == BULK) {
            assert_int_equal(found, N);
            br_upstream_stats us = fx_up_stats(&x);
            assert_int_equal(us.bulk_fetches, N);
            assert_int_equal(us.err_timeout, 0);
            assert_int_equal(us.bulk_queued, 0);
            assert_int_equal(us.bulk_inflight, 0);
        } else {
            if (timeouts < 3)
                fail_msg("interactive: only %zu of %d timed out at 10/s with a 300 ms deadline",
                         timeouts, N);
        }
        fx_close(&x);
    }
}

/* With 30 bulk lookups queued, an interactive one is sent before most of
 * them: it is answered while more than 20 still wait. */
static void test_interactive_first(void **s)
{
    (void)s;
    enum { N = 30 };
    fx x;
    fx_config(&x, "ok");
    x.cfg.upstream.rate = 20;
    x.cfg.upstream.burst = 2;
    x.cfg.upstream.timeout_ms = 5000;
    fx_open(&x);
    rt_ans bulk[N], inter;
    lookup_fresh(&x, 0, BULK, bulk, N);
    rt_run_for(x.base, 100);
    uint32_t pi = fresh_prefix();
    assert_int_equal(lookup(&x, 0, pi, INTER, &inter), 0);
    assert_true(rt_wait(x.base, &inter, 1, 5000));
    assert_int_equal(inter.res.status, BR_RESOLVE_FOUND);
    size_t done = answered(bulk, N);
    if (done > 8)
        fail_msg("the interactive lookup was answered after %zu of %d bulk ones", done, N);
    assert_true(fx_up_stats(&x).bulk_queued >= N - 8);
    assert_int_equal(rt_fault_count(&g_fault, "ok", pi), 1);
    assert_true(rt_wait(x.base, bulk, N, 10000));
    for (int i = 0; i < N; i++)
        assert_int_equal(bulk[i].res.status, BR_RESOLVE_FOUND);
    fx_close(&x);
}

/* max_inflight 4, bulk_share 50%: two bulk transfers at most; an
 * interactive one still starts at once. */
static void test_bulk_slots(void **s)
{
    (void)s;
    enum { N = 6 };
    fx x;
    fx_config(&x, "delay");
    x.cfg.upstream.max_inflight = 4;
    x.cfg.upstream.timeout_ms = 5000;
    fx_open(&x);
    rt_ans a[N], inter;
    lookup_fresh(&x, 0, BULK, a, N);
    rt_run_for(x.base, 200);
    br_upstream_stats us = fx_up_stats(&x);
    assert_int_equal(us.inflight, 2);
    assert_int_equal(us.bulk_inflight, 2);
    assert_int_equal(us.bulk_queued, N - 2);
    assert_int_equal(lookup(&x, 0, fresh_prefix(), INTER, &inter), 0);
    rt_run_for(x.base, 200);
    us = fx_up_stats(&x);
    assert_int_equal(us.inflight, 3);
    assert_int_equal(us.bulk_inflight, 2);
    assert_int_equal(us.queued, 0);
    fx_close(&x); /* every pending lookup is answered shutting-down */
    for (int i = 0; i < N; i++)
        assert_int_equal(a[i].calls, 1);
    assert_int_equal(inter.calls, 1);
}

/* An interactive lookup that joins a queued bulk fetch promotes it: both
 * are answered by that one fetch, long before the bulk queue drains. */
static void test_promote(void **s)
{
    (void)s;
    enum { N = 20 };
    fx x;
    fx_config(&x, "ok");
    x.cfg.upstream.rate = 10;
    x.cfg.upstream.burst = 1;
    x.cfg.upstream.timeout_ms = 3000;
    fx_open(&x);
    rt_ans bulk[N], target, inter;
    lookup_fresh(&x, 0, BULK, bulk, N);
    uint32_t p = fresh_prefix();
    assert_int_equal(lookup(&x, 0, p, BULK, &target), 0);
    rt_run_for(x.base, 50);
    assert_int_equal(target.calls, 0);
    assert_int_equal(lookup(&x, 0, p, INTER, &inter), 0); /* joins and promotes */
    assert_true(rt_wait(x.base, &inter, 1, 3000));
    assert_int_equal(inter.res.status, BR_RESOLVE_FOUND);
    assert_int_equal(target.calls, 1);
    assert_int_equal(target.res.status, BR_RESOLVE_FOUND);
    size_t done = answered(bulk, N);
    if (done > 5)
        fail_msg("the promoted fetch went after %zu of %d bulk ones", done, N);
    assert_int_equal(rt_fault_count(&g_fault, "ok", p), 1);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.promoted, 1);
    assert_int_equal(fx_up_stats(&x).promoted, 1);
    assert_true(rt_wait(x.base, bulk, N, 10000));
    fx_close(&x);
}

/* A bulk lookup that joined an interactive fetch which ended by its deadline
 * is not answered "timeout": the fetch goes again, on the bulk lane. The
 * mode's first request of a prefix takes 3 s, the next one none. */
static void test_bulk_outlives_interactive_deadline(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "slowfirst");
    x.cfg.upstream.timeout_ms = 800;
    x.cfg.upstream.max_attempts = 1;
    fx_open(&x);
    uint32_t p = fresh_prefix();
    rt_ans inter, bulk;
    assert_int_equal(lookup(&x, 0, p, INTER, &inter), 0);
    rt_run_for(x.base, 100);
    assert_int_equal(lookup(&x, 0, p, BULK, &bulk), 0); /* joins */
    assert_true(rt_wait(x.base, &inter, 1, 3000));
    assert_unknown(&inter.res, BR_REASON_TIMEOUT);
    assert_int_equal(bulk.calls, 0);
    assert_true(rt_wait(x.base, &bulk, 1, 5000));
    assert_int_equal(bulk.res.status, BR_RESOLVE_FOUND);
    assert_int_equal(bulk.res.count, 42);
    assert_int_equal(rt_fault_count(&g_fault, "slowfirst", p), 2);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.bulk_resent, 1);
    assert_int_equal(st.unknown_timeout, 1);
    fx_close(&x);
}

/* The same, where the interactive lookup's callback looks the range up
 * again at once: it joins (and promotes) the fetch sent again for the bulk
 * lookup; one fetch more, not two. */
typedef struct again_ctx {
    fx *x;
    uint32_t prefix;
    rt_ans first, again;
} again_ctx;

static void again_cb(void *ctx, const br_resolve_result *res)
{
    again_ctx *c = ctx;
    rt_ans_cb(&c->first, res);
    assert_int_equal(lookup(c->x, 0, c->prefix, INTER, &c->again), 0);
}

static void test_lookup_again_from_callback(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "slowfirst");
    x.cfg.upstream.timeout_ms = 800;
    x.cfg.upstream.max_attempts = 1;
    fx_open(&x);
    again_ctx c = {.x = &x, .prefix = fresh_prefix()};
    uint8_t h[20];
    hash_of(c.prefix, S42, h);
    br_resolve_result res;
    assert_int_equal(br_resolver_resolve(x.r, 0, PW, h, again_cb, &c, &res), 0);
    rt_run_for(x.base, 100);
    rt_ans bulk;
    assert_int_equal(lookup(&x, 0, c.prefix, BULK, &bulk), 0);
    assert_true(rt_wait(x.base, &c.first, 1, 3000));
    assert_unknown(&c.first.res, BR_REASON_TIMEOUT);
    assert_true(rt_wait(x.base, &bulk, 1, 3000) && rt_wait(x.base, &c.again, 1, 3000));
    assert_int_equal(bulk.res.status, BR_RESOLVE_FOUND);
    assert_int_equal(c.again.res.status, BR_RESOLVE_FOUND);
    assert_int_equal(rt_fault_count(&g_fault, "slowfirst", c.prefix), 2);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.bulk_resent, 1);
    assert_int_equal(st.promoted, 1);
    fx_close(&x);
}

/* Partitions keep their fetches apart on every lane: an interactive lookup
 * of another partition neither joins nor promotes a bulk fetch. */
static void test_partitions(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "ok");
    x.cfg.upstream.rate = 10;
    x.cfg.upstream.burst = 1;
    fx_open(&x);
    enum { N = 10 };
    rt_ans bulk[N], b1, i2;
    lookup_fresh(&x, 1, BULK, bulk, N);
    uint32_t p = fresh_prefix();
    assert_int_equal(lookup(&x, 1, p, BULK, &b1), 0);
    assert_int_equal(lookup(&x, 2, p, INTER, &i2), 0);
    assert_true(rt_wait(x.base, &i2, 1, 3000));
    assert_int_equal(i2.res.status, BR_RESOLVE_FOUND);
    assert_int_equal(b1.calls, 0);
    assert_true(rt_wait(x.base, &b1, 1, 10000));
    assert_int_equal(rt_fault_count(&g_fault, "ok", p), 2);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.promoted, 0);
    assert_int_equal(st.coalesced, 0);
    assert_true(rt_wait(x.base, bulk, N, 10000));
    fx_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bulk_waits_past_deadline),
        cmocka_unit_test(test_interactive_first),
        cmocka_unit_test(test_bulk_slots),
        cmocka_unit_test(test_promote),
        cmocka_unit_test(test_bulk_outlives_interactive_deadline),
        cmocka_unit_test(test_lookup_again_from_callback),
        cmocka_unit_test(test_partitions),
    };
    return cmocka_run_group_tests(tests, fault_group_setup, fault_group_teardown);
}
