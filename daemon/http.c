/* SPDX-License-Identifier: MIT */
/* The range endpoint (http.h): its start, the connections, the gate every
 * request passes (allowed_networks, rate, route, method), the requests
 * waiting for a range, replies and the optional access log, and the fast
 * path that answers the plainest GET of a range without evhttp
 * (http_fast.h); the answers themselves are http_range.c.
 *
 * The connections (breachd.conf(5) [http] max_connections,
 * max_connections_per_client, header_timeout): each one is admitted or
 * closed at once, then given a deadline for each whole request (line,
 * headers, body).
 *
 * libevent 2.1's evhttp accepts by itself and tells nothing of a new
 * connection until a whole request is in. Its bufferevent callback
 * (evhttp_set_bevcb) comes first, on accept: the bufferevent made there is
 * held (a reference) and an event made active runs right after the accept,
 * before any read: by then evhttp has given the bufferevent its descriptor
 * and its callbacks, whose argument is the evhttp_connection. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "conn.h"
#include "core/hash.h"
#include "http_fast.h"
#include "http_int.h"
#include "http_listen.h"
#include "http_prep.h"
#include "http_range.h"
#include "log.h"
#include "server_types.h"
#include "state.h"
#include "core/clock.h"
#include "core/random.h"
#include "core/util.h"

#define MAX_HEADERS_SIZE 16384
#define MAX_BODY_SIZE 4096
#define MAX_SINGLE_WRITE (256 * 1024)
#define CORK_MIN 4096 /* smaller answers go in one write anyway */

/* ---- connections: the caps and the header deadline ---- */

struct bd_http_conn {
    bd_http *h;
    struct bufferevent *bev;         /* referenced until admitted */
    struct evhttp_connection *evcon; /* NULL until admitted */
    struct event *deadline;          /* the header deadline, or close_now */
    struct evbuffer_cb_entry *input_cb;
    bd_http_conn *prev, *next; /* h->fresh (waiting) or h->conns (admitted) */
    uint8_t key[16];
    bool keyed;            /* false: a Unix socket peer, no per-client cap */
    bool tcp;              /* a TCP peer: answers can be corked (tcp(7) TCP_CORK) */
    bool corked;           /* TCP_CORK set for the answer being written */
    bool bad_bytes;        /* a NUL byte came in */
    bool close_after;      /* end the connection after the answer being written */
    bool close_now;        /* the deadline event closes, not a timeout */
    bool drain_pending;    /* an answer made while draining, not written yet */
    bool has_partition;    /* partition is the client's for part_bits */
    bool to_evhttp;        /* evhttp has bytes of a request of c (http_fast.c) */
    bool fast_on;          /* the fast path's answer is being written */
    bool fast_paused;      /* ... and c's reads stopped until it is */
    bd_http_fast *fast;    /* that answer (made on first use) */
    struct event *fast_ev; /* ... waiting for the socket */
    size_t fast_head_off;  /* ... its head written so far */
    off_t fast_body_off;   /* ... its body written so far */
    uint32_t partition;
    uint32_t part_bits; /* the [http] ipv6_prefix it was made for */
    int fd;             /* its socket: h->by_fd[fd] is c */
};

static void list_push(bd_http_conn **head, bd_http_conn *c)
{
    c->prev = NULL;
    c->next = *head;
    if (*head)
        (*head)->prev = c;
    *head = c;
}

static void list_remove(bd_http_conn **head, bd_http_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        *head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

/* The connections the endpoint may hold: [http] max_connections, and at
 * most half the open-file limit, so that the other half stays for the
 * daemon's socket, the cache and the upstream. */
static uint32_t total_cap(const bd_http *h)
{
    uint32_t cap = h->srv->state->cfg->http.max_connections;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 2 < cap)
        cap = (uint32_t)(rl.rlim_cur / 2);
    return cap;
}

static uint32_t same_client(const bd_http *h, const uint8_t key[16])
{
    uint32_t n = 0;
    for (const bd_http_conn *c = h->conns; c; c = c->next)
        n += c->keyed && !memcmp(c->key, key, 16);
    return n;
}

