/* SPDX-License-Identifier: MIT */
/* Adversary tests: can a hostile upstream single the real prefix out of its
 * decoy burst (docs/upstream.md "Decoys", docs/privacy.md)? Against
 * tests/integration/faultserver, whose requests.log is what the upstream
 * sees. A burst is the real prefix and its decoys; every test makes the
 * upstream (or an outage) try to split one, and checks that the real prefix
 * never goes out alone, nor as the one conditional request among
 * unconditional ones:
 *   - a short Cache-Control max-age on one member (the members share one
 *     expiry, so nothing of the burst goes out early);
 *   - the half-open circuit's trial after an outage (the trial is a whole
 *     burst);
 *   - a bulk lookup's fetch sent again after the interactive deadline (sent
 *     again with its decoys);
 *   - a URL feed update that changes the decoy population and makes the
 *     stored ranges older than the filter (the burst goes out alike).
 * And the circuit's changes of state are all in the log, without a prefix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "decoys.h"
#include "fault_fx.h"
#include "range_cache.h"
#include "resolver.h"
#include "rtest.h"

#define DECOYS 3
#define MAXREQ 64

typedef struct reqs {
    size_t n;
    uint32_t prefix[MAXREQ];
    bool cond[MAXREQ];
} reqs;

/* The requests.log lines from line `from` on (0-based). */
static void log_from(size_t from, reqs *out)
{
    char *path = rt_fmt("%s/requests.log", g_fault_dir);
    FILE *f = fopen(path, "r");
    free(path);
    memset(out, 0, sizeof(*out));
    if (!f)
        return;
    char line[1024];
    size_t i = 0;
    while (fgets(line, sizeof(line), f)) {
        if (i++ < from)
            continue;
        char mode[64], pfx[16];
        assert_int_equal(sscanf(line, "%63s %15s", mode, pfx), 2);
        assert_true(out->n < MAXREQ);
        out->prefix[out->n] = (uint32_t)strtoul(pfx, NULL, 16);
        out->cond[out->n] = strstr(line, " inm=-") == NULL;
        out->n++;
    }
    fclose(f);
}

static size_t log_count(void)
{
    reqs r;
    log_from(0, &r);
    return r.n;
}

static bool has(const reqs *r, uint32_t p)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->prefix[i] == p)
            return true;
    return false;
}

/* What the upstream must never see of real prefix p: p alone, or p as a
 * conditional request among unconditional ones (or the reverse). */
static void assert_not_singled_out(const reqs *r, uint32_t p, const char *when)
{
    if (!has(r, p))
        return;
    if (r->n == 1)
        fail_msg("%s: the real prefix %05X went out alone (conditional: %d)", when, p, r->cond[0]);
    bool real_cond = false;
    for (size_t i = 0; i < r->n; i++)
        if (r->prefix[i] == p)
            real_cond = r->cond[i];
    for (size_t i = 0; i < r->n; i++)
        if (r->cond[i] != real_cond)
            fail_msg("%s: the real prefix %05X went %sconditional among %zu requests, %05X "
                     "%sconditional",
                     when, p, real_cond ? "" : "un", r->n, r->prefix[i], r->cond[i] ? "" : "un");
}

static void set_short(uint32_t p)
{
    char *path = rt_fmt("%s/short", g_fault_dir);
    char hex[8];
    snprintf(hex, sizeof(hex), "%05X\n", p);
    rt_write_file(path, hex, strlen(hex));
    free(path);
}

/* The upstream gives the real prefix max-age=1 and the decoys max-age=60:
 * a lookup 5 s later must not send it alone and conditional (the burst
 * shares one expiry, so nothing goes out; after the ttl, all of it). */
