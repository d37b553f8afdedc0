/* SPDX-License-Identifier: MIT */
/* Range resolver: whole-range lookups (br_resolver_resolve_range, resolver.h).
 * They ride on the same flights as the one-hash lookups of resolver.c: a
 * waiter with rcb set is answered here with the range set instead of one
 * entry. */
#include <errno.h>
#include <stdio.h>

#include "resolver_int.h"

static void answer_unknown(br_resolver *r, br_range_answer_cb cb, void *ctx, const char *reason)
{
    br_range_answer a = {.reason = reason, .etag = "", .last_modified = ""};
    br_rs_count_unknown(r, reason);
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
    br_range_answer a = {
        .value = rg->value,
        .len = rg->len,
        .fetched_at = rg->fetched_at,
        .expires_at = rg->expires_at,
        .etag = rg->etag,
        .last_modified = rg->last_modified,
        .from_cache = true,
        .stale = rg->state == BR_RANGE_CACHE_STALE,
    };
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

void br_rs_range_from_cache(br_resolver *r, uint32_t partition, br_range_kind kind,
                            const waiter *w)
{
    if (!from_cache(r, partition, kind, br_range_prefix20(w->hash), BR_MAX(r->max_stale_s, 0),
                    false, w->rcb, w->ctx, NULL))
        answer_unknown(r, w->rcb, w->ctx, BR_REASON_ERROR);
}

/* A range waiter: interactive (HTTP clients wait for their answer), its
 * prefix in its hash. */
static int add_waiter(br_resolver *r, flight *f, br_range_answer_cb cb, void *ctx)
{
    waiter *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->lane = BR_LANE_INTERACTIVE;
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
    if (!r || !br_rs_kind_ok(kind) || prefix20 > 0xFFFFF || !cb)
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
    flight *nf = br_rs_flight_new(r, partition, kind, prefix20, BR_LANE_INTERACTIVE);
    if (!nf)
        return -ENOMEM;
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
