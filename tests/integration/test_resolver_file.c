/* SPDX-License-Identifier: MIT */
/* The resolver reading a generated HIBP-style mirror through file:// (no
 * server): every body style's counts, padding and absent hashes; missing,
 * empty, garbage and oversized files are errors and not cached; coalescing
 * and stale answers when a file disappears; batched cache writes; URL
 * ranges older than url_fresh_after revalidated. The same
 * mirror over nginx is test_resolver_nginx.c; the fixture (mirror, a
 * resolver per test) is mirror_fx.c. */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "config.h"
#include "mirror_fx.h"
#include "range/range_cache.h"
#include "range/resolver.h"
#include "rtest.h"

/* The fixture's defaults with the mirror read through file://. */
static void fx_init_file(fx *x)
{
    char *t = rt_fmt("file://%s/range/{prefix}.txt", g_www);
    fx_init(x, t);
    free(t);
}

/* ---- file:// ------------------------------------------------------------------------------------
 */

static void test_file_counts(void **s)
{
    (void)s;
    fx x;
    fx_init_file(&x);
    fx_open(&x);
    for (int i = 0; i < N_PREFIX; i++)
        check_range(&x, &ranges[i]);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.fetches, N_PREFIX);
    fx_close(&x);
}

static void test_file_missing_not_cached(void **s)
{
    (void)s;
    fx x;
    fx_init_file(&x);
    fx_open(&x);
    uint8_t h[20];
    rt_hash_with_prefix(PW, P_MISSING, 1, h);
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_unknown(&res, BR_REASON_ERROR);
    br_upstream_stats us = fx_up_stats(&x);
    assert_int_equal(us.transfers, 1);
    assert_int_equal(us.err_http, 1);
    assert_int_equal(rt_cache_entries(x.cache), 0);

    /* an empty file and a garbage file: errors, not cached */
    char *empty = rt_fmt("%s/range/0E0E0.txt", g_www);
    rt_write_file(empty, "", 0);
    rt_hash_with_prefix(PW, 0x0E0E0, 1, h);
    res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_unknown(&res, BR_REASON_ERROR);
    char *garbage = rt_fmt("%s/range/0E0E1.txt", g_www);
    rt_write_file(garbage, "not a range\n", 12);
    rt_hash_with_prefix(PW, 0x0E0E1, 1, h);
    res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_unknown(&res, BR_REASON_ERROR);
    assert_int_equal(rt_cache_entries(x.cache), 0);
    unlink(empty);
    unlink(garbage);
    free(empty);
    free(garbage);
    fx_close(&x);
}

static void test_file_too_large(void **s)
{
    (void)s;
    fx x;
    fx_init_file(&x);
    x.cfg.upstream.max_body = 1000; /* the mirror files are bigger */
    fx_open(&x);
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, ranges[P_CRLF_PADDED].e[0].hash);
    assert_unknown(&res, BR_REASON_ERROR);
    br_upstream_stats us = fx_up_stats(&x);
    assert_int_equal(us.err_too_large, 1);
    assert_int_equal(rt_cache_entries(x.cache), 0);
    fx_close(&x);
}

static void test_file_coalescing_and_stale(void **s)
{
    (void)s;
    fx x;
    fx_init_file(&x);
    fx_open(&x);
    const rt_range *rg = &ranges[P_COALESCE];
    enum { N = 100 };
    rt_ans a[N];
    for (int i = 0; i < N; i++)
        assert_int_equal(rt_resolve(x.r, PW, rg->e[(size_t)i % rg->n].hash, &a[i]), 0);
    assert_true(rt_wait(x.base, a, N, 10000));
    for (int i = 0; i < N; i++) {
        assert_int_equal(a[i].calls, 1);
        assert_int_equal(a[i].res.count, rg->e[(size_t)i % rg->n].count);
    }
    br_upstream_stats us = fx_up_stats(&x);
    assert_int_equal(us.transfers, 1);

    /* the file disappears: stale answers within max_stale */
    char *path = rt_fmt("%s/range/%05X.txt", g_www, rg->prefix);
    char *hidden = rt_fmt("%s.hidden", path);
    assert_int_equal(rename(path, hidden), 0);
    x.clock.now += 120;
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, rg->e[0].hash);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_true(res.stale);
    assert_int_equal(rename(hidden, path), 0);
    free(path);
    free(hidden);
    fx_close(&x);
}