static void arm_deadline(bd_http_conn *c)
{
    uint32_t ms = c->h->srv->state->cfg->http.header_timeout_ms;
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    evtimer_add(c->deadline, &tv);
}

static void conn_free(bd_http_conn *c)
{
    if (c->deadline)
        event_free(c->deadline);
    if (c->fast_ev)
        event_free(c->fast_ev);
    if (c->fast_on)
        bd_http_prep_release(c->fast->e);
    free(c->fast);
    free(c);
}

static void drain_end(bd_http_conn *c)
{
    if (!c->drain_pending)
        return;
    c->drain_pending = false;
    c->h->unsent--;
    c->h->srv->http_unsent--;
    if (!c->h->closing)
        bd_maybe_finish_drain(c->h->srv);
}

static void conn_closed(struct evhttp_connection *evcon, void *arg)
{
    bd_http_conn *c = arg;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    if (bev && c->input_cb)
        evbuffer_remove_cb_entry(bufferevent_get_input(bev), c->input_cb);
    list_remove(&c->h->conns, c);
    c->h->n_conns--;
    c->h->by_fd[c->fd] = NULL;
    drain_end(c);
    conn_free(c);
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bd_http_conn *c = arg;
    if (!c->close_now)
        c->h->srv->counters.http_header_timeouts++;
    evhttp_connection_free(c->evcon); /* conn_closed frees c */
}

static bool fast_request(bd_http_conn *c, struct evbuffer *buf, size_t orig_size);

/* Bytes came in: a NUL anywhere in a request's head is refused (the
 * parser would cut the value at it); the endpoint takes no bodies. The
 * plainest GET of a range is answered here (fast_request), anything else
 * by evhttp, which reads the bytes next. */
static void input_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    bd_http_conn *c = arg;
    if (info->n_added == 0 || c->bad_bytes)
        return;
    /* the bytes read come after those already seen (a read only adds) */
    struct evbuffer_ptr from;
    bool tail = info->n_deleted == 0 &&
                evbuffer_ptr_set(buf, &from, info->orig_size, EVBUFFER_PTR_SET) == 0;
    struct evbuffer_ptr p = evbuffer_search(buf, "", 1, tail ? &from : NULL);
    if (p.pos >= 0)
        c->bad_bytes = true;
    if (c->bad_bytes || !fast_request(c, buf, info->orig_size))
        c->to_evhttp = true;
}

/* c found by its socket's number (at most one connection has it): grow
 * h->by_fd to hold fd. false when out of memory. */
static bool index_conn(bd_http *h, bd_http_conn *c, int fd)
{
    if (fd < 0)
        return false;
    if ((size_t)fd >= h->n_by_fd) {
        size_t n = h->n_by_fd ? h->n_by_fd : 64;
        while (n <= (size_t)fd)
            n *= 2;
        bd_http_conn **b = realloc(h->by_fd, n * sizeof(*b));
        if (!b)
            return false;
        memset(b + h->n_by_fd, 0, (n - h->n_by_fd) * sizeof(*b));
        h->by_fd = b;
        h->n_by_fd = n;
    }
    h->by_fd[fd] = c;
    c->fd = fd;
    return true;
}

/* Answers go out at once, however they are cut into segments (without
 * TCP_NODELAY the last part of a body waits for the client's delayed ACK),
 * and a body in as few writes as the socket takes. Once per connection. */
