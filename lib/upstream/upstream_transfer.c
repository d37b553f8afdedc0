/* SPDX-License-Identifier: MIT */
/* Upstream fetcher (upstream.h): one transfer (one attempt of a request).
 * The body and header callbacks, the URL and request headers, the pool of
 * idle easy handles, starting and stopping a transfer, and, when libcurl
 * reports it done, classifying the outcome and either retrying after a
 * backoff or finishing the request; what a transfer keeps of the response
 * headers; the libcurl <-> libevent socket and timer glue. The requests
 * are upstream.c, what starts when upstream_pump.c (upstream_int.h). */
#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/br_assert.h"
#include "core/clock.h"
#include "config.h"
#include "upstream_int.h"

#define MIN_ATTEMPT_NS (20u * 1000000u) /* a retry needs at least this much time left */
#define BODY_INITIAL 16384

/* When r's deadline passes (UINT64_MAX on the bulk lane: never). */
static uint64_t up_deadline(const req *r)
{
    return r->lane == BR_LANE_BULK ? UINT64_MAX : r->deadline_ns;
}

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

static size_t header_cb(char *buffer, size_t size, size_t nitems, void *userdata)
{
    req *r = userdata;
    size_t n = size * nitems;
    up_header_line(buffer, n, r->etag, r->last_modified, &r->max_age, &r->retry_after_ms);
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
        return br_trace(-ENOMEM);
    *list = n;
    return 0;
}

/* An easy handle for the next attempt: an idle one reset to the defaults, or a new one. */
/* The options that are the same for every transfer of this upstream: set
 * once on a new handle. A pooled handle keeps them (no curl_easy_reset: it
 * would free and re-parse every string option on each request); the per
 * request options are all set again by up_start_transfer. */
static CURLcode easy_set_constant(br_upstream *up, CURL *e)
{
    CURLcode c = CURLE_OK;
#define SET(opt, val)                                                                              \
    do {                                                                                           \
        if (c == CURLE_OK)                                                                         \
            c = curl_easy_setopt(e, opt, val);                                                     \
    } while (0)
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_USERAGENT, "breachd/" BREACHD_VERSION);
    SET(CURLOPT_WRITEFUNCTION, write_cb);
    SET(CURLOPT_HEADERFUNCTION, header_cb);
    SET(CURLOPT_ACCEPT_ENCODING, "");
    SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_SSL_VERIFYPEER, 1L);
    SET(CURLOPT_SSL_VERIFYHOST, 2L);
    SET(CURLOPT_PROXY_SSL_VERIFYPEER, 1L);
    SET(CURLOPT_PROXY_SSL_VERIFYHOST, 2L);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)up->max_body);
#if LIBCURL_VERSION_NUM >= 0x075500
    SET(CURLOPT_PROTOCOLS_STR, "http,https,file");
#else
    SET(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS | CURLPROTO_FILE));
#endif
#if LIBCURL_VERSION_NUM >= 0x075700
    /* A name lookup still running when its transfer ends (the deadline
     * passed, a DNS server that never answers) is left to finish on its
     * own thread: without this libcurl joins that thread, and the daemon's
     * one event loop stops until the system resolver gives up, up to tens
     * of seconds (CURLOPT_QUICK_EXIT(3); docs/upstream.md, "What is an
     * error, and what is cached"). */
    SET(CURLOPT_QUICK_EXIT, 1L);
#endif
    if (up->is_https)
        SET(CURLOPT_PIPEWAIT, 1L); /* prefer multiplexing on an HTTP/2 connection being set up */
    if (up->proxy)
        SET(CURLOPT_PROXY, up->proxy);
    if (up->ca_file) {
        SET(CURLOPT_CAINFO, up->ca_file);
        SET(CURLOPT_PROXY_CAINFO, up->ca_file);
    }
#undef SET
    return c;
}

static CURL *easy_take(br_upstream *up, CURLcode *c)
{
    *c = CURLE_OK;
    if (up->npool)
        return up->pool[--up->npool];
    CURL *e = curl_easy_init();
    if (e && (*c = easy_set_constant(up, e)) != CURLE_OK) {
        curl_easy_cleanup(e);
        return NULL;
    }
    return e;
}

