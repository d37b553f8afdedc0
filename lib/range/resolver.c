/* SPDX-License-Identifier: MIT */
/* Range resolver (resolver.h): the lookups. A lookup is answered from the
 * cache, or joins the flight of its prefix (one fetch per prefix, however
 * many lookups wait on it); the flights table, the answers and their
 * counters, whole-range lookups for the range endpoint, and the cache
 * flush. Sending a flight's fetch and what its end answers are
 * resolver_fetch.c; the two share resolver_int.h. */
#include <errno.h>
#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "decoys.h"
#include "core/br_assert.h"
#include "core/clock.h"
#include "resolver_int.h"
#include "core/log_line.h"
#include "core/random.h"
#include "core/util.h"

void br_rs_log(br_resolver *r, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    br_vlogf(r->log, r->log_ctx, level, fmt, ap);
    va_end(ap);
}

int64_t br_rs_now_s(br_resolver *r)
{
    return r->clock ? r->clock(r->clock_ctx) : br_clock_now_real();
}

/* The kinds a resolver serves. */
static bool kind_ok(br_range_kind kind)
{
    return kind == BR_RANGE_PASSWORD_SHA1 || kind == BR_RANGE_URL_SHA256 ||
           kind == BR_RANGE_PASSWORD_NTLM;
}

/* ---- flights table -------------------------------------------------------------- */

static size_t bucket_of(uint32_t partition, br_range_kind kind, uint32_t prefix20)
{
    uint64_t key = ((uint64_t)partition << 32) | ((uint64_t)kind << 20) | prefix20;
    return (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 40) & (FLIGHT_BUCKETS - 1);
}

flight *br_rs_flight_find(br_resolver *r, uint32_t partition, br_range_kind kind, uint32_t prefix20)
{
    for (flight *f = r->buckets[bucket_of(partition, kind, prefix20)]; f; f = f->hnext)
        if (f->partition == partition && f->kind == kind && f->prefix20 == prefix20)
            return f;
    return NULL;
}

void br_rs_flight_insert(br_resolver *r, flight *f)
{
    /* one flight per (partition, kind, prefix): lookups coalesce on it */
    if (br_fails_assert(!br_rs_flight_find(r, f->partition, f->kind, f->prefix20)))
        return;
    size_t b = bucket_of(f->partition, f->kind, f->prefix20);
    f->hnext = r->buckets[b];
    r->buckets[b] = f;
    r->st.pending_fetches++;
}

void br_rs_flight_unlink(br_resolver *r, flight *f)
{
    for (flight **pp = &r->buckets[bucket_of(f->partition, f->kind, f->prefix20)]; *pp;
         pp = &(*pp)->hnext) {
        if (*pp == f) {
            *pp = f->hnext;
            f->hnext = NULL;
            if (!br_fails_assert(r->st.pending_fetches > 0))
                r->st.pending_fetches--;
            return;
        }
    }
}

static int flight_add_waiter(br_resolver *r, flight *f, const uint8_t *hash, br_lane lane,
                             br_resolve_cb cb, void *ctx)
{
    waiter *w = calloc(1, sizeof(*w));
    if (!w)
        return br_trace(-ENOMEM);
    w->lane = lane;
    w->cb = cb;
    w->ctx = ctx;
    memcpy(w->hash, hash, br_range_hash_len(f->kind));
    if (br_fails_assert(f->tail && !*f->tail)) { /* the tail is the list's end */
        br_rs_waiter_free(w);
        return -EINVAL;
    }
    *f->tail = w;
    f->tail = &w->next;
    r->st.pending_lookups++;
    return 0;
}

/* A waiter holds a full hash: wiped before it is freed. */
void br_rs_waiter_free(waiter *w)
{
    br_wipe(w->hash, sizeof(w->hash));
    free(w);
}

