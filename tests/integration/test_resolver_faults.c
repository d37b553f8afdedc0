/* SPDX-License-Identifier: MIT */
/* The resolver against tests/integration/faultserver: every way an upstream
 * can misbehave gives UNKNOWN (never NOT_FOUND), caches nothing, leaks
 * nothing; retries, the circuit breaker, the limits, validators, stale
 * answers and decoys. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <event2/event.h>

#include "config.h"
#include "range_cache.h"
#include "resolver.h"
#include "rtest.h"

#ifndef FAULTSERVER
#error "FAULTSERVER must name the fault server executable"
#endif

#define PW BR_RANGE_PASSWORD_SHA1
#define S42 "00000000000000000000000000000000001"
#define S7 "ABCDEF0123456789ABCDEF0123456789ABC"
#define SPAD "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
#define SNONE "123456789012345678901234567890ABCDE"

static rt_fault g_fault;
static char *g_fault_dir;
static uint32_t g_next_prefix = 0x10000;

typedef struct fx {
    struct event_base *base;
    char *dir;
    br_range_cache *cache;
    br_resolver *r;
    rt_clock clock;
    br_resolver_config cfg;
    char tmpl[128];
} fx;

static void log_fn(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (getenv("RTEST_VERBOSE"))
        fprintf(stderr, "log[%d]: %s\n", level, msg);
}

static void hash_of(uint32_t prefix, const char *suffix, uint8_t out[20])
{
    char hex[41];
    snprintf(hex, sizeof(hex), "%05X%s", prefix, suffix);
    for (int i = 0; i < 20; i++) {
        unsigned b;
        sscanf(hex + 2 * i, "%2x", &b);
        out[i] = (uint8_t)b;
    }
}

static uint32_t fresh_prefix(void)
{
    return g_next_prefix++;
}

/* Defaults for these tests: quick retries, no rate limit, a breaker that
 * stays out of the way unless a test wants it; the fault cases shorten the
 * deadline to 700 ms. */
static void fx_config(fx *x, const char *mode)
{
    memset(&x->cfg, 0, sizeof(x->cfg));
    snprintf(x->tmpl, sizeof(x->tmpl), "http://127.0.0.1:%d/%s/{prefix}", g_fault.port, mode);
    x->cfg.password_upstream = x->tmpl;
    x->cfg.upstream.timeout_ms = 3000;
    x->cfg.upstream.retry_base_ms = 20;
    x->cfg.upstream.retry_max_ms = 80;
    x->cfg.upstream.breaker_threshold = 1000;
    x->cfg.upstream.rate = -1;
    x->cfg.log = log_fn;
    x->clock.now = (int64_t)time(NULL);
    x->cfg.clock = rt_clock_fn;
    x->cfg.clock_ctx = &x->clock;
}

static void fx_open(fx *x)
{
    x->base = event_base_new();
    assert_non_null(x->base);
    x->dir = rt_mkdtemp("faults");
    char *cdir = rt_fmt("%s/cache", x->dir);
    br_error err = {{0}};
    assert_int_equal(br_range_cache_open(cdir, 16 << 20, &x->cache, &err), 0);
    free(cdir);
    int rc = br_resolver_new(x->base, &x->cfg, x->cache, &x->r, &err);
    if (rc < 0)
        fail_msg("resolver: %s", err.text);
}

static void fx_close(fx *x)
{
    br_resolver_free(x->r);
    br_range_cache_free(x->cache);
    event_base_free(x->base);
    rt_rmrf(x->dir);
    free(x->dir);
}

