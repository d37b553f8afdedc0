/* SPDX-License-Identifier: MIT */
/* Range resolver (resolver.h): a flight's fetch. A real fetch and its
 * decoys go out as one burst; what the end of a fetch answers (the body
 * into the cache, a 304, a failure) and a bulk lookup kept for a fetch
 * again past an interactive deadline. The lookups and the flights table
 * are resolver.c; the two share resolver_int.h. */
#include <errno.h>
#include <string.h>
#include <syslog.h>

#include "resolver_int.h"
#include "core/random.h"
#include "core/util.h"
#include "core/br_assert.h"

static void fetch_done(void *ctx, const br_upstream_response *resp);

/* ---- the burst ---- */

/* A real fetch and its decoys, sent as one burst in a random order
 * (resolver.h, docs/upstream.md "Decoys"); and a fetch sent again on the
 * bulk lane for the bulk lookups of an interactive fetch that ended by its
 * deadline (docs/upstream.md "Lanes"). */

flight *br_rs_flight_new(br_resolver *r, uint32_t partition, br_range_kind kind, uint32_t prefix,
                         br_lane lane)
{
    flight *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->r = r;
    f->partition = partition;
    f->kind = kind;
    f->prefix20 = prefix;
    f->lane = lane;
    f->tail = &f->head;
    return f;
}

/* What the cache holds for (partition, kind, prefix), as a lookup sees it:
 * a URL range stored before the URL filter was built is expired. */
static void cache_peek(br_resolver *r, uint32_t partition, br_range_kind kind, uint32_t prefix,
                       br_range_cache_result *cr)
{
    cr->state = BR_RANGE_CACHE_MISS;
    if (!r->cache)
        return;
    uint8_t h[32] = {(uint8_t)(prefix >> 12), (uint8_t)(prefix >> 4),
                     (uint8_t)((prefix & 0xF) << 4)};
    if (br_range_cache_lookup(r->cache, partition, kind, h, br_rs_now_s(r), 0, cr) < 0) {
        r->st.cache_errors++;
        cr->state = BR_RANGE_CACHE_MISS;
    }
    if (cr->state == BR_RANGE_CACHE_FRESH && cr->fetched_at <= r->fresh_after[kind])
        cr->state = BR_RANGE_CACHE_EXPIRED;
}

/* Send f's request: conditional when an entry, even an expired one, is stored. */
static int flight_send(br_resolver *r, flight *f, const br_range_cache_result *cr)
{
    const char *etag = NULL, *lm = NULL;
    if (cr->state != BR_RANGE_CACHE_MISS) {
        etag = cr->etag[0] ? cr->etag : NULL;
        lm = cr->last_modified[0] ? cr->last_modified : NULL;
    }
    f->conditional = etag || lm;
    return br_upstream_fetch_lane(r->up[f->kind], f->prefix20, etag, lm, f->lane, fetch_done, f,
                                  &f->ureq);
}

static bool has_validators(const br_range_cache_result *cr)
{
    return cr->state != BR_RANGE_CACHE_MISS && (cr->etag[0] || cr->last_modified[0]);
}

/* One member of a burst: what the cache and the flights table say of it. */
typedef struct member {
    bool send;       /* a lookup of it would fetch now (not fresh, none pending) */
    flight *pending; /* its pending fetch, when one is */
    br_range_cache_result cr;
} member;

/* A decoy is the fetch that a lookup in its prefix would make now, by the
 * same rules (none while its entry is fresh or a fetch of it is pending),
 * and its answer is cached and revalidated like any other. */
static void member_peek(br_resolver *r, const flight *nf, uint32_t prefix, member *m)
{
    m->send = false;
    m->pending = br_rs_flight_find(r, nf->partition, nf->kind, prefix);
    if (m->pending)
        return;
    cache_peek(r, nf->partition, nf->kind, prefix, &m->cr);
    m->send = m->cr.state != BR_RANGE_CACHE_FRESH;
}