void br_rs_flight_free(flight *f)
{
    if (!f)
        return;
    while (f->head) {
        waiter *w = f->head;
        f->head = w->next;
        if (!br_fails_assert(f->r->st.pending_lookups > 0))
            f->r->st.pending_lookups--;
        br_rs_waiter_free(w);
    }
    free(f);
}

/* ---- answers ------------------------------------------------------------------------ */

/* Count an UNKNOWN answer's reason. */
static void count_unknown(br_resolver *r, const char *reason)
{
    r->st.unknown++;
    if (!strcmp(reason, BR_REASON_UNAVAILABLE))
        r->st.unknown_unavailable++;
    else if (!strcmp(reason, BR_REASON_TIMEOUT))
        r->st.unknown_timeout++;
    else if (!strcmp(reason, BR_REASON_CIRCUIT_OPEN))
        r->st.unknown_circuit++;
    else if (!strcmp(reason, BR_REASON_RATE_LIMITED))
        r->st.unknown_rate_limited++;
    else if (!strcmp(reason, BR_REASON_ERROR))
        r->st.unknown_error++;
}

void br_rs_count_answer(br_resolver *r, const br_resolve_result *res)
{
    switch (res->status) {
    case BR_RESOLVE_FOUND:
        r->st.found++;
        break;
    case BR_RESOLVE_NOT_FOUND:
        r->st.not_found++;
        break;
    case BR_RESOLVE_UNKNOWN:
        count_unknown(r, res->reason);
        break;
    }
    if (res->stale)
        r->st.stale_answers++;
}

void br_rs_set_unknown(br_resolve_result *res, const char *reason)
{
    memset(res, 0, sizeof(*res));
    res->status = BR_RESOLVE_UNKNOWN;
    res->reason = reason;
}

/* Fill res from a cache lookup result in state FRESH or STALE. */
void br_rs_set_from_cache(br_resolve_result *res, const br_range_cache_result *cr)
{
    memset(res, 0, sizeof(*res));
    res->from_cache = true;
    res->stale = cr->state == BR_RANGE_CACHE_STALE;
    if (cr->found) {
        res->status = BR_RESOLVE_FOUND;
        res->count = cr->count;
        memcpy(res->category, cr->category, sizeof(res->category));
        res->category[sizeof(res->category) - 1] = '\0';
    } else {
        res->status = BR_RESOLVE_NOT_FOUND;
    }
}

/* The answer after a failure: a stored entry within max_stale, else UNKNOWN. */
void br_rs_answer_after_failure(br_resolver *r, uint32_t partition, br_range_kind kind,
                                const uint8_t *hash, const char *reason, br_resolve_result *res)
{
    if (r->cache && r->max_stale_s >= 0) {
        br_range_cache_result cr;
        int rc = br_range_cache_lookup(r->cache, partition, kind, hash, br_rs_now_s(r),
                                       r->max_stale_s, &cr);
        if (rc < 0) {
            r->st.cache_errors++;
        } else if (cr.state == BR_RANGE_CACHE_FRESH || cr.state == BR_RANGE_CACHE_STALE) {
            br_rs_set_from_cache(res, &cr);
            res->stale |= cr.state == BR_RANGE_CACHE_FRESH && cr.fetched_at <= r->fresh_after[kind];
            return;
        }
    }
    br_rs_set_unknown(res, reason);
}

void br_rs_schedule_flush(br_resolver *r)
{
    if (!evtimer_pending(r->flush_ev, NULL)) {
        struct timeval tv = {.tv_sec = r->flush_ms / 1000,
                             .tv_usec = (suseconds_t)(r->flush_ms % 1000) * 1000};
        evtimer_add(r->flush_ev, &tv);
    }
}

static void flush_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    br_resolver_flush(arg);
}

