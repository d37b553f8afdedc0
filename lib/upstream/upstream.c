/* SPDX-License-Identifier: MIT */
/* Upstream fetcher: libcurl multi-socket on libevent. See upstream.h. This
 * file has making and freeing a fetcher, br_upstream_fetch() and the life of
 * a request up to its callback: the request lists and queue, the backoff and
 * deadline timers, and ending a request. What starts when (the pump: slots,
 * lanes, token buckets, the circuit breaker) is upstream_pump.c; one
 * transfer, its response headers and the libcurl <-> libevent glue are
 * upstream_transfer.c; the three share upstream_int.h.
 *
 * Life of a request (struct br_upstream_req):
 *   QUEUED  -- pump (slot and token) --> RUNNING -- done --> finish (callback)
 *   RUNNING -- retriable failure --> BACKOFF -- timer --> QUEUED (at the head)
 *   any state -- deadline timer (interactive only) --> finish(TIMEOUT)
 * A request is QUEUED on its lane's queue; a promotion moves it to the back
 * of the interactive one. Transfers are only ever started from the pump
 * event (upstream_pump.c), so br_upstream_fetch() never starts one (or calls
 * back) itself. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include "upstream_int.h"
#include "core/br_assert.h"
#include "core/log_line.h"
#include "core/random.h"

/* ---- small helpers ---------------------------------------------------------- */

void up_log(br_upstream *up, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    br_vlogf(up->log, up->log_ctx, level, fmt, ap);
    va_end(ap);
}

const char *br_upstream_status_name(br_upstream_status s)
{
    switch (s) {
    case BR_UPSTREAM_OK:
        return "ok";
    case BR_UPSTREAM_NOT_MODIFIED:
        return "not-modified";
    case BR_UPSTREAM_ERROR:
        return "error";
    case BR_UPSTREAM_TIMEOUT:
        return "timeout";
    case BR_UPSTREAM_UNAVAILABLE:
        return "unavailable";
    case BR_UPSTREAM_TOO_LARGE:
        return "too-large";
    case BR_UPSTREAM_CIRCUIT_OPEN:
        return "circuit-open";
    case BR_UPSTREAM_CANCELLED:
        return "cancelled";
    case BR_UPSTREAM_RATE_LIMITED:
        return "rate-limited";
    }
    return "?";
}

const char *br_breaker_state_name(br_breaker_state s)
{
    switch (s) {
    case BR_BREAKER_CLOSED:
        return "closed";
    case BR_BREAKER_OPEN:
        return "open";
    case BR_BREAKER_HALF_OPEN:
        return "half-open";
    }
    return "?";
}

/* ---- lists ------------------------------------------------------------------ */

static void all_link(br_upstream *up, req *r)
{
    r->prev = NULL;
    r->next = up->all;
    if (up->all)
        up->all->prev = r;
    up->all = r;
}

static void all_unlink(br_upstream *up, req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        up->all = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
}

void up_queue_push(br_upstream *up, req *r, bool at_head)
{
    up_queue *q = &up->q[r->lane];
    r->state = RQ_QUEUED;
    if (at_head) {
        r->qprev = NULL;
        r->qnext = q->head;
        if (q->head)
            q->head->qprev = r;
        else
            q->tail = r;
        q->head = r;
    } else {
        r->qnext = NULL;
        r->qprev = q->tail;
        if (q->tail)
            q->tail->qnext = r;
        else
            q->head = r;
        q->tail = r;
    }
    uint32_t *queued = up_lane_queued(up, r->lane);
    ++*queued;
    if (r->lane == BR_LANE_BULK)
        up->st.bulk_queued_max = BR_MAX(up->st.bulk_queued_max, *queued);
    else if (r->lane == BR_LANE_INTERACTIVE)
        up->st.queued_max = BR_MAX(up->st.queued_max, *queued);
}