static void test_max_age_cannot_split(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "splitage");
    x.cfg.decoys = DECOYS;
    x.cfg.ttl_s = 60;
    fx_open(&x);
    uint32_t p = fresh_prefix();
    set_short(p);
    uint8_t h[20];
    hash_of(p, S42, h);
    size_t l0 = log_count();
    assert_int_equal(rt_resolve_wait(x.base, x.r, PW, h).status, BR_RESOLVE_FOUND);
    rt_run_for(x.base, 200);
    reqs r;
    log_from(l0, &r);
    assert_int_equal(r.n, DECOYS + 1);

    x.clock.now += 5;
    size_t l1 = log_count();
    assert_int_equal(rt_resolve_wait(x.base, x.r, PW, h).status, BR_RESOLVE_FOUND);
    rt_run_for(x.base, 200);
    log_from(l1, &r);
    assert_not_singled_out(&r, p, "5 s later");
    assert_int_equal(r.n, 0);

    /* After the ttl: the whole burst, all of it conditional. */
    x.clock.now += 60;
    size_t l2 = log_count();
    assert_int_equal(rt_resolve_wait(x.base, x.r, PW, h).status, BR_RESOLVE_FOUND);
    rt_run_for(x.base, 200);
    log_from(l2, &r);
    assert_not_singled_out(&r, p, "after the ttl");
    assert_int_equal(r.n, DECOYS + 1);
    assert_true(r.cond[0]);
    char *path = rt_fmt("%s/short", g_fault_dir);
    unlink(path);
    free(path);
    fx_close(&x);
}

static void set_down(bool down)
{
    rt_fault_set_down(&g_fault, down);
}

/* An outage opens the circuit; after the cool-down, the first lookup is the
 * half-open trial: the upstream must see it among its decoys. */
static void test_trial_is_a_burst(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "sw");
    x.cfg.decoys = DECOYS;
    x.cfg.upstream.breaker_threshold = 1;
    x.cfg.upstream.breaker_cooldown_ms = 300;
    x.cfg.upstream.max_attempts = 1;
    fx_open(&x);
    set_down(true);
    uint8_t h[20];
    hash_of(fresh_prefix(), S42, h);
    br_resolve_result res = rt_resolve_wait(x.base, x.r, PW, h);
    assert_int_equal(res.status, BR_RESOLVE_UNKNOWN);
    assert_int_equal(br_upstream_breaker(br_resolver_upstream(x.r, PW)), BR_BREAKER_OPEN);
    set_down(false);
    rt_run_for(x.base, 400);
    assert_int_equal(br_upstream_breaker(br_resolver_upstream(x.r, PW)), BR_BREAKER_HALF_OPEN);

    uint32_t p = fresh_prefix();
    hash_of(p, S42, h);
    size_t l0 = log_count();
    rt_ans trial, other;
    assert_int_equal(rt_resolve(x.r, PW, h, &trial), 0);
    /* One trial at a time: a second burst while it runs is refused. */
    uint8_t h2[20];
    hash_of(fresh_prefix(), S42, h2);
    assert_int_equal(rt_resolve(x.r, PW, h2, &other), 1);
    assert_unknown(&other.res, BR_REASON_CIRCUIT_OPEN);
    assert_true(rt_wait(x.base, &trial, 1, 5000));
    assert_int_equal(trial.res.status, BR_RESOLVE_FOUND);
    rt_run_for(x.base, 200);
    reqs r;
    log_from(l0, &r);
    assert_not_singled_out(&r, p, "the half-open trial");
    assert_int_equal(r.n, DECOYS + 1);
    assert_int_equal(br_upstream_breaker(br_resolver_upstream(x.r, PW)), BR_BREAKER_CLOSED);
    fx_close(&x);
}

/* A bulk lookup joined an interactive fetch that ends by its deadline (the
 * mode's first request of a prefix takes 3 s): the fetch sent again on the
 * bulk lane carries its decoys too. */
