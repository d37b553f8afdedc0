/* SPDX-License-Identifier: MIT */
/* Upstream fetcher: libcurl multi-socket on libevent. See upstream.h.
 *
 * Life of a request (struct req):
 *   QUEUED  -- pump (slot and token) --> RUNNING -- done --> finish (callback)
 *   RUNNING -- retriable failure --> BACKOFF -- timer --> QUEUED (at the head)
 *   any state -- deadline timer --> finish(TIMEOUT)
 * Transfers are only ever started from the pump event, so br_upstream_fetch()
 * never starts one (or calls back) itself. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>
#include <sys/random.h>
#include <syslog.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "config.h"
#include "upstream.h"

#define PREFIX_TOKEN "{prefix}"
#define MIN_ATTEMPT_NS (20u * 1000000u) /* a retry needs at least this much time left */
#define BODY_INITIAL 16384

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

typedef struct sockctx sockctx;
struct sockctx {
    sockctx *prev, *next;
    struct event *ev;
};

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

/* ---- small helpers --------------------------------------------------------- */

static void up_log(br_upstream *up, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void up_log(br_upstream *up, int level, const char *fmt, ...)
{
    if (!up->log)
        return;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    up->log(up->log_ctx, level, msg);
}

static struct timeval ns_to_tv(uint64_t ns)
{
    struct timeval tv = {.tv_sec = (time_t)(ns / 1000000000u),
                         .tv_usec = (suseconds_t)(ns % 1000000000u / 1000u)};
    return tv;
}

static double round_up(double x)
{
    double t = x < 1e15 ? (double)(uint64_t)x : x;
    return t < x ? t + 1 : t;
}

static uint64_t rng_next(br_upstream *up)
{
    return br_splitmix64(&up->rng);
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

static void queue_push(br_upstream *up, req *r, bool at_head)
{
    r->state = RQ_QUEUED;
    if (at_head) {
        r->qprev = NULL;
        r->qnext = up->qhead;
        if (up->qhead)
            up->qhead->qprev = r;
        else
            up->qtail = r;
        up->qhead = r;
    } else {
        r->qnext = NULL;
        r->qprev = up->qtail;
        if (up->qtail)
            up->qtail->qnext = r;
        else
            up->qhead = r;
        up->qtail = r;
    }
    up->st.queued++;
    if (up->st.queued > up->st.queued_max)
        up->st.queued_max = up->st.queued;
}

static void queue_remove(br_upstream *up, req *r)
{
    if (r->qprev)
        r->qprev->qnext = r->qnext;
    else
        up->qhead = r->qnext;
    if (r->qnext)
        r->qnext->qprev = r->qprev;
    else
        up->qtail = r->qprev;
    r->qprev = r->qnext = NULL;
    up->st.queued--;
}

static void schedule_pump(br_upstream *up)
{
    if (!up->closing)
        event_active(up->pump_ev, EV_TIMEOUT, 0);
}

/* ---- breaker ---------------------------------------------------------------- */

static br_breaker_state breaker_now(br_upstream *up, uint64_t now)
{
    if (up->breaker == BR_BREAKER_OPEN && now >= up->open_until_ns) {
        up->breaker = BR_BREAKER_HALF_OPEN;
        up->trial_running = false;
        up_log(up, LOG_NOTICE, "upstream circuit half-open: sending a trial request");
    }
    return up->breaker;
}

br_breaker_state br_upstream_breaker(br_upstream *up)
{
    return breaker_now(up, br_now_ns());
}

static bool counts_as_failure(br_upstream_status s, long http)
{
    switch (s) {
    case BR_UPSTREAM_TIMEOUT:
    case BR_UPSTREAM_UNAVAILABLE:
        return true;
    case BR_UPSTREAM_ERROR:
        return http >= 500 || http == 429;
    default:
        return false;
    }
}

static void finish(req *r, br_upstream_status status);
static void req_free(req *r);
static void req_freep(req **r)
{
    req_free(*r);
}

static void breaker_trip(br_upstream *up, uint64_t now)
{
    up->breaker = BR_BREAKER_OPEN;
    up->open_until_ns = now + up->breaker_cooldown_ns;
    up->trial_running = false;
    up->st.breaker_trips++;
    up_log(up, LOG_WARNING,
           "upstream circuit open after %u consecutive failures, cool-down %llu ms",
           up->consecutive_failures, (unsigned long long)(up->breaker_cooldown_ns / 1000000u));

    /* Everything not yet on the wire ends now. Collect first: the callbacks
     * may call br_upstream_fetch() (refused, so the lists do not grow). */
    req *victims = NULL;
    for (req *r = up->all; r; r = r->next) {
        if (r->state == RQ_QUEUED || r->state == RQ_BACKOFF) {
            r->qnext = victims; /* reuse of qnext: detached below */
            victims = r;
        }
    }
    /* qnext was overwritten for queued ones: rebuild the queue as empty. */
    for (req *r = victims; r; r = r->qnext) {
        if (r->state == RQ_QUEUED)
            up->st.queued--;
        else
            up->st.backoff--;
        r->state = RQ_BACKOFF; /* neither queued nor running: finish() just unlinks */
        up->st.backoff++;
    }
    up->qhead = up->qtail = NULL;
    while (victims) {
        req *r = victims;
        victims = r->qnext;
        r->qprev = r->qnext = NULL;
        if (!r->last_error[0])
            snprintf(r->last_error, sizeof(r->last_error), "circuit open");
        finish(r, BR_UPSTREAM_CIRCUIT_OPEN);
    }
}

/* The final outcome of a request moves the breaker. */
static void breaker_record(br_upstream *up, req *r, br_upstream_status s)
{
    if (s == BR_UPSTREAM_CANCELLED || s == BR_UPSTREAM_CIRCUIT_OPEN) {
        if (r->trial)
            up->trial_running = false;
        return;
    }
    uint64_t now = br_now_ns();
    bool failed = counts_as_failure(s, r->http_status);
    br_breaker_state bs = breaker_now(up, now);
    if (bs == BR_BREAKER_OPEN)
        return; /* started before the trip: no evidence either way */
    if (bs == BR_BREAKER_HALF_OPEN) {
        if (!r->trial)
            return;
        up->trial_running = false;
        if (failed) {
            up->consecutive_failures++;
            breaker_trip(up, now);
        } else {
            up->breaker = BR_BREAKER_CLOSED;
            up->consecutive_failures = 0;
            up_log(up, LOG_NOTICE, "upstream circuit closed: the trial request succeeded");
        }
        return;
    }
    if (!failed) {
        up->consecutive_failures = 0;
        return;
    }
    if (++up->consecutive_failures >= up->breaker_threshold)
        breaker_trip(up, now);
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
    free(r->etag_in);
    free(r->lm_in);
    free(r);
}

/* Detach r from everything, call back, free. The transfer (if any) must
 * already be out of the multi handle. */
static void finish(req *r, br_upstream_status status)
{
    br_upstream *up = r->up;

    if (r->state == RQ_QUEUED)
        queue_remove(up, r);
    else if (r->state == RQ_BACKOFF)
        up->st.backoff--;
    all_unlink(up, r);
    event_del(r->deadline_ev);
    event_del(r->backoff_ev);

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
        break;
    case BR_UPSTREAM_CANCELLED:
        up->st.cancelled++;
        break;
    }

    if (status == BR_UPSTREAM_CANCELLED && !r->last_error[0])
        snprintf(r->last_error, sizeof(r->last_error), "cancelled");
    if (status == BR_UPSTREAM_TIMEOUT && !r->last_error[0])
        snprintf(r->last_error, sizeof(r->last_error), "deadline passed");
    if (status != BR_UPSTREAM_OK && status != BR_UPSTREAM_NOT_MODIFIED &&
        status != BR_UPSTREAM_CANCELLED)
        up_log(up, LOG_INFO, "upstream fetch failed: %s (%s, %u attempt%s)",
               br_upstream_status_name(status), r->last_error[0] ? r->last_error : "-", r->attempts,
               r->attempts == 1 ? "" : "s");

    br_upstream_response res = {
        .status = status,
        .http_status = r->http_status,
        .body = NULL,
        .body_len = 0,
        .etag = r->etag,
        .last_modified = r->last_modified,
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

    breaker_record(up, r, status);
    r->cb(r->ctx, &res);
    req_free(r);
}

/* ---- one transfer ----------------------------------------------------------- */

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    req *r = userdata;
    size_t n = size * nmemb;
    if (n > r->up->max_body - r->body_len) {
        r->too_large = true;
        return 0; /* != n: libcurl aborts with CURLE_WRITE_ERROR */
    }
    if (r->body_len + n > r->body_cap) {
        size_t cap = r->body_cap ? r->body_cap : BODY_INITIAL;
        while (cap < r->body_len + n)
            cap *= 2;
        if (cap > r->up->max_body)
            cap = r->up->max_body;
        char *nb = realloc(r->body, cap);
        if (!nb)
            return 0;
        r->body = nb;
        r->body_cap = cap;
    }
    memcpy(r->body + r->body_len, ptr, n);
    r->body_len += n;
    r->up->st.body_bytes += n;
    return n;
}

static bool header_is(const char *line, size_t len, const char *name, const char **value,
                      size_t *vlen)
{
    size_t nl = strlen(name);
    if (len <= nl || line[nl] != ':' || strncasecmp(line, name, nl) != 0)
        return false;
    const char *v = line + nl + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *value = v;
    *vlen = (size_t)(end - v);
    return true;
}

static void copy_validator(char *dst, const char *v, size_t len)
{
    dst[0] = '\0';
    if (len == 0 || len > BR_UPSTREAM_VALIDATOR_MAX)
        return;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] == 0x7f)
            return;
    memcpy(dst, v, len);
    dst[len] = '\0';
}

