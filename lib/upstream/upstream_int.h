/* SPDX-License-Identifier: MIT */
/* Internals of the upstream fetcher (upstream.h), shared by its three files
 * and included by no other (but the header fuzz target): upstream.c (making
 * and freeing a fetcher, fetch and promote, the request lists and the
 * lanes' queues, backoff and deadline timers, ending a request),
 * upstream_pump.c (what starts when: the pump's slots, lanes and token
 * buckets, and the circuit breaker) and upstream_transfer.c (one transfer:
 * callbacks, response headers, the easy-handle pool, classifying the
 * outcome, retry or finish; the libcurl <-> libevent socket and timer
 * glue). The life of a request is drawn at the top of upstream.c. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "upstream.h"
#include "core/util.h"

#define PREFIX_TOKEN "{prefix}"

typedef enum req_state {
    RQ_QUEUED,
    RQ_RUNNING,
    RQ_BACKOFF,
} req_state;

typedef struct br_upstream_req req;
struct br_upstream_req {
    br_upstream *up;
    req *prev, *next;   /* every pending request (up->all) */
    req *qprev, *qnext; /* its lane's queue (RQ_QUEUED only) */
    req *vnext;         /* a list of requests being ended (the breaker's) */
    req_state state;
    br_lane lane;
    uint32_t prefix20;
    bool trial; /* the half-open breaker's trial */
    char *etag_in, *lm_in;
    br_upstream_cb cb;
    void *ctx;
    uint64_t deadline_ns;      /* UINT64_MAX on the bulk lane: none */
    uint32_t attempts;         /* transfers started */
    uint32_t limited;          /* ... answered 429, or 503 with Retry-After (not failures) */
    bool saw_pause;            /* queued while the upstream was paused */
    uint64_t started_ns;       /* of the current / last transfer */
    struct event *deadline_ev; /* made when first needed */
    struct event *backoff_ev;  /* made when first needed */
    CURL *easy;
    struct curl_slist *headers;
    /* the current / last attempt */
    char *body;
    size_t body_len, body_cap;
    bool too_large;
    /* the response's validators, BR_UPSTREAM_VALIDATOR_MAX + 1 bytes each, in
     * one block made with the first transfer (a queued request is small) */
    char *etag, *last_modified;
    int64_t max_age;
    long http_status;
    int64_t retry_after_ms; /* the response's Retry-After; -1: none or unreadable */
    br_upstream_status last_status;
    char last_error[96];
};

/* A socket libcurl asked us to watch; private to the glue (upstream_transfer.c). */
typedef struct sockctx sockctx;

/* A FIFO of queued requests (one per lane). */
typedef struct up_queue {
    req *head, *tail;
} up_queue;

struct br_upstream {
    struct event_base *base;
    CURLM *multi;
    struct event *curl_timer; /* libcurl's timeout */
    struct event *pump_ev;    /* start what the limits allow */
    bool closing;

    /* template, split at each {prefix} */
    char *tmpl;
    size_t tmpl_len;
    bool is_file, is_https;

    /* config, defaults applied */
    uint64_t timeout_ns, connect_timeout_ms, attempt_timeout_ms;
    uint32_t max_inflight, max_attempts, retry_base_ms, retry_max_ms;
    uint32_t breaker_threshold;
    uint64_t breaker_cooldown_ns;
    double rate, burst;
    size_t max_body;
    char *proxy, *ca_file;
    bool no_padding;
    br_log_fn log;
    void *log_ctx;

    req *all;
    up_queue q[BR_LANES]; /* indexed by br_lane */
    sockctx *socks;
    sockctx *spare_socks; /* unwatched, their events kept for reuse */

    /* idle easy handles, reused (curl_easy_reset) to spare their buffers' set-up */
    CURL **pool;
    uint32_t npool;

    /* token buckets: the shared one (rate, burst) and those of the bulk
     * and http lanes (rate and burst times their share), by br_lane (the
     * interactive lane's share is 1 and its bucket unused) */
    double tokens;
    double lane_tokens[BR_LANES];
    uint64_t tokens_at_ns;
    double share[BR_LANES];
    uint32_t slots[BR_LANES]; /* transfers of the lane's requests at most */

    /* rate limits of the upstream (upstream.h "Rate limits"): rate and burst
     * above are the effective ones, these the configured ones */
    double rate_cfg, burst_cfg;
    double rate_step;          /* additive increase, per ns */
    uint64_t rate_at_ns;       /* the effective rate is up to date at this time */
    uint64_t last_decrease_ns; /* of the effective rate */
    uint64_t pause_until_ns;   /* no transfer starts before this */
    uint64_t max_pause_ns;