/* Cache writes are batched: answers that arrive together cost one commit. */
static void test_file_batched_writes(void **s)
{
    (void)s;
    fx x;
    fx_init_file(&x);
    fx_open(&x);
    rt_ans a[N_PREFIX];
    for (int i = 0; i < N_PREFIX; i++)
        assert_int_equal(rt_resolve(x.r, PW, ranges[i].e[0].hash, &a[i]), 0);
    assert_true(rt_wait(x.base, a, N_PREFIX, 10000));
    rt_run_for(x.base, 30);
    br_range_cache_usage u;
    assert_int_equal(br_range_cache_stats(x.cache, &u), 0);
    assert_int_equal(u.entries, N_PREFIX);
    assert_int_equal(u.pending, 0);
    if (u.commits > 2)
        fail_msg("%d puts took %llu commits", N_PREFIX, (unsigned long long)u.commits);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_true(st.flushes <= 2);
    fx_close(&x);
}

/* A URL range stored at or before url_fresh_after (the URL filter's build
 * time in breachd) is not fresh: the next lookup fetches it again, after
 * which it is; when the upstream fails, it answers, stale. */
static void test_file_url_fresh_after(void **s)
{
    (void)s;
    fx x;
    fx_init_file(&x);
    x.cfg.url_upstream = x.tmpl;
    x.cfg.password_upstream = NULL;
    fx_open(&x);
    const uint8_t *h = url_range.e[0].hash;
    assert_int_equal(rt_resolve_wait(x.base, x.r, URLK, h).status, BR_RESOLVE_FOUND);
    rt_ans a;
    assert_int_equal(rt_resolve(x.r, URLK, h, &a), 1); /* fresh */

    /* A filter built in the second the range was fetched. */
    br_resolver_free(x.r);
    x.cfg.url_fresh_after = x.clock.now;
    x.clock.now += 5;
    assert_int_equal(br_resolver_new(x.base, &x.cfg, x.cache, &x.r, NULL), 0);
    memset(&a, 0, sizeof(a));
    assert_int_equal(rt_resolve(x.r, URLK, h, &a), 0); /* not fresh: fetched */
    assert_true(rt_wait(x.base, &a, 1, 10000));
    assert_int_equal(a.res.status, BR_RESOLVE_FOUND);
    assert_false(a.res.stale);
    assert_int_equal(fx_rs_stats(&x).fetches, 1);
    assert_int_equal(rt_resolve(x.r, URLK, h, &a), 1); /* fetched after it: fresh */
    assert_int_equal(fx_rs_stats(&x).fetches, 1);

    /* A newer filter, and the file gone: the stored range answers, stale. */
    br_resolver_free(x.r);
    x.cfg.url_fresh_after = x.clock.now;
    x.clock.now += 5;
    assert_int_equal(br_resolver_new(x.base, &x.cfg, x.cache, &x.r, NULL), 0);
    char *path = rt_fmt("%s/range/%05X.txt", g_www, URL_PREFIX);
    char *hidden = rt_fmt("%s.hidden", path);
    assert_int_equal(rename(path, hidden), 0);
    br_resolve_result res = rt_resolve_wait(x.base, x.r, URLK, h);
    assert_int_equal(rename(hidden, path), 0);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_true(res.from_cache);
    assert_true(res.stale);
    assert_int_equal(fx_rs_stats(&x).stale_answers, 1);
    free(path);
    free(hidden);
    fx_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_counts),
        cmocka_unit_test(test_file_missing_not_cached),
        cmocka_unit_test(test_file_too_large),
        cmocka_unit_test(test_file_coalescing_and_stale),
        cmocka_unit_test(test_file_batched_writes),
        cmocka_unit_test(test_file_url_fresh_after),
    };
    return cmocka_run_group_tests(tests, mirror_setup_files, mirror_teardown);
}
