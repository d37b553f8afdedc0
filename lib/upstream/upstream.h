/* SPDX-License-Identifier: MIT */
/* The upstream fetcher: k-anonymity range queries (docs/upstream.md) sent
 * with libcurl's multi-socket API, driven by a libevent event_base. Nothing in
 * here blocks the loop (a file:// read is a local read done by libcurl inside
 * the loop) and no thread is made per request (libcurl's own threaded DNS
 * resolver aside).
 *
 * One br_upstream = one URL template = one libcurl multi handle (its
 * connection cache: keep-alive connections are reused, HTTP/2 connections
 * are multiplexed) = one set of limits = one circuit breaker.
 *
 * URL template: "{prefix}" (at least once) is replaced by the 5 uppercase hex
 * digits of the prefix. Schemes http://, https:// and file:// only. For
 * file:// there is no HTTP status: a successful read is a 200, a missing or
 * unreadable file is BR_UPSTREAM_ERROR (never retried).
 *
 * Every request: User-Agent: breachd/<BREACHD_VERSION>; Add-Padding: true
 * (unless no_padding); Accept-Encoding with every encoding libcurl supports
 * (bodies are handed over decoded); HTTP/2 over TLS where the server offers
 * it; TLS peer and host verification always on (ca_file, else the system
 * store); the proxy from the config, else libcurl's usual environment
 * variables (http_proxy, HTTPS_PROXY, NO_PROXY, ...). Redirects are not
 * followed (a 3xx is an error). Given an ETag and/or a Last-Modified the
 * request is conditional (If-None-Match / If-Modified-Since) and a 304 comes
 * back as BR_UPSTREAM_NOT_MODIFIED.
 *
 * Limits:
 *  - deadline: timeout_ms from the br_upstream_fetch() call to the answer,
 *    time spent queued and in backoff included; when it passes the request
 *    ends with BR_UPSTREAM_TIMEOUT whatever it was doing;
 *  - at most max_inflight transfers at once, and a token bucket of `rate`
 *    transfers per second (`burst` tokens deep). A request over a limit
 *    waits in a FIFO queue: it is never refused for that (only its deadline
 *    can end it). Retries and decoys count as transfers;
 *  - body size: over max_body decoded bytes the transfer is aborted
 *    (BR_UPSTREAM_TOO_LARGE).
 *
 * Lanes (docs/upstream.md "Lanes"): a fetch is interactive
 * (br_upstream_fetch) or bulk (br_upstream_fetch_lane). Interactive fetches
 * have the deadline above and always go first: a bulk fetch starts only when
 * no interactive one is queued, draws from a token bucket of its own at
 * bulk_share of the rate (and from the shared one, of which it leaves
 * burst * (1 - bulk_share) tokens to interactive fetches), and uses at most
 * bulk_share of max_inflight (at least one slot). A bulk fetch has no
 * deadline: it waits in a FIFO queue of its own for as long as it takes (the
 * caller bounds how many it queues); each of its attempts is bounded by
 * timeout_ms, and it ends after max_attempts failed transfers like any other.
 * br_upstream_promote() makes a pending bulk fetch interactive: it gets a
 * deadline timeout_ms from then and goes to the back of the interactive
 * queue. An http fetch (BR_LANE_HTTP: ranges served to other programs) has
 * the deadline of an interactive one, but goes only when no interactive
 * fetch is queued (before a bulk one), with a token bucket of its own at
 * http_share of the rate, leaving the shared bucket burst * (1 - http_share)
 * tokens, and on at most http_share of max_inflight (at least one slot): a
 * flood of http fetches leaves the interactive ones their share.
 *
 * Retries: a timeout of an attempt (connect_timeout_ms, attempt_timeout_ms),
 * a transport failure (connection refused or reset, DNS, TLS handshake,
 * truncated body) and an HTTP 5xx (a 503 without Retry-After) are retried up
 * to max_attempts failed transfers in all (rate-limited answers, below, do
 * not count), after a jittered exponential backoff: attempt n waits a
 * uniform random time in [d/2, d], d = min(retry_max_ms, retry_base_ms *
 * 2^(n-1)). A retry that could not start before the deadline is not made: the
 * request ends with the last failure at once.
 *
 * Rate limits of the upstream (docs/upstream.md "When the upstream asks to
 * slow down"): a 429, or a 503 with Retry-After, is not a failure. Its
 * request goes back to the head of its lane's queue without using up an
 * attempt; Retry-After (delta-seconds or an HTTP-date, cut to max_pause_ms)
 * pauses every new transfer until then; queued interactive requests whose
 * deadline passes end with BR_UPSTREAM_RATE_LIMITED (so does any whose
 * deadline passes after a rate-limited answer or a pause), bulk ones wait.
 * A 429 also halves the effective rate (multiplicative decrease; not below
 * min(rate, 1) per second; once for all the transfers started before the
 * decrease), and its burst with it; it then climbs back linearly (additive
 * increase, not while paused) to `rate`, from half of it in
 * rate_recovery_ms. A half-open circuit's trial that is rate limited ends at
 * once with BR_UPSTREAM_RATE_LIMITED, and closes the circuit.
 *
 * Circuit breaker: breaker_threshold consecutive failed requests (final
 * outcome TIMEOUT, UNAVAILABLE, or an HTTP 5xx after its retries; any
 * other answer, 404 included, counts as success; a request that ended
 * before its first transfer, by its deadline in the queue, counts as
 * neither) open the circuit for
 * breaker_cooldown_ms: queued and backing-off requests end with
 * BR_UPSTREAM_CIRCUIT_OPEN, and br_upstream_fetch() refuses at once with
 * -EHOSTDOWN. After the cool-down the circuit is half-open: the next fetch is
 * the single trial (one attempt, no retry), or the next burst
 * (br_upstream_trial_burst), while further fetches are refused; its success
 * closes the circuit, its failure opens it for another cool-down.
 * Transfers already running when the circuit opened finish normally and do
 * not move the breaker. Through the log callback, every change of state: a
 * warning when the circuit opens from closed, a notice when it turns
 * half-open (noticed at the first fetch or breaker read after the
 * cool-down), when a failed trial opens it again, and when it closes (how
 * long it was open, the fetches refused or ended since); a request it ends
 * is not logged.
 *
 * Privacy: log messages and error texts never hold the URL, the prefix or a
 * header value.
 *
 * Threading: one thread, the event_base's. Callbacks run from the event loop
 * and may call br_upstream_fetch() but never br_upstream_free(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/figures.h"
#include "core/lane.h"
#include "core/util.h"
#include "core/log_line.h"

struct event_base;

/* A log sink: level is a syslog priority (LOG_ERR .. LOG_DEBUG), msg one line
 * without a newline. Used by the upstream and the resolver. */