static void send_decoy(br_resolver *r, const flight *nf, uint32_t prefix,
                       const br_range_cache_result *cr)
{
    flight *f = br_rs_flight_new(r, nf->partition, nf->kind, prefix, nf->lane);
    if (!f)
        return;
    f->burst_at = nf->burst_at;
    if (flight_send(r, f, cr) < 0) {
        br_rs_flight_free(f);
        return;
    }
    br_rs_flight_insert(r, f);
    r->st.decoys++;
}

/* f (out of the table, no waiters) is a decoy marked rebulk that ended by
 * its interactive deadline: sent again on the bulk lane, as the burst it
 * belongs to was. True when f is in flight again (no longer the caller's). */
static bool decoy_rebulk(br_resolver *r, flight *f)
{
    if (!f->rebulk || f->head || !r->up[f->kind] ||
        br_rs_flight_find(r, f->partition, f->kind, f->prefix20))
        return false;
    br_range_cache_result cr;
    cache_peek(r, f->partition, f->kind, f->prefix20, &cr);
    f->rebulk = false;
    f->lane = BR_LANE_BULK;
    if (cr.state == BR_RANGE_CACHE_FRESH || flight_send(r, f, &cr) < 0)
        return false;
    br_rs_flight_insert(r, f);
    r->st.decoys++;
    return true;
}

/* The UNKNOWN reason of a fetch that could not be sent (-EHOSTDOWN ...). */
static const char *send_failure_reason(int rc)
{
    return rc == -EHOSTDOWN   ? BR_REASON_CIRCUIT_OPEN
           : rc == -ESHUTDOWN ? BR_REASON_SHUTTING_DOWN
                              : BR_REASON_ERROR;
}

static int resend_bulk(br_resolver *r, flight *f);

/* Detach the waiters of f on lane, in order. */
static waiter *take_waiters(flight *f, br_lane lane)
{
    waiter *list = NULL, **lt = &list, **pp = &f->head;
    while (*pp) {
        waiter *w = *pp;
        if (w->lane != lane) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        w->next = NULL;
        *lt = w;
        lt = &w->next;
    }
    f->tail = pp;
    return list;
}

/* f (out of the table) ended by the deadline of its interactive fetch:
 * detach its interactive waiters (returned, in order, for the caller to
 * answer) and send it again on the bulk lane for the others. *rc: 0, and f
 * is in flight again; or br_upstream_fetch_lane's negative errno, and f
 * still holds its bulk waiters. */
static waiter *flight_keep_bulk(br_resolver *r, flight *f, int *rc)
{
    waiter *inter = take_waiters(f, BR_LANE_INTERACTIVE);
    *rc = resend_bulk(r, f);
    return inter;
}

static bool in_population(const br_resolver *r, br_range_kind kind, uint32_t p)
{
    const uint8_t *bm = r->decoy_bitmap[kind];
    return p < BR_DECOY_PREFIXES && (!bm || ((bm[p >> 3] >> (p & 7)) & 1));
}

static bool taken(const uint32_t *v, int n, uint32_t p)
{
    for (int i = 0; i < n; i++)
        if (v[i] == p)
            return true;
    return false;
}

/* f's decoys: the ones stored with its range (cr) that are still in the
 * population, so that a feed update changes none of them but those that
 * left it; then, to make up the number, the keyed draw (decoys.h). Kept in
 * f for the cache. None while the circuit is open (nothing would go out). */
static int pick_decoys(br_resolver *r, flight *f, br_breaker_state bs,
                       const br_range_cache_result *cr, uint32_t *out)
{
    int nd = 0;
    if (!r->decoys || bs == BR_BREAKER_OPEN)
        return 0;
    for (unsigned i = 0; cr->state != BR_RANGE_CACHE_MISS && i < cr->n_decoys; i++) {
        uint32_t d = cr->decoys[i];
        if (nd < (int)r->decoys && d != f->prefix20 && in_population(r, f->kind, d) &&
            !taken(out, nd, d))
            out[nd++] = d;
    }
    if (nd < (int)r->decoys) {
        uint32_t cand[BR_RESOLVER_MAX_DECOYS];
        int m = br_decoy_pick(r->decoy_key, f->kind, f->prefix20, r->decoy_bitmap[f->kind],
                              r->decoy_pop[f->kind], r->decoys, cand);
        for (int j = 0; j < m && nd < (int)r->decoys; j++)
            if (!taken(out, nd, cand[j]))
                out[nd++] = cand[j];
        br_wipe(cand, sizeof(cand));
    }
    f->n_decoys = (uint8_t)nd;
    memcpy(f->decoys, out, (size_t)nd * sizeof(out[0]));
    return nd;
}