/* Cache-Control: the max-age directive (seconds), 0 for no-store / no-cache. */
static void parse_cache_control(req *r, const char *v, size_t len)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t start = i;
        while (i < len && v[i] != ',')
            i++;
        const char *d = v + start;
        size_t dl = i - start;
        while (dl > 0 && (d[dl - 1] == ' ' || d[dl - 1] == '\t'))
            dl--;
        if ((dl == 8 && strncasecmp(d, "no-store", 8) == 0) ||
            (dl == 8 && strncasecmp(d, "no-cache", 8) == 0)) {
            r->max_age = 0;
            return;
        }
        if (dl > 8 && strncasecmp(d, "max-age=", 8) == 0) {
            const char *p = d + 8, *e = d + dl;
            if (p < e && *p == '"')
                p++;
            int64_t val = 0;
            bool any = false;
            while (p < e && *p >= '0' && *p <= '9') {
                if (val < INT64_C(1) << 40)
                    val = val * 10 + (*p - '0');
                any = true;
                p++;
            }
            if (any && (p == e || *p == '"'))
                r->max_age = val;
        }
    }
}

static size_t header_cb(char *buffer, size_t size, size_t nitems, void *userdata)
{
    req *r = userdata;
    size_t n = size * nitems;
    const char *v;
    size_t vl;
    if (n >= 5 && strncmp(buffer, "HTTP/", 5) == 0) {
        /* a new response (after a 100 Continue or a proxy's CONNECT) */
        r->etag[0] = r->last_modified[0] = '\0';
        r->max_age = -1;
    } else if (header_is(buffer, n, "etag", &v, &vl)) {
        copy_validator(r->etag, v, vl);
    } else if (header_is(buffer, n, "last-modified", &v, &vl)) {
        copy_validator(r->last_modified, v, vl);
    } else if (header_is(buffer, n, "cache-control", &v, &vl)) {
        parse_cache_control(r, v, vl);
    }
    return n;
}

