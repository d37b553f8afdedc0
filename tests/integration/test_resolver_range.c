/* SPDX-License-Identifier: MIT */
/* Whole-range lookups (br_resolver_resolve_range) over the generated mirror
 * read through file:// (mirror_fx.c): the range set written back out
 * (range_format.h) is the mirror's body without its padding, sorted, in
 * HIBP's spelling; range and one-hash lookups of a partition share cache
 * entries and fetches, never another partition's; stale answers, errors and
 * no upstream. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "mirror_fx.h"
#include "range/range_format.h"
#include "range/resolver.h"
#include "rtest.h"

typedef struct range_ans {
    int calls;
    bool sync;
    char *reason; /* strdup'd, NULL for a range */
    char *body;   /* the range set formatted, malloc'd */
    size_t body_len;
    bool from_cache, stale;
    int64_t fetched_at, expires_at;
} range_ans;

static void range_cb(void *ctx, const br_range_answer *a)
{
    range_ans *r = ctx;
    r->calls++;
    r->from_cache = a->from_cache;
    r->stale = a->stale;
    r->fetched_at = a->fetched_at;
    r->expires_at = a->expires_at;
    if (a->reason) {
        r->reason = strdup(a->reason);
        return;
    }
    assert_non_null(a->value);
    assert_non_null(a->etag);
    assert_non_null(a->last_modified);
    size_t max;
    assert_int_equal(br_range_format_size(PW, a->value, a->len, NULL, &max), 0);
    r->body = malloc(max + 1);
    assert_int_equal(br_range_format(PW, a->value, a->len, r->body, max + 1, &r->body_len), 0);
    r->body[r->body_len] = '\0';
}

static int resolve(fx *x, uint32_t partition, uint32_t prefix, range_ans *r)
{
    memset(r, 0, sizeof(*r));
    int rc = br_resolver_resolve_range(x->r, partition, PW, prefix, range_cb, r);
    if (rc == 1) {
        assert_int_equal(r->calls, 1);
        r->sync = true;
    } else if (rc == 0) {
        assert_int_equal(r->calls, 0); /* never from inside the call */
    }
    return rc;
}

static void wait_range(fx *x, range_ans *r)
{
    double end = rt_now() + 10;
    while (r->calls == 0 && rt_now() < end)
        event_base_loop(x->base, EVLOOP_ONCE);
    assert_int_equal(r->calls, 1);
}

static void ans_free(range_ans *r)
{
    free(r->reason);
    free(r->body);
}

static int entry_cmp(const void *a, const void *b)
{
    return memcmp(((const rt_entry *)a)->hash, ((const rt_entry *)b)->hash, 20);
}

/* What HIBP serves for rg: its real entries sorted, uppercase, CRLF between lines. */
static char *expected_body(const rt_range *rg, size_t *len)
{
    rt_range sorted = *rg;
    sorted.e = malloc(rg->n * sizeof(*rg->e));
    memcpy(sorted.e, rg->e, rg->n * sizeof(*rg->e));
    qsort(sorted.e, sorted.n, sizeof(*sorted.e), entry_cmp);
    char *body = rt_range_body(&sorted, RT_NO_FINAL_NL, len);
    free(sorted.e);
    return body;
}

static void assert_body(const range_ans *r, const rt_range *rg)
{
    if (r->reason)
        fail_msg("prefix %05X: UNKNOWN %s", rg->prefix, r->reason);
    size_t len;
    char *want = expected_body(rg, &len);
    assert_int_equal(r->body_len, len);
    assert_memory_equal(r->body, want, len);
    free(want);
}

static void fx_init_file(fx *x)
{
    char *t = rt_fmt("file://%s/range/{prefix}.txt", g_www);
    fx_init(x, t);
    free(t);
}

/* Every body style of the mirror comes back in HIBP's own spelling. */
static void test_range_bodies(void **s)
{
    (void)s;
    fx x;
    fx_init_file(&x);
    fx_open(&x);
    for (int i = 0; i < N_PREFIX; i++) {
        range_ans r;
        assert_int_equal(resolve(&x, 0, prefixes[i], &r), 0);
        wait_range(&x, &r);
        assert_body(&r, &ranges[i]);
        assert_false(r.from_cache);
        assert_int_equal(r.fetched_at, x.clock.now);
        assert_int_equal(r.expires_at, x.clock.now + 60);
        ans_free(&r);
        /* the second time: fresh from the cache, at once */
        assert_int_equal(resolve(&x, 0, prefixes[i], &r), 1);
        assert_body(&r, &ranges[i]);
        assert_true(r.from_cache);
        assert_false(r.stale);
        ans_free(&r);
    }
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.range_lookups, 2 * N_PREFIX);
    assert_int_equal(st.lookups, 0);
    assert_int_equal(st.fetches, N_PREFIX);
    assert_int_equal(st.cache_fresh, N_PREFIX);
    fx_close(&x);
}