/* The members of f's burst, f's own place included, in a random order
 * (Fisher-Yates); returns how many. */
static int burst_order(br_resolver *r, flight *f, br_breaker_state bs,
                       const br_range_cache_result *cr, uint32_t *order)
{
    int nd = pick_decoys(r, f, bs, cr, order);
    order[nd] = f->prefix20;
    for (uint32_t i = (uint32_t)nd; i > 0; i--) {
        uint32_t j = br_random_below(i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    return nd + 1;
}

/* Send f (the real fetch, not in the table) and its decoys, in a random
 * order, as one burst: every member sent shares f's burst_at (so one
 * expiry), and all of them go conditional or none (a member with no stored
 * validators, e.g. a decoy new to the URL population, makes the whole burst
 * unconditional), so that no member stands out. While the circuit is
 * half-open the burst is its trial. A decoy still pending on the
 * interactive lane (a re-send past the deadline) is marked to follow on the
 * bulk lane. Returns the real fetch's flight_send result. */
static int burst_send(br_resolver *r, flight *f, const br_range_cache_result *cr)
{
    br_upstream *up = r->up[f->kind];
    br_breaker_state bs = br_upstream_breaker(up);
    uint32_t order[BR_RESOLVER_MAX_DECOYS + 1];
    member m[BR_RESOLVER_MAX_DECOYS + 1];
    f->real = true;
    int n = burst_order(r, f, bs, cr, order), sending = 0, rc = -EIO;
    bool alike = true;
    for (int i = 0; i < n; i++) {
        if (order[i] == f->prefix20) {
            m[i].send = true;
            m[i].pending = NULL;
            m[i].cr = *cr;
        } else {
            member_peek(r, f, order[i], &m[i]);
        }
        sending += m[i].send;
        alike &= !m[i].send || has_validators(&m[i].cr);
    }
    f->burst_at = br_rs_now_s(r);
    if (bs == BR_BREAKER_HALF_OPEN)
        br_upstream_trial_burst(up, (uint32_t)sending);
    for (int i = 0; i < n; i++) {
        if (!alike)
            m[i].cr.state = BR_RANGE_CACHE_MISS;
        if (order[i] == f->prefix20)
            rc = flight_send(r, f, &m[i].cr);
        else if (m[i].send)
            send_decoy(r, f, order[i], &m[i].cr);
        else if (m[i].pending && !m[i].pending->head && m[i].pending->lane != f->lane) {
            m[i].pending->rebulk = true;
            m[i].pending->burst_at = f->burst_at; /* one expiry with this burst */
        }
    }
    br_upstream_trial_burst(up, 0);
    br_wipe(order, sizeof(order));
    br_wipe(m, sizeof(m));
    return rc;
}

/* Send f (out of the table, holding its waiters) again with its decoys, as
 * a lookup would now (conditional by the cache's state). 0: f is in flight;
 * or br_upstream_fetch_lane's negative errno, and f is still the caller's. */
static int resend(br_resolver *r, flight *f)
{
    br_range_cache_result cr;
    cache_peek(r, f->partition, f->kind, f->prefix20, &cr);
    int rc = burst_send(r, f, &cr);
    if (rc < 0)
        return rc;
    r->st.fetches++;
    if (f->conditional)
        r->st.revalidations++;
    br_rs_flight_insert(r, f);
    return 0;
}

static int resend_bulk(br_resolver *r, flight *f)
{
    f->lane = BR_LANE_BULK;
    int rc = resend(r, f);
    if (rc == 0)
        r->st.bulk_resent++;
    return rc;
}

int br_rs_send_burst(br_resolver *r, flight *nf, const br_range_cache_result *cr,
                     const char **reason)
{
    int rc = burst_send(r, nf, cr);
    if (rc < 0) {
        *reason = send_failure_reason(rc);
        br_rs_flight_free(nf);
        return 1;
    }
    r->st.fetches++;
    if (nf->conditional)
        r->st.revalidations++;
    br_rs_flight_insert(r, nf);
    return 0;
}

/* ---- the end of a fetch ---- */

/* The end of a flight's fetch: the range body into the
 * cache's pending batch, a 304 touching the stored entry, or a failure; then
 * the answers of the flight's waiters (fresh, stale within max_stale, or
 * UNKNOWN), and a bulk lookup kept for a fetch again past an interactive
 * deadline. */

static void flight_freep(flight **f)
{
    br_rs_flight_free(*f);
}

/* Every member of a burst (the real fetch and its decoys) expires at the
 * same time, when the burst was sent plus the configured ttl: the
 * upstream's Cache-Control max-age is not obeyed, since a max-age of its
 * own for one member would make that member come back alone
 * (docs/upstream.md "Decoys"). */
static int64_t expiry(br_resolver *r, const flight *f, int64_t now)
{
    int64_t at = f->burst_at > 0 && f->burst_at <= now ? f->burst_at : now;
    return at + r->ttl_s;
}

static const char *reason_of(br_upstream_status s);

_Static_assert(BR_RESOLVER_MAX_DECOYS <= BR_RANGE_CACHE_MAX_DECOYS, "a decoy list fits an entry");

/* A real fetch's decoys, stored with its range so that its next burst sends
 * the same ones (docs/upstream.md "Decoys"). */
static int keep_decoys(br_resolver *r, const flight *f)
{
    if (!f->real || !r->decoys)
        return 0;
    return br_range_cache_set_decoys(r->cache, f->partition, f->kind, f->prefix20, f->decoys,
                                     f->n_decoys);
}

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
            br_rs_waiter_free(w);
            continue;
        }
        br_resolve_result res;
        if (allow_stale)
            br_rs_answer_after_failure(r, partition, kind, w->hash, reason, &res);
        else
            br_rs_set_unknown(&res, reason);
        br_rs_count_answer(r, &res);
        w->cb(w->ctx, &res);
        br_rs_waiter_free(w);
    }
}