static void tune_connection(bd_http_conn *c, const struct sockaddr *sa)
{
    bufferevent_set_max_single_write(c->bev, MAX_SINGLE_WRITE);
    c->tcp = sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6);
    if (c->tcp) {
        int one = 1;
        (void)setsockopt(bufferevent_getfd(c->bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
}

/* An answer in more than one piece (its head, a body sent from a file,
 * padding after it) is held by TCP_CORK (tcp(7)) until it is written
 * whole: full segments, not one for the head and one per piece, each a
 * transmission the client is woken for. Uncorked in request_done. */
static void cork(bd_http_conn *c, bool on)
{
    if (!c->tcp || c->corked == on)
        return;
    int v = on;
    if (setsockopt(bufferevent_getfd(c->bev), IPPROTO_TCP, TCP_CORK, &v, sizeof(v)) == 0)
        c->corked = on;
}

/* Admit c or close its connection. false when closed (c is then freed). */
static bool admit(bd_http *h, bd_http_conn *c, struct evhttp_connection *evcon)
{
    const struct sockaddr *sa = evhttp_connection_get_addr(evcon);
    const breachd_config *cfg = h->srv->state->cfg;
    c->keyed = sa && bd_http_limit_key(sa, cfg->http.ipv6_prefix, c->key);
    c->evcon = evcon;
    c->deadline = evtimer_new(h->srv->base, deadline_cb, c);
    bool ok = c->deadline && h->n_conns < total_cap(h) &&
              (!c->keyed || same_client(h, c->key) < cfg->http.max_connections_per_client);
    if (ok) {
        c->input_cb = evbuffer_add_cb(bufferevent_get_input(c->bev), input_cb, c);
        ok = c->input_cb != NULL && index_conn(h, c, bufferevent_getfd(c->bev));
    }
    if (!ok) {
        h->srv->counters.http_connections_refused++;
        evhttp_connection_free(evcon); /* no close callback yet */
        conn_free(c);
        return false;
    }
    list_push(&h->conns, c);
    h->n_conns++;
    evhttp_connection_set_closecb(evcon, conn_closed, c);
    tune_connection(c, sa);
    arm_deadline(c);
    return true;
}

static void admit_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bd_http *h = arg;
    while (h->fresh) {
        bd_http_conn *c = h->fresh;
        list_remove(&h->fresh, c);
        struct bufferevent *bev = c->bev;
        bufferevent_data_cb r, w;
        bufferevent_event_cb e;
        void *evcon = NULL;
        bufferevent_getcb(bev, &r, &w, &e, &evcon);
        /* no callbacks: evhttp gave the connection up (and freed it) */
        if (evcon)
            admit(h, c, evcon);
        else
            conn_free(c);
        bufferevent_decref(bev);
    }
}

static struct bufferevent *new_bev(struct event_base *base, void *arg)
{
    bd_http *h = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    bd_http_conn *c = bev ? calloc(1, sizeof(*c)) : NULL;
    if (!c)
        return bev; /* evhttp makes one if NULL; out of memory: not tracked */
    c->h = h;
    c->bev = bev;
    bufferevent_incref(bev);
    list_push(&h->fresh, c);
    event_active(h->admit_ev, 0, 0); /* res 0: a wake-up, not a timeout */
    return bev;
}

/* Watch h->evh's connections: past [http] max_connections (at most half
 * RLIMIT_NOFILE) or max_connections_per_client a new connection is closed
 * at once (http_connections_refused); an admitted one is closed when a
 * whole request (line, headers, body) is not in within header_timeout of
 * the connection's start or of the previous answer written
 * (http_header_timeouts). 0 or -ENOMEM. */
static int bd_http_conns_init(bd_http *h)
{
    h->admit_ev = event_new(h->srv->base, -1, 0, admit_cb, h);
    if (!h->admit_ev)
        return -ENOMEM;
    evhttp_set_bevcb(h->evh, new_bev, h);
    return 0;
}

/* After evhttp_free (which closes the admitted ones). */
static void bd_http_conns_fini(bd_http *h)
{
    while (h->fresh) {
        bd_http_conn *c = h->fresh;
        list_remove(&h->fresh, c);
        bufferevent_decref(c->bev);
        conn_free(c);
    }
    if (h->admit_ev)
        event_free(h->admit_ev);
    h->admit_ev = NULL;
}

/* The connection of req; NULL when it is gone or was not tracked. */
static bd_http_conn *bd_http_conn_of(bd_http *h, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    int fd = bev ? bufferevent_getfd(bev) : -1;
    bd_http_conn *c = fd >= 0 && (size_t)fd < h->n_by_fd ? h->by_fd[fd] : NULL;
    return c && c->evcon == evcon ? c : NULL;
}

static void request_done(struct evhttp_request *req, void *arg)
{
    (void)req;
    bd_http_conn *c = arg;
    drain_end(c);
    /* evhttp is idle once its answer is written and nothing is left to read */
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) == 0)
        c->to_evhttp = false;
    cork(c, false); /* the answer is written: its last segment goes now */
    if (c->close_after) {
        /* now, before evhttp reads a next request from the buffer (that is
         * a deferred callback, run in the loop's next round) */
        c->close_now = true;
        event_active(c->deadline, 0, 0); /* res 0: a wake-up, not a timeout */
    } else {
        arm_deadline(c); /* for the next request on the connection */
    }
}

