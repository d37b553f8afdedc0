/* SPDX-License-Identifier: MIT */
/* Range resolver: cache, coalesced fetches, answers. See resolver.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/random.h>
#include <syslog.h>
#include <time.h>

#include <event2/event.h>
#include <openssl/crypto.h>

#include "decoys.h"
#include "br_assert.h"
#include "resolver_int.h"

void br_rs_log(br_resolver *r, int level, const char *fmt, ...)
{
    if (!r->log)
        return;
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r->log(r->log_ctx, level, msg);
}

int64_t br_rs_now_s(br_resolver *r)
{
    return r->clock ? r->clock(r->clock_ctx) : (int64_t)time(NULL);
}

static bool kind_ok(br_range_kind kind)
{
    return kind == BR_RANGE_PASSWORD_SHA1 || kind == BR_RANGE_URL_SHA256 ||
           kind == BR_RANGE_PASSWORD_NTLM;
}

bool br_rs_kind_ok(br_range_kind kind)
{
    return kind_ok(kind);
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
    size_t b = bucket_of(f->partition, f->kind, f->prefix20);
    f->hnext = r->buckets[b];
    r->buckets[b] = f;
    r->st.pending_fetches++;
}

static void flight_unlink(br_resolver *r, flight *f)
{
    for (flight **pp = &r->buckets[bucket_of(f->partition, f->kind, f->prefix20)]; *pp;
         pp = &(*pp)->hnext) {
        if (*pp == f) {
            *pp = f->hnext;
            f->hnext = NULL;
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
        return -ENOMEM;
    w->lane = lane;
    w->cb = cb;
    w->ctx = ctx;
    memcpy(w->hash, hash, br_range_hash_len(f->kind));
    *f->tail = w;
    f->tail = &w->next;
    r->st.pending_lookups++;
    return 0;
}

/* A waiter holds a full hash: wiped before it is freed. */
static void waiter_free(waiter *w)
{
    OPENSSL_cleanse(w->hash, sizeof(w->hash));
    free(w);
}

void br_rs_flight_free(flight *f)
{
    if (!f)
        return;
    while (f->head) {
        waiter *w = f->head;
        f->head = w->next;
        f->r->st.pending_lookups--;
        waiter_free(w);
    }
    free(f);
}

static void flight_freep(flight **f)
{
    br_rs_flight_free(*f);
}

/* ---- answers ------------------------------------------------------------------------ */

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
        br_rs_count_unknown(r, res->reason);
        break;
    }
    if (res->stale)
        r->st.stale_answers++;
}

void br_rs_count_unknown(br_resolver *r, const char *reason)
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

static void set_unknown(br_resolve_result *res, const char *reason)
{
    memset(res, 0, sizeof(*res));
    res->status = BR_RESOLVE_UNKNOWN;
    res->reason = reason;
}

/* Fill res from a cache lookup result in state FRESH or STALE. */
static void set_from_cache(br_resolve_result *res, const br_range_cache_result *cr)
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
        int rc = br_range_cache_lookup(r->cache, partition, kind, hash, br_rs_now_s(r), r->max_stale_s,
                                       &cr);
        if (rc < 0) {
            r->st.cache_errors++;
        } else if (cr.state == BR_RANGE_CACHE_FRESH || cr.state == BR_RANGE_CACHE_STALE) {
            set_from_cache(res, &cr);
            return;
        }
    }
    set_unknown(res, reason);
}

static void schedule_flush(br_resolver *r)
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

static int64_t expiry(br_resolver *r, int64_t now, int64_t max_age)
{
    int64_t ttl = r->ttl_s;
    if (max_age >= 0 && max_age < ttl)
        ttl = max_age;
    return now + ttl;
}

static const char *reason_of(br_upstream_status s);

/* Answer a list of waiters of (partition, kind) with a stored entry within
 * max_stale (allow_stale) or UNKNOWN reason, and free them. */
static void answer_list_unknown_or_stale(br_resolver *r, waiter *list, uint32_t partition,
                                         br_range_kind kind, const char *reason, bool allow_stale)
{
    while (list) {
        waiter *w = list;
        list = w->next;
        r->st.pending_lookups--;
        if (w->rcb) {
            br_rs_range_after_failure(r, partition, kind, w, reason, allow_stale);
            waiter_free(w);
            continue;
        }
        br_resolve_result res;
        if (allow_stale)
            br_rs_answer_after_failure(r, partition, kind, w->hash, reason, &res);
        else
            set_unknown(&res, reason);
        br_rs_count_answer(r, &res);
        w->cb(w->ctx, &res);
        waiter_free(w);
    }
}