static void test_bulk_resend_has_decoys(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "slowfirst");
    x.cfg.decoys = DECOYS;
    x.cfg.upstream.timeout_ms = 800;
    x.cfg.upstream.max_attempts = 1;
    fx_open(&x);
    uint32_t p = fresh_prefix();
    uint8_t h[20];
    hash_of(p, S42, h);
    size_t l0 = log_count();
    rt_ans inter, bulk;
    memset(&inter, 0, sizeof(inter));
    memset(&bulk, 0, sizeof(bulk));
    br_resolve_result res;
    assert_int_equal(
        br_resolver_resolve_lane(x.r, 0, PW, h, BR_LANE_INTERACTIVE, rt_ans_cb, &inter, &res), 0);
    rt_run_for(x.base, 100);
    assert_int_equal(br_resolver_resolve_lane(x.r, 0, PW, h, BR_LANE_BULK, rt_ans_cb, &bulk, &res),
                     0);
    assert_true(rt_wait(x.base, &inter, 1, 3000));
    assert_true(rt_wait(x.base, &bulk, 1, 5000));
    assert_int_equal(bulk.res.status, BR_RESOLVE_FOUND);
    rt_run_for(x.base, 300);
    reqs r, again;
    log_from(l0, &r);
    assert_int_equal(r.n >= DECOYS + 1, true);
    log_from(l0 + DECOYS + 1, &again);
    assert_not_singled_out(&again, p, "the fetch sent again on the bulk lane");
    assert_int_equal(again.n, DECOYS + 1);
    for (size_t i = 0; i < again.n; i++)
        assert_true(has(&r, again.prefix[i])); /* the same burst */
    fx_close(&x);
}

/* The log lines of the circuit, with their levels. */
typedef struct logcap {
    int n;
    int level[16];
    char line[16][256];
} logcap;

static void cap_log(void *ctx, int level, const char *msg)
{
    logcap *c = ctx;
    if (!strstr(msg, "circuit") || c->n >= 16)
        return;
    c->level[c->n] = level;
    snprintf(c->line[c->n], sizeof(c->line[0]), "%s", msg);
    c->n++;
}

static void expect_line(const logcap *c, int i, int level, const char *text)
{
    if (i >= c->n)
        fail_msg("log line %d missing (want \"%s\")", i, text);
    if (c->level[i] != level || !strstr(c->line[i], text))
        fail_msg("log line %d: level %d \"%s\", want level %d \"%s\"", i, c->level[i], c->line[i],
                 level, text);
}

/* Every change of the circuit's state is in the log, none with a prefix:
 * opened (warning), half-open for its trial, opened again after a failed
 * trial, half-open, closed (notices). */
static void test_breaker_log(void **s)
{
    (void)s;
    fx x;
    logcap cap = {0};
    fx_config(&x, "sw");
    x.cfg.log = cap_log;
    x.cfg.log_ctx = &cap;
    x.cfg.decoys = DECOYS;
    x.cfg.upstream.breaker_threshold = 1;
    x.cfg.upstream.breaker_cooldown_ms = 200;
    x.cfg.upstream.max_attempts = 1;
    fx_open(&x);
    set_down(true);
    uint32_t p[3];
    uint8_t h[20];
    for (int i = 0; i < 3; i++) {
        p[i] = fresh_prefix();
        hash_of(p[i], S42, h);
        if (i == 2)
            set_down(false);
        rt_resolve_wait(x.base, x.r, PW, h);
        rt_run_for(x.base, 300); /* past the cool-down */
    }
    assert_int_equal(br_upstream_breaker(br_resolver_upstream(x.r, PW)), BR_BREAKER_CLOSED);
    expect_line(&cap, 0, LOG_WARNING, "upstream circuit open after");
    expect_line(&cap, 1, LOG_NOTICE, "upstream circuit half-open");
    expect_line(&cap, 2, LOG_NOTICE, "upstream circuit open again");
    expect_line(&cap, 3, LOG_NOTICE, "upstream circuit half-open");
    expect_line(&cap, 4, LOG_NOTICE, "upstream circuit closed");
    assert_int_equal(cap.n, 5);
    for (int i = 0; i < cap.n; i++)
        for (int k = 0; k < 3; k++) {
            char hex[8];
            snprintf(hex, sizeof(hex), "%05X", p[k]);
            assert_null(strstr(cap.line[i], hex));
        }
    fx_close(&x);
}

