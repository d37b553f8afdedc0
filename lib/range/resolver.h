/* SPDX-License-Identifier: MIT */
/* The range resolver: turns a filter's "maybe" into an exact answer with a
 * k-anonymity range query (docs/upstream.md), through the LMDB range cache
 * (range_cache.h) and the upstream fetcher (upstream.h), on a libevent
 * event_base.
 *
 * br_resolver_resolve(partition, kind, full_hash) gives exactly one answer:
 *   FOUND (count for passwords, category for URLs), NOT_FOUND, or UNKNOWN with
 *   a reason: "upstream-unavailable", "upstream-error", "timeout",
 *   "rate-limited" (the deadline passed while the upstream asked to wait:
 *   upstream.h "Rate limits"), "circuit-open" (and "shutting-down" for
 *   lookups still pending at br_resolver_free()). A failure is never turned
 *   into NOT_FOUND.
 *
 * Partitions: every lookup names a partition, an opaque 32-bit number (the
 * daemon passes the peer's uid, or BR_RESOLVER_PARTITION_SHARED for all
 * peers: breachd.conf(5) [cache] partition). Cache entries, pending fetches
 * and coalescing are per partition: a lookup never reads, waits on or is
 * sped up by another partition's entry or fetch. The cache's size bound and
 * the upstream limits are shared.
 *
 * Flow:
 *  1. cache lookup in the partition. A fresh entry answers synchronously
 *     (return value 1); a URL range fetched at or before url_fresh_after is
 *     not fresh.
 *  2. otherwise the (partition, kind, prefix) is fetched: conditionally
 *     (If-None-Match / If-Modified-Since with the stored validators) when an
 *     entry, even an expired one, is stored. Coalescing: while a fetch of
 *     (partition, kind, prefix) is pending, every further lookup of that
 *     partition in that prefix joins it; one fetch answers all of them, in
 *     the order they came.
 *  3. 200: the body is parsed (br_range_parse); success -> cache put with
 *     expires_at = (when its burst was sent) + ttl, the same for every
 *     member of the burst whatever Cache-Control max-age says (see
 *     Decoys), then the answers. 304: br_range_cache_touch extends the
 *     stored entry by the same rule (and takes new validators if any), then
 *     the answers come from it.
 *  4. any failure (no answer, non-200/304 status, malformed or empty or
 *     oversized body, circuit open): a stored entry at most max_stale past
 *     its expiry answers (stale = true, counted); else UNKNOWN. A failed fetch
 *     or a malformed body is never cached.
 * When the circuit is open the answer is made at once (synchronously): from
 * a stale entry, else UNKNOWN circuit-open.
 *
 * Cache writes are batched: puts and touches go to the cache's pending table
 * and a flush timer (flush_interval_ms after the first write) commits them in
 * one write transaction. br_resolver_free() flushes.
 *
 * Each kind with a URL template has its own br_upstream (own connection
 * pool, limits and breaker); a kind without one answers from the cache or
 * UNKNOWN upstream-unavailable.
 *
 * Decoys (decoys = N > 0; docs/upstream.md "Decoys"): with each real fetch
 * (circuit closed or half-open) go N decoy prefixes, chosen by decoys.h from the kind's
 * population (every prefix; for URLs, when url_decoy_bitmap is set, the
 * prefixes the URL filter lists as holding entries) with the cache's secret.
 * A decoy is fetched exactly as a lookup of its prefix in the same partition
 * would be: not at all while its entry is fresh or a fetch of it is pending,
 * conditionally when an entry is stored; its answer is cached, touched and
 * expired like any other, and nobody waits for it. The real request and its
 * decoys go out in one burst, in a random order (core/random.h). They count
 * against the rate and in-flight limits. A real fetch's decoys are stored
 * with its range (br_range_cache_set_decoys) and reused by its next burst
 * while they are in the population, the keyed draw making up the number
 * (so a URL feed update replaces only the decoys that left the feed). A
 * burst stays whole: its members
 * share one expiry; they go all conditional, or all unconditional when one
 * of them has no stored validators; a half-open circuit's trial is a whole
 * burst (br_upstream_trial_burst); a fetch sent again on the bulk lane goes
 * with its decoys (one still pending on the interactive lane follows when
 * its deadline ends it).
 *
 * Lanes (docs/upstream.md "Lanes"): a lookup is interactive
 * (br_resolver_resolve) or bulk (br_resolver_resolve_lane). A bulk lookup's
 * fetch and its decoys go on the upstream's bulk lane (upstream.h "Lanes"):
 * no deadline, after every interactive fetch, at a share of the rate.
 * Coalescing is per partition whatever the lane: a bulk lookup that joins an
 * interactive fetch waits with it, and an interactive lookup that joins a
 * bulk fetch promotes it (br_upstream_promote: it gets a deadline from then
 * and goes first), so it never waits behind the bulk queue. A fetch on the
 * interactive lane that ends by its deadline ("timeout", "rate-limited")
 * answers its interactive lookups and is sent again on the bulk lane for its
 * bulk ones, which never get a deadline's answer.
 *
 * Logging: never the prefix, the hash, a URL or a header value.
 *
 * Cache writes: a range is answered from what the upstream sent whether or
 * not the cache stores it. A failing put, touch or flush (a full disk, a
 * read-only or broken cache) is counted in cache_errors at each failure but
 * logged only when writes start failing or fail with another error, then
 * once when a flush commits again; a range too large for the cache (over
 * half its size) is logged once per resolver.
 *
 * Threading: the event_base's thread only. Callbacks run from the event loop
 * and may call br_resolver_resolve(), not br_resolver_free(). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "core/figures.h"
#include "range.h"
#include "range_cache.h"
#include "upstream/upstream.h"
#include "core/util.h"

struct event_base;

#define BR_RESOLVER_DEFAULT_TTL_S (7 * 86400)
#define BR_RESOLVER_DEFAULT_MAX_STALE_S (30 * 86400)
#define BR_RESOLVER_DEFAULT_FLUSH_MS 5
#define BR_RESOLVER_MAX_DECOYS 16
/* The partition of lookups that share one cache (uid_t (-1) is never a uid). */
#define BR_RESOLVER_PARTITION_SHARED UINT32_MAX