/* req came in whole on c: its deadline ends; the next starts once req's
 * answer is written. */
static void bd_http_conn_request(bd_http_conn *c, struct evhttp_request *req)
{
    evtimer_del(c->deadline);
    evhttp_request_set_on_complete_cb(req, request_done, c);
}

/* A NUL byte came in on c. */
static bool bd_http_conn_bad_bytes(const bd_http_conn *c)
{
    return c->bad_bytes;
}

/* End c once the answer being made is written, before any next request is
 * read (evhttp keeps a CONNECT's connection open whatever it says). */
static void bd_http_conn_close_after(bd_http_conn *c)
{
    c->close_after = true;
}

/* An answer made while draining on c: h->unsent (and the server's
 * http_unsent, which the drain's end looks at) count it until it is
 * written or c is gone. */
static void bd_http_conn_drain_wait(bd_http_conn *c)
{
    if (c->drain_pending)
        return;
    c->drain_pending = true;
    c->h->unsent++;
    c->h->srv->http_unsent++;
}

/* ---- replies and the access log ---- */

static const struct sockaddr *peer_of(struct evhttp_request *req)
{
    struct evhttp_connection *con = evhttp_request_get_connection(req);
    return con ? evhttp_connection_get_addr(con) : NULL;
}

static void peer_text(const struct sockaddr *sa, char *out, size_t len)
{
    const void *addr = NULL;
    if (sa && sa->sa_family == AF_INET)
        addr = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    else if (sa && sa->sa_family == AF_INET6)
        addr = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    if (!addr)
        snprintf(out, len, "%s", sa ? "unix" : "-");
    else if (!inet_ntop(sa->sa_family, addr, out, (socklen_t)len))
        snprintf(out, len, "?");
}

/* The request line's target, printable ASCII only, cut at 200 bytes. */
static void target_text(struct evhttp_request *req, char *out, size_t len)
{
    const char *uri = evhttp_request_get_uri(req);
    size_t n = 0;
    for (const char *p = uri ? uri : ""; *p && n + 1 < len && n < 200; p++)
        out[n++] = (*p > 0x20 && *p < 0x7f && *p != '"') ? *p : '?';
    out[n] = '\0';
}

static const char *method_name(struct evhttp_request *req)
{
    switch (evhttp_request_get_command(req)) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_OPTIONS:
        return "OPTIONS";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    case EVHTTP_REQ_TRACE:
        return "TRACE";
    default:
        return "OTHER";
    }
}

static void access_log(bd_http *h, struct evhttp_request *req, int code, size_t bytes)
{
    if (!h->srv->state->cfg->http.access_log)
        return;
    char peer[INET6_ADDRSTRLEN + 8], target[256];
    peer_text(peer_of(req), peer, sizeof(peer));
    target_text(req, target, sizeof(target));
    bd_log(LOG_INFO, "http %s \"%s %s\" %d %zu", peer, method_name(req), target, code, bytes);
}

static void count_status(bd_http *h, int code)
{
    bd_counters *k = &h->srv->counters;
    if (code == 200)
        k->http_ok++;
    else if (code == 304)
        k->http_not_modified++;
    else if (code == 403)
        k->http_forbidden++;
    else if (code == 429)
        k->http_rate_limited++;
    else if (code >= 500)
        k->http_unavailable++;
    else
        k->http_bad_requests++;
}