static char *make_url(br_upstream *up, uint32_t prefix20)
{
    char hex[6];
    static const char digits[] = "0123456789ABCDEF";
    for (int i = 0; i < 5; i++)
        hex[i] = digits[(prefix20 >> (4 * (4 - i))) & 0xF];
    hex[5] = '\0';

    size_t n = 0;
    for (const char *p = up->tmpl; (p = strstr(p, PREFIX_TOKEN)); p += strlen(PREFIX_TOKEN))
        n++;
    size_t len = up->tmpl_len - n * (strlen(PREFIX_TOKEN) - 5);
    char *url = malloc(len + 1), *o = url;
    if (!url)
        return NULL;
    const char *p = up->tmpl, *q;
    while ((q = strstr(p, PREFIX_TOKEN))) {
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        memcpy(o, hex, 5);
        o += 5;
        p = q + strlen(PREFIX_TOKEN);
    }
    strcpy(o, p);
    return url;
}

static int add_header(struct curl_slist **list, const char *name, const char *value)
{
    char line[BR_UPSTREAM_VALIDATOR_MAX + 64];
    snprintf(line, sizeof(line), "%s: %s", name, value);
    struct curl_slist *n = curl_slist_append(*list, line);
    if (!n)
        return -ENOMEM;
    *list = n;
    return 0;
}