int br_resolver_resolve_lane(br_resolver *r, uint32_t partition, br_range_kind kind,
                             const uint8_t *full_hash, br_lane lane, br_resolve_cb cb, void *ctx,
                             br_resolve_result *res)
{
    if (!r || !kind_ok(kind) || !full_hash || !cb || !res ||
        (lane != BR_LANE_INTERACTIVE && lane != BR_LANE_BULK))
        return -EINVAL;
    r->st.lookups++;
    if (lane == BR_LANE_BULK)
        r->st.bulk_lookups++;
    if (r->closing) {
        br_rs_set_unknown(res, BR_REASON_SHUTTING_DOWN);
        br_rs_count_answer(r, res);
        return 1;
    }

    br_range_cache_result cr = {.state = BR_RANGE_CACHE_MISS};
    if (r->cache) {
        int rc = br_range_cache_lookup(r->cache, partition, kind, full_hash, br_rs_now_s(r),
                                       r->max_stale_s >= 0 ? r->max_stale_s : 0, &cr);
        if (rc < 0) {
            r->st.cache_errors++;
            cr.state = BR_RANGE_CACHE_MISS;
        }
        /* Older than the filter that asked: revalidated (resolver.h). */
        if (cr.state == BR_RANGE_CACHE_FRESH && cr.fetched_at <= r->fresh_after[kind])
            cr.state = BR_RANGE_CACHE_EXPIRED;
        if (cr.state == BR_RANGE_CACHE_FRESH) {
            br_rs_set_from_cache(res, &cr);
            r->st.cache_fresh++;
            br_rs_count_answer(r, res);
            return 1;
        }
    }

    uint32_t prefix = br_range_prefix20(full_hash);
    flight *f = br_rs_flight_find(r, partition, kind, prefix);
    if (f) {
        int rc = flight_add_waiter(r, f, full_hash, lane, cb, ctx);
        if (rc < 0)
            return rc;
        r->st.coalesced++;
        if (lane == BR_LANE_INTERACTIVE && f->lane == BR_LANE_BULK) {
            /* never behind the bulk queue */
            br_upstream_promote(r->up[kind], f->ureq);
            f->lane = BR_LANE_INTERACTIVE;
            r->st.promoted++;
        }
        return 0;
    }

    if (!r->up[kind]) {
        br_rs_answer_after_failure(r, partition, kind, full_hash, BR_REASON_UNAVAILABLE, res);
        br_rs_count_answer(r, res);
        return 1;
    }
    flight *nf = br_rs_flight_new(r, partition, kind, prefix, lane);
    if (!nf)
        return br_trace(-ENOMEM);
    int rc = flight_add_waiter(r, nf, full_hash, lane, cb, ctx);
    if (rc < 0) {
        br_rs_flight_free(nf);
        return rc;
    }
    const char *reason;
    if (br_rs_send_burst(r, nf, &cr, &reason) == 0)
        return 0;
    br_rs_answer_after_failure(r, partition, kind, full_hash, reason, res);
    br_rs_count_answer(r, res);
    return 1;
}

int br_resolver_resolve(br_resolver *r, uint32_t partition, br_range_kind kind,
                        const uint8_t *full_hash, br_resolve_cb cb, void *ctx,
                        br_resolve_result *res)
{
    return br_resolver_resolve_lane(r, partition, kind, full_hash, BR_LANE_INTERACTIVE, cb, ctx,
                                    res);
}

/* ---- life cycle ------------------------------------------------------------------- */

/* The decoy key (from the cache's secret, so that it lives as long as the
 * entries it chose; random without a cache) and the decoy populations. */
static int decoy_setup(br_resolver *r, const br_resolver_config *cfg, br_range_cache *cache)
{
    if (cache) {
        uint8_t secret[BR_RANGE_CACHE_SECRET_LEN];
        br_range_cache_secret(cache, secret);
        memcpy(r->decoy_key, secret, BR_DECOY_KEY_LEN);
        br_wipe(secret, sizeof(secret));
    } else if (br_random_bytes(r->decoy_key, BR_DECOY_KEY_LEN) < 0) {
        return -EIO;
    }
    r->fresh_after[BR_RANGE_URL_SHA256] = cfg->url_fresh_after;
    if (cfg->url_decoy_bitmap) {
        r->decoy_bitmap[BR_RANGE_URL_SHA256] = cfg->url_decoy_bitmap;
        r->decoy_pop[BR_RANGE_URL_SHA256] = br_decoy_population(cfg->url_decoy_bitmap);
    }
    return 0;
}