/* Answer every waiter of f (already out of the table). */
void br_rs_answer_all_unknown_or_stale(br_resolver *r, flight *f, const char *reason,
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
    waiter *inter = flight_keep_bulk(r, f, &rc);
    if (rc < 0)
        br_rs_answer_all_unknown_or_stale(r, f, send_failure_reason(rc), true);
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
            br_rs_waiter_free(w);
            continue;
        }
        br_resolve_result res;
        memset(&res, 0, sizeof(res));
        int found = br_range_lookup(f->kind, value, len, w->hash, &res.count, res.category);
        if (br_fails_assert(found >= 0)) { /* a stored value came from br_range_parse */
            br_rs_set_unknown(&res, BR_REASON_ERROR);
        } else {
            res.status = found ? BR_RESOLVE_FOUND : BR_RESOLVE_NOT_FOUND;
            if (!found) {
                res.count = 0;
                res.category[0] = '\0';
            }
        }
        br_rs_count_answer(r, &res);
        w->cb(w->ctx, &res);
        br_rs_waiter_free(w);
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
            br_rs_waiter_free(w);
            continue;
        }
        br_resolve_result res;
        br_range_cache_result cr;
        int rc = br_range_cache_lookup(r->cache, f->partition, f->kind, w->hash, br_rs_now_s(r),
                                       r->max_stale_s, &cr);
        if (rc < 0)
            r->st.cache_errors++;
        if (rc == 0 && (cr.state == BR_RANGE_CACHE_FRESH || cr.state == BR_RANGE_CACHE_STALE))
            br_rs_set_from_cache(&res, &cr);
        else
            br_rs_set_unknown(&res, BR_REASON_ERROR);
        br_rs_count_answer(r, &res);
        w->cb(w->ctx, &res);
        br_rs_waiter_free(w);
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