/* An easy handle for the next attempt: an idle one reset to the defaults, or a new one. */
static CURL *easy_take(br_upstream *up)
{
    if (up->npool) {
        CURL *e = up->pool[--up->npool];
        curl_easy_reset(e);
        return e;
    }
    return curl_easy_init();
}

/* An easy handle out of the multi handle: kept for reuse (at most max_inflight). */
static void easy_give(br_upstream *up, CURL *e)
{
    if (up->pool && up->npool < up->max_inflight && !up->closing)
        up->pool[up->npool++] = e;
    else
        curl_easy_cleanup(e);
}

/* Set up and add the easy handle of the next attempt. */
static int start_transfer(br_upstream *up, req *r, uint64_t now)
{
    _cleanup_free_ char *url = make_url(up, r->prefix20);
    if (!url)
        return -ENOMEM;
    if (!r->headers) {
        if (!up->no_padding && add_header(&r->headers, "Add-Padding", "true") < 0)
            return -ENOMEM;
        if (r->etag_in && add_header(&r->headers, "If-None-Match", r->etag_in) < 0)
            return -ENOMEM;
        if (r->lm_in && add_header(&r->headers, "If-Modified-Since", r->lm_in) < 0)
            return -ENOMEM;
        /* No "Expect: 100-continue" games, no "Accept" surprises. */
        if (add_header(&r->headers, "Accept", "text/plain, */*") < 0)
            return -ENOMEM;
    }

    CURL *e = easy_take(up);
    if (!e)
        return -ENOMEM;
    uint64_t remaining_ms = r->deadline_ns > now ? (r->deadline_ns - now) / 1000000u : 1;
    if (remaining_ms == 0)
        remaining_ms = 1;
    uint64_t connect_ms = BR_MIN(up->connect_timeout_ms, remaining_ms);

    CURLcode c = CURLE_OK;
#define SET(opt, val)                                                                              \
    do {                                                                                           \
        if (c == CURLE_OK)                                                                         \
            c = curl_easy_setopt(e, opt, val);                                                     \
    } while (0)
    SET(CURLOPT_URL, url);
    SET(CURLOPT_PRIVATE, r);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_USERAGENT, "breachd/" BREACHD_VERSION);
    SET(CURLOPT_HTTPHEADER, r->headers);
    SET(CURLOPT_WRITEFUNCTION, write_cb);
    SET(CURLOPT_WRITEDATA, r);
    SET(CURLOPT_HEADERFUNCTION, header_cb);
    SET(CURLOPT_HEADERDATA, r);
    SET(CURLOPT_ACCEPT_ENCODING, "");
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_SSL_VERIFYPEER, 1L);
    SET(CURLOPT_SSL_VERIFYHOST, 2L);
    SET(CURLOPT_PROXY_SSL_VERIFYPEER, 1L);
    SET(CURLOPT_PROXY_SSL_VERIFYHOST, 2L);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SET(CURLOPT_CONNECTTIMEOUT_MS, (long)connect_ms);
    SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)up->max_body);
#if LIBCURL_VERSION_NUM >= 0x075500
    SET(CURLOPT_PROTOCOLS_STR, "http,https,file");
#else
    SET(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS | CURLPROTO_FILE));
#endif
    if (up->attempt_timeout_ms)
        SET(CURLOPT_TIMEOUT_MS, (long)BR_MIN(up->attempt_timeout_ms, remaining_ms));
    if (up->is_https)
        SET(CURLOPT_PIPEWAIT, 1L); /* prefer multiplexing on an HTTP/2 connection being set up */
    if (up->proxy)
        SET(CURLOPT_PROXY, up->proxy);
    if (up->ca_file) {
        SET(CURLOPT_CAINFO, up->ca_file);
        SET(CURLOPT_PROXY_CAINFO, up->ca_file);
    }
#undef SET
    if (c != CURLE_OK) {
        easy_give(up, e);
        snprintf(r->last_error, sizeof(r->last_error), "curl setup: %s", curl_easy_strerror(c));
        return -EIO;
    }

    /* fresh per-attempt response state */
    r->body_len = 0;
    r->too_large = false;
    r->etag[0] = r->last_modified[0] = '\0';
    r->max_age = -1;
    r->http_status = 0;

    CURLMcode mc = curl_multi_add_handle(up->multi, e);
    if (mc != CURLM_OK) {
        easy_give(up, e);
        snprintf(r->last_error, sizeof(r->last_error), "curl multi: %s", curl_multi_strerror(mc));
        return -EIO;
    }
    r->easy = e;
    r->state = RQ_RUNNING;
    r->attempts++;
    up->st.transfers++;
    if (r->attempts > 1)
        up->st.retries++;
    up->st.inflight++;
    return 0;
}

