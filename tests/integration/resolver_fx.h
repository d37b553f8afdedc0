/* SPDX-License-Identifier: MIT */
/* What every resolver integration fixture has (fault_fx.c, mirror_fx.c): per
 * test an event base, a range cache in a fresh temp dir and a resolver over
 * them, built from x->cfg, and the checks the tests share. */
#pragma once

#include <stddef.h>

#include "range/range_cache.h"
#include "range/resolver.h"
#include "rtest.h"

#define PW BR_RANGE_PASSWORD_SHA1

typedef struct fx {
    struct event_base *base;
    char *dir;
    br_range_cache *cache;
    br_resolver *r;
    rt_clock clock;
    br_resolver_config cfg;
    char tmpl[512];
    char url_tmpl[512];
} fx;

/* The resolver's log, on stderr when RTEST_VERBOSE is set. */
void fx_log(void *ctx, int level, const char *msg);
/* x->cfg's log and clock (x->clock, now), for a fixture's fx_config. */
void fx_config_common(fx *x);
/* Event base, cache of cache_bytes in a new temp dir named after tag, resolver. */
void fx_open_cache(fx *x, const char *tag, size_t cache_bytes);
void fx_close(fx *x); /* frees all of it, removes the temp dir */
void assert_unknown(const br_resolve_result *res, const char *reason);
/* The resolver's figures, and its password upstream's. */
br_resolver_stats fx_rs_stats(fx *x);
br_upstream_stats fx_up_stats(fx *x);