/* Range and one-hash lookups of one partition share a fetch and the entry;
 * another partition shares neither. */
static void test_range_partitions(void **s)
{
    (void)s;
    fx x;
    fx_init_file(&x);
    fx_open(&x);
    const rt_range *rg = &ranges[P_COALESCE];
    rt_ans h;
    range_ans r1, r2, other;
    assert_int_equal(rt_resolve_in(x.r, 7, PW, rg->e[0].hash, &h), 0);
    assert_int_equal(resolve(&x, 7, rg->prefix, &r1), 0);
    assert_int_equal(resolve(&x, 7, rg->prefix, &r2), 0);
    assert_int_equal(resolve(&x, 8, rg->prefix, &other), 0);
    wait_range(&x, &r1);
    wait_range(&x, &r2);
    wait_range(&x, &other);
    assert_true(rt_wait(x.base, &h, 1, 10000));
    assert_int_equal(h.res.status, BR_RESOLVE_FOUND);
    assert_body(&r1, rg);
    assert_body(&r2, rg);
    assert_body(&other, rg);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.fetches, 2); /* partition 7 once, partition 8 once */
    assert_int_equal(st.coalesced, 2);
    ans_free(&r1);
    ans_free(&r2);
    ans_free(&other);

    /* partition 7's entry answers its hash lookups; partition 9 has none */
    assert_int_equal(rt_resolve_in(x.r, 7, PW, rg->e[1].hash, &h), 1);
    assert_int_equal(h.res.count, rg->e[1].count);
    assert_int_equal(rt_resolve_in(x.r, 9, PW, rg->e[1].hash, &h), 0);
    assert_true(rt_wait(x.base, &h, 1, 10000));
    assert_true(rt_cache_has(x.cache, PW, rg->prefix));
    fx_close(&x);
}

/* The upstream fails: a stored range within max_stale answers (stale), an
 * older one or none gives UNKNOWN; failures are not cached. */
static void test_range_failures(void **s)
{
    (void)s;
    fx x;
    fx_init_file(&x);
    x.cfg.max_stale_s = 100;
    fx_open(&x);
    const rt_range *rg = &ranges[P_STALE];
    range_ans r;
    assert_int_equal(resolve(&x, 0, rg->prefix, &r), 0);
    wait_range(&x, &r);
    assert_body(&r, rg);
    ans_free(&r);

    char *path = rt_fmt("%s/range/%05X.txt", g_www, rg->prefix);
    char *hidden = rt_fmt("%s.hidden", path);
    assert_int_equal(rename(path, hidden), 0);
    x.clock.now += 120; /* past ttl (60), within max_stale */
    assert_int_equal(resolve(&x, 0, rg->prefix, &r), 0);
    wait_range(&x, &r);
    assert_body(&r, rg);
    assert_true(r.stale);
    assert_true(r.from_cache);
    ans_free(&r);
    x.clock.now += 100; /* past max_stale */
    assert_int_equal(resolve(&x, 0, rg->prefix, &r), 0);
    wait_range(&x, &r);
    assert_non_null(r.reason);
    assert_string_equal(r.reason, BR_REASON_ERROR);
    assert_null(r.body);
    ans_free(&r);
    assert_int_equal(rename(hidden, path), 0);
    free(path);
    free(hidden);

    /* a prefix without a file: UNKNOWN, nothing cached */
    assert_int_equal(resolve(&x, 0, P_MISSING, &r), 0);
    wait_range(&x, &r);
    assert_string_equal(r.reason, BR_REASON_ERROR);
    ans_free(&r);
    assert_false(rt_cache_has(x.cache, PW, P_MISSING));

    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.stale_answers, 1);
    assert_int_equal(st.unknown_error, 2);
    fx_close(&x);
}

/* No upstream for the kind: UNKNOWN upstream-unavailable at once; bad
 * arguments: -EINVAL without a callback. */
