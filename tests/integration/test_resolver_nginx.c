/* SPDX-License-Identifier: MIT */
/* The resolver against a real nginx serving a generated HIBP-style mirror on
 * 127.0.0.1: over plain HTTP/1.1 every body style's counts, padding and
 * absent hashes, 404s and 500s not cached, ETag revalidation (304) and a
 * changed file, coalescing, stale answers, keep-alive, the URL kind and the
 * privacy of the access log; over HTTPS with HTTP/2 multiplexing and
 * certificate checks. The same mirror read through file:// is
 * test_resolver_file.c; the fixture (mirror, nginx, a resolver per test) is
 * mirror_fx.c. */
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

static char *http_template(const rt_nginx *n)
{
    return rt_fmt("%s://127.0.0.1:%d/range/{prefix}", n->tls ? "https" : "http", n->port);
}

/* x set up (fx_init) for the range server n. */
static void fx_init_at(fx *x, const rt_nginx *n)
{
    char *t = http_template(n);
    fx_init(x, t);
    free(t);
}

static char *range_uri(uint32_t p)
{
    char hex[6];
    rt_prefix_hex(p, hex);
    return rt_fmt("/range/%s", hex);
}

/* ---- nginx over HTTP ------------------------------------------------------------------------- */

static void test_counts_and_padding(void **s)
{
    (void)s;
    fx x;
    fx_init_at(&x, &g_nginx);
    fx_open(&x);
    for (int i = 0; i < N_PREFIX; i++)
        if (i != P_COALESCE && i != P_STALE)
            check_range(&x, &ranges[i]);
    /* each prefix was fetched once; a second round comes from the cache, synchronously */
    for (int i = 0; i < N_PREFIX; i++) {
        if (i == P_COALESCE || i == P_STALE)
            continue;
        char *uri = range_uri(prefixes[i]);
        assert_int_equal(rt_access_count(&g_nginx, uri, 1), 1);
        rt_ans a;
        assert_int_equal(rt_resolve(x.r, PW, ranges[i].e[1].hash, &a), 1);
        assert_int_equal(a.res.count, ranges[i].e[1].count);
        assert_int_equal(rt_access_count(&g_nginx, uri, 1), 1);
        free(uri);
    }
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.fetches, 4);
    assert_int_equal(st.unknown, 0);
    fx_close(&x);
}

static void test_404_and_500_not_cached(void **s)
{
    (void)s;
    fx x;
    fx_init_at(&x, &g_nginx);
    fx_open(&x);
    uint8_t h[20];
    rt_hash_with_prefix(PW, P_MISSING, 1, h);
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_unknown(&res, BR_REASON_ERROR);
    char *uri = range_uri(P_MISSING);
    assert_int_equal(rt_access_count(&g_nginx, uri, 1), 1); /* a 404 is not retried */

    rt_hash_with_prefix(PW, P_500, 1, h);
    res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_unknown(&res, BR_REASON_ERROR);
    char *uri500 = range_uri(P_500);
    assert_int_equal(rt_access_count(&g_nginx, uri500, 3), 3); /* 5xx: retried up to max_attempts */

    assert_int_equal(rt_cache_entries(x.cache), 0);
    /* not cached: asking again asks nginx again */
    rt_hash_with_prefix(PW, P_MISSING, 2, h);
    res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_unknown(&res, BR_REASON_ERROR);
    assert_int_equal(rt_access_count(&g_nginx, uri, 2), 2);
    free(uri);
    free(uri500);
    fx_close(&x);
}

static void test_etag_revalidation(void **s)
{
    (void)s;
    fx x;
    fx_init_at(&x, &g_nginx);
    x.cfg.ttl_s = 1; /* tiny ttl; the test clock moves past it */
    fx_open(&x);
    const rt_range *rg = &ranges[P_NO_FINAL];
    char *uri = range_uri(rg->prefix);
    size_t before = rt_access_count(&g_nginx, uri, 0);
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, rg->e[0].hash);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_int_equal(res.count, rg->e[0].count);
    br_range_cache_result cr;
    assert_int_equal(br_range_cache_lookup(x.cache, 0, PW, rg->e[0].hash, x.clock.now, 0, &cr), 0);
    assert_true(strlen(cr.etag) > 2); /* nginx's ETag (weak W/"..." when gzipped) */
    assert_true(strlen(cr.last_modified) > 10);

    x.clock.now += 5;
    res = rt_resolve_wait(x.base, x.r, PW, rg->e[2].hash);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_int_equal(res.count, rg->e[2].count);
    assert_true(res.from_cache);
    assert_false(res.stale);
    assert_int_equal(rt_access_count(&g_nginx, uri, before + 2), before + 2);

    /* nginx really answered 304 */
    size_t count;
    char **lines = rt_access_lines(&g_nginx, &count);
    bool saw304 = false;
    for (size_t i = 0; i < count; i++) {
        char st[8], u[256];
        if (sscanf(lines[i], "%7s %255s", st, u) == 2 && !strcmp(u, uri) && !strcmp(st, "304"))
            saw304 = true;
    }
    rt_free_lines(lines, count);
    assert_true(saw304);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.not_modified, 1);
    assert_int_equal(br_range_cache_lookup(x.cache, 0, PW, rg->e[0].hash, x.clock.now, 0, &cr), 0);
    assert_int_equal(cr.state, BR_RANGE_CACHE_FRESH);
    assert_int_equal(cr.fetched_at, x.clock.now);

    /* a changed file gets a new ETag: 200, the new content */
    rt_range changed;
    rt_range_gen(&changed, PW, rg->prefix, 20, 0, 999);
    char *path = rt_fmt("%s/range/%05X.txt", g_nginx.www, rg->prefix);
    char *tmp = rt_fmt("%s.tmp", path);
    rt_range_write(&changed, 0, tmp);
    assert_int_equal(rename(tmp, path), 0);
    x.clock.now += 5;
    res = rt_resolve_wait(x.base, x.r, PW, changed.e[3].hash);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_int_equal(res.count, changed.e[3].count);
    assert_false(res.from_cache);
    rt_ans a;
    assert_int_equal(rt_resolve(x.r, PW, rg->e[0].hash, &a), 1);
    assert_int_equal(a.res.status, BR_RESOLVE_NOT_FOUND);
    rt_range_write(rg, styles[P_NO_FINAL], tmp); /* put the original back */
    assert_int_equal(rename(tmp, path), 0);
    rt_range_free(&changed);
    free(path);
    free(tmp);
    free(uri);
    fx_close(&x);
}