/* The reasons of an UNKNOWN (static strings, compare with strcmp or by pointer). */
#define BR_REASON_UNAVAILABLE "upstream-unavailable"
#define BR_REASON_ERROR "upstream-error"
#define BR_REASON_TIMEOUT "timeout"
#define BR_REASON_RATE_LIMITED "rate-limited"
#define BR_REASON_CIRCUIT_OPEN "circuit-open"
#define BR_REASON_SHUTTING_DOWN "shutting-down"

typedef enum br_resolve_status {
    BR_RESOLVE_NOT_FOUND = 0,
    BR_RESOLVE_FOUND,
    BR_RESOLVE_UNKNOWN,
} br_resolve_status;

typedef struct br_resolve_result {
    br_resolve_status status;
    uint32_t count;                           /* FOUND: passwords' count (1 for URLs) */
    char category[BR_RANGE_CATEGORY_MAX + 1]; /* FOUND: URLs' category ("" for passwords) */
    const char *reason;                       /* UNKNOWN: one of BR_REASON_*; else NULL */
    bool from_cache;                          /* answered from a stored entry, not a fresh 200 */
    bool stale;                               /* answered from an entry past its expiry */
} br_resolve_result;

/* Called exactly once for a lookup that br_resolver_resolve() did not answer
 * synchronously; res is valid during the call only. */
typedef void (*br_resolve_cb)(void *ctx, const br_resolve_result *res);

