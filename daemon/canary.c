/* SPDX-License-Identifier: MIT */
/* The canary: fixed public keys checked end to end; see canary.h. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "canary.h"
#include "core/clock.h"
#include "core/hash.h"
#include "log.h"
#include "offline.h"
#include "url/url_expr.h"

/* While the canary is off, how often a reload that turns it on is noticed. */
#define OFF_RECHECK_MS 10000
/* A failure that goes on is logged again at most this often (a new reason
 * at once). */
#define RELOG_S 3600

/* Failures found before the resolver. */
#define R_FILTER_MISSING "filter-missing-key"
#define R_FILTER_DAMAGED "filter-damaged"
#define R_UPSTREAM_MISSING "upstream-missing-key"
#define R_STALE "stale-answer"
#define R_NO_UPSTREAM "no-upstream"
#define R_ERROR "error"

typedef struct probe probe;

struct bd_canary {
    bd_server *srv;
    struct event *ev;
    probe *pending[BD_KINDS_]; /* a lookup not answered yet */
    int64_t logged_at[BD_KINDS_];
    const char *logged_reason[BD_KINDS_];
};

/* One lookup; outlives the canary when it is freed first (cn = NULL). */
struct probe {
    bd_canary *cn;
    int kind; /* bd_kind */
    bd_state *state;
};

static const char *explain(const char *reason)
{
    if (!strcmp(reason, R_FILTER_MISSING))
        return "the filter answers \"definitely not\" for a key every breach corpus holds: it is "
               "damaged or not built from a full corpus, and its CLEAN answers cannot be trusted";
    if (!strcmp(reason, R_FILTER_DAMAGED))
        return "the filter was truncated or rewritten in place; install a good file by rename "
               "and reload";
    if (!strcmp(reason, R_UPSTREAM_MISSING))
        return "the range API's answer lacks a key every breach corpus holds: the mirror is "
               "incomplete or wrong";
    if (!strcmp(reason, R_STALE))
        return "the range API failed and the answer came from an expired cache entry";
    if (!strcmp(reason, R_NO_UPSTREAM))
        return "the filter is past max_filter_age and upstream = none: every check it cannot "
               "answer gets UNKNOWN no-upstream";
    return "checks the filter cannot answer get UNKNOWN answers";
}

/* Record the outcome of kind (reason NULL: passed) and log a change. */
static void record(bd_canary *cn, int kind, const char *reason)
{
    bd_canary_figures *f = &cn->srv->counters.canary[kind];
    int64_t now = br_clock_now_real();
    bool was_failing = f->runs && !f->ok;
    f->runs++;
    f->last_time = now;
    f->ok = reason == NULL;
    f->reason = reason;
    if (!reason) {
        if (was_failing)
            bd_log(LOG_NOTICE, "canary: the %s check passes again", bd_kinds[kind].checks);
        cn->logged_reason[kind] = NULL;
        return;
    }
    f->failures++;
    if (cn->logged_reason[kind] == reason && now - cn->logged_at[kind] < RELOG_S)
        return;
    cn->logged_reason[kind] = reason;
    cn->logged_at[kind] = now;
    bd_log(LOG_WARNING,
           "canary: the %s check of a public breached key (breachd.conf(5) canary) failed: %s: %s",
           bd_kinds[kind].checks, reason, explain(reason));
}

static const char *reason_of(int kind, const br_resolve_result *res)
{
    if (res->status == BR_RESOLVE_UNKNOWN)
        return res->reason ? res->reason : R_ERROR;
    if (res->stale)
        return R_STALE;
    if (res->status == BR_RESOLVE_NOT_FOUND && !bd_kinds[kind].canary_expr)
        return R_UPSTREAM_MISSING;
    return NULL; /* found; for URLs, absent too (a Bloom false positive) */
}

static void probe_done(probe *p, const br_resolve_result *res)
{
    if (p->cn) {
        p->cn->pending[p->kind] = NULL;
        record(p->cn, p->kind, reason_of(p->kind, res));
    }
    bd_state_unref(p->state);
    free(p);
}