static void test_coalescing(void **s)
{
    (void)s;
    fx x;
    fx_init_at(&x, &g_nginx);
    fx_open(&x);
    const rt_range *rg = &ranges[P_COALESCE];
    enum { N = 100 };
    rt_ans a[N];
    uint8_t h[N][20];
    for (int i = 0; i < N; i++) {
        if (i % 2 == 0)
            memcpy(h[i], rg->e[(size_t)i % rg->n].hash, 20);
        else
            rt_absent_hash(rg, (uint64_t)i, h[i]);
        assert_int_equal(rt_resolve(x.r, PW, h[i], &a[i]), 0);
    }
    assert_true(rt_wait(x.base, a, N, 10000));
    for (int i = 0; i < N; i++) {
        assert_int_equal(a[i].calls, 1);
        if (i % 2 == 0) {
            assert_int_equal(a[i].res.status, BR_RESOLVE_FOUND);
            assert_int_equal(a[i].res.count, rg->e[(size_t)i % rg->n].count);
        } else {
            assert_int_equal(a[i].res.status, BR_RESOLVE_NOT_FOUND);
        }
    }
    char *uri = range_uri(rg->prefix);
    assert_int_equal(rt_access_count(&g_nginx, uri, 1), 1);
    free(uri);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.fetches, 1);
    assert_int_equal(st.coalesced, N - 1);
    fx_close(&x);
}

static void test_stale_when_upstream_fails(void **s)
{
    (void)s;
    fx x;
    fx_init_at(&x, &g_nginx);
    x.cfg.max_stale_s = 1000;
    fx_open(&x);
    const rt_range *rg = &ranges[P_STALE];
    assert_int_equal(rt_resolve_wait(x.base, x.r, PW, rg->e[0].hash).status, BR_RESOLVE_FOUND);
    char *path = rt_fmt("%s/range/%05X.txt", g_nginx.www, rg->prefix);
    char *hidden = rt_fmt("%s.hidden", path);
    assert_int_equal(rename(path, hidden), 0); /* now a 404 */
    x.clock.now += 100;
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, rg->e[1].hash);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_int_equal(res.count, rg->e[1].count);
    assert_true(res.stale);
    x.clock.now += 2000;
    res = rt_resolve_wait(x.base, x.r, PW, rg->e[1].hash);
    assert_unknown(&res, BR_REASON_ERROR);
    assert_int_equal(rename(hidden, path), 0);
    free(path);
    free(hidden);
    fx_close(&x);
}

/* Keep-alive: one connection carries many requests. */
static void test_connection_reuse(void **s)
{
    (void)s;
    fx x;
    fx_init_at(&x, &g_nginx);
    fx_open(&x);
    size_t before = rt_access_count(&g_nginx, NULL, 0);
    for (int i = 0; i < N_PREFIX; i++) {
        br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, ranges[i].e[0].hash);
        assert_int_equal(res.status, BR_RESOLVE_FOUND);
    }
    assert_int_equal(rt_access_count(&g_nginx, NULL, before + N_PREFIX), before + N_PREFIX);
    size_t count;
    char **lines = rt_access_lines(&g_nginx, &count);
    unsigned long conn0 = 0;
    for (size_t i = before; i < count; i++) {
        char st[8], u[256];
        unsigned long conn, reqs;
        assert_int_equal(sscanf(lines[i], "%7s %255s %lu %lu", st, u, &conn, &reqs), 4);
        if (i == before)
            conn0 = conn;
        assert_int_equal(conn, conn0);
        assert_int_equal(reqs, i - before + 1);
    }
    rt_free_lines(lines, count);
    fx_close(&x);
}

