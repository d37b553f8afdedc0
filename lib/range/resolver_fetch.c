/* SPDX-License-Identifier: MIT */
/* The end of a flight's fetch (resolver_int.h): the range body into the
 * cache's pending batch, a 304 touching the stored entry, or a failure; then
 * the answers of the flight's waiters (fresh, stale within max_stale, or
 * UNKNOWN), and a bulk lookup kept for a fetch again past an interactive
 * deadline. */
#include <errno.h>
#include <string.h>
#include <syslog.h>

#include "br_assert.h"
#include "resolver_int.h"

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
    waiter *inter = br_rs_flight_keep_bulk(r, f, &rc);
    if (rc < 0)
        br_rs_answer_all_unknown_or_stale(r, f, br_rs_send_failure_reason(rc), true);
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
    br_range_answer fresh = {.value = value, .len = len, .fetched_at = now,
                             .expires_at = expiry(r, f, now), .etag = resp->etag,
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

void br_rs_fetch_done(void *ctx, const br_upstream_response *resp)
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
        int rc = br_range_cache_touch(
            r->cache, f->partition, f->kind, f->prefix20, now, expiry(r, f, now),
            resp->etag[0] ? resp->etag : NULL, resp->last_modified[0] ? resp->last_modified : NULL);
        if (rc == -ENOENT && r->up[f->kind]) {
            /* Evicted between the lookup and the 304: nothing to extend,
             * so ask again, with its decoys as any fetch (without
             * validators now that the entry is gone, so it cannot end
             * here again). */
            if (br_rs_resend(r, f) == 0) {
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
        br_rs_decoy_rebulk(r, f)) {
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
