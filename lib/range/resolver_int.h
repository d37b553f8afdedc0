/* SPDX-License-Identifier: MIT */
/* Internal to the resolver (its contract is resolver.h): what its two files
 * share. resolver.c has the API, the lookups, the flights table, the
 * answers, whole-range lookups and the cache flush; resolver_fetch.c sends
 * a real fetch and its decoys (and a fetch again on the bulk lane) and
 * answers what the end of a fetch brings. Only these two include this
 * header. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "decoys.h"
#include "resolver.h"

struct event;

#define FLIGHT_BUCKETS 4096 /* power of two */

typedef struct waiter waiter;
struct waiter {
    waiter *next;
    br_lane lane;
    br_resolve_cb cb;
    br_range_answer_cb rcb; /* set: a whole-range lookup (resolver.c); hash unused */
    void *ctx;
    uint8_t hash[32];
};

/* One fetch of (partition, kind, prefix) and the lookups waiting for it; a
 * decoy's flight starts with none. */
typedef struct flight flight;
struct flight {
    flight *hnext; /* bucket chain */
    br_resolver *r;
    uint32_t partition;
    br_range_kind kind;
    uint32_t prefix20;
    bool conditional;
    bool rebulk;      /* a decoy to send again on the bulk lane if its deadline ends it */
    bool real;        /* a real fetch (not a decoy): its decoy list is stored with it */
    uint8_t n_decoys; /* the decoys sent with it (a real fetch) */
    uint32_t decoys[BR_RESOLVER_MAX_DECOYS];
    int64_t burst_at;      /* when its burst was sent: the expiry every member shares */
    br_lane lane;          /* of its upstream request */
    br_upstream_req *ureq; /* that request, while it is pending */
    waiter *head, **tail;
};

struct br_resolver {
    struct event_base *base;
    br_range_cache *cache;
    br_upstream *up[BR_RANGE_KIND_MAX + 1]; /* indexed by br_range_kind */
    int64_t ttl_s, max_stale_s;
    uint32_t decoys;
    uint8_t decoy_key[BR_DECOY_KEY_LEN];
    const uint8_t *decoy_bitmap[BR_RANGE_KIND_MAX + 1]; /* by kind; NULL: every prefix */
    uint32_t decoy_pop[BR_RANGE_KIND_MAX + 1];
    int64_t fresh_after[BR_RANGE_KIND_MAX + 1]; /* by kind: br_resolver_config.url_fresh_after */
    uint32_t flush_ms;
    size_t max_body;
    br_log_fn log;
    void *log_ctx;
    int64_t (*clock)(void *ctx);
    void *clock_ctx;
    bool closing;
    struct event *flush_ev;
    flight *buckets[FLIGHT_BUCKETS];
    br_resolver_stats st;
    /* Cache write failures (resolver.c): the errno of the failure that
     * was logged while writes fail (0 while they succeed), the failures
     * since, and whether an oversized range was told. */
    int cache_failing;
    uint64_t cache_failures;
    bool told_oversized;
};

/* ---- resolver.c ---- */

/* Through cfg->log, when set. Never a prefix, a hash or a URL. */
void br_rs_log(br_resolver *r, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The wall clock (cfg->clock or br_clock_now_real()). */
int64_t br_rs_now_s(br_resolver *r);
/* The pending fetch of (partition, kind, prefix20), NULL when none. */
flight *br_rs_flight_find(br_resolver *r, uint32_t partition, br_range_kind kind,
                          uint32_t prefix20);
/* Into the table, once its request is sent. */
void br_rs_flight_insert(br_resolver *r, flight *f);
/* Free a flight that is not in the table, with its waiters (not answered). */
void br_rs_flight_free(flight *f);
/* The answer after a failure: a stored entry within max_stale, else UNKNOWN. */
void br_rs_answer_after_failure(br_resolver *r, uint32_t partition, br_range_kind kind,
                                const uint8_t *hash, const char *reason, br_resolve_result *res);
/* Count an answer in the stats. */
void br_rs_count_answer(br_resolver *r, const br_resolve_result *res);
/* (resolver_fetch.c) Answer every waiter of f (already out of the table)
 * with UNKNOWN reason, or (allow_stale) a stored entry within max_stale. */
void br_rs_answer_all_unknown_or_stale(br_resolver *r, flight *f, const char *reason,
                                       bool allow_stale);
/* Out of the table (it stays allocated). */
void br_rs_flight_unlink(br_resolver *r, flight *f);
/* Free a waiter, its full hash wiped first. */
void br_rs_waiter_free(waiter *w);
/* Flush the cache's pending batch after flush_ms, unless already due. */
void br_rs_schedule_flush(br_resolver *r);
/* res: UNKNOWN with this reason. */
void br_rs_set_unknown(br_resolve_result *res, const char *reason);
/* res from a cache lookup result in state FRESH or STALE. */
void br_rs_set_from_cache(br_resolve_result *res, const br_range_cache_result *cr);

/* ---- in resolver_fetch.c: the burst ---- */

/* A flight with no waiter, not in the table; NULL when out of memory. */
flight *br_rs_flight_new(br_resolver *r, uint32_t partition, br_range_kind kind, uint32_t prefix,
                         br_lane lane);
/* Send nf (the real fetch, holding its first waiter) and its decoys, in a
 * random order. 0: nf is in flight; 1: nf could not be sent: nf is freed (its
 * waiter unanswered) and *reason (BR_REASON_*) says why. */
int br_rs_send_burst(br_resolver *r, flight *nf, const br_range_cache_result *cr,
                     const char **reason);

/* ---- in resolver.c: the waiters of whole-range lookups ----
 * A range waiter holds its prefix in the first bytes of its hash
 * (br_range_prefix20 reads it back) and always waits on the interactive lane. */

/* After a failure: a stored range within max_stale (allow_stale), else UNKNOWN reason. */
void br_rs_range_after_failure(br_resolver *r, uint32_t partition, br_range_kind kind,
                               const waiter *w, const char *reason, bool allow_stale);
/* From a range just fetched (fresh: everything but from_cache and stale set). */
void br_rs_range_from_value(br_resolver *r, const waiter *w, const br_range_answer *fresh);
/* From the cache, after a 304 touched the entry. */
void br_rs_range_from_cache(br_resolver *r, uint32_t partition, br_range_kind kind,
                            const waiter *w);

/* ---- in resolver.c: the cache flush ---- */

/* A cache put, touch or flush (what) failed with rc: counted in cache_errors;
 * logged when writes start failing or fail with another error, and an
 * oversized range (-EFBIG) once, never at each failure. */
void br_rs_cache_write_failed(br_resolver *r, int rc, const char *what);