int br_resolver_new(struct event_base *base, const br_resolver_config *cfg, br_range_cache *cache,
                    br_resolver **out, br_error *err)
{
    if (!base || !cfg || !out)
        return br_error_set(err, -EINVAL, "resolver: missing argument");
    *out = NULL;
    if (cfg->decoys > BR_RESOLVER_MAX_DECOYS)
        return br_error_set(err, -EINVAL, "resolver: decoys must be 0..%d", BR_RESOLVER_MAX_DECOYS);

    _cleanup_(br_resolver_freep) br_resolver *r = calloc(1, sizeof(*r));
    if (!r)
        return br_error_set(err, -ENOMEM, "resolver: out of memory");
    r->base = base;
    r->cache = cache;
    r->ttl_s = cfg->ttl_s > 0 ? cfg->ttl_s : BR_RESOLVER_DEFAULT_TTL_S;
    r->max_stale_s = cfg->max_stale_s == 0 ? BR_RESOLVER_DEFAULT_MAX_STALE_S : cfg->max_stale_s;
    r->decoys = cfg->decoys;
    int rc = decoy_setup(r, cfg, cache);
    if (rc < 0)
        return br_error_set(err, rc, "resolver: no random bytes for the decoy key");
    r->flush_ms = cfg->flush_interval_ms ? cfg->flush_interval_ms : BR_RESOLVER_DEFAULT_FLUSH_MS;
    r->max_body = cfg->upstream.max_body ? cfg->upstream.max_body : BR_UPSTREAM_DEFAULT_MAX_BODY;
    r->log = cfg->log;
    r->log_ctx = cfg->log_ctx;
    r->clock = cfg->clock;
    r->clock_ctx = cfg->clock_ctx;
    r->flush_ev = evtimer_new(base, flush_cb, r);
    if (!r->flush_ev)
        return br_error_set(err, -ENOMEM, "resolver: event_new failed");

    const char *tmpl[BR_RANGE_KIND_MAX + 1] = {
        [BR_RANGE_PASSWORD_SHA1] = cfg->password_upstream,
        [BR_RANGE_URL_SHA256] = cfg->url_upstream,
        [BR_RANGE_PASSWORD_NTLM] = cfg->ntlm_upstream,
    };
    static const char *const section[BR_RANGE_KIND_MAX + 1] = {
        [BR_RANGE_PASSWORD_SHA1] = "passwords",
        [BR_RANGE_URL_SHA256] = "urls",
        [BR_RANGE_PASSWORD_NTLM] = "ntlm",
    };
    for (int k = BR_RANGE_PASSWORD_SHA1; k <= BR_RANGE_KIND_MAX; k++) {
        if (!tmpl[k] || !*tmpl[k])
            continue;
        br_upstream_config uc = cfg->upstream;
        uc.url_template = tmpl[k];
        if (!uc.log) {
            uc.log = cfg->log;
            uc.log_ctx = cfg->log_ctx;
        }
        rc = br_upstream_new(base, &uc, &r->up[k], err);
        if (rc < 0)
            return br_error_prefix(err, rc, "%s upstream", section[k]);
    }
    *out = BR_TAKE_PTR(r);
    return 0;
}