static void easy_give(br_upstream *up, CURL *e)
{
    if (up->pool && up->npool < up->max_inflight && !up->closing)
        up->pool[up->npool++] = e;
    else
        curl_easy_cleanup(e);
}

/* The connect and whole-transfer timeouts of r's next attempt (0: none). A
 * bulk request has no deadline: each of its attempts gets timeout_ms. */
static void attempt_limits(const br_upstream *up, const req *r, uint64_t now, uint64_t *connect_ms,
                           uint64_t *attempt_ms)
{
    bool bulk = r->lane == BR_LANE_BULK;
    uint64_t deadline = bulk ? now + up->timeout_ns : r->deadline_ns;
    uint64_t remaining_ms = deadline > now ? (deadline - now) / 1000000u : 1;
    if (remaining_ms == 0)
        remaining_ms = 1;
    *connect_ms = BR_MIN(up->connect_timeout_ms, remaining_ms);
    *attempt_ms = up->attempt_timeout_ms ? BR_MIN(up->attempt_timeout_ms, remaining_ms)
                  : bulk                 ? remaining_ms
                                         : 0;
}

/* Set up and add the easy handle of the next attempt. */
int up_start_transfer(br_upstream *up, req *r, uint64_t now)
{
    _cleanup_free_ char *url = make_url(up, r->prefix20);
    if (!url)
        return br_trace(-ENOMEM);
    if (!r->etag) {
        if (!(r->etag = malloc(2 * (BR_UPSTREAM_VALIDATOR_MAX + 1))))
            return br_trace(-ENOMEM);
        r->last_modified = r->etag + BR_UPSTREAM_VALIDATOR_MAX + 1;
    }
    if (!r->headers) {
        if (!up->no_padding && add_header(&r->headers, "Add-Padding", "true") < 0)
            return br_trace(-ENOMEM);
        if (r->etag_in && add_header(&r->headers, "If-None-Match", r->etag_in) < 0)
            return br_trace(-ENOMEM);
        if (r->lm_in && add_header(&r->headers, "If-Modified-Since", r->lm_in) < 0)
            return br_trace(-ENOMEM);
        /* No "Expect: 100-continue" games, no "Accept" surprises. */
        if (add_header(&r->headers, "Accept", "text/plain, */*") < 0)
            return br_trace(-ENOMEM);
    }

    CURLcode c = CURLE_OK;
    CURL *e = easy_take(up, &c);
    if (!e) {
        if (c == CURLE_OK)
            return br_trace(-ENOMEM);
        snprintf(r->last_error, sizeof(r->last_error), "curl setup: %s", curl_easy_strerror(c));
        return -EIO;
    }
    uint64_t connect_ms, attempt_ms;
    attempt_limits(up, r, now, &connect_ms, &attempt_ms);

#define SET(opt, val)                                                                              \
    do {                                                                                           \
        if (c == CURLE_OK)                                                                         \
            c = curl_easy_setopt(e, opt, val);                                                     \
    } while (0)
    /* per request; the rest is easy_set_constant's */
    SET(CURLOPT_URL, url);
    SET(CURLOPT_PRIVATE, r);
    SET(CURLOPT_HTTPHEADER, r->headers);
    SET(CURLOPT_WRITEDATA, r);
    SET(CURLOPT_HEADERDATA, r);
    SET(CURLOPT_CONNECTTIMEOUT_MS, (long)connect_ms);
    SET(CURLOPT_TIMEOUT_MS, (long)attempt_ms);
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
    r->retry_after_ms = -1;
    r->started_ns = now;

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
    uint32_t *lane_inflight = up_lane_inflight(up, r->lane);
    if (lane_inflight)
        ++*lane_inflight;
    return 0;
}