void up_queue_remove(br_upstream *up, req *r)
{
    if (br_fails_assert((unsigned)r->lane < BR_LANES))
        return;
    up_queue *q = &up->q[r->lane];
    /* in its lane's queue: unlinking a request from another would cut it */
    if (br_fails_assert(r->qprev ? r->qprev->qnext == r : q->head == r) ||
        br_fails_assert(r->qnext ? r->qnext->qprev == r : q->tail == r))
        return;
    if (r->qprev)
        r->qprev->qnext = r->qnext;
    else
        q->head = r->qnext;
    if (r->qnext)
        r->qnext->qprev = r->qprev;
    else
        q->tail = r->qprev;
    r->qprev = r->qnext = NULL;
    uint32_t *queued = up_lane_queued(up, r->lane);
    if (!br_fails_assert(*queued > 0))
        (*queued)--;
}

void up_schedule_pump(br_upstream *up)
{
    if (!up->closing)
        event_active(up->pump_ev, 0, 0); /* res 0: a wake-up, not a timeout */
}

/* ---- ending a request ------------------------------------------------------- */

static void req_free(req *r)
{
    if (!r)
        return;
    if (r->deadline_ev)
        event_free(r->deadline_ev);
    if (r->backoff_ev)
        event_free(r->backoff_ev);
    if (r->easy)
        curl_easy_cleanup(r->easy);
    curl_slist_free_all(r->headers);
    free(r->body);
    free(r->etag);
    free(r->etag_in);
    free(r->lm_in);
    free(r);
}

static void req_freep(req **r)
{
    req_free(*r);
}

/* A final outcome in the stats. */
static void count_outcome(br_upstream *up, br_upstream_status status)
{
    switch (status) {
    case BR_UPSTREAM_OK:
        up->st.ok++;
        break;
    case BR_UPSTREAM_NOT_MODIFIED:
        up->st.not_modified++;
        break;
    case BR_UPSTREAM_ERROR:
        up->st.err_http++;
        break;
    case BR_UPSTREAM_TIMEOUT:
        up->st.err_timeout++;
        break;
    case BR_UPSTREAM_UNAVAILABLE:
        up->st.err_unavailable++;
        break;
    case BR_UPSTREAM_TOO_LARGE:
        up->st.err_too_large++;
        break;
    case BR_UPSTREAM_CIRCUIT_OPEN:
        up->st.err_circuit++;
        up->refused_now++;
        break;
    case BR_UPSTREAM_CANCELLED:
        up->st.cancelled++;
        break;
    case BR_UPSTREAM_RATE_LIMITED:
        up->st.err_rate_limited++;
        break;
    }
}

/* Detach r from everything, call back, free. The transfer (if any) must
 * already be out of the multi handle. */
void up_finish(req *r, br_upstream_status status)
{
    br_upstream *up = r->up;

    if (r->state == RQ_QUEUED)
        up_queue_remove(up, r);
    else if (r->state == RQ_BACKOFF)
        up->st.backoff--;
    all_unlink(up, r);
    if (r->deadline_ev)
        event_del(r->deadline_ev);
    if (r->backoff_ev)
        event_del(r->backoff_ev);

    count_outcome(up, status);

    if (status == BR_UPSTREAM_CANCELLED && !r->last_error[0])
        snprintf(r->last_error, sizeof(r->last_error), "cancelled");
    if (status == BR_UPSTREAM_TIMEOUT && !r->last_error[0])
        snprintf(r->last_error, sizeof(r->last_error), "deadline passed");
    /* One ended by the circuit is counted, not logged: the breaker logs
     * once when it opens and once when it closes (docs/upstream.md "Rate
     * and back-off"). */
    if (status != BR_UPSTREAM_OK && status != BR_UPSTREAM_NOT_MODIFIED &&
        status != BR_UPSTREAM_CANCELLED && status != BR_UPSTREAM_CIRCUIT_OPEN)
        up_log(up, LOG_INFO, "upstream fetch failed: %s (%s, %u attempt%s)",
               br_upstream_status_name(status), r->last_error[0] ? r->last_error : "-", r->attempts,
               r->attempts == 1 ? "" : "s");

    br_upstream_response res = {
        .status = status,
        .http_status = r->http_status,
        .body = NULL,
        .body_len = 0,
        .etag = r->etag ? r->etag : "",
        .last_modified = r->last_modified ? r->last_modified : "",
        .max_age = r->max_age,
        .attempts = r->attempts,
        .error =
            status == BR_UPSTREAM_OK || status == BR_UPSTREAM_NOT_MODIFIED ? NULL : r->last_error,
    };
    if (status == BR_UPSTREAM_OK) {
        res.body = r->body ? r->body : "";
        res.body_len = r->body_len;
    } else {
        res.etag = "";
        res.last_modified = "";
        res.max_age = -1;
    }

    up_breaker_record(up, r, status);
    r->cb(r->ctx, &res);
    req_free(r);
}