/* A 200: the body parsed, cached (with f's decoys) and answered. */
static void fetch_ok(br_resolver *r, flight *f, const br_upstream_response *resp, int64_t now)
{
    _cleanup_free_ uint8_t *value = NULL;
    size_t len = 0;
    br_error err = {{0}};
    int rc = br_range_parse(f->kind, resp->body, resp->body_len, r->max_body, &value, &len, &err);
    if (rc < 0) {
        r->st.parse_errors++;
        br_rs_log(r, LOG_WARNING, "range response rejected: %s",
                  err.text[0] ? err.text : strerror(-rc));
        br_rs_answer_all_unknown_or_stale(r, f, BR_REASON_ERROR, true);
        return;
    }
    br_range_answer fresh = {.value = value,
                             .len = len,
                             .fetched_at = now,
                             .expires_at = expiry(r, f, now),
                             .etag = resp->etag,
                             .last_modified = resp->last_modified};
    if (r->cache) {
        rc = br_range_cache_put(r->cache, f->partition, f->kind, f->prefix20, value, len, now,
                                fresh.expires_at, resp->etag, resp->last_modified);
        if (rc >= 0)
            rc = keep_decoys(r, f);
        if (rc < 0)
            br_rs_cache_write_failed(r, rc, "put");
        br_rs_schedule_flush(r);
    }
    answer_all_from_value(r, f, &fresh);
}

/* The upstream callback of every flight (ctx is the flight). */
static void fetch_done(void *ctx, const br_upstream_response *resp)
{
    _cleanup_(flight_freep) flight *f = ctx;
    br_resolver *r = f->r;
    br_rs_flight_unlink(r, f);
    f->ureq = NULL;
    int64_t now = br_rs_now_s(r);

    if (resp->status == BR_UPSTREAM_OK) {
        fetch_ok(r, f, resp, now);
        return;
    }

    if (resp->status == BR_UPSTREAM_NOT_MODIFIED) {
        r->st.not_modified++;
        if (!r->cache || !f->conditional) {
            br_rs_log(r, LOG_WARNING, "upstream answered 304 to an unconditional request");
            br_rs_answer_all_unknown_or_stale(r, f, BR_REASON_ERROR, true);
            return;
        }
        int rc = br_range_cache_touch(r->cache, f->partition, f->kind, f->prefix20, now,
                                      expiry(r, f, now), resp->etag[0] ? resp->etag : NULL,
                                      resp->last_modified[0] ? resp->last_modified : NULL);
        if (rc == -ENOENT && r->up[f->kind]) {
            /* Evicted between the lookup and the 304: nothing to extend,
             * so ask again, with its decoys as any fetch (without
             * validators now that the entry is gone, so it cannot end
             * here again). */
            if (resend(r, f) == 0) {
                f = NULL;
                return;
            }
        }
        if (rc >= 0)
            rc = keep_decoys(r, f);
        if (rc < 0) {
            br_rs_cache_write_failed(r, rc, "touch after a 304");
            br_rs_answer_all_unknown_or_stale(r, f, BR_REASON_ERROR, false);
            return;
        }
        br_rs_schedule_flush(r);
        answer_all_from_cache(r, f);
        return;
    }

    if ((resp->status == BR_UPSTREAM_TIMEOUT || resp->status == BR_UPSTREAM_RATE_LIMITED) &&
        decoy_rebulk(r, f)) {
        f = NULL;
        return;
    }
    if (deadline_failure_keeps_bulk(r, f, resp->status)) {
        f = NULL;
        return;
    }
    br_rs_answer_all_unknown_or_stale(r, f, reason_of(resp->status),
                                      resp->status != BR_UPSTREAM_CANCELLED);
}