/* Take a running request's transfer out of the multi handle. */
void up_stop_transfer(br_upstream *up, req *r)
{
    if (!r->easy)
        return;
    curl_multi_remove_handle(up->multi, r->easy);
    easy_give(up, r->easy);
    r->easy = NULL;
    if (!br_fails_assert(up->st.inflight > 0))
        up->st.inflight--;
    uint32_t *lane_inflight = up_lane_inflight(up, r->lane);
    if (lane_inflight && !br_fails_assert(*lane_inflight > 0))
        --*lane_inflight;
}

/* ---- a transfer done -------------------------------------------------------- */

static uint64_t rng_next(br_upstream *up)
{
    return br_splitmix64(&up->rng);
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
        *retriable = http >= 500;
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
    up_stop_transfer(up, r);
    r->state = RQ_BACKOFF; /* not queued, not running */
    up->st.backoff++;
    r->last_status = s;

    /* The upstream asks to slow down: not a failure (upstream.h "Rate limits"). */
    if (s == BR_UPSTREAM_ERROR &&
        (r->http_status == 429 || (r->http_status == 503 && r->retry_after_ms >= 0))) {
        up_rate_limited(up, r);
        return;
    }
    if (retriable && !r->trial && r->attempts - r->limited < up->max_attempts) {
        uint64_t d_ms = up->retry_base_ms;
        for (uint32_t i = 1; i < r->attempts - r->limited && d_ms < up->retry_max_ms; i++)
            d_ms *= 2;
        if (d_ms > up->retry_max_ms)
            d_ms = up->retry_max_ms;
        uint64_t d_ns = d_ms * 1000000u;
        uint64_t wait_ns = d_ns / 2 + (d_ns / 2 ? rng_next(up) % (d_ns / 2 + 1) : 0);
        uint64_t now = br_now_ns();
        if (now + wait_ns + MIN_ATTEMPT_NS < up_deadline(r) && up_arm_backoff(r, wait_ns) == 0)
            return;
    }
    up_finish(r, s);
}

/* Handle every transfer libcurl reports done, then schedule the pump. */
static void up_check_multi_info(br_upstream *up)
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
    up_schedule_pump(up);
}

/* ---- the response headers ---- */

/* What a transfer keeps of the response headers libcurl
 * hands its header callback, one line at a time: the validators (ETag,
 * Last-Modified), Cache-Control's max-age (br_upstream_response in
 * upstream.h) and Retry-After (docs/upstream.md, "When the upstream asks to
 * slow down"). A pure function of the lines, so that it can be tested and
 * fuzzed alone. */

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
static void parse_cache_control(int64_t *max_age, const char *v, size_t len)
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
            *max_age = 0;
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
                *max_age = val;
        }
    }
}

/* Retry-After: delta-seconds or an HTTP-date (RFC 9110), as milliseconds
 * from now (0 for a date already past); -1 when unreadable. */
static int64_t parse_retry_after(const char *v, size_t len)
{
    char buf[64];
    if (len == 0 || len >= sizeof(buf))
        return -1;
    memcpy(buf, v, len);
    buf[len] = '\0';
    if (strspn(buf, "0123456789") == len) {
        if (len > 9)
            return INT64_C(999999999) * 1000; /* far beyond any max_pause_ms */
        return (int64_t)strtoll(buf, NULL, 10) * 1000;
    }
    time_t when = curl_getdate(buf, NULL);
    if (when < 0)
        return -1;
    time_t now = (time_t)br_clock_now_real();
    if (when <= now)
        return 0;
    /* A date centuries ahead would overflow the milliseconds: as far as a
     * long number of seconds. */
    if (when - now > 999999999)
        return INT64_C(999999999) * 1000;
    return (int64_t)(when - now) * 1000;
}

void up_header_line(const char *line, size_t len, char *etag, char *last_modified, int64_t *max_age,
                    int64_t *retry_after_ms)
{
    const char *v;
    size_t vl;
    if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* a new response (after a 100 Continue or a proxy's CONNECT) */
        etag[0] = last_modified[0] = '\0';
        *max_age = -1;
        *retry_after_ms = -1;
    } else if (header_is(line, len, "etag", &v, &vl)) {
        copy_validator(etag, v, vl);
    } else if (header_is(line, len, "last-modified", &v, &vl)) {
        copy_validator(last_modified, v, vl);
    } else if (header_is(line, len, "cache-control", &v, &vl)) {
        parse_cache_control(max_age, v, vl);
    } else if (header_is(line, len, "retry-after", &v, &vl)) {
        *retry_after_ms = parse_retry_after(v, vl);
    }
}

