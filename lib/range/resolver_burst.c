/* SPDX-License-Identifier: MIT */
/* Range resolver: a real fetch and its decoys, sent as one burst in a random
 * order (resolver.h, docs/upstream.md "Decoys"); and a fetch sent again on
 * the bulk lane for the bulk lookups of an interactive fetch that ended by
 * its deadline (docs/upstream.md "Lanes"). */
#include <errno.h>
#include <sys/random.h>

#include <openssl/crypto.h>

#include "resolver_int.h"

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

/* What the cache holds for (partition, kind, prefix): its state and validators. */
static void cache_peek(br_resolver *r, uint32_t partition, br_range_kind kind, uint32_t prefix,
                       br_range_cache_result *cr)
{
    cr->state = BR_RANGE_CACHE_MISS;
    if (!r->cache)
        return;
    uint8_t h[32] = {(uint8_t)(prefix >> 12), (uint8_t)(prefix >> 4), (uint8_t)((prefix & 0xF) << 4)};
    if (br_range_cache_lookup(r->cache, partition, kind, h, br_rs_now_s(r), 0, cr) < 0) {
        r->st.cache_errors++;
        cr->state = BR_RANGE_CACHE_MISS;
    }
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
    return br_upstream_fetch_lane(r->up[f->kind], f->prefix20, etag, lm, f->lane, br_rs_fetch_done,
                                  f, &f->ureq);
}

/* A decoy is the fetch that a lookup in its prefix would make now, by the
 * same rules (none while its entry is fresh or a fetch of it is pending),
 * and its answer is cached and revalidated like any other. */
static void send_decoy(br_resolver *r, uint32_t partition, br_range_kind kind, uint32_t prefix,
                       br_lane lane)
{
    if (br_rs_flight_find(r, partition, kind, prefix))
        return;
    br_range_cache_result cr;
    cache_peek(r, partition, kind, prefix, &cr);
    if (cr.state == BR_RANGE_CACHE_FRESH)
        return;
    flight *f = br_rs_flight_new(r, partition, kind, prefix, lane);
    if (!f)
        return;
    if (flight_send(r, f, &cr) < 0) {
        br_rs_flight_free(f);
        return;
    }
    br_rs_flight_insert(r, f);
    r->st.decoys++;
}

static uint32_t random_below(uint32_t n)
{
    uint32_t x = 0;
    if (n <= 1 || getrandom(&x, sizeof(x), 0) != (ssize_t)sizeof(x))
        return 0;
    return x % n;
}

const char *br_rs_send_failure_reason(int rc)
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

waiter *br_rs_flight_keep_bulk(br_resolver *r, flight *f, int *rc)
{
    waiter *inter = take_waiters(f, BR_LANE_INTERACTIVE);
    *rc = resend_bulk(r, f);
    return inter;
}

static int resend_bulk(br_resolver *r, flight *f)
{
    br_range_cache_result cr;
    cache_peek(r, f->partition, f->kind, f->prefix20, &cr);
    f->lane = BR_LANE_BULK;
    int rc = flight_send(r, f, &cr);
    if (rc < 0)
        return rc;
    r->st.fetches++;
    r->st.bulk_resent++;
    if (f->conditional)
        r->st.revalidations++;
    br_rs_flight_insert(r, f);
    return 0;
}

/* A half-open circuit's trial request is the real one alone. */
int br_rs_send_burst(br_resolver *r, flight *nf, const br_range_cache_result *cr,
                     const char **reason)
{
    uint32_t order[BR_RESOLVER_MAX_DECOYS + 1];
    int nd = 0;
    if (r->decoys && br_upstream_breaker(r->up[nf->kind]) == BR_BREAKER_CLOSED) {
        nd = br_decoy_pick(r->decoy_key, nf->kind, nf->prefix20, r->decoy_bitmap[nf->kind],
                           r->decoy_pop[nf->kind], r->decoys, order);
        nd = BR_MAX(nd, 0);
    }
    order[nd] = nf->prefix20;
    for (uint32_t i = (uint32_t)nd; i > 0; i--) { /* Fisher-Yates */
        uint32_t j = random_below(i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    bool sent = false;
    for (int i = 0; i <= nd; i++) {
        if (order[i] != nf->prefix20) {
            send_decoy(r, nf->partition, nf->kind, order[i], nf->lane);
            continue;
        }
        int rc = flight_send(r, nf, cr);
        if (rc < 0) {
            *reason = br_rs_send_failure_reason(rc);
            br_rs_flight_free(nf);
            return 1;
        }
        r->st.fetches++;
        if (nf->conditional)
            r->st.revalidations++;
        br_rs_flight_insert(r, nf);
        sent = true;
    }
    OPENSSL_cleanse(order, sizeof(order));
    if (!sent)
        *reason = BR_REASON_ERROR; /* cannot happen: order holds nf's prefix */
    return sent ? 0 : 1;
}