void br_resolver_free(br_resolver *r)
{
    if (!r)
        return;
    r->closing = true;
    for (int k = 0; k <= BR_RANGE_KIND_MAX; k++) {
        br_upstream_free(r->up[k]); /* answers every flight: shutting-down */
        r->up[k] = NULL;
    }
    if (r->flush_ev)
        br_resolver_flush(r);
    for (size_t b = 0; b < FLIGHT_BUCKETS; b++) {
        /* Every flight belongs to an upstream request, answered above. */
        while (br_fails_assert(r->buckets[b] == NULL)) {
            flight *f = r->buckets[b];
            r->buckets[b] = f->hnext;
            br_rs_answer_all_unknown_or_stale(r, f, BR_REASON_SHUTTING_DOWN, false);
            br_rs_flight_free(f);
        }
    }
    if (r->flush_ev)
        event_free(r->flush_ev);
    br_wipe(r->decoy_key, sizeof(r->decoy_key));
    free(r);
}

void br_resolver_get_stats(br_resolver *r, br_resolver_stats *st)
{
    *st = r->st;
}

br_upstream *br_resolver_upstream(br_resolver *r, br_range_kind kind)
{
    return kind_ok(kind) ? r->up[kind] : NULL;
}

/* ---- whole-range lookups ---------------------------------------------------------- */

/* Whole-range lookups (br_resolver_resolve_range, resolver.h).
 * They ride on the same flights as the one-hash lookups above: a
 * waiter with rcb set is answered here with the range set instead of one
 * entry. */

static void answer_unknown(br_resolver *r, br_range_answer_cb cb, void *ctx, const char *reason)
{
    br_range_answer a = {.reason = reason, .etag = "", .last_modified = ""};
    count_unknown(r, reason);
    cb(ctx, &a);
}

/* What a cache walk hands back to the resolver. */
typedef struct peek {
    br_resolver *r;
    br_range_answer_cb cb; /* NULL: look only */
    void *ctx;
    bool fresh_only; /* answer only from a FRESH entry */
    bool answered;
    br_range_cache_result *cr; /* NULL, or filled with the state and validators */
} peek;

/* The answer a stored range gives (its own memory, valid during the walk). */
static br_range_answer answer_of(const br_range_cache_range *rg)
{
    return (br_range_answer){
        .value = rg->value,
        .len = rg->len,
        .fetched_at = rg->fetched_at,
        .expires_at = rg->expires_at,
        .etag = rg->etag,
        .last_modified = rg->last_modified,
        .from_cache = true,
        .stale = rg->state == BR_RANGE_CACHE_STALE,
    };
}

static int peek_cb(void *arg, const br_range_cache_range *rg)
{
    peek *pk = arg;
    if (pk->cr) {
        pk->cr->state = rg->state;
        if (rg->state != BR_RANGE_CACHE_MISS) {
            snprintf(pk->cr->etag, sizeof(pk->cr->etag), "%s", rg->etag);
            snprintf(pk->cr->last_modified, sizeof(pk->cr->last_modified), "%s", rg->last_modified);
        }
    }
    bool usable =
        rg->state == BR_RANGE_CACHE_FRESH || (!pk->fresh_only && rg->state == BR_RANGE_CACHE_STALE);
    if (!pk->cb || !usable)
        return 0;
    br_range_answer a = answer_of(rg);
    if (a.stale)
        pk->r->st.stale_answers++;
    pk->answered = true;
    pk->cb(pk->ctx, &a);
    return 0;
}

/* Walk the stored range: answer cb from it when usable (true), and fill cr
 * (may be NULL) with its state and validators. */
static bool from_cache(br_resolver *r, uint32_t partition, br_range_kind kind, uint32_t prefix20,
                       int64_t max_stale, bool fresh_only, br_range_answer_cb cb, void *ctx,
                       br_range_cache_result *cr)
{
    peek pk = {.r = r, .cb = cb, .ctx = ctx, .fresh_only = fresh_only, .cr = cr};
    if (cr)
        cr->state = BR_RANGE_CACHE_MISS;
    if (!r->cache)
        return false;
    int rc = br_range_cache_lookup_range(r->cache, partition, kind, prefix20, br_rs_now_s(r),
                                         max_stale, peek_cb, &pk);
    if (rc < 0) {
        r->st.cache_errors++;
        if (cr)
            cr->state = BR_RANGE_CACHE_MISS;
    }
    return pk.answered;
}