void bd_http_reply(bd_http *h, struct evhttp_request *req, int code, const char *reason,
                   struct evbuffer *body)
{
    count_status(h, code);
    size_t len = body ? evbuffer_get_length(body) : 0;
    access_log(h, req, code, len);
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    bd_http_conn *c = bd_http_conn_of(h, req);
    if (h->srv->draining) {
        /* its connection ends right after it: the drain waits for it */
        evhttp_add_header(out, "Connection", "close");
        if (c)
            bd_http_conn_drain_wait(c);
    }
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if ((body && cmd == EVHTTP_REQ_HEAD) || cmd == EVHTTP_REQ_CONNECT) {
        /* evhttp gives neither a length, and would send a HEAD answer's
         * body after its headers; a CONNECT's connection it keeps open
         * whatever Connection says */
        char n[32];
        snprintf(n, sizeof(n), "%zu", len);
        evhttp_add_header(out, "Content-Length", n);
        if (cmd == EVHTTP_REQ_HEAD)
            body = NULL;
        else if (c)
            bd_http_conn_close_after(c);
    }
    if (c && body && len >= CORK_MIN)
        cork(c, true);
    evhttp_send_reply(req, code, reason, body);
}

void bd_http_reply_text(bd_http *h, struct evhttp_request *req, int code, const char *reason,
                        const char *text)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Content-Type", "text/plain");
    evhttp_add_header(out, "Cache-Control", "no-store");
    struct evbuffer *b = evbuffer_new();
    if (!b || evbuffer_add(b, text, strlen(text)) < 0) {
        if (b)
            evbuffer_free(b);
        bd_http_reply(h, req, code, reason, NULL);
        return;
    }
    bd_http_reply(h, req, code, reason, b);
    evbuffer_free(b);
}

/* ---- jobs: requests waiting for a range ---- */

bd_http_job *bd_http_job_new(bd_http *h, struct evhttp_request *req)
{
    bd_http_job *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    j->http = h;
    j->req = req;
    j->state = bd_state_ref(h->srv->state);
    j->next = h->jobs;
    if (h->jobs)
        h->jobs->prev = j;
    h->jobs = j;
    h->n_jobs++;
    h->srv->inflight++;
    return j;
}

void bd_http_job_free(bd_http_job *j)
{
    bd_http *h = j->http;
    if (h) {
        if (j->prev)
            j->prev->next = j->next;
        else
            h->jobs = j->next;
        if (j->next)
            j->next->prev = j->prev;
        h->n_jobs--;
        h->srv->inflight--;
    }
    bd_state_unref(j->state);
    free(j);
    if (h)
        bd_maybe_finish_drain(h->srv);
}

/* ---- the client's partition ---- */

/* The cache partition of req's client (docs/privacy.md "An HTTP client of
 * the range endpoint"): each client (an IPv4 address, an IPv6 network of
 * [http] ipv6_prefix bits) has its own, so that no client is answered from,
 * waits on or is sped up by another's entry or fetch. Its number is a keyed
 * hash of the client into the upper half of the numbers (uids are below
 * 2^31 on any usual system), BD_PARTITION_HTTP and
 * BR_RESOLVER_PARTITION_SHARED left out; the key is the cache's secret, so
 * a client keeps its partition across restarts. Clients of a Unix socket
 * listener share BD_PARTITION_HTTP. */
static uint32_t client_partition(const bd_http *h, const struct sockaddr *sa)
{
    uint8_t in[sizeof(h->part_secret) + 16], md[BR_SHA256_LEN];
    if (!sa ||
        !bd_http_client_key(sa, h->srv->state->cfg->http.ipv6_prefix, in + sizeof(h->part_secret)))
        return BD_PARTITION_HTTP;
    memcpy(in, h->part_secret, sizeof(h->part_secret));
    int rc = br_sha256(in, sizeof(in), md);
    br_wipe(in, sizeof(in));
    if (rc < 0)
        return BD_PARTITION_HTTP;
    uint32_t p;
    memcpy(&p, md, sizeof(p));
    p |= UINT32_C(0x80000000);
    return p >= BD_PARTITION_HTTP ? p - 2 : p;
}

/* The partition of c's client (at sa), or of a client not tracked (c
 * NULL). */
static uint32_t conn_partition(bd_http *h, bd_http_conn *c, const struct sockaddr *sa)
{
    uint32_t bits = h->srv->state->cfg->http.ipv6_prefix;
    if (c && c->has_partition && c->part_bits == bits)
        return c->partition;
    uint32_t p = client_partition(h, sa);
    if (c) {
        c->partition = p;
        c->part_bits = bits;
        c->has_partition = true;
    }
    return p;
}