/* URL kind: 59-hex suffixes with categories. */
static void test_url_kind(void **s)
{
    (void)s;
    fx x;
    fx_init_at(&x, &g_nginx);
    x.cfg.url_upstream = x.tmpl;
    x.cfg.password_upstream = NULL;
    fx_open(&x);
    check_range(&x, &url_range);
    fx_close(&x);
}

/* Privacy and headers: only /range/XXXXX, always Add-Padding, our User-Agent. */
static void test_access_log_privacy(void **s)
{
    (void)s;
    size_t count;
    char **lines = rt_access_lines(&g_nginx, &count);
    assert_true(count > 10);
    regex_t re;
    char *pat = rt_fmt("^[0-9]{3} /range/[0-9A-F]{5} [0-9]+ [0-9]+ HTTP/1\\.1 true breachd/%s$",
                       BREACHD_VERSION);
    assert_int_equal(regcomp(&re, pat, REG_EXTENDED | REG_NOSUB), 0);
    for (size_t i = 0; i < count; i++)
        if (regexec(&re, lines[i], 0, NULL, 0) != 0)
            fail_msg("access log line %zu does not match: %s", i, lines[i]);
    regfree(&re);
    free(pat);
    /* no full hash (or longer hex) anywhere in the log */
    char *all = rt_read_file(g_nginx.access_log, NULL);
    regex_t hex;
    assert_int_equal(regcomp(&hex, "[0-9A-Fa-f]{6,}", REG_EXTENDED | REG_NOSUB), 0);
    assert_int_not_equal(regexec(&hex, all, 0, NULL, 0), 0);
    regfree(&hex);
    free(all);
    rt_free_lines(lines, count);
}

/* ---- nginx over HTTPS + HTTP/2 ------------------------------------------------------------------
 */

static void test_https_http2(void **s)
{
    (void)s;
    if (access("/usr/bin/openssl", X_OK) != 0)
        skip(); /* needs the openssl command to make a certificate */
    char *dir = rt_fmt("%s/tls", g_dir);
    mkdir(dir, 0755);
    rt_nginx tls;
    rt_nginx_start(&tls, dir, true);
    for (int i = 0; i < N_PREFIX; i++) {
        char *path = rt_fmt("%s/range/%05X.txt", tls.www, prefixes[i]);
        rt_range_write(&ranges[i], styles[i], path);
        free(path);
    }

    fx x;
    fx_init_at(&x, &tls);
    x.cfg.upstream.ca_file = tls.cert;
    fx_open(&x);
    rt_ans a[N_PREFIX];
    for (int i = 0; i < N_PREFIX; i++)
        assert_int_equal(rt_resolve(x.r, PW, ranges[i].e[0].hash, &a[i]), 0);
    assert_true(rt_wait(x.base, a, N_PREFIX, 10000));
    for (int i = 0; i < N_PREFIX; i++) {
        assert_int_equal(a[i].res.status, BR_RESOLVE_FOUND);
        assert_int_equal(a[i].res.count, ranges[i].e[0].count);
    }
    assert_int_equal(rt_access_count(&tls, NULL, N_PREFIX), N_PREFIX);
    size_t count;
    char **lines = rt_access_lines(&tls, &count);
    unsigned long conn0 = 0;
    for (size_t i = 0; i < count; i++) {
        char st[8], u[256], proto[32];
        unsigned long conn, reqs;
        assert_int_equal(sscanf(lines[i], "%7s %255s %lu %lu %31s", st, u, &conn, &reqs, proto), 5);
        assert_string_equal(proto, "HTTP/2.0");
        if (i == 0)
            conn0 = conn;
        assert_int_equal(conn, conn0); /* multiplexed on one connection */
    }
    rt_free_lines(lines, count);
    fx_close(&x);

    /* without the CA: verification fails, nothing is answered from it */
    fx_init_at(&x, &tls);
    fx_open(&x);
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, ranges[0].e[0].hash);
    assert_unknown(&res, BR_REASON_UNAVAILABLE);
    br_upstream_stats us = fx_up_stats(&x);
    assert_int_equal(us.transfers, 1); /* a certificate problem is not retried */
    fx_close(&x);

    rt_nginx_stop(&tls);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_padding),
        cmocka_unit_test(test_404_and_500_not_cached),
        cmocka_unit_test(test_etag_revalidation),
        cmocka_unit_test(test_coalescing),
        cmocka_unit_test(test_stale_when_upstream_fails),
        cmocka_unit_test(test_connection_reuse),
        cmocka_unit_test(test_url_kind),
        cmocka_unit_test(test_access_log_privacy),
        cmocka_unit_test(test_https_http2),
    };
    if (access("/usr/sbin/nginx", X_OK) != 0) {
        printf("SKIP: /usr/sbin/nginx is missing (Debian package nginx-light)\n");
        return 77;
    }
    return cmocka_run_group_tests(tests, mirror_setup_nginx, mirror_teardown);
}
