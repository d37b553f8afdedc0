/* SPDX-License-Identifier: MIT */
/* The resolver's validators and expiry against tests/integration/faultserver:
 * ETag and Last-Modified give conditional requests and 304s that extend the
 * entry, the configured ttl is the expiry whatever max-age says (a burst's
 * members share one expiry, docs/upstream.md "Decoys"), and an expired entry is
 * answered stale (within max_stale) when the upstream fails, without being
 * replaced. Fixture: fault_fx.c (one fault server for this program, a
 * resolver per test). */
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
    assert_int_equal(br_range_cache_lookup(x.cache, 0, PW, h, x.clock.now, 0, &cr), 0);
    assert_int_equal(cr.state, BR_RANGE_CACHE_FRESH);
    if (etag) {
        char want[32], hex[6];
        rt_prefix_hex(p, hex);
        snprintf(want, sizeof(want), "\"v1-%s\"", hex);
        assert_string_equal(cr.etag, want);
    } else {
        assert_string_equal(cr.etag, "");
    }
    /* max-age=60 (validators) or none (lmonly): the ttl either way */
    assert_int_equal(cr.expires_at - cr.fetched_at, BR_RESOLVER_DEFAULT_TTL_S);
    assert_string_equal(cr.last_modified, "Wed, 21 Oct 2015 07:28:00 GMT");

    /* expire it: a conditional request, a 304, the entry extended */
    x.clock.now = cr.expires_at + 1;
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_int_equal(res.count, 42);
    assert_true(res.from_cache);
    assert_false(res.stale);
    assert_int_equal(rt_fault_count(&g_fault, mode, p), 2);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.revalidations, 1);
    assert_int_equal(st.not_modified, 1);
    assert_int_equal(br_range_cache_lookup(x.cache, 0, PW, h, x.clock.now, 0, &cr), 0);
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

/* The ttl, shorter or longer than max-age, is the expiry. */
static void test_ttl_not_max_age(void **s)
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
    assert_int_equal(br_range_cache_lookup(x.cache, 0, PW, h, x.clock.now, 0, &cr), 0);
    assert_int_equal(cr.expires_at - cr.fetched_at, 10);
    fx_close(&x);
    fx_config(&x, "validators"); /* max-age=60 */
    x.cfg.ttl_s = 600;
    fx_open(&x);
    hash_of(fresh_prefix(), S42, h);
    assert_int_equal(rt_resolve_wait(x.base, x.r, PW, h).status, BR_RESOLVE_FOUND);
    assert_int_equal(br_range_cache_lookup(x.cache, 0, PW, h, x.clock.now, 0, &cr), 0);
    assert_int_equal(cr.expires_at - cr.fetched_at, 600);
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
    assert_int_equal(br_range_cache_lookup(x.cache, 0, PW, h, x.clock.now, 1000, &cr), 0);
    assert_int_equal(cr.state, BR_RANGE_CACHE_STALE);
    res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_int_equal(res.status, BR_RESOLVE_FOUND);
    assert_false(res.stale);
    br_resolver_stats st = fx_rs_stats(&x);
    assert_int_equal(st.stale_answers, 2);
    fx_close(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_etag_304),
        cmocka_unit_test(test_last_modified_304),
        cmocka_unit_test(test_ttl_not_max_age),
        cmocka_unit_test(test_stale_if_error),
    };
    return cmocka_run_group_tests(tests, fault_group_setup, fault_group_teardown);
}