/* Answer every waiter of f (already out of the table). */
static void answer_all_unknown_or_stale(br_resolver *r, flight *f, const char *reason,
                                        bool allow_stale)
{
    waiter *list = f->head;
    f->head = NULL;
    f->tail = &f->head;
    answer_list_unknown_or_stale(r, list, f->partition, f->kind, reason, allow_stale);
}

/* A fetch on the interactive lane that ended by its deadline: its
 * interactive lookups are answered, its bulk ones wait on (the fetch is sent
 * again on the bulk lane, before the answers, whose callbacks may look the
 * same range up again). True when f was sent again (it is no longer the
 * caller's). */
static bool deadline_failure_keeps_bulk(br_resolver *r, flight *f, br_upstream_status s)
{
    if (f->lane != BR_LANE_INTERACTIVE ||
        (s != BR_UPSTREAM_TIMEOUT && s != BR_UPSTREAM_RATE_LIMITED))
        return false;
    bool bulk = false;
    for (waiter *w = f->head; w && !bulk; w = w->next)
        bulk = w->lane == BR_LANE_BULK;
    if (!bulk)
        return false;
    uint32_t partition = f->partition;
    br_range_kind kind = f->kind;
    int rc;
    waiter *inter = br_rs_flight_keep_bulk(r, f, &rc);
    if (rc < 0)
        answer_all_unknown_or_stale(r, f, br_rs_send_failure_reason(rc), true);
    answer_list_unknown_or_stale(r, inter, partition, kind, reason_of(s), true);
    return rc == 0;
}

static void answer_all_from_value(br_resolver *r, flight *f, const br_range_answer *fresh)
{
    const uint8_t *value = fresh->value;
    size_t len = fresh->len;
    while (f->head) {
        waiter *w = f->head;
        f->head = w->next;
        r->st.pending_lookups--;
        if (w->rcb) {
            br_rs_range_from_value(r, w, fresh);
            waiter_free(w);
            continue;
        }
        br_resolve_result res;
        memset(&res, 0, sizeof(res));
        int found = br_range_lookup(f->kind, value, len, w->hash, &res.count, res.category);
        if (br_fails_assert(found >= 0)) { /* a stored value came from br_range_parse */
            set_unknown(&res, BR_REASON_ERROR);
        } else {
            res.status = found ? BR_RESOLVE_FOUND : BR_RESOLVE_NOT_FOUND;
            if (!found) {
                res.count = 0;
                res.category[0] = '\0';
            }
        }
        br_rs_count_answer(r, &res);
        w->cb(w->ctx, &res);
        waiter_free(w);
    }
}

static void answer_all_from_cache(br_resolver *r, flight *f)
{
    while (f->head) {
        waiter *w = f->head;
        f->head = w->next;
        r->st.pending_lookups--;
        if (w->rcb) {
            br_rs_range_from_cache(r, f->partition, f->kind, w);
            waiter_free(w);
            continue;
        }
        br_resolve_result res;
        br_range_cache_result cr;
        int rc = br_range_cache_lookup(r->cache, f->partition, f->kind, w->hash, br_rs_now_s(r),
                                       r->max_stale_s, &cr);
        if (rc < 0)
            r->st.cache_errors++;
        if (rc == 0 && (cr.state == BR_RANGE_CACHE_FRESH || cr.state == BR_RANGE_CACHE_STALE))
            set_from_cache(&res, &cr);
        else
            set_unknown(&res, BR_REASON_ERROR);
        br_rs_count_answer(r, &res);
        w->cb(w->ctx, &res);
        waiter_free(w);
    }
}

static const char *reason_of(br_upstream_status s)
{
    switch (s) {
    case BR_UPSTREAM_TIMEOUT:
        return BR_REASON_TIMEOUT;
    case BR_UPSTREAM_RATE_LIMITED:
        return BR_REASON_RATE_LIMITED;
    case BR_UPSTREAM_UNAVAILABLE:
        return BR_REASON_UNAVAILABLE;
    case BR_UPSTREAM_CIRCUIT_OPEN:
        return BR_REASON_CIRCUIT_OPEN;
    case BR_UPSTREAM_CANCELLED:
        return BR_REASON_SHUTTING_DOWN;
    default:
        return BR_REASON_ERROR;
    }
}