/* ---- backoff and deadline timers -------------------------------------------- */

static void backoff_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    req *r = arg;
    br_upstream *up = r->up;
    up->st.backoff--;
    up_queue_push(up, r, true);
    up_schedule_pump(up);
}

int up_arm_backoff(req *r, uint64_t wait_ns)
{
    if (!r->backoff_ev && !(r->backoff_ev = evtimer_new(r->up->base, backoff_cb, r)))
        return br_trace(-ENOMEM);
    struct timeval tv = up_ns_to_tv(wait_ns);
    return event_add(r->backoff_ev, &tv) < 0 ? -ENOMEM : 0;
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg);

/* Start r's deadline timer: timeout_ms from now (0, or -ENOMEM). */
static int arm_deadline(req *r, uint64_t now)
{
    br_upstream *up = r->up;
    r->deadline_ns = now + up->timeout_ns;
    if (!r->deadline_ev && !(r->deadline_ev = evtimer_new(up->base, deadline_cb, r)))
        return br_trace(-ENOMEM);
    struct timeval tv = up_ns_to_tv(up->timeout_ns);
    return event_add(r->deadline_ev, &tv) < 0 ? -ENOMEM : 0;
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    req *r = arg;
    br_upstream *up = r->up;
    if (r->state == RQ_RUNNING) {
        up_stop_transfer(up, r);
        r->state = RQ_BACKOFF;
        up->st.backoff++;
        snprintf(r->last_error, sizeof(r->last_error), "deadline passed during a transfer");
        up_schedule_pump(up);
    } else {
        snprintf(r->last_error, sizeof(r->last_error), "deadline passed while %s",
                 r->state == RQ_QUEUED ? "queued" : "waiting to retry");
    }
    /* Waited because the upstream asked it to: say so. */
    bool limited = r->limited || r->saw_pause || br_now_ns() < up->pause_until_ns;
    up_finish(r, limited ? BR_UPSTREAM_RATE_LIMITED : BR_UPSTREAM_TIMEOUT);
}

/* ---- public API ------------------------------------------------------------- */

static bool validator_ok(const char *v)
{
    if (!v || !*v)
        return false;
    size_t n = strlen(v);
    if (n > BR_UPSTREAM_VALIDATOR_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] == 0x7f)
            return false;
    return true;
}

int br_upstream_fetch_lane(br_upstream *up, uint32_t prefix20, const char *etag,
                           const char *last_modified, br_lane lane, br_upstream_cb cb, void *ctx,
                           br_upstream_req **handle)
{
    if (!up || !cb || prefix20 > 0xFFFFF || (unsigned)lane >= BR_LANES)
        return -EINVAL;
    if (up->closing)
        return -ESHUTDOWN;

    uint64_t now = br_now_ns();
    br_breaker_state bs = up_breaker_now(up, now);
    bool trial = false;
    if (bs == BR_BREAKER_OPEN ||
        (bs == BR_BREAKER_HALF_OPEN && up->trials_running && !up->trial_burst)) {
        up->st.refused_circuit++;
        up->refused_now++;
        return -EHOSTDOWN;
    }
    if (bs == BR_BREAKER_HALF_OPEN)
        trial = true;

    _cleanup_(req_freep) req *r = calloc(1, sizeof(*r));
    if (!r)
        return br_trace(-ENOMEM);
    r->up = up;
    r->prefix20 = prefix20;
    r->cb = cb;
    r->ctx = ctx;
    r->trial = trial;
    r->lane = lane;
    r->max_age = -1;
    r->deadline_ns = UINT64_MAX;
    r->saw_pause = now < up->pause_until_ns;
    if (validator_ok(etag) && !(r->etag_in = strdup(etag)))
        return br_trace(-ENOMEM);
    if (validator_ok(last_modified) && !(r->lm_in = strdup(last_modified)))
        return br_trace(-ENOMEM);
    if (lane != BR_LANE_BULK && arm_deadline(r, now) < 0)
        return br_trace(-ENOMEM);

    if (trial)
        up->trials_running++;
    if (up->trial_burst)
        up->trial_burst--;
    all_link(up, r);
    up_queue_push(up, r, false);
    up->st.fetches++;
    if (lane == BR_LANE_BULK)
        up->st.bulk_fetches++;
    else if (lane == BR_LANE_HTTP)
        up->st.http_fetches++;
    up_schedule_pump(up);
    if (handle)
        *handle = r;
    r = NULL;
    return 0;
}