static void probe_cb(void *ctx, const br_resolve_result *res)
{
    probe_done(ctx, res);
}

/* The range lookup of key in the canary's partition. */
static void resolve(bd_canary *cn, int kind, br_range_kind rk, const uint8_t *key)
{
    bd_state *st = cn->srv->state;
    probe *p = calloc(1, sizeof(*p));
    if (!p) {
        record(cn, kind, R_ERROR);
        return;
    }
    *p = (probe){.cn = cn, .kind = kind, .state = bd_state_ref(st)};
    br_resolve_result res;
    int r = br_resolver_resolve(st->resolver, BD_PARTITION_CANARY, rk, key, probe_cb, p, &res);
    if (r == 0) {
        cn->pending[kind] = p;
        return;
    }
    if (r < 0) {
        memset(&res, 0, sizeof(res));
        res.status = BR_RESOLVE_UNKNOWN;
        res.reason = R_ERROR;
    }
    probe_done(p, &res);
}

/* Whether kind has a canary with anything to check in st: a URL filter, or
 * a password kind's filter or upstream (upstream = none and empty are none). */
static bool kind_configured(const bd_state *st, int kind)
{
    if (bd_kinds[kind].canary_expr)
        return bd_state_filter_header(st, (bd_kind)kind) != NULL;
    return bd_kinds[kind].canary_hex &&
           (st->filter[kind] || !bd_upstream_none(bd_kind_upstream(st->cfg, (bd_kind)kind)));
}

/* An offline filter answers the canary as it answers a client (pw_check.c,
 * url_check.c): on the host, never through the range API. A password's
 * key must be in it; a URL filter (url_expr: the test expression) need
 * only be readable (feeds do not list the test page). */
static const char *offline_reason(const br_pwfilter *f, bool intact, const uint8_t *key,
                                  const char *url_expr)
{
    if (!intact || br_pwfilter_damaged(f))
        return R_FILTER_DAMAGED;
    uint64_t count = 0;
    const char *category = NULL;
    br_url_probe up;
    if (url_expr)
        br_url_probe_init(&up, url_expr, strlen(url_expr));
    int r = url_expr ? br_pwfilter_lookup_category(f, &up, &category)
                     : br_pwfilter_lookup_count(f, key, &count);
    if (r < 0)
        return R_FILTER_DAMAGED;
    return r == 0 && !url_expr ? R_FILTER_MISSING : NULL;
}

/* A kind with a canary key (PW, NT): an offline filter answers alone; a range filter (unless stale:
 * bypassed, as for a client) then the range lookup, or, with upstream =
 * none, the filter's maybe is the pass (nothing else is configured to
 * check). */
static void run_password(bd_canary *cn, int kind)
{
    bd_state *st = cn->srv->state;
    br_pwfilter *filter = st->filter[kind];
    const char *upstream = bd_kind_upstream(st->cfg, (bd_kind)kind);
    if (!cn->srv->counters.canary[kind].configured || cn->pending[kind])
        return;
    uint8_t key[BR_SHA1_LEN];
    const char *hex = bd_kinds[kind].canary_hex;
    if (!br_hex_decode(hex, strlen(hex) / 2, key)) {
        record(cn, kind, R_ERROR);
        return;
    }
    if (filter && br_pwfilter_offline(filter)) {
        record(cn, kind, offline_reason(filter, bd_state_intact(st, (bd_kind)kind), key, NULL));
        return;
    }
    int64_t now = br_clock_now_real();
    bool stale = bd_state_filter_stale(st, (bd_kind)kind, now);
    if (filter && br_pwfilter_damaged(filter)) {
        record(cn, kind, R_FILTER_DAMAGED);
        return;
    }
    if (filter && !stale && !br_pwfilter_maybe(filter, key)) {
        record(cn, kind, R_FILTER_MISSING);
        return;
    }
    if (bd_upstream_none(upstream)) {
        record(cn, kind, filter && !stale ? NULL : R_NO_UPSTREAM);
        return;
    }
    resolve(cn, kind, bd_kinds[kind].range, key);
}