/* br_log_fn: core/log_line.h */

#define BR_UPSTREAM_DEFAULT_TIMEOUT_MS 5000
#define BR_UPSTREAM_DEFAULT_MAX_INFLIGHT 16
#define BR_UPSTREAM_DEFAULT_RATE 50.0
#define BR_UPSTREAM_DEFAULT_MAX_BODY ((size_t)8 << 20)
#define BR_UPSTREAM_DEFAULT_MAX_ATTEMPTS 4
#define BR_UPSTREAM_DEFAULT_RETRY_BASE_MS 100
#define BR_UPSTREAM_DEFAULT_RETRY_MAX_MS 2000
#define BR_UPSTREAM_DEFAULT_BREAKER_THRESHOLD 5
#define BR_UPSTREAM_DEFAULT_BREAKER_COOLDOWN_MS 30000
#define BR_UPSTREAM_DEFAULT_BULK_SHARE 0.5
#define BR_UPSTREAM_DEFAULT_HTTP_SHARE 0.5
#define BR_UPSTREAM_DEFAULT_RATE_RECOVERY_MS 30000
#define BR_UPSTREAM_DEFAULT_MAX_PAUSE_MS 300000
#define BR_UPSTREAM_VALIDATOR_MAX 255 /* longer ETag / Last-Modified values are dropped */

/* Every field has a default for 0 / NULL. */
typedef struct br_upstream_config {
    const char *url_template;     /* required, see above */
    uint32_t timeout_ms;          /* deadline of a fetch; 0: 5000 */
    uint32_t connect_timeout_ms;  /* per attempt; 0: half the deadline */
    uint32_t attempt_timeout_ms;  /* per attempt, whole transfer; 0: only the deadline */
    uint32_t max_inflight;        /* 0: 16 */
    double rate;                  /* transfers per second; 0: 50; < 0: unlimited */
    uint32_t burst;               /* bucket depth; 0: min(max_inflight, ceil(rate)), at least 1 */
    size_t max_body;              /* decoded bytes; 0: 8 MiB */
    uint32_t max_attempts;        /* transfers per fetch, retries included; 0: 4 */
    uint32_t retry_base_ms;       /* 0: 100 */
    uint32_t retry_max_ms;        /* 0: 2000 */
    uint32_t breaker_threshold;   /* 0: 5 */
    uint32_t breaker_cooldown_ms; /* 0: 30000 */
    const char *proxy;            /* NULL or "": libcurl's environment variables */
    const char *ca_file;          /* NULL or "": the system CA store */
    bool no_padding;              /* do not send Add-Padding: true (bulk downloads) */
    double bulk_share;            /* the bulk lane's share of rate and max_inflight, (0, 1];
                                   * 0: 0.5 */
    double http_share;            /* the http lane's share of rate and max_inflight, (0, 1];
                                   * 0: 0.5 */
    uint32_t rate_recovery_ms;    /* after a 429, from half the rate back to it; 0: 30000 */
    uint32_t max_pause_ms;        /* a longer Retry-After is cut to this; 0: 300000 */
    uint32_t h2_max_streams;      /* HTTP/2 streams per connection before another one is
                                   * opened; 0: libcurl's default (100) */
    br_log_fn log;                /* NULL: silent */
    void *log_ctx;
} br_upstream_config;