void br_rs_range_after_failure(br_resolver *r, uint32_t partition, br_range_kind kind,
                               const waiter *w, const char *reason, bool allow_stale)
{
    if (allow_stale && r->max_stale_s >= 0 &&
        from_cache(r, partition, kind, br_range_prefix20(w->hash), r->max_stale_s, false, w->rcb,
                   w->ctx, NULL))
        return;
    answer_unknown(r, w->rcb, w->ctx, reason);
}

void br_rs_range_from_value(br_resolver *r, const waiter *w, const br_range_answer *fresh)
{
    (void)r;
    w->rcb(w->ctx, fresh);
}

void br_rs_range_from_cache(br_resolver *r, uint32_t partition, br_range_kind kind, const waiter *w)
{
    if (!from_cache(r, partition, kind, br_range_prefix20(w->hash), BR_MAX(r->max_stale_s, 0),
                    false, w->rcb, w->ctx, NULL))
        answer_unknown(r, w->rcb, w->ctx, BR_REASON_ERROR);
}

/* A range waiter: on the http lane (HTTP clients wait for their answer,
 * after the interactive checks), its prefix in its hash. */
static int add_waiter(br_resolver *r, flight *f, br_range_answer_cb cb, void *ctx)
{
    waiter *w = calloc(1, sizeof(*w));
    if (!w)
        return br_trace(-ENOMEM);
    w->lane = BR_LANE_HTTP;
    w->rcb = cb;
    w->ctx = ctx;
    w->hash[0] = (uint8_t)(f->prefix20 >> 12);
    w->hash[1] = (uint8_t)(f->prefix20 >> 4);
    w->hash[2] = (uint8_t)((f->prefix20 & 0xF) << 4);
    *f->tail = w;
    f->tail = &w->next;
    r->st.pending_lookups++;
    return 0;
}

/* br_resolver_peek_range's walk of the stored range. */
typedef struct peek_only {
    br_range_peek_cb cb;
    void *ctx;
    bool taken;
} peek_only;

static int peek_only_cb(void *arg, const br_range_cache_range *rg)
{
    peek_only *po = arg;
    if (rg->state != BR_RANGE_CACHE_FRESH)
        return 0;
    br_range_answer a = answer_of(rg);
    po->taken = po->cb(po->ctx, &a);
    return 0;
}

int br_resolver_peek_range(br_resolver *r, uint32_t partition, br_range_kind kind,
                           uint32_t prefix20, br_range_peek_cb cb, void *ctx)
{
    if (!r || !kind_ok(kind) || prefix20 > 0xFFFFF || !cb)
        return -EINVAL;
    if (r->closing || !r->cache)
        return 0;
    peek_only po = {.cb = cb, .ctx = ctx};
    /* an error is counted by the lookup the caller makes next */
    if (br_range_cache_lookup_range(r->cache, partition, kind, prefix20, br_rs_now_s(r), 0,
                                    peek_only_cb, &po) < 0 ||
        !po.taken)
        return 0;
    r->st.range_lookups++;
    r->st.cache_fresh++;
    return 1;
}

/* No fetch could be made: a stored range within max_stale, else UNKNOWN. */
static int answer_now(br_resolver *r, uint32_t partition, br_range_kind kind, uint32_t prefix20,
                      const char *reason, br_range_answer_cb cb, void *ctx)
{
    if (r->max_stale_s < 0 ||
        !from_cache(r, partition, kind, prefix20, r->max_stale_s, false, cb, ctx, NULL))
        answer_unknown(r, cb, ctx, reason);
    return 1;
}