int br_upstream_fetch(br_upstream *up, uint32_t prefix20, const char *etag,
                      const char *last_modified, br_upstream_cb cb, void *ctx)
{
    return br_upstream_fetch_lane(up, prefix20, etag, last_modified, BR_LANE_INTERACTIVE, cb, ctx,
                                  NULL);
}

void br_upstream_promote(br_upstream *up, br_upstream_req *r)
{
    if (!up || !r || r->lane != BR_LANE_BULK || up->closing)
        return;
    bool queued = r->state == RQ_QUEUED;
    if (queued)
        up_queue_remove(up, r);
    else if (r->state == RQ_RUNNING && !br_fails_assert(up->st.bulk_inflight > 0))
        up->st.bulk_inflight--;
    r->lane = BR_LANE_INTERACTIVE;
    up->st.promoted++;
    uint64_t now = br_now_ns();
    r->saw_pause = r->saw_pause || now < up->pause_until_ns;
    /* Without a timer (out of memory) it still goes first, only without a
     * deadline of its own. */
    if (arm_deadline(r, now) < 0)
        r->deadline_ns = UINT64_MAX;
    if (queued) {
        up_queue_push(up, r, false);
        up_schedule_pump(up);
    }
}

void br_upstream_get_stats(br_upstream *up, br_upstream_stats *st)
{
    uint64_t now = br_now_ns();
    up_rate_update(up, now);
    *st = up->st;
    st->breaker = up_breaker_now(up, now);
    st->breaker_open_ms =
        (up->open_total_ns + (st->breaker != BR_BREAKER_CLOSED ? now - up->opened_ns : 0)) /
        1000000u;
    st->rate_effective = up->rate;
    st->pause_left_ms = now < up->pause_until_ns ? (up->pause_until_ns - now) / 1000000u : 0;
}

/* ---- making and freeing a fetcher ---- */

/* Making a br_upstream (the URL template check, the config
 * with its defaults applied, the libcurl multi handle and the events that
 * drive it) and freeing one (every pending request cancelled first). */

static double round_up(double x)
{
    double t = x < 1e15 ? (double)(uint64_t)x : x;
    return t < x ? t + 1 : t;
}