typedef struct br_resolver_config {
    const char *password_upstream; /* URL template, NULL or "": none */
    const char *url_upstream;      /* URL template, NULL or "": none */
    const char *ntlm_upstream;     /* NT hashes (BR_RANGE_PASSWORD_NTLM); NULL or "": none */
    br_upstream_config upstream;   /* limits etc. for both; its url_template is ignored */
    int64_t ttl_s;                 /* every range's freshness; <= 0: 7 d */
    int64_t max_stale_s;           /* 0: 30 d; < 0: never answer from an expired entry */
    uint32_t decoys;               /* decoy prefixes per real fetch, 0..BR_RESOLVER_MAX_DECOYS */
    /* The URL kind's decoy population: a bitmap of the 2^20 prefixes (bit p
     * is bit p mod 8 of byte p / 8, as br_urlfilter_prefix_bitmap()),
     * borrowed, must outlive the resolver. NULL: every prefix. */
    const uint8_t *url_decoy_bitmap;
    /* A stored URL range fetched at or before this time (clock below, s)
     * is not fresh for br_resolver_resolve*(): it may predate entries of a
     * URL filter built then (and of the mirror written with it), so it is
     * revalidated as an expired entry is, and answers as a stale one (within
     * max_stale) when the upstream fails. 0: none. */
    int64_t url_fresh_after;
    uint32_t flush_interval_ms; /* cache write batching; 0: 5 */
    br_log_fn log;              /* NULL: silent (also used for the upstreams) */
    void *log_ctx;
    /* Wall clock in seconds for the cache's fetched_at / expires_at; NULL:
     * br_clock_now_real(). For tests. */
    int64_t (*clock)(void *ctx);
    void *clock_ctx;
} br_resolver_config;

/* The resolver's figures (core/figures.h): SUM counts since start, NOW the
 * state of this resolver. */
#define BR_RESOLVER_FIGURES(X)                                                                     \
    X(uint64_t, lookups, SUM)       /* br_resolver_resolve() calls with valid arguments */         \
    X(uint64_t, range_lookups, SUM) /* br_resolver_resolve_range() calls with valid arguments */   \
    X(uint64_t, cache_fresh, SUM)   /* answered synchronously from a fresh entry */                \
    X(uint64_t, stale_answers, SUM) /* answered from an entry past its expiry (upstream failed) */ \
    X(uint64_t, fetches, SUM)       /* fetches started (one per coalesced group) */                \
    X(uint64_t, revalidations, SUM) /* ... of which conditional */                                 \
    X(uint64_t, coalesced, SUM)     /* lookups that joined a pending fetch */                      \
    X(uint64_t, not_modified, SUM)  /* 304 answers */                                              \
    X(uint64_t, found, SUM)                                                                        \
    X(uint64_t, not_found, SUM)                                                                    \
    X(uint64_t, unknown, SUM)                                                                      \
    X(uint64_t, unknown_unavailable, SUM)                                                          \
    X(uint64_t, unknown_error, SUM)                                                                \
    X(uint64_t, unknown_timeout, SUM)                                                              \
    X(uint64_t, unknown_circuit, SUM)                                                              \
    X(uint64_t, unknown_rate_limited, SUM)                                                         \
    X(uint64_t, parse_errors, SUM)    /* 200 bodies rejected by br_range_parse */                  \
    X(uint64_t, cache_errors, SUM)    /* failed cache puts, touches, flushes, lookups */           \
    X(uint64_t, flushes, SUM)         /* cache flushes made */                                     \
    X(uint64_t, decoys, SUM)          /* decoy fetches sent (not counted in fetches) */            \
    X(uint64_t, bulk_lookups, SUM)    /* lookups on the bulk lane (counted in lookups too) */      \
    X(uint64_t, promoted, SUM)        /* bulk fetches promoted by an interactive lookup */         \
    X(uint64_t, bulk_resent, SUM)     /* fetches sent again on the bulk lane after a deadline */   \
    X(uint32_t, pending_fetches, NOW) /* (partition, kind, prefix) fetches in progress, decoys */  \
    X(uint32_t, pending_lookups, NOW) /* lookups waiting for them */

typedef struct br_resolver_stats {
    BR_RESOLVER_FIGURES(BR_FIGURE_FIELD)
} br_resolver_stats;

typedef struct br_resolver br_resolver;

/* Make a resolver on base. cache is borrowed (may be NULL: no caching, every
 * lookup fetches, coalescing still applies) and must outlive the resolver.
 * 0, or -EINVAL (bad config) / -ENOMEM / -EIO with a reason in err. */
int br_resolver_new(struct event_base *base, const br_resolver_config *cfg, br_range_cache *cache,
                    br_resolver **out, br_error *err);
/* Pending lookups are answered UNKNOWN shutting-down (their callbacks run
 * inside this call), the cache is flushed. NULL is fine. */
void br_resolver_free(br_resolver *r);
BR_DEFINE_FREEP(br_resolver, br_resolver_free)