/* Take a running request's transfer out of the multi handle. */
static void stop_transfer(br_upstream *up, req *r)
{
    if (!r->easy)
        return;
    curl_multi_remove_handle(up->multi, r->easy);
    easy_give(up, r->easy);
    r->easy = NULL;
    up->st.inflight--;
}

static void refill_tokens(br_upstream *up, uint64_t now)
{
    if (up->rate <= 0)
        return;
    if (now > up->tokens_at_ns) {
        up->tokens += (double)(now - up->tokens_at_ns) * up->rate / 1e9;
        if (up->tokens > up->burst)
            up->tokens = up->burst;
    }
    up->tokens_at_ns = now;
}

static void pump_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    br_upstream *up = arg;
    uint64_t now = br_now_ns();
    refill_tokens(up, now);
    while (up->qhead && up->st.inflight < up->max_inflight && !up->closing) {
        if (up->rate > 0 && up->tokens < 1.0) {
            double w = (1.0 - up->tokens) * 1e9 / up->rate;
            uint64_t wait_ns = w < 3600e9 ? (uint64_t)w + 1 : (uint64_t)3600e9;
            struct timeval tv = ns_to_tv(wait_ns);
            event_add(up->pump_ev, &tv);
            return;
        }
        req *r = up->qhead;
        queue_remove(up, r);
        r->state = RQ_BACKOFF; /* transient: not queued, not running */
        up->st.backoff++;
        int rc = start_transfer(up, r, now);
        up->st.backoff--;
        if (rc < 0) {
            r->state = RQ_BACKOFF;
            up->st.backoff++;
            if (!r->last_error[0])
                snprintf(r->last_error, sizeof(r->last_error), "cannot start: %s", strerror(-rc));
            finish(r, BR_UPSTREAM_ERROR);
            continue;
        }
        if (up->rate > 0)
            up->tokens -= 1.0;
    }
}

static void backoff_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    req *r = arg;
    br_upstream *up = r->up;
    up->st.backoff--;
    queue_push(up, r, true);
    schedule_pump(up);
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    req *r = arg;
    br_upstream *up = r->up;
    if (r->state == RQ_RUNNING) {
        stop_transfer(up, r);
        r->state = RQ_BACKOFF;
        up->st.backoff++;
        snprintf(r->last_error, sizeof(r->last_error), "deadline passed during a transfer");
        schedule_pump(up);
    } else {
        snprintf(r->last_error, sizeof(r->last_error), "deadline passed while %s",
                 r->state == RQ_QUEUED ? "queued" : "waiting to retry");
    }
    finish(r, BR_UPSTREAM_TIMEOUT);
}

/* Classify a finished transfer: status, and whether another attempt may help. */
static br_upstream_status classify(br_upstream *up, req *r, CURLcode code, bool *retriable)
{
    *retriable = false;
    long http = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &http);
    r->http_status = http;

    if (r->too_large || code == CURLE_FILESIZE_EXCEEDED) {
        snprintf(r->last_error, sizeof(r->last_error), "body over %zu bytes", up->max_body);
        return BR_UPSTREAM_TOO_LARGE;
    }
    if (code == CURLE_OK) {
        if (up->is_file) {
            r->http_status = 200;
            return BR_UPSTREAM_OK;
        }
        if (http == 200)
            return BR_UPSTREAM_OK;
        if (http == 304)
            return BR_UPSTREAM_NOT_MODIFIED;
        snprintf(r->last_error, sizeof(r->last_error), "HTTP status %ld", http);
        *retriable = http >= 500 || http == 429;
        return BR_UPSTREAM_ERROR;
    }

    snprintf(r->last_error, sizeof(r->last_error), "%s", curl_easy_strerror(code));
    switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
        *retriable = true;
        return BR_UPSTREAM_TIMEOUT;
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_PROXY:
        *retriable = true;
        return BR_UPSTREAM_UNAVAILABLE;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_USE_SSL_FAILED:
        return BR_UPSTREAM_UNAVAILABLE; /* a configuration problem: retrying will not help */
    case CURLE_FILE_COULDNT_READ_FILE:
        snprintf(r->last_error, sizeof(r->last_error), "file missing or unreadable");
        return BR_UPSTREAM_ERROR;
    default:
        return BR_UPSTREAM_ERROR;
    }
}