static int check_template(const char *t, br_upstream *up, br_error *err)
{
    if (!t || !*t)
        return br_error_set(err, -EINVAL, "upstream: no URL template");
    if (!strstr(t, PREFIX_TOKEN))
        return br_error_set(err, -EINVAL, "upstream: URL template has no {prefix}");
    if (strncasecmp(t, "https://", 8) == 0)
        up->is_https = true;
    else if (strncasecmp(t, "file://", 7) == 0)
        up->is_file = true;
    else if (strncasecmp(t, "http://", 7) != 0)
        return br_error_set(err, -EINVAL,
                            "upstream: URL template must start with https://, http:// or file://");
    for (const char *p = t; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return br_error_set(err, -EINVAL,
                                "upstream: URL template holds a space or control character");
    return 0;
}

/* A lane's share of the rate and of max_inflight (at least one slot). */
static int set_share(br_upstream *up, br_lane lane, double share, double dflt, br_error *err)
{
    share = share == 0 ? dflt : share;
    if (!(share > 0 && share <= 1))
        return br_error_set(err, -EINVAL, "upstream: %s_share must be in (0, 1]",
                            br_lane_name(lane));
    up->share[lane] = share;
    up->slots[lane] = BR_MAX(1u, (uint32_t)((double)up->max_inflight * share));
    return 0;
}

/* The limits and retries of cfg, defaults for those left 0. */
static int apply_limits(br_upstream *up, const br_upstream_config *cfg, br_error *err)
{
    up->timeout_ns =
        (uint64_t)(cfg->timeout_ms ? cfg->timeout_ms : BR_UPSTREAM_DEFAULT_TIMEOUT_MS) * 1000000u;
    up->connect_timeout_ms =
        cfg->connect_timeout_ms ? cfg->connect_timeout_ms : up->timeout_ns / 2000000u;
    if (up->connect_timeout_ms == 0)
        up->connect_timeout_ms = 1;
    up->attempt_timeout_ms = cfg->attempt_timeout_ms;
    up->max_inflight = cfg->max_inflight ? cfg->max_inflight : BR_UPSTREAM_DEFAULT_MAX_INFLIGHT;
    up->rate = cfg->rate == 0 ? BR_UPSTREAM_DEFAULT_RATE : cfg->rate;
    if (isnan(up->rate))
        return br_error_set(err, -EINVAL, "upstream: rate is not a number");
    up->share[BR_LANE_INTERACTIVE] = 1.0;
    up->slots[BR_LANE_INTERACTIVE] = up->max_inflight;
    int rc = set_share(up, BR_LANE_BULK, cfg->bulk_share, BR_UPSTREAM_DEFAULT_BULK_SHARE, err);
    if (rc == 0)
        rc = set_share(up, BR_LANE_HTTP, cfg->http_share, BR_UPSTREAM_DEFAULT_HTTP_SHARE, err);
    if (rc < 0)
        return rc;
    if (up->rate > 0) {
        double b =
            cfg->burst ? (double)cfg->burst : BR_MIN((double)up->max_inflight, round_up(up->rate));
        up->burst = b < 1 ? 1 : b;
        up->tokens = up->burst;
        for (int l = 0; l < BR_LANES; l++)
            up->lane_tokens[l] = BR_MAX(1.0, up->burst * up->share[l]);
    }
    up->rate_cfg = up->rate;
    up->burst_cfg = up->burst;
    uint32_t recovery_ms =
        cfg->rate_recovery_ms ? cfg->rate_recovery_ms : BR_UPSTREAM_DEFAULT_RATE_RECOVERY_MS;
    up->rate_step = up->rate / 2 / ((double)recovery_ms * 1e6);
    up->max_pause_ns =
        (uint64_t)(cfg->max_pause_ms ? cfg->max_pause_ms : BR_UPSTREAM_DEFAULT_MAX_PAUSE_MS) *
        1000000u;
    up->max_body = cfg->max_body ? cfg->max_body : BR_UPSTREAM_DEFAULT_MAX_BODY;
    up->max_attempts = cfg->max_attempts ? cfg->max_attempts : BR_UPSTREAM_DEFAULT_MAX_ATTEMPTS;
    up->retry_base_ms = cfg->retry_base_ms ? cfg->retry_base_ms : BR_UPSTREAM_DEFAULT_RETRY_BASE_MS;
    up->retry_max_ms = cfg->retry_max_ms ? cfg->retry_max_ms : BR_UPSTREAM_DEFAULT_RETRY_MAX_MS;
    if (up->retry_max_ms < up->retry_base_ms)
        up->retry_max_ms = up->retry_base_ms;
    up->breaker_threshold =
        cfg->breaker_threshold ? cfg->breaker_threshold : BR_UPSTREAM_DEFAULT_BREAKER_THRESHOLD;
    up->breaker_cooldown_ns =
        (uint64_t)(cfg->breaker_cooldown_ms ? cfg->breaker_cooldown_ms
                                            : BR_UPSTREAM_DEFAULT_BREAKER_COOLDOWN_MS) *
        1000000u;
    return 0;
}

/* The template, proxy and CA file copied; the log; the random state and
 * the token bucket's clock. */
static int take_settings(br_upstream *up, const br_upstream_config *cfg, br_error *err)
{
    up->no_padding = cfg->no_padding;
    up->log = cfg->log;
    up->log_ctx = cfg->log_ctx;
    up->tmpl = strdup(cfg->url_template);
    if (!up->tmpl)
        return br_error_set(err, -ENOMEM, "upstream: out of memory");
    up->tmpl_len = strlen(up->tmpl);
    if (cfg->proxy && *cfg->proxy && !(up->proxy = strdup(cfg->proxy)))
        return br_error_set(err, -ENOMEM, "upstream: out of memory");
    if (cfg->ca_file && *cfg->ca_file && !(up->ca_file = strdup(cfg->ca_file)))
        return br_error_set(err, -ENOMEM, "upstream: out of memory");
    if (br_random_bytes(&up->rng, sizeof(up->rng)) < 0)
        up->rng = br_now_ns() ^ (uint64_t)(uintptr_t)up;
    up->tokens_at_ns = up->rate_at_ns = br_now_ns();
    return 0;
}

/* libcurl's multi handle on the event base: its socket and timer
 * callbacks, HTTP/2 multiplexing, the connection cache. */
static int start_curl(br_upstream *up, const br_upstream_config *cfg, br_error *err)
{
    /* Thread-safe and reference counted in libcurl >= 7.84. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return br_error_set(err, -EIO, "upstream: curl_global_init failed");
    up->pool = calloc(up->max_inflight, sizeof(*up->pool)); /* NULL: no reuse */
    up->multi = curl_multi_init();
    if (!up->multi) {
        curl_global_cleanup();
        return br_error_set(err, -EIO, "upstream: curl_multi_init failed");
    }
    up->curl_timer = evtimer_new(up->base, up_curl_timer_event_cb, up);
    up->pump_ev = evtimer_new(up->base, up_pump_cb, up);
    if (!up->curl_timer || !up->pump_ev)
        return br_error_set(err, -ENOMEM, "upstream: event_new failed");

    CURLMcode mc = CURLM_OK;
#define MSET(opt, val)                                                                             \
    do {                                                                                           \
        if (mc == CURLM_OK)                                                                        \
            mc = curl_multi_setopt(up->multi, opt, val);                                           \
    } while (0)
    MSET(CURLMOPT_SOCKETFUNCTION, up_curl_socket_cb);
    MSET(CURLMOPT_SOCKETDATA, up);
    MSET(CURLMOPT_TIMERFUNCTION, up_curl_timer_cb);
    MSET(CURLMOPT_TIMERDATA, up);
    MSET(CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    MSET(CURLMOPT_MAXCONNECTS, (long)up->max_inflight);
#if LIBCURL_VERSION_NUM >= 0x074300
    if (cfg->h2_max_streams)
        MSET(CURLMOPT_MAX_CONCURRENT_STREAMS, (long)cfg->h2_max_streams);
#else
    (void)cfg;
#endif
#undef MSET
    if (mc != CURLM_OK)
        return br_error_set(err, -EIO, "upstream: curl_multi_setopt: %s", curl_multi_strerror(mc));
    return 0;
}

int br_upstream_new(struct event_base *base, const br_upstream_config *cfg, br_upstream **out,
                    br_error *err)
{
    if (!base || !cfg || !out)
        return br_error_set(err, -EINVAL, "upstream: missing argument");
    *out = NULL;

    _cleanup_(br_upstream_freep) br_upstream *up = calloc(1, sizeof(*up));
    if (!up)
        return br_error_set(err, -ENOMEM, "upstream: out of memory");
    up->base = base;
    int rc = check_template(cfg->url_template, up, err);
    if (rc < 0 || (rc = apply_limits(up, cfg, err)) < 0 || (rc = take_settings(up, cfg, err)) < 0 ||
        (rc = start_curl(up, cfg, err)) < 0)
        return rc;
    *out = BR_TAKE_PTR(up);
    return 0;
}

void br_upstream_free(br_upstream *up)
{
    if (!up)
        return;
    up->closing = true;
    while (up->all) {
        req *r = up->all;
        if (r->state == RQ_RUNNING) {
            up_stop_transfer(up, r);
            r->state = RQ_BACKOFF;
            up->st.backoff++;
        }
        up_finish(r, BR_UPSTREAM_CANCELLED);
    }
    while (up->npool)
        curl_easy_cleanup(up->pool[--up->npool]);
    free(up->pool);
    if (up->multi) {
        /* may call up_curl_socket_cb(REMOVE) for the connections it closes */
        curl_multi_cleanup(up->multi);
        curl_global_cleanup();
    }
    up_socks_free(up);
    if (up->curl_timer)
        event_free(up->curl_timer);
    if (up->pump_ev)
        event_free(up->pump_ev);
    free(up->tmpl);
    free(up->proxy);
    free(up->ca_file);
    free(up);
}
