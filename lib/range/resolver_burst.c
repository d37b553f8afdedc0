/* SPDX-License-Identifier: MIT */
/* Range resolver: a real fetch and its decoys, sent as one burst in a random
 * order (resolver.h, docs/upstream.md "Decoys"); and a fetch sent again on
 * the bulk lane for the bulk lookups of an interactive fetch that ended by
 * its deadline (docs/upstream.md "Lanes"). */
#include <errno.h>
#include <string.h>
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

/* What the cache holds for (partition, kind, prefix), as a lookup sees it:
 * a URL range stored before the URL filter was built is expired. */
void br_rs_cache_peek(br_resolver *r, uint32_t partition, br_range_kind kind, uint32_t prefix,
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
    return br_upstream_fetch_lane(r->up[f->kind], f->prefix20, etag, lm, f->lane, br_rs_fetch_done,
                                  f, &f->ureq);
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
    br_rs_cache_peek(r, nf->partition, nf->kind, prefix, &m->cr);
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

bool br_rs_decoy_rebulk(br_resolver *r, flight *f)
{
    if (!f->rebulk || f->head || !r->up[f->kind] ||
        br_rs_flight_find(r, f->partition, f->kind, f->prefix20))
        return false;
    br_range_cache_result cr;
    br_rs_cache_peek(r, f->partition, f->kind, f->prefix20, &cr);
    f->rebulk = false;
    f->lane = BR_LANE_BULK;
    if (cr.state == BR_RANGE_CACHE_FRESH || flight_send(r, f, &cr) < 0)
        return false;
    br_rs_flight_insert(r, f);
    r->st.decoys++;
    return true;
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
        OPENSSL_cleanse(cand, sizeof(cand));
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
        uint32_t j = random_below(i + 1), t = order[i];
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
    OPENSSL_cleanse(order, sizeof(order));
    OPENSSL_cleanse(m, sizeof(m));
    return rc;
}

int br_rs_resend(br_resolver *r, flight *f)
{
    br_range_cache_result cr;
    br_rs_cache_peek(r, f->partition, f->kind, f->prefix20, &cr);
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
    int rc = br_rs_resend(r, f);
    if (rc == 0)
        r->st.bulk_resent++;
    return rc;
}

int br_rs_send_burst(br_resolver *r, flight *nf, const br_range_cache_result *cr,
                     const char **reason)
{
    int rc = burst_send(r, nf, cr);
    if (rc < 0) {
        *reason = br_rs_send_failure_reason(rc);
        br_rs_flight_free(nf);
        return 1;
    }
    r->st.fetches++;
    if (nf->conditional)
        r->st.revalidations++;
    br_rs_flight_insert(r, nf);
    return 0;
}