static void transfer_done(br_upstream *up, req *r, CURLcode code)
{
    bool retriable;
    br_upstream_status s = classify(up, r, code, &retriable);
    stop_transfer(up, r);
    r->state = RQ_BACKOFF; /* not queued, not running */
    up->st.backoff++;
    r->last_status = s;

    if (retriable && !r->trial && r->attempts < up->max_attempts) {
        uint64_t d_ms = up->retry_base_ms;
        for (uint32_t i = 1; i < r->attempts && d_ms < up->retry_max_ms; i++)
            d_ms *= 2;
        if (d_ms > up->retry_max_ms)
            d_ms = up->retry_max_ms;
        uint64_t d_ns = d_ms * 1000000u;
        uint64_t wait_ns = d_ns / 2 + (d_ns / 2 ? rng_next(up) % (d_ns / 2 + 1) : 0);
        uint64_t now = br_now_ns();
        if (now + wait_ns + MIN_ATTEMPT_NS < r->deadline_ns) {
            struct timeval tv = ns_to_tv(wait_ns);
            event_add(r->backoff_ev, &tv);
            return;
        }
    }
    finish(r, s);
}

static void check_multi_info(br_upstream *up)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(up->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *e = msg->easy_handle;
        CURLcode code = msg->data.result;
        char *priv = NULL;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, &priv);
        req *r = (req *)priv;
        if (!r || r->easy != e)
            continue;
        transfer_done(up, r, code);
    }
    schedule_pump(up);
}

/* ---- libcurl <-> libevent glue ---------------------------------------------- */

static void sock_event_cb(evutil_socket_t fd, short what, void *arg)
{
    br_upstream *up = arg;
    int action =
        ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    int running = 0;
    curl_multi_socket_action(up->multi, fd, action, &running);
    check_multi_info(up);
}

static void curl_timer_event_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    br_upstream *up = arg;
    int running = 0;
    curl_multi_socket_action(up->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_multi_info(up);
}

static int curl_socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)e;
    br_upstream *up = userp;
    sockctx *sc = socketp;

    if (what == CURL_POLL_REMOVE) {
        if (sc) {
            event_free(sc->ev);
            if (sc->prev)
                sc->prev->next = sc->next;
            else
                up->socks = sc->next;
            if (sc->next)
                sc->next->prev = sc->prev;
            free(sc);
            curl_multi_assign(up->multi, s, NULL);
        }
        return 0;
    }
    short kind = EV_PERSIST | ((what & CURL_POLL_IN) ? EV_READ : 0) |
                 ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
    if (!sc) {
        sc = calloc(1, sizeof(*sc));
        if (!sc)
            return -1;
        sc->next = up->socks;
        if (up->socks)
            up->socks->prev = sc;
        up->socks = sc;
        curl_multi_assign(up->multi, s, sc);
    } else if (sc->ev) {
        event_free(sc->ev);
        sc->ev = NULL;
    }
    sc->ev = event_new(up->base, s, kind, sock_event_cb, up);
    if (!sc->ev || event_add(sc->ev, NULL) < 0)
        return -1;
    return 0;
}

static int curl_timer_cb(CURLM *m, long timeout_ms, void *userp)
{
    (void)m;
    br_upstream *up = userp;
    if (timeout_ms < 0) {
        event_del(up->curl_timer);
    } else {
        struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
        event_add(up->curl_timer, &tv);
    }
    return 0;
}

/* ---- public API --------------------------------------------------------------- */

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
    if (rc < 0)
        return rc;

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
    if (up->rate > 0) {
        double b =
            cfg->burst ? (double)cfg->burst : BR_MIN((double)up->max_inflight, round_up(up->rate));
        up->burst = b < 1 ? 1 : b;
        up->tokens = up->burst;
    }
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
    if (getrandom(&up->rng, sizeof(up->rng), GRND_NONBLOCK) != (ssize_t)sizeof(up->rng))
        up->rng = br_now_ns() ^ (uint64_t)(uintptr_t)up;
    up->tokens_at_ns = br_now_ns();

    /* Thread-safe and reference counted in libcurl >= 7.84. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return br_error_set(err, -EIO, "upstream: curl_global_init failed");
    up->pool = calloc(up->max_inflight, sizeof(*up->pool)); /* NULL: no reuse */
    up->multi = curl_multi_init();
    if (!up->multi) {
        curl_global_cleanup();
        return br_error_set(err, -EIO, "upstream: curl_multi_init failed");
    }
    up->curl_timer = evtimer_new(base, curl_timer_event_cb, up);
    up->pump_ev = evtimer_new(base, pump_cb, up);
    if (!up->curl_timer || !up->pump_ev)
        return br_error_set(err, -ENOMEM, "upstream: event_new failed");

    CURLMcode mc = CURLM_OK;