/* A kind with a canary expression (URL): the test expression through the
 * URL filter, then (on a maybe) the range lookup. The filter's "no" is a
 * pass: feeds do not list it; so is a maybe with no URL upstream, and any
 * answer of an intact offline filter. */
static void run_url(bd_canary *cn, int kind)
{
    bd_state *st = cn->srv->state;
    if (!cn->srv->counters.canary[kind].configured || cn->pending[kind])
        return;
    uint8_t key[BR_SHA256_LEN];
    if (br_url_expr_hash(bd_kinds[kind].canary_expr, key) < 0) {
        record(cn, kind, R_ERROR);
        return;
    }
    if (st->filter[kind]) {
        record(cn, kind,
               offline_reason(st->filter[kind], bd_state_intact(st, (bd_kind)kind), key,
                              bd_kinds[kind].canary_expr));
        return;
    }
    if (br_urlfilter_damaged(st->urlfilter)) {
        record(cn, kind, R_FILTER_DAMAGED);
        return;
    }
    if (!br_urlfilter_maybe(st->urlfilter, key) ||
        bd_upstream_none(bd_kind_upstream(st->cfg, (bd_kind)kind))) {
        record(cn, kind, NULL);
        return;
    }
    resolve(cn, kind, bd_kinds[kind].range, key);
}

/* The figures follow the configuration: a kind that is off (canary = 0, or
 * nothing of it configured) shows off, its last outcome cleared (a failure
 * of a configuration no longer served clears); one that is on and has not
 * run yet shows pending. Lookups of the previous state are dropped. */
static void sync_figures(bd_canary *cn)
{
    bd_counters *k = &cn->srv->counters;
    const bd_state *st = cn->srv->state;
    k->canary_interval_ms = st->cfg->daemon.canary_ms;
    for (int kind = 0; kind < BD_KINDS_; kind++) {
        bd_canary_figures *f = &k->canary[kind];
        if (cn->pending[kind]) {
            cn->pending[kind]->cn = NULL;
            cn->pending[kind] = NULL;
        }
        f->configured = st->cfg->daemon.canary_ms && kind_configured(st, kind);
        if (!f->configured) {
            *f = (bd_canary_figures){.failures = f->failures};
            cn->logged_reason[kind] = NULL;
        }
    }
}

static void schedule(bd_canary *cn)
{
    uint32_t ms = cn->srv->state->cfg->daemon.canary_ms;
    if (!ms)
        ms = OFF_RECHECK_MS;
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    evtimer_add(cn->ev, &tv);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bd_canary *cn = arg;
    if (cn->srv->counters.canary_interval_ms && !cn->srv->draining) {
        for (int kind = 0; kind < BD_KINDS_; kind++)
            if (bd_kinds[kind].canary_hex)
                run_password(cn, kind);
            else if (bd_kinds[kind].canary_expr)
                run_url(cn, kind);
    }
    schedule(cn);
}

bd_canary *bd_canary_new(bd_server *srv)
{
    bd_canary *cn = calloc(1, sizeof(*cn));
    if (!cn)
        return NULL;
    cn->srv = srv;
    cn->ev = evtimer_new(srv->base, tick_cb, cn);
    if (!cn->ev) {
        free(cn);
        return NULL;
    }
    sync_figures(cn);
    schedule(cn);
    return cn;
}

void bd_canary_reloaded(void *ctx)
{
    bd_canary *cn = ctx;
    if (!cn)
        return;
    uint64_t was_ms = cn->srv->counters.canary_interval_ms;
    sync_figures(cn);
    if (cn->srv->counters.canary_interval_ms != was_ms) { /* the new interval from now */
        evtimer_del(cn->ev);
        schedule(cn);
    }
}

void bd_canary_free(bd_canary *cn)
{
    if (!cn)
        return;
    for (int k = 0; k < BD_KINDS_; k++)
        if (cn->pending[k])
            cn->pending[k]->cn = NULL;
    event_free(cn->ev);
    free(cn);
}