uint32_t bd_http_partition(bd_http *h, struct evhttp_request *req)
{
    return conn_partition(h, bd_http_conn_of(h, req), peer_of(req));
}

/* ---- the gate ---- */

static uint64_t now_ms(void)
{
    return (uint64_t)(br_clock_now_mono() / 1000000u);
}

/* Past the client's rate: 429 with Retry-After, as HIBP answers. */
static bool rate_limited(bd_http *h, struct evhttp_request *req, const struct sockaddr *sa)
{
    uint32_t rate = h->srv->state->cfg->http.rate;
    if (rate == 0 || !sa || sa->sa_family == AF_UNIX)
        return false;
    bd_rate_set_ipv6_prefix(h->rate, h->srv->state->cfg->http.ipv6_prefix);
    uint32_t wait_ms = bd_rate_take(h->rate, sa, rate, now_ms());
    if (wait_ms == 0)
        return false;
    uint32_t secs = (wait_ms + 999) / 1000;
    char v[16], text[96];
    snprintf(v, sizeof(v), "%u", secs);
    snprintf(text, sizeof(text), "Rate limit is exceeded. Try again in %u seconds.", secs);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", v);
    bd_http_reply_text(h, req, 429, "Too Many Requests", text);
    return true;
}

static void cors_headers(struct evhttp_request *req)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Access-Control-Allow-Origin", "*");
    evhttp_add_header(out, "Access-Control-Allow-Methods", "GET");
    evhttp_add_header(out, "Access-Control-Allow-Headers", "Add-Padding");
    evhttp_add_header(out, "Access-Control-Max-Age", "1728000");
}

static bool is_tchar(unsigned char ch)
{
    return (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* A head RFC 9112 says to refuse with 400 and to close the connection on:
 * a field name that is not a token (a blank before the colon), more than
 * one Content-Length or one that is not digits alone, a NUL byte (the
 * parser would have cut a value at it). */
static bool bad_head(struct evhttp_request *req, const bd_http_conn *c)
{
    if (c && bd_http_conn_bad_bytes(c))
        return true;
    unsigned n_length = 0;
    const struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    for (const struct evkeyval *e = in->tqh_first; e; e = e->next.tqe_next) {
        if (!e->key[0])
            return true;
        for (const char *p = e->key; *p; p++)
            if (!is_tchar((unsigned char)*p))
                return true;
        if (!strcasecmp(e->key, "Content-Length") &&
            (++n_length > 1 || !e->value[0] || strspn(e->value, "0123456789") != strlen(e->value)))
            return true;
    }
    return false;
}

static void request_cb(struct evhttp_request *req, void *arg)
{
    bd_http *h = arg;
    bd_server *srv = h->srv;
    srv->counters.http_requests++;
    const struct sockaddr *sa = peer_of(req);
    bd_http_conn *c = bd_http_conn_of(h, req);
    if (c)
        bd_http_conn_request(c, req);
    if (bad_head(req, c)) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
        if (c)
            bd_http_conn_close_after(c);
        bd_http_reply_text(h, req, 400, "Bad Request", "Malformed request head");
        return;
    }
    if (!breachd_config_http_allowed(srv->state->cfg, sa)) {
        bd_http_reply_text(h, req, 403, "Forbidden", "Forbidden");
        return;
    }
    if (rate_limited(h, req, sa))
        return;
    if (srv->draining) {
        bd_http_reply_text(h, req, 503, "Service Unavailable", "breachd is stopping");
        return;
    }
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path || strncmp(path, "/range/", 7) != 0) {
        bd_http_reply_text(h, req, 404, "Not Found", "Invalid API query");
        return;
    }
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (cmd == EVHTTP_REQ_OPTIONS) {
        cors_headers(req);
        bd_http_reply(h, req, 200, "OK", NULL);
        return;
    }
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        char text[128];
        snprintf(text, sizeof(text),
                 "Only GET requests can be used to query ranges, but this request used the %s verb",
                 method_name(req));
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD, OPTIONS");
        bd_http_reply_text(h, req, 405, "Method Not Allowed", text);
        return;
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "Access-Control-Allow-Origin", "*");
    bd_http_range(h, req, path + 7);
}