    /* breaker */
    br_breaker_state breaker;
    uint32_t consecutive_failures;
    uint64_t open_until_ns;
    uint64_t opened_ns;      /* when it opened from closed */
    uint64_t refused_now;    /* fetches refused or ended by it since then */
    uint64_t open_total_ns;  /* the outages that ended (open to closed), added up */
    uint32_t trials_running; /* requests of the half-open circuit's trial */
    uint32_t trial_burst;    /* fetches still allowed into it (br_upstream_trial_burst) */

    uint64_t rng;
    br_upstream_stats st;
};

static inline struct timeval up_ns_to_tv(uint64_t ns)
{
    struct timeval tv = {.tv_sec = (time_t)(ns / 1000000000u),
                         .tv_usec = (suseconds_t)(ns % 1000000000u / 1000u)};
    return tv;
}

/* The stats' count of lane's running transfers (NULL: the interactive lane,
 * counted in inflight only) and of its queued requests. */
static inline uint32_t *up_lane_inflight(br_upstream *up, br_lane lane)
{
    return lane == BR_LANE_BULK   ? &up->st.bulk_inflight
           : lane == BR_LANE_HTTP ? &up->st.http_inflight
                                  : NULL;
}

static inline uint32_t *up_lane_queued(br_upstream *up, br_lane lane)
{
    return lane == BR_LANE_BULK   ? &up->st.bulk_queued
           : lane == BR_LANE_HTTP ? &up->st.http_queued
                                  : &up->st.queued;
}

/* ---- upstream.c ------------------------------------------------------------- */

void up_log(br_upstream *up, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Run the pump (start what the limits allow) soon, from the event loop. */
void up_schedule_pump(br_upstream *up);
/* Queue r on its lane, at the head (a retry) or the tail. */
void up_queue_push(br_upstream *up, req *r, bool at_head);
void up_queue_remove(br_upstream *up, req *r);
/* Detach r from everything, call back, free. The transfer (if any) must
 * already be out of the multi handle. */
void up_finish(req *r, br_upstream_status status);
/* Arm r's backoff timer for wait_ns (0, or -ENOMEM). */
int up_arm_backoff(req *r, uint64_t wait_ns);

/* ---- upstream_pump.c -------------------------------------------------------- */

/* The pump event's callback (arg: the br_upstream): start what the slots,
 * the lanes, the token buckets and a pause allow. */
void up_pump_cb(evutil_socket_t fd, short what, void *arg);
/* Bring the effective rate up to date (additive increase) at now. */
void up_rate_update(br_upstream *up, uint64_t now);
/* r's transfer was answered 429, or 503 with Retry-After (r is out of the
 * multi handle, in state BACKOFF): halve the rate (429), pause (Retry-After),
 * and queue r again at the head of its lane, or end it (a trial). */
void up_rate_limited(br_upstream *up, req *r);

/* ---- the circuit breaker (upstream_pump.c) ---------------------------------- */

/* The breaker state at now: an open circuit whose cool-down is over turns
 * half-open here. */
br_breaker_state up_breaker_now(br_upstream *up, uint64_t now);
/* The final outcome of a request moves the breaker. */
void up_breaker_record(br_upstream *up, req *r, br_upstream_status s);

/* ---- upstream_transfer.c ---------------------------------------------------- */

/* Set up and add the easy handle of the next attempt. */
int up_start_transfer(br_upstream *up, req *r, uint64_t now);
/* Take a running request's transfer out of the multi handle. */
void up_stop_transfer(br_upstream *up, req *r);

/* ---- the response headers (upstream_transfer.c) ----------------------------- */

/* One response header line as libcurl passes it (its CRLF included, not
 * NUL-terminated): a status line ("HTTP/...") starts a new response and
 * clears what the last one said; ETag and Last-Modified (any case) set
 * etag / last_modified (BR_UPSTREAM_VALIDATOR_MAX + 1 bytes each; "" for
 * a value that is empty, longer than BR_UPSTREAM_VALIDATOR_MAX or holds a
 * control byte); Cache-Control sets *max_age to its max-age in seconds, 0
 * for no-store or no-cache; Retry-After sets *retry_after_ms (seconds or an
 * HTTP-date, as milliseconds from now; -1 when unreadable). Other lines
 * change nothing. */
void up_header_line(const char *line, size_t len, char *etag, char *last_modified, int64_t *max_age,
                    int64_t *retry_after_ms);

/* ---- the libcurl <-> libevent glue (upstream_transfer.c) -------------------- */

/* CURLMOPT_SOCKETFUNCTION and CURLMOPT_TIMERFUNCTION (userp: the br_upstream). */
int up_curl_socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp);
int up_curl_timer_cb(CURLM *m, long timeout_ms, void *userp);
/* The curl_timer event's callback (arg: the br_upstream). */
void up_curl_timer_event_cb(evutil_socket_t fd, short what, void *arg);
/* Free the socket events libcurl left (after curl_multi_cleanup). */
void up_socks_free(br_upstream *up);