void br_rs_fetch_done(void *ctx, const br_upstream_response *resp)
{
    _cleanup_(flight_freep) flight *f = ctx;
    br_resolver *r = f->r;
    flight_unlink(r, f);
    f->ureq = NULL;
    int64_t now = br_rs_now_s(r);

    if (resp->status == BR_UPSTREAM_OK) {
        _cleanup_free_ uint8_t *value = NULL;
        size_t len = 0;
        br_error err = {{0}};
        int rc =
            br_range_parse(f->kind, resp->body, resp->body_len, r->max_body, &value, &len, &err);
        if (rc < 0) {
            r->st.parse_errors++;
            br_rs_log(r, LOG_WARNING, "range response rejected: %s",
                   err.text[0] ? err.text : strerror(-rc));
            answer_all_unknown_or_stale(r, f, BR_REASON_ERROR, true);
            return;
        }
        br_range_answer fresh = {.value = value, .len = len, .fetched_at = now,
                                 .expires_at = expiry(r, now, resp->max_age), .etag = resp->etag,
                                 .last_modified = resp->last_modified};
        if (r->cache) {
            rc = br_range_cache_put(r->cache, f->partition, f->kind, f->prefix20, value, len, now,
                                    fresh.expires_at, resp->etag, resp->last_modified);
            if (rc < 0)
                br_rs_cache_write_failed(r, rc, "put");
            schedule_flush(r);
        }
        answer_all_from_value(r, f, &fresh);
        return;
    }

    if (resp->status == BR_UPSTREAM_NOT_MODIFIED) {
        r->st.not_modified++;
        if (!r->cache || !f->conditional) {
            br_rs_log(r, LOG_WARNING, "upstream answered 304 to an unconditional request");
            answer_all_unknown_or_stale(r, f, BR_REASON_ERROR, true);
            return;
        }
        int rc = br_range_cache_touch(
            r->cache, f->partition, f->kind, f->prefix20, now, expiry(r, now, resp->max_age),
            resp->etag[0] ? resp->etag : NULL, resp->last_modified[0] ? resp->last_modified : NULL);
        if (rc == -ENOENT && r->up[f->kind]) {
            /* Evicted between the lookup and the 304: nothing to extend,
             * so ask again without validators (once: the refetch is not
             * conditional, so it cannot end here again). */
            f->conditional = false;
            if (br_upstream_fetch_lane(r->up[f->kind], f->prefix20, NULL, NULL, f->lane,
                                       br_rs_fetch_done, f, &f->ureq) == 0) {
                r->st.fetches++;
                br_rs_flight_insert(r, f);
                f = NULL;
                return;
            }
        }
        if (rc < 0) {
            br_rs_cache_write_failed(r, rc, "touch after a 304");
            answer_all_unknown_or_stale(r, f, BR_REASON_ERROR, false);
            return;
        }
        schedule_flush(r);
        answer_all_from_cache(r, f);
        return;
    }

    if (deadline_failure_keeps_bulk(r, f, resp->status)) {
        f = NULL;
        return;
    }
    answer_all_unknown_or_stale(r, f, reason_of(resp->status),
                                resp->status != BR_UPSTREAM_CANCELLED);
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
        set_unknown(res, BR_REASON_SHUTTING_DOWN);
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
        if (cr.state == BR_RANGE_CACHE_FRESH) {
            set_from_cache(res, &cr);
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
        return -ENOMEM;
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
        OPENSSL_cleanse(secret, sizeof(secret));
    } else if (getrandom(r->decoy_key, BR_DECOY_KEY_LEN, 0) != BR_DECOY_KEY_LEN) {
        return -EIO;
    }
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
            answer_all_unknown_or_stale(r, f, BR_REASON_SHUTTING_DOWN, false);
            br_rs_flight_free(f);
        }
    }
    if (r->flush_ev)
        event_free(r->flush_ev);
    OPENSSL_cleanse(r->decoy_key, sizeof(r->decoy_key));
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