typedef struct br_upstream br_upstream;
/* A pending fetch, for br_upstream_promote(): valid until its callback. */
typedef struct br_upstream_req br_upstream_req;

typedef enum br_upstream_status {
    BR_UPSTREAM_OK = 0,       /* HTTP 200 (or a file read): body holds the response */
    BR_UPSTREAM_NOT_MODIFIED, /* HTTP 304 to a conditional request */
    BR_UPSTREAM_ERROR,        /* the upstream answered, but not usably: another HTTP status
                               * (http_status says which), a missing file, a bad encoding */
    BR_UPSTREAM_TIMEOUT,      /* the deadline passed (or the last attempt timed out) */
    BR_UPSTREAM_UNAVAILABLE,  /* could not reach it or the transfer broke: refused, reset,
                               * DNS, TLS, truncated body */
    BR_UPSTREAM_TOO_LARGE,    /* body over max_body: aborted */
    BR_UPSTREAM_CIRCUIT_OPEN, /* the circuit opened while the request waited */
    BR_UPSTREAM_CANCELLED,    /* br_upstream_free() with the request pending */
    BR_UPSTREAM_RATE_LIMITED, /* the deadline passed while the upstream asked to wait (429,
                               * 503 with Retry-After; see "Rate limits"), or a trial got one */
} br_upstream_status;

typedef struct br_upstream_response {
    br_upstream_status status;
    long http_status; /* of the last attempt; 0 when none; 200 for a file read */
    const char *body; /* OK: the decoded body (not NUL-terminated), else NULL */
    size_t body_len;
    const char *etag; /* response validators, "" when none */
    const char *last_modified;
    int64_t max_age;   /* Cache-Control max-age in seconds; 0 for no-store / no-cache;
                        * -1 when absent */
    uint32_t attempts; /* transfers made */
    const char *error; /* not OK / NOT_MODIFIED: a short human text, safe to log */
} br_upstream_response;

/* Called exactly once per accepted fetch; res and everything it points to is
 * valid during the call only. */
typedef void (*br_upstream_cb)(void *ctx, const br_upstream_response *res);

typedef enum br_breaker_state {
    BR_BREAKER_CLOSED = 0,
    BR_BREAKER_OPEN,
    BR_BREAKER_HALF_OPEN,
} br_breaker_state;

/* The upstream's figures (core/figures.h): SUM counts since start, NOW the
 * state of this upstream. */
