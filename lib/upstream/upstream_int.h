/* SPDX-License-Identifier: MIT */
/* Internals of the upstream fetcher (upstream.h), shared by its files and
 * included by no other: upstream.c (fetch, the request lists and queue, the
 * pump, backoff and deadline timers, ending a request), upstream_setup.c
 * (br_upstream_new and br_upstream_free), upstream_breaker.c (the circuit
 * breaker), upstream_transfer.c (one transfer: callbacks, response headers,
 * the easy-handle pool, classifying the outcome, retry or finish) and
 * upstream_curl_event.c (the libcurl <-> libevent socket and timer glue).
 * The life of a request is drawn at the top of upstream.c. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "upstream.h"
#include "util.h"

#define PREFIX_TOKEN "{prefix}"

typedef enum req_state {
    RQ_QUEUED,
    RQ_RUNNING,
    RQ_BACKOFF,
} req_state;

typedef struct req req;
struct req {
    br_upstream *up;
    req *prev, *next;   /* every pending request (up->all) */
    req *qprev, *qnext; /* the queue (RQ_QUEUED only) */
    req_state state;
    uint32_t prefix20;
    bool trial; /* the half-open breaker's trial */
    char *etag_in, *lm_in;
    br_upstream_cb cb;
    void *ctx;
    uint64_t deadline_ns;
    uint32_t attempts;
    struct event *deadline_ev;
    struct event *backoff_ev;
    CURL *easy;
    struct curl_slist *headers;
    /* the current / last attempt */
    char *body;
    size_t body_len, body_cap;
    bool too_large;
    char etag[BR_UPSTREAM_VALIDATOR_MAX + 1];
    char last_modified[BR_UPSTREAM_VALIDATOR_MAX + 1];
    int64_t max_age;
    long http_status;
    br_upstream_status last_status;
    char last_error[96];
};

/* A socket libcurl asked us to watch; private to upstream_curl_event.c. */
typedef struct sockctx sockctx;

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
    req *qhead, *qtail;
    sockctx *socks;
    sockctx *spare_socks; /* unwatched, their events kept for reuse */

    /* idle easy handles, reused (curl_easy_reset) to spare their buffers' set-up */
    CURL **pool;
    uint32_t npool;

    /* token bucket */
    double tokens;
    uint64_t tokens_at_ns;

    /* breaker */
    br_breaker_state breaker;
    uint32_t consecutive_failures;
    uint64_t open_until_ns;
    bool trial_running;

    uint64_t rng;
    br_upstream_stats st;
};

static inline struct timeval up_ns_to_tv(uint64_t ns)
{
    struct timeval tv = {.tv_sec = (time_t)(ns / 1000000000u),
                         .tv_usec = (suseconds_t)(ns % 1000000000u / 1000u)};
    return tv;
}

/* ---- upstream.c ------------------------------------------------------------- */

void up_log(br_upstream *up, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Run the pump (start what the limits allow) soon, from the event loop. */
void up_schedule_pump(br_upstream *up);
/* The pump event's callback (arg: the br_upstream). */
void up_pump_cb(evutil_socket_t fd, short what, void *arg);
/* Detach r from everything, call back, free. The transfer (if any) must
 * already be out of the multi handle. */
void up_finish(req *r, br_upstream_status status);

/* ---- upstream_breaker.c ----------------------------------------------------- */

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
/* Handle every transfer libcurl reports done, then schedule the pump. */
void up_check_multi_info(br_upstream *up);

/* ---- upstream_headers.c ----------------------------------------------------- */

/* One response header line as libcurl passes it (its CRLF included, not
 * NUL-terminated): a status line ("HTTP/...") starts a new response and
 * clears what the last one said; ETag and Last-Modified (any case) set
 * etag / last_modified (BR_UPSTREAM_VALIDATOR_MAX + 1 bytes each; "" for
 * a value that is empty, longer than BR_UPSTREAM_VALIDATOR_MAX or holds a
 * control byte); Cache-Control sets *max_age to its max-age in seconds, 0
 * for no-store or no-cache. Other lines change nothing. */
void up_header_line(const char *line, size_t len, char *etag, char *last_modified,
                    int64_t *max_age);

/* ---- upstream_curl_event.c -------------------------------------------------- */

/* CURLMOPT_SOCKETFUNCTION and CURLMOPT_TIMERFUNCTION (userp: the br_upstream). */
int up_curl_socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp);
int up_curl_timer_cb(CURLM *m, long timeout_ms, void *userp);
/* The curl_timer event's callback (arg: the br_upstream). */
void up_curl_timer_event_cb(evutil_socket_t fd, short what, void *arg);
/* Free the socket events libcurl left (after curl_multi_cleanup). */
void up_socks_free(br_upstream *up);