static void assert_unknown(const br_resolve_result *res, const char *reason)
{
    if (res->status != BR_RESOLVE_UNKNOWN)
        fail_msg("expected UNKNOWN %s, got status %d", reason, res->status);
    assert_string_equal(res->reason, reason);
}

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
    assert_int_equal(br_range_cache_lookup(x.cache, PW, h, x.clock.now, 86400, &cr), 0);
    assert_int_equal(cr.state, BR_RANGE_CACHE_MISS);
    size_t seen = rt_fault_count(&g_fault, mode, p);
    if (seen < min_requests || seen > max_requests)
        fail_msg("%s: %zu requests, expected %zu..%zu", mode, seen, min_requests, max_requests);
    br_resolver_stats st;
    br_resolver_get_stats(x.r, &st);
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
    br_upstream_stats us;
    br_upstream_get_stats(br_resolver_upstream(x.r, PW), &us);
    assert_true(us.transfers >= 2);
    assert_int_equal(us.retries, us.transfers - 1);
    assert_int_equal(us.err_unavailable, 1);
    assert_int_equal(rt_cache_entries(x.cache), 0);
    fx_close(&x);
}

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
    br_upstream_stats us;
    br_upstream_get_stats(br_resolver_upstream(x.r, PW), &us);
    assert_int_equal(us.retries, 1);
    assert_int_equal(us.ok, 1);
    assert_true(rt_cache_has(x.cache, PW, p));
    fx_close(&x);
}

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
    br_resolver_stats st;
    br_resolver_get_stats(x.r, &st);
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
    br_upstream_stats us;
    br_upstream_get_stats(br_resolver_upstream(x.r, PW), &us);
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
    br_upstream_stats us;
    br_upstream_get_stats(br_resolver_upstream(x.r, PW), &us);
    assert_int_equal(us.inflight, 1);
    assert_int_equal(us.queued, 1);
    assert_true(rt_wait(x.base, a, 2, 3000));
    assert_unknown(&a[0].res, BR_REASON_TIMEOUT);
    assert_unknown(&a[1].res, BR_REASON_TIMEOUT);
    fx_close(&x);
}

/* ---- validators, max-age, stale -------------------------------------------------------------- */

static void validators_case(const char *mode, bool etag)
{
    fx x;
    fx_config(&x, mode);
    fx_open(&x);
    uint32_t p = fresh_prefix();
    uint8_t h[20];
    hash_of(p, S42, h);
    assert_int_equal(rt_resolve_wait(x.base, x.r, PW, h).status, BR_RESOLVE_FOUND);

    br_range_cache_result cr;
    assert_int_equal(br_range_cache_lookup(x.cache, PW, h, x.clock.now, 0, &cr), 0);
    assert_int_equal(cr.state, BR_RANGE_CACHE_FRESH);
    if (etag) {
        char want[32], hex[6];
        rt_prefix_hex(p, hex);
        snprintf(want, sizeof(want), "\"v1-%s\"", hex);
        assert_string_equal(cr.etag, want);
        assert_int_equal(cr.expires_at - cr.fetched_at, 60); /* max-age=60 under the 7 d ttl */
    } else {
        assert_string_equal(cr.etag, "");
        assert_int_equal(cr.expires_at - cr.fetched_at, BR_RESOLVER_DEFAULT_TTL_S); /* no max-age */
    }
    assert_string_equal(cr.last_modified, "Wed, 21 Oct 2015 07:28:00 GMT");

    /* expire it: a conditional request, a 304, the entry extended */
    x.clock.now = cr.expires_at + 1;
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_int_equal(res.count, 42);
    assert_true(res.from_cache);
    assert_false(res.stale);
    assert_int_equal(rt_fault_count(&g_fault, mode, p), 2);
    br_resolver_stats st;
    br_resolver_get_stats(x.r, &st);
    assert_int_equal(st.revalidations, 1);
    assert_int_equal(st.not_modified, 1);
    assert_int_equal(br_range_cache_lookup(x.cache, PW, h, x.clock.now, 0, &cr), 0);
    assert_int_equal(cr.state, BR_RANGE_CACHE_FRESH);
    assert_int_equal(cr.fetched_at, x.clock.now);

    char *path = rt_fmt("%s/requests.log", g_fault_dir);
    char *log = rt_read_file(path, NULL);
    char hex[6], want[160];
    rt_prefix_hex(p, hex);
    if (etag)
        snprintf(want, sizeof(want),
                 "%s %s padding=true inm=\"v1-%s\" ims=Wed,_21_Oct_2015_07:28:00_GMT", mode, hex,
                 hex);
    else
        snprintf(want, sizeof(want), "%s %s padding=true inm=- ims=Wed,_21_Oct_2015_07:28:00_GMT",
                 mode, hex);
    assert_non_null(strstr(log, want));
    free(log);
    free(path);
    /* and a fresh answer again without a request */
    rt_ans a;
    assert_int_equal(rt_resolve(x.r, PW, h, &a), 1);
    assert_int_equal(rt_fault_count(&g_fault, mode, p), 2);
    fx_close(&x);
}