#define BR_UPSTREAM_FIGURES(X)                                                                     \
    X(uint64_t, fetches, SUM)   /* accepted br_upstream_fetch() calls */                           \
    X(uint64_t, transfers, SUM) /* attempts started */                                             \
    X(uint64_t, retries, SUM)   /* attempts after the first */                                     \
    X(uint64_t, ok, SUM)        /* final outcomes ... */                                           \
    X(uint64_t, not_modified, SUM)                                                                 \
    X(uint64_t, err_http, SUM)                                                                     \
    X(uint64_t, err_timeout, SUM)                                                                  \
    X(uint64_t, err_unavailable, SUM)                                                              \
    X(uint64_t, err_too_large, SUM)                                                                \
    X(uint64_t, err_circuit, SUM)                                                                  \
    X(uint64_t, cancelled, SUM)                                                                    \
    X(uint64_t, refused_circuit, SUM) /* fetches refused with -EHOSTDOWN */                        \
    X(uint64_t, breaker_trips, SUM)                                                                \
    X(uint64_t, breaker_open_ms, SUM)  /* time not closed (open or half-open), this outage too */  \
    X(uint64_t, body_bytes, SUM)       /* decoded body bytes received */                           \
    X(uint32_t, inflight, NOW)         /* transfers running now */                                 \
    X(uint32_t, queued, NOW)           /* interactive fetches waiting for a slot or a token */     \
    X(uint32_t, backoff, NOW)          /* waiting to retry */                                      \
    X(uint32_t, queued_max, NOW)       /* high-water mark of queued */                             \
    X(uint64_t, bulk_fetches, SUM)     /* accepted fetches on the bulk lane */                     \
    X(uint64_t, promoted, SUM)         /* bulk fetches made interactive */                         \
    X(uint32_t, bulk_queued, NOW)      /* bulk fetches waiting for their turn */                   \
    X(uint32_t, bulk_queued_max, NOW)  /* high-water mark of bulk_queued */                        \
    X(uint32_t, bulk_inflight, NOW)    /* transfers of bulk fetches running now */                 \
    X(uint64_t, http_fetches, SUM)     /* accepted fetches on the http lane */                     \
    X(uint32_t, http_queued, NOW)      /* http fetches waiting for their turn */                   \
    X(uint32_t, http_inflight, NOW)    /* transfers of http fetches running now */                 \
    X(uint64_t, rate_limited, SUM)     /* answers 429, or 503 with Retry-After */                  \
    X(uint64_t, err_rate_limited, SUM) /* final outcomes BR_UPSTREAM_RATE_LIMITED */               \
    X(uint64_t, rate_decreases, SUM)   /* halvings of the effective rate */                        \
    X(uint64_t, pauses, SUM)           /* pauses a Retry-After started */                          \
    X(uint64_t, paused_ms, SUM)        /* their length, added up */                                \
    X(uint64_t, pause_left_ms, NOW)    /* of the pause now, 0 when none */                         \
    X(double, rate_effective, NOW)     /* transfers per second now; < 0: unlimited */              \
    X(br_breaker_state, breaker, NOW)

typedef struct br_upstream_stats {
    BR_UPSTREAM_FIGURES(BR_FIGURE_FIELD)
} br_upstream_stats;

/* Make an upstream on base. 0, or -EINVAL (bad template or config), -ENOMEM,
 * -EIO (libcurl or libevent setup failed) with a reason in err. */
int br_upstream_new(struct event_base *base, const br_upstream_config *cfg, br_upstream **out,
                    br_error *err);
/* Every pending request is ended first: its callback is called with
 * BR_UPSTREAM_CANCELLED (fetches made from those callbacks are refused with
 * -ESHUTDOWN). NULL is fine. */
void br_upstream_free(br_upstream *up);
BR_DEFINE_FREEP(br_upstream, br_upstream_free)

/* Fetch the range of prefix20 (the 20-bit prefix). etag / last_modified
 * (NULL or "" for none) make the request conditional. Returns 0: cb will be
 * called exactly once, later, from the event loop, never from inside this
 * call. Or, and then cb is never called: -EHOSTDOWN when the circuit is open
 * (or half-open with its trial running), -ESHUTDOWN during br_upstream_free,
 * -EINVAL, -ENOMEM. */
int br_upstream_fetch(br_upstream *up, uint32_t prefix20, const char *etag,
                      const char *last_modified, br_upstream_cb cb, void *ctx);
/* The same on a lane (br_upstream_fetch is the interactive lane). When
 * handle is not NULL it is set to the fetch (on success), for
 * br_upstream_promote(); it is valid until cb is called. */
int br_upstream_fetch_lane(br_upstream *up, uint32_t prefix20, const char *etag,
                           const char *last_modified, br_lane lane, br_upstream_cb cb, void *ctx,
                           br_upstream_req **handle);
/* Make a pending bulk fetch interactive (see "Lanes"); nothing for an
 * interactive one. */
void br_upstream_promote(br_upstream *up, br_upstream_req *h);

/* The next n fetches are one burst (a real fetch and its decoys,
 * docs/upstream.md "Decoys"): while the circuit is half-open they are its
 * trial together, so that the trial looks like any burst (each one attempt;
 * the first final outcome decides, as for a single trial). 0 ends the
 * allowance; the caller sets it before the burst and ends it after. */
void br_upstream_trial_burst(br_upstream *up, uint32_t n);

/* The breaker state now (an open circuit whose cool-down is over reads
 * HALF_OPEN). */
br_breaker_state br_upstream_breaker(br_upstream *up);
void br_upstream_get_stats(br_upstream *up, br_upstream_stats *st);

const char *br_upstream_status_name(br_upstream_status s);
const char *br_breaker_state_name(br_breaker_state s);