static void set_bit(uint8_t *bm, uint32_t p)
{
    bm[p >> 3] |= (uint8_t)(1u << (p & 7));
}

static void reopen_resolver(fx *x)
{
    br_resolver_free(x->r);
    x->r = NULL;
    br_error err = {{0}};
    assert_int_equal(br_resolver_new(x->base, &x->cfg, x->cache, &x->r, &err), 0);
}

/* A URL feed update: a new filter (its build time newer than every stored
 * range, so they are all revalidated) whose prefix bitmap, the decoys'
 * population, gained prefixes. The real prefix's next burst goes out alike:
 * not alone, not the conditional one among new unconditional decoys. */
static void test_url_feed_update(void **s)
{
    (void)s;
    fx x;
    fx_config(&x, "validators");
    snprintf(x.url_tmpl, sizeof(x.url_tmpl), "http://127.0.0.1:%d/uvalidators/{prefix}",
             g_fault.port);
    x.cfg.url_upstream = x.url_tmpl;
    x.cfg.decoys = DECOYS;
    uint8_t *bm1 = calloc(1, BR_DECOY_BITMAP_BYTES), *bm2 = calloc(1, BR_DECOY_BITMAP_BYTES);
    assert_non_null(bm1);
    assert_non_null(bm2);
    uint32_t p = fresh_prefix();
    for (uint32_t i = 0; i < 24; i++)
        set_bit(bm1, (p + 7919 * (i + 1)) & 0xFFFFF);
    set_bit(bm1, p);
    memcpy(bm2, bm1, BR_DECOY_BITMAP_BYTES);
    for (uint32_t i = 0; i < 4000; i++)
        set_bit(bm2, (p + 104729 * (i + 1)) & 0xFFFFF);
    x.cfg.url_decoy_bitmap = bm1;
    fx_open(&x);
    uint8_t h[32];
    rt_hash_with_prefix(BR_RANGE_URL_SHA256, p, 5, h);
    size_t l0 = log_count();
    assert_int_equal(rt_resolve_wait(x.base, x.r, BR_RANGE_URL_SHA256, h).status,
                     BR_RESOLVE_NOT_FOUND);
    rt_run_for(x.base, 200);
    reqs r;
    log_from(l0, &r);
    assert_int_equal(r.n, DECOYS + 1);
    rt_run_for(x.base, 100); /* the decoy list reaches the cache */

    x.clock.now += 10;
    x.cfg.url_decoy_bitmap = bm2;
    x.cfg.url_fresh_after = x.clock.now;
    reopen_resolver(&x);
    x.clock.now += 1;
    size_t l1 = log_count();
    assert_int_equal(rt_resolve_wait(x.base, x.r, BR_RANGE_URL_SHA256, h).status,
                     BR_RESOLVE_NOT_FOUND);
    rt_run_for(x.base, 200);
    reqs again;
    log_from(l1, &again);
    assert_not_singled_out(&again, p, "after the feed update");
    assert_int_equal(again.n, DECOYS + 1);
    /* The same decoys (stored with the range, still in the population):
     * the bursts' intersection does not narrow to the real prefix. */
    for (size_t i = 0; i < again.n; i++)
        if (!has(&r, again.prefix[i]))
            fail_msg("after the feed update, %05X joined the burst of %05X", again.prefix[i], p);
    fx_close(&x);
    free(bm1);
    free(bm2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_age_cannot_split),   cmocka_unit_test(test_trial_is_a_burst),
        cmocka_unit_test(test_bulk_resend_has_decoys), cmocka_unit_test(test_breaker_log),
        cmocka_unit_test(test_url_feed_update),
    };
    return cmocka_run_group_tests(tests, fault_group_setup, fault_group_teardown);
}