int br_resolver_resolve_range(br_resolver *r, uint32_t partition, br_range_kind kind,
                              uint32_t prefix20, br_range_answer_cb cb, void *ctx)
{
    if (!r || !kind_ok(kind) || prefix20 > 0xFFFFF || !cb)
        return -EINVAL;
    r->st.range_lookups++;
    if (r->closing) {
        answer_unknown(r, cb, ctx, BR_REASON_SHUTTING_DOWN);
        return 1;
    }

    br_range_cache_result cr;
    if (from_cache(r, partition, kind, prefix20, 0, true, cb, ctx, &cr)) {
        r->st.cache_fresh++;
        return 1;
    }

    flight *f = br_rs_flight_find(r, partition, kind, prefix20);
    if (f) {
        int rc = add_waiter(r, f, cb, ctx);
        if (rc < 0)
            return rc;
        r->st.coalesced++;
        if (f->lane == BR_LANE_BULK) { /* never behind the bulk queue */
            br_upstream_promote(r->up[kind], f->ureq);
            f->lane = BR_LANE_INTERACTIVE;
            r->st.promoted++;
        }
        return 0;
    }

    if (!r->up[kind])
        return answer_now(r, partition, kind, prefix20, BR_REASON_UNAVAILABLE, cb, ctx);
    flight *nf = br_rs_flight_new(r, partition, kind, prefix20, BR_LANE_HTTP);
    if (!nf)
        return br_trace(-ENOMEM);
    int rc = add_waiter(r, nf, cb, ctx);
    if (rc < 0) {
        br_rs_flight_free(nf);
        return rc;
    }
    const char *reason;
    if (br_rs_send_burst(r, nf, &cr, &reason) == 0)
        return 0;
    return answer_now(r, partition, kind, prefix20, reason, cb, ctx);
}

/* ---- the cache flush -------------------------------------------------------------- */

/* The resolver's cache flush and how a failing cache write is told
 * (resolver.h, "Cache writes"). A full disk, a read-only or broken cache
 * makes every write fail, at every flush: saying so each time would flood
 * the log (often on the same full disk), so a failure is logged when writes
 * start failing or fail with another error, the return to working writes
 * once, and an oversized range once; STATS cache_errors counts them all. */

void br_rs_cache_write_failed(br_resolver *r, int rc, const char *what)
{
    r->st.cache_errors++;
    if (rc == -EFBIG) {
        /* An entry that can never fit (over half of the cache's size): the
         * other entries of its batch are stored. */
        if (!r->told_oversized)
            br_rs_log(r, LOG_WARNING,
                      "range cache: a range larger than half the cache's size was answered but not "
                      "stored; the next ones are counted in cache_errors, not logged");
        r->told_oversized = true;
        return;
    }
    r->cache_failures++;
    if (r->cache_failing == -rc)
        return;
    r->cache_failing = -rc;
    br_rs_log(r, LOG_WARNING,
              "range cache %s failed: %s; answers go on from the upstream, uncached; further "
              "failures are counted in cache_errors, not logged, until a write succeeds",
              what, strerror(-rc));
}

/* A flush that committed something: writes work (again). */
static void cache_write_ok(br_resolver *r)
{
    if (!r->cache_failing)
        return;
    br_rs_log(r, LOG_INFO, "range cache writes succeed again, after %llu failures",
              (unsigned long long)r->cache_failures);
    r->cache_failing = 0;
    r->cache_failures = 0;
}

int br_resolver_flush(br_resolver *r)
{
    if (!r->cache)
        return 0;
    evtimer_del(r->flush_ev);
    size_t pending = br_range_cache_pending(r->cache);
    int rc = br_range_cache_flush(r->cache);
    r->st.flushes++;
    if (rc < 0)
        br_rs_cache_write_failed(r, rc, "flush");
    if ((rc == 0 || rc == -EFBIG) && pending)
        cache_write_ok(r);
    return rc;
}