/* ---- the fast path: a plain GET answered without evhttp ----
 * A HIBP client asks GET /range/{prefix} again and again on a kept-alive
 * connection. When such a request (http_fast.h) comes in whole, alone, on
 * a connection where evhttp holds nothing, and its answer is a prepared
 * body of a fresh stored range, it is answered here: the head evhttp would
 * write for it in one send(2) (MSG_MORE: it waits for the body, as
 * TCP_CORK held it) and the body with sendfile(2), without evhttp's request,
 * header tables and printf, and without the writes through the
 * bufferevent. Everything else goes through request_cb as before. */

static void fast_write(bd_http_conn *c);

static void fast_write_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    bd_http_conn *c = arg;
    if (what & EV_TIMEOUT) {
        c->fast_head_off = SIZE_MAX; /* written nothing for idle_timeout: fail */
    }
    fast_write(c);
}

/* Write c's answer as far as the socket takes it: 0 written, 1 the socket
 * is full, -1 failed (the connection is to end). */
static int fast_send(bd_http_conn *c)
{
    const bd_http_fast *f = c->fast;
    if (c->fast_head_off == SIZE_MAX)
        return -1;
    while (c->fast_head_off < f->head_len) {
        ssize_t w = send(c->fd, f->head + c->fast_head_off, f->head_len - c->fast_head_off,
                         MSG_NOSIGNAL | (c->tcp ? MSG_MORE : 0));
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -1;
        c->fast_head_off += (size_t)w;
    }
    while ((size_t)c->fast_body_off < f->len) {
        ssize_t w = sendfile(c->fd, f->fd, &c->fast_body_off, f->len - (size_t)c->fast_body_off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : -1;
        if (w == 0)
            return -1; /* the file is shorter than it was: cannot be */
    }
    return 0;
}

/* Go on writing c's answer; once written the next request is read, as
 * after request_done. On failure the connection ends, as evhttp ends it. */
static void fast_write(bd_http_conn *c)
{
    int rc = fast_send(c);
    if (rc > 0) {
        uint32_t ms = c->h->srv->state->cfg->limits.idle_timeout_ms;
        struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (suseconds_t)(ms % 1000) * 1000};
        if (!c->fast_ev)
            c->fast_ev = event_new(c->h->srv->base, c->fd, EV_WRITE, fast_write_cb, c);
        if (c->fast_ev && event_add(c->fast_ev, &tv) == 0) {
            if (!c->fast_paused)
                bufferevent_disable(c->bev, EV_READ); /* no next request yet */
            c->fast_paused = true;
            return;
        }
        rc = -1;
    }
    c->fast_on = false;
    bd_http_prep_release(c->fast->e);
    if (c->fast_paused)
        bufferevent_enable(c->bev, EV_READ);
    c->fast_paused = false;
    if (rc == 0) {
        arm_deadline(c); /* for the next request on the connection */
        return;
    }
    bufferevent_disable(c->bev, EV_READ | EV_WRITE);
    c->close_now = true;
    event_active(c->deadline, 0, 0); /* res 0: a wake-up, not a timeout */
}

/* The request in buf (orig_size bytes were there before this read), when
 * the fast path answers it: then it is counted as request_cb and
 * bd_http_reply count it, taken from buf and its answer written. */
static bool fast_request(bd_http_conn *c, struct evbuffer *buf, size_t orig_size)
{
    bd_http *h = c->h;
    const breachd_config *cfg = h->srv->state->cfg;
    size_t n = evbuffer_get_length(buf);
    if (c->to_evhttp || c->fast_on || c->close_after || orig_size != 0 || n > BD_HTTP_FAST_MAX ||
        h->srv->draining || cfg->http.access_log)
        return false;
    const struct sockaddr *sa = evhttp_connection_get_addr(c->evcon);
    if ((cfg->http.rate != 0 && sa && sa->sa_family != AF_UNIX) ||
        !breachd_config_http_allowed(cfg, sa))
        return false; /* request_cb's gate answers */
    const char *p = (const char *)evbuffer_pullup(buf, -1);
    uint32_t prefix20;
    if (!p || !bd_http_fast_parse(p, n, &prefix20))
        return false;
    if (!c->fast && !(c->fast = malloc(sizeof(*c->fast))))
        return false;
    char date[50]; /* evhttp's Date, made as evhttp makes it */
    evutil_date_rfc1123(date, sizeof(date), NULL);
    if (!bd_http_range_fast(h, conn_partition(h, c, sa), prefix20, date, c->fast))
        return false;
    h->srv->counters.http_requests++;
    h->srv->counters.http_fast++;
    count_status(h, 200);
    evbuffer_drain(buf, n);
    evtimer_del(c->deadline);
    c->fast_on = true;
    c->fast_head_off = 0;
    c->fast_body_off = 0;
    fast_write(c);
    return true;
}