#define MSET(opt, val)                                                                             \
    do {                                                                                           \
        if (mc == CURLM_OK)                                                                        \
            mc = curl_multi_setopt(up->multi, opt, val);                                           \
    } while (0)
    MSET(CURLMOPT_SOCKETFUNCTION, curl_socket_cb);
    MSET(CURLMOPT_SOCKETDATA, up);
    MSET(CURLMOPT_TIMERFUNCTION, curl_timer_cb);
    MSET(CURLMOPT_TIMERDATA, up);
    MSET(CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    MSET(CURLMOPT_MAXCONNECTS, (long)up->max_inflight);
#if LIBCURL_VERSION_NUM >= 0x074300
    if (cfg->h2_max_streams)
        MSET(CURLMOPT_MAX_CONCURRENT_STREAMS, (long)cfg->h2_max_streams);
#endif
#undef MSET
    if (mc != CURLM_OK)
        return br_error_set(err, -EIO, "upstream: curl_multi_setopt: %s", curl_multi_strerror(mc));

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
            stop_transfer(up, r);
            r->state = RQ_BACKOFF;
            up->st.backoff++;
        }
        finish(r, BR_UPSTREAM_CANCELLED);
    }
    while (up->npool)
        curl_easy_cleanup(up->pool[--up->npool]);
    free(up->pool);
    if (up->multi) {
        /* may call curl_socket_cb(REMOVE) for the connections it closes */
        curl_multi_cleanup(up->multi);
        curl_global_cleanup();
    }
    while (up->socks) {
        sockctx *sc = up->socks;
        up->socks = sc->next;
        if (sc->ev)
            event_free(sc->ev);
        free(sc);
    }
    if (up->curl_timer)
        event_free(up->curl_timer);
    if (up->pump_ev)
        event_free(up->pump_ev);
    free(up->tmpl);
    free(up->proxy);
    free(up->ca_file);
    free(up);
}

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

int br_upstream_fetch(br_upstream *up, uint32_t prefix20, const char *etag,
                      const char *last_modified, br_upstream_cb cb, void *ctx)
{
    if (!up || !cb || prefix20 > 0xFFFFF)
        return -EINVAL;
    if (up->closing)
        return -ESHUTDOWN;

    uint64_t now = br_now_ns();
    br_breaker_state bs = breaker_now(up, now);
    bool trial = false;
    if (bs == BR_BREAKER_OPEN || (bs == BR_BREAKER_HALF_OPEN && up->trial_running)) {
        up->st.refused_circuit++;
        return -EHOSTDOWN;
    }
    if (bs == BR_BREAKER_HALF_OPEN)
        trial = true;

    _cleanup_(req_freep) req *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->up = up;
    r->prefix20 = prefix20;
    r->cb = cb;
    r->ctx = ctx;
    r->trial = trial;
    r->max_age = -1;
    r->deadline_ns = now + up->timeout_ns;
    if (validator_ok(etag) && !(r->etag_in = strdup(etag)))
        return -ENOMEM;
    if (validator_ok(last_modified) && !(r->lm_in = strdup(last_modified)))
        return -ENOMEM;
    r->deadline_ev = evtimer_new(up->base, deadline_cb, r);
    r->backoff_ev = evtimer_new(up->base, backoff_cb, r);
    if (!r->deadline_ev || !r->backoff_ev)
        return -ENOMEM;
    struct timeval tv = ns_to_tv(up->timeout_ns);
    if (event_add(r->deadline_ev, &tv) < 0)
        return -ENOMEM;

    if (trial)
        up->trial_running = true;
    all_link(up, r);
    queue_push(up, r, false);
    up->st.fetches++;
    schedule_pump(up);
    r = NULL;
    return 0;
}

void br_upstream_get_stats(br_upstream *up, br_upstream_stats *st)
{
    *st = up->st;
    st->breaker = breaker_now(up, br_now_ns());
}