/* ---- the libcurl <-> libevent glue ---- */

/* libcurl <-> libevent. libcurl's multi-socket API
 * tells which sockets to watch (up_curl_socket_cb) and when to call it back
 * (up_curl_timer_cb); one libevent event per socket and one timer do that, and
 * after every curl_multi_socket_action() finished transfers are handled. */

typedef struct sockctx sockctx;
struct sockctx {
    sockctx *prev, *next;
    struct event *ev;
    short kind; /* what ev watches; 0: not added */
};

static void sock_event_cb(evutil_socket_t fd, short what, void *arg)
{
    br_upstream *up = arg;
    int action =
        ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    int running = 0;
    curl_multi_socket_action(up->multi, fd, action, &running);
    up_check_multi_info(up);
}

void up_curl_timer_event_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    br_upstream *up = arg;
    int running = 0;
    curl_multi_socket_action(up->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    up_check_multi_info(up);
}

/* libcurl stops watching a keep-alive connection after each transfer and
 * watches it again for the next one: the sockctx and its event are kept on a
 * spare list and reused (event_assign), and a change that leaves the events
 * as they are touches nothing, instead of an allocation and an event_new /
 * event_free per request. */
static sockctx *sock_get(br_upstream *up)
{
    sockctx *sc = up->spare_socks;
    if (sc) {
        up->spare_socks = sc->next;
    } else {
        sc = calloc(1, sizeof(*sc));
        if (!sc)
            return NULL;
        sc->ev = event_new(up->base, -1, 0, sock_event_cb, up);
        if (!sc->ev) {
            free(sc);
            return NULL;
        }
    }
    sc->prev = NULL;
    sc->next = up->socks;
    if (up->socks)
        up->socks->prev = sc;
    up->socks = sc;
    sc->kind = 0;
    return sc;
}

static void sock_put(br_upstream *up, sockctx *sc)
{
    if (sc->kind)
        event_del(sc->ev);
    sc->kind = 0;
    if (sc->prev)
        sc->prev->next = sc->next;
    else
        up->socks = sc->next;
    if (sc->next)
        sc->next->prev = sc->prev;
    sc->prev = NULL;
    sc->next = up->spare_socks;
    up->spare_socks = sc;
}

int up_curl_socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)e;
    br_upstream *up = userp;
    sockctx *sc = socketp;

    if (what == CURL_POLL_REMOVE) {
        if (sc) {
            sock_put(up, sc);
            curl_multi_assign(up->multi, s, NULL);
        }
        return 0;
    }
    short kind = EV_PERSIST | ((what & CURL_POLL_IN) ? EV_READ : 0) |
                 ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
    if (!sc) {
        sc = sock_get(up);
        if (!sc)
            return -1;
        curl_multi_assign(up->multi, s, sc);
    } else if (sc->kind == kind && event_get_fd(sc->ev) == s) {
        return 0;
    } else if (sc->kind) {
        event_del(sc->ev);
        sc->kind = 0;
    }
    if (event_assign(sc->ev, up->base, s, kind, sock_event_cb, up) < 0 ||
        event_add(sc->ev, NULL) < 0)
        return -1;
    sc->kind = kind;
    return 0;
}

int up_curl_timer_cb(CURLM *m, long timeout_ms, void *userp)
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

static void socks_free_list(sockctx *sc)
{
    while (sc) {
        sockctx *next = sc->next;
        event_free(sc->ev); /* deletes it first when pending */
        free(sc);
        sc = next;
    }
}

void up_socks_free(br_upstream *up)
{
    socks_free_list(up->socks);
    socks_free_list(up->spare_socks);
    up->socks = up->spare_socks = NULL;
}