static int http_start(bd_server *srv, bd_http **out, br_error *err)
{
    const breachd_config *cfg = srv->state->cfg;
    bd_http *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->srv = srv;
    h->listen = strdup(cfg->http.listen);
    h->rate = bd_rate_new();
    h->evh = evhttp_new(srv->base);
    h->prep = bd_http_prep_new(cfg->cache.path);
    if (!h->listen || !h->rate || !h->evh || !h->prep) {
        bd_http_free(h);
        return br_error_set(err, -ENOMEM, "[http]: out of memory");
    }
    if (bd_http_conns_init(h) < 0 || br_random_bytes(h->part_secret, sizeof(h->part_secret)) < 0) {
        bd_http_free(h);
        return br_error_set(err, -ENOMEM, "[http]: out of memory");
    }
    if (srv->state->cache && srv->state->cache->cache) /* the same partitions after a restart */
        br_range_cache_secret(srv->state->cache->cache, h->part_secret);
    evhttp_set_gencb(h->evh, request_cb, h);
    evhttp_set_allowed_methods(h->evh, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS |
                                           EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                           EVHTTP_REQ_PATCH | EVHTTP_REQ_TRACE |
                                           EVHTTP_REQ_CONNECT);
    evhttp_set_max_headers_size(h->evh, MAX_HEADERS_SIZE);
    evhttp_set_max_body_size(h->evh, MAX_BODY_SIZE);
    struct timeval idle = {.tv_sec = cfg->limits.idle_timeout_ms / 1000,
                           .tv_usec = (suseconds_t)(cfg->limits.idle_timeout_ms % 1000) * 1000};
    evhttp_set_timeout_tv(h->evh, &idle);
    int rc = bd_http_listen(h, cfg, err);
    if (rc < 0) {
        bd_http_free(h);
        return rc;
    }
    *out = h;
    return 0;
}

void bd_http_free(bd_http *h)
{
    if (!h)
        return;
    h->closing = true;
    /* evhttp_free frees the requests still waiting on a connection; a
     * request whose client went away belongs to nobody but us. Their jobs
     * answer nothing. */
    while (h->jobs) {
        bd_http_job *j = h->jobs;
        h->jobs = j->next;
        if (!evhttp_request_get_connection(j->req))
            evhttp_request_free(j->req);
        j->http = NULL;
        j->req = NULL;
        j->prev = j->next = NULL;
        h->srv->inflight--;
    }
    for (size_t i = 0; i < BD_HTTP_MAX_LISTEN; i++)
        bd_accept_pause_fini(&h->pauses[i]);
    if (h->evh)
        evhttp_free(h->evh);
    bd_http_conns_fini(h);
    free(h->by_fd);
    bd_http_prep_free(h->prep); /* bodies still referenced stay until sent */
    br_wipe(h->part_secret, sizeof(h->part_secret));
    bd_http_unlisten(h);
    h->srv->http_unsent -= h->unsent; /* answers of connections gone with h */
    bd_rate_free(h->rate);
    free(h->listen);
    free(h);
}

int bd_http_apply(bd_server *srv, br_error *err)
{
    const breachd_config *cfg = srv->state->cfg;
    const char *now = srv->http ? srv->http->listen : "";
    if (!strcmp(now, cfg->http.listen))
        return 0;
    bd_http_free(srv->http);
    srv->http = NULL;
    if (cfg->http.n_listens == 0)
        return 0;
    int rc = http_start(srv, &srv->http, err);
    if (rc < 0)
        return rc;
    bd_log(LOG_INFO, "range endpoint at %s", cfg->http.listen);
    return 0;
}