/* Look full_hash (br_range_hash_len(kind) bytes, copied) up in partition.
 * Returns 1: answered now, *res filled, cb is not called (a fresh cache hit,
 *            or an answer made at once: circuit open, no upstream, closing);
 *         0: cb(ctx, ...) will be called exactly once, later, from the event
 *            loop (never from inside this call); *res is untouched;
 *         -EINVAL (bad kind or argument) or -ENOMEM: no answer, no callback. */
int br_resolver_resolve(br_resolver *r, uint32_t partition, br_range_kind kind,
                        const uint8_t *full_hash, br_resolve_cb cb, void *ctx,
                        br_resolve_result *res);

/* The same on a lane (br_resolver_resolve is the interactive lane). */
int br_resolver_resolve_lane(br_resolver *r, uint32_t partition, br_range_kind kind,
                             const uint8_t *full_hash, br_lane lane, br_resolve_cb cb, void *ctx,
                             br_resolve_result *res);

/* ---- whole ranges --------------------------------------------------------------
 *
 * br_resolver_resolve_range() answers with the whole range set of a prefix
 * instead of one hash's entry: for serving the range API to others
 * (docs/upstream.md "Serving the range API"). It follows the flow above
 * exactly (cache in the partition, coalescing with the lookups of the same
 * partition, conditional fetches, decoys, stale answers after a failure) and
 * shares the partition rules: a range is only ever read from, waited on or
 * fetched into its own partition. */

typedef struct br_range_answer {
    const char *reason;   /* NULL: a range is given; else UNKNOWN, one of BR_REASON_* */
    const uint8_t *value; /* the range set (range.h), NULL when unknown */
    size_t len;
    int64_t fetched_at; /* when the upstream last gave or confirmed it (cache clock, s) */
    int64_t expires_at; /* fresh until then */
    const char *etag;   /* the upstream's validators, "" when none */
    const char *last_modified;
    bool from_cache; /* from a stored entry, not a fresh 200 */
    bool stale;      /* from an entry past its expiry (the upstream failed) */
} br_range_answer;

/* Called exactly once per br_resolver_resolve_range() call that returned 0
 * or 1. a and everything it points to are valid during the call only; the
 * callback must not call into this resolver (it may run inside the cache's
 * read transaction). */
typedef void (*br_range_answer_cb)(void *ctx, const br_range_answer *a);

/* The range of prefix20 (0 .. 0xFFFFF) of kind in partition, fetched on
 * the http lane (upstream.h "Lanes": after the interactive checks, with a
 * share of the upstream's rate and slots of its own).
 * Returns 1: answered inside this call (cb has run, once);
 *         0: cb(ctx, ...) will be called exactly once, later, from the event
 *            loop;
 *         -EINVAL (bad kind or argument) or -ENOMEM: cb is never called.
 * Counted in range_lookups (not in lookups), and as the other lookups in
 * cache_fresh, coalesced, fetches, stale_answers and the unknown counters. */
int br_resolver_resolve_range(br_resolver *r, uint32_t partition, br_range_kind kind,
                              uint32_t prefix20, br_range_answer_cb cb, void *ctx);

/* Offered a fresh stored range: true when the callback takes it (answers
 * with it). */
typedef bool (*br_range_peek_cb)(void *ctx, const br_range_answer *a);

/* The range of prefix20 of kind in partition from a fresh stored entry
 * alone: no fetch, no waiting, no stale answer. cb runs inside this call
 * with the entry, if there is a fresh one.
 * Returns 1: cb took it (counted as br_resolver_resolve_range counts an
 *            answer from a fresh entry: range_lookups, cache_fresh);
 *         0: no fresh entry, or cb declined: nothing counted (the caller
 *            asks br_resolver_resolve_range next);
 *         -EINVAL (bad kind or argument). */
int br_resolver_peek_range(br_resolver *r, uint32_t partition, br_range_kind kind,
                           uint32_t prefix20, br_range_peek_cb cb, void *ctx);

/* Commit pending cache writes now (0 or the cache's negative errno). */
int br_resolver_flush(br_resolver *r);

void br_resolver_get_stats(br_resolver *r, br_resolver_stats *st);
/* The upstream of a kind (for its stats), NULL when none. */
br_upstream *br_resolver_upstream(br_resolver *r, br_range_kind kind);