static void test_range_no_upstream(void **s)
{
    (void)s;
    fx x;
    fx_init(&x, "");
    x.cfg.password_upstream = NULL;
    fx_open(&x);
    range_ans r;
    assert_int_equal(resolve(&x, 0, 0x12345, &r), 1);
    assert_string_equal(r.reason, BR_REASON_UNAVAILABLE);
    ans_free(&r);
    assert_int_equal(resolve(&x, 0, 0x100000, &r), -EINVAL);
    assert_int_equal(r.calls, 0);
    assert_int_equal(br_resolver_resolve_range(x.r, 0, (br_range_kind)9, 1, range_cb, &r), -EINVAL);
    assert_int_equal(br_resolver_resolve_range(x.r, 0, PW, 1, NULL, &r), -EINVAL);
    assert_int_equal(r.calls, 0);
    fx_close(&x);
}

/* br_resolver_peek_range's callback: records the answer as range_cb does,
 * and takes it when r->take. */
typedef struct peek_ans {
    range_ans a;
    bool take;
} peek_ans;

static bool peek_cb(void *ctx, const br_range_answer *a)
{
    peek_ans *p = ctx;
    range_cb(&p->a, a);
    return p->take;
}

static int peek(fx *x, uint32_t partition, uint32_t prefix, bool take, peek_ans *p)
{
    ans_free(&p->a);
    memset(p, 0, sizeof(*p));
    p->take = take;
    return br_resolver_peek_range(x->r, partition, PW, prefix, peek_cb, p);
}

/* A peek answers from a fresh entry of the partition alone, and is counted
 * only when its callback takes the answer; it never fetches. */
static void test_range_peek(void **s)
{
    (void)s;
    fx x;
    fx_init_file(&x);
    fx_open(&x);
    const rt_range *rg = &ranges[0];
    peek_ans p = {0};
    assert_int_equal(peek(&x, 0, rg->prefix, true, &p), 0); /* nothing stored */
    assert_int_equal(p.a.calls, 0);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.range_lookups + st.fetches, 0);
    range_ans r;
    assert_int_equal(resolve(&x, 0, rg->prefix, &r), 0);
    wait_range(&x, &r);
    ans_free(&r);
    assert_int_equal(peek(&x, 0, rg->prefix, false, &p), 0); /* declined */
    assert_int_equal(p.a.calls, 1);
    st = fx_rs_stats(&x);
    assert_int_equal(st.range_lookups, 1);
    assert_int_equal(st.cache_fresh, 0);
    assert_int_equal(peek(&x, 0, rg->prefix, true, &p), 1); /* taken */
    assert_body(&p.a, rg);
    assert_true(p.a.from_cache);
    assert_false(p.a.stale);
    st = fx_rs_stats(&x);
    assert_int_equal(st.range_lookups, 2);
    assert_int_equal(st.cache_fresh, 1);
    assert_int_equal(peek(&x, 5, rg->prefix, true, &p), 0); /* another partition's */
    assert_int_equal(p.a.calls, 0);
    x.clock.now += 61; /* past its freshness: a stale entry is not offered */
    assert_int_equal(peek(&x, 0, rg->prefix, true, &p), 0);
    assert_int_equal(p.a.calls, 0);
    assert_int_equal(peek(&x, 0, 0x100000, true, &p), -EINVAL);
    st = fx_rs_stats(&x);
    assert_int_equal(st.range_lookups, 2);
    assert_int_equal(st.fetches, 1);
    ans_free(&p.a);
    fx_close(&x);
}

/* Pending range lookups are answered shutting-down when the resolver goes. */
static void test_range_shutdown(void **s)
{
    (void)s;
    fx x;
    fx_init_file(&x);
    fx_open(&x);
    range_ans r;
    assert_int_equal(resolve(&x, 0, prefixes[0], &r), 0);
    br_resolver_free(x.r);
    x.r = NULL;
    assert_int_equal(r.calls, 1);
    assert_string_equal(r.reason, BR_REASON_SHUTTING_DOWN);
    ans_free(&r);
    fx_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_bodies),   cmocka_unit_test(test_range_partitions),
        cmocka_unit_test(test_range_failures), cmocka_unit_test(test_range_no_upstream),
        cmocka_unit_test(test_range_shutdown), cmocka_unit_test(test_range_peek),
    };
    return cmocka_run_group_tests(tests, mirror_setup_files, mirror_teardown);
}