static void test_etag_304(void **s)
{
    (void)s;
    validators_case("validators", true);
}

static void test_last_modified_304(void **s)
{
    (void)s;
    validators_case("lmonly", false);
}

static void test_ttl_caps_max_age(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "validators");
    x.cfg.ttl_s = 10;
    fx_open(&x);
    uint8_t h[20];
    hash_of(fresh_prefix(), S42, h);
    assert_int_equal(rt_resolve_wait(x.base, x.r, PW, h).status, BR_RESOLVE_FOUND);
    br_range_cache_result cr;
    assert_int_equal(br_range_cache_lookup(x.cache, PW, h, x.clock.now, 0, &cr), 0);
    assert_int_equal(cr.expires_at - cr.fetched_at, 10);
    fx_close(&x);
}

static void test_stale_if_error(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "sw");
    x.cfg.ttl_s = 10;
    x.cfg.max_stale_s = 100;
    fx_open(&x);
    uint32_t p = fresh_prefix();
    uint8_t h[20], h7[20], hn[20];
    hash_of(p, S42, h);
    hash_of(p, S7, h7);
    hash_of(p, SNONE, hn);
    assert_int_equal(rt_resolve_wait(x.base, x.r, PW, h).status, BR_RESOLVE_FOUND);

    rt_fault_set_down(&g_fault, true);
    x.clock.now += 50; /* expired, within max_stale */
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h7);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_int_equal(res.count, 7);
    assert_true(res.stale);
    res = rt_resolve_wait(x.base, x.r, PW, hn);
    assert_int_equal(res.status, BR_RESOLVE_NOT_FOUND);
    assert_true(res.stale);

    x.clock.now += 100; /* past max_stale */
    res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_unknown(&res, BR_REASON_ERROR);

    /* the failures did not replace the stored entry */
    rt_fault_set_down(&g_fault, false);
    br_range_cache_result cr;
    assert_int_equal(br_range_cache_lookup(x.cache, PW, h, x.clock.now, 1000, &cr), 0);
    assert_int_equal(cr.state, BR_RANGE_CACHE_STALE);
    res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_false(res.stale);
    br_resolver_stats st;
    br_resolver_get_stats(x.r, &st);
    assert_int_equal(st.stale_answers, 2);
    fx_close(&x);
}

/* ---- coalescing of failures, decoys, shutdown -------------------------------------------------
 */

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
    br_resolver_stats st;
    br_resolver_get_stats(x.r, &st);
    assert_int_equal(st.fetches, 1);
    assert_int_equal(st.coalesced, N - 1);
    assert_int_equal(st.parse_errors, 1);
    assert_int_equal(rt_cache_entries(x.cache), 0);
    fx_close(&x);
}

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

static int group_setup(void **state)
{
    (void)state;
    rt_clean_env();
    g_fault_dir = rt_mkdtemp("faultserver");
    rt_fault_start(&g_fault, FAULTSERVER, g_fault_dir);
    srand((unsigned)time(NULL));
    g_next_prefix = 0x10000 + (uint32_t)(rand() % 0x1000) * 16;
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    rt_fault_stop(&g_fault);
    rt_rmrf(g_fault_dir);
    free(g_fault_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ok),
        cmocka_unit_test(test_no_padding),
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
        cmocka_unit_test(test_breaker),
        cmocka_unit_test(test_breaker_flushes_queue),
        cmocka_unit_test(test_rate_and_inflight),
        cmocka_unit_test(test_queued_until_deadline),
        cmocka_unit_test(test_etag_304),
        cmocka_unit_test(test_last_modified_304),
        cmocka_unit_test(test_ttl_caps_max_age),
        cmocka_unit_test(test_stale_if_error),
        cmocka_unit_test(test_coalesced_failure),
        cmocka_unit_test(test_decoys),
        cmocka_unit_test(test_free_answers_pending),
        cmocka_unit_test(test_proxy),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_no_upstream),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
