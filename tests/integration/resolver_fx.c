/* SPDX-License-Identifier: MIT */
/* The resolver fixture shared by the integration fixtures (see resolver_fx.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>
#include <event2/event.h>

#include "resolver_fx.h"

void fx_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    if (getenv("RTEST_VERBOSE"))
        fprintf(stderr, "log[%d]: %s\n", level, msg);
}

void fx_config_common(fx *x)
{
    x->cfg.log = fx_log;
    x->clock.now = (int64_t)time(NULL);
    x->cfg.clock = rt_clock_fn;
    x->cfg.clock_ctx = &x->clock;
}

void fx_open_cache(fx *x, const char *tag, size_t cache_bytes)
{
    x->base = event_base_new();
    assert_non_null(x->base);
    x->dir = rt_mkdtemp(tag);
    char *cdir = rt_fmt("%s/cache", x->dir);
    br_error err = {{0}};
    assert_int_equal(br_range_cache_open(cdir, cache_bytes, &x->cache, &err), 0);
    free(cdir);
    if (br_resolver_new(x->base, &x->cfg, x->cache, &x->r, &err) < 0)
        fail_msg("resolver: %s", err.text);
}

void fx_close(fx *x)
{
    br_resolver_free(x->r);
    br_range_cache_free(x->cache);
    event_base_free(x->base);
    rt_rmrf(x->dir);
    free(x->dir);
}

void assert_unknown(const br_resolve_result *res, const char *reason)
{
    if (res->status != BR_RESOLVE_UNKNOWN)
        fail_msg("expected UNKNOWN %s, got status %d", reason, res->status);
    assert_string_equal(res->reason, reason);
}

br_resolver_stats fx_rs_stats(fx *x)
{
    br_resolver_stats st;
    br_resolver_get_stats(x->r, &st);
    return st;
}

br_upstream_stats fx_up_stats(fx *x)
{
    br_upstream_stats us;
    br_upstream_get_stats(br_resolver_upstream(x->r, PW), &us);
    return us;
}
