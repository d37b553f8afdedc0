/* SPDX-License-Identifier: MIT */
/* The range endpoint (http.h): listeners, the gate every request passes
 * (allowed_networks, rate, route, method), the requests waiting for a range,
 * replies and the optional access log. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "conn.h"
#include "http_int.h"
#include "log.h"
#include "state.h"
#include "core/random.h"
#include "core/util.h"

#define MAX_HEADERS_SIZE 16384
#define MAX_BODY_SIZE 4096
#define UNIX_BACKLOG 128
#define MAX_SINGLE_WRITE (256 * 1024)

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

/* ---- the gate ---- */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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

/* Answers go out at once, however they are cut into segments (without
 * TCP_NODELAY the last part of a body waits for the client's delayed ACK),
 * and a body in as few writes as the socket takes. */
static void tune_connection(struct evhttp_request *req, const struct sockaddr *sa)
{
    struct evhttp_connection *con = evhttp_request_get_connection(req);
    struct bufferevent *bev = con ? evhttp_connection_get_bufferevent(con) : NULL;
    if (!bev)
        return;
    bufferevent_set_max_single_write(bev, MAX_SINGLE_WRITE);
    if (sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)) {
        int one = 1;
        (void)setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
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
    tune_connection(req, sa);
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

/* ---- listeners ---- */

/* A Unix socket at path, mode 0660; a stale socket there is replaced, any
 * other file is an error. The listening descriptor, or a negative errno. */
static int unix_listen(const char *path, br_error *err)
{
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return br_error_set(err, -EEXIST, "[http] listen %s: exists and is not a socket", path);
        unlink(path);
    }
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sun.sun_path))
        return br_error_set(err, -ENAMETOOLONG, "[http] listen %s: path too long", path);
    memcpy(sun.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return br_error_set(err, -errno, "[http] listen %s: socket: %s", path, strerror(errno));
    if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || chmod(path, 0660) < 0 ||
        listen(fd, UNIX_BACKLOG) < 0) {
        int e = errno;
        close(fd);
        return br_error_set(err, -e, "[http] listen %s: %s", path, strerror(e));
    }
    return fd;
}

static int bind_one(bd_http *h, const breachd_config *cfg, const breachd_listen *l, size_t i,
                    br_error *err)
{
    if (l->family != AF_UNIX) {
        errno = 0;
        struct evhttp_bound_socket *b = evhttp_bind_socket_with_handle(h->evh, l->host, l->port);
        if (!b) {
            int e = errno ? errno : EADDRNOTAVAIL; /* bind(2)'s, e.g. EADDRINUSE */
            const char *name = strerrorname_np(e);
            return br_error_set(err, -e, "[http] listen %s%s%s:%u: cannot listen: %s (%s)",
                                l->family == AF_INET6 ? "[" : "", l->host,
                                l->family == AF_INET6 ? "]" : "", l->port, strerror(e),
                                name ? name : "?");
        }
        bd_accept_pause_init(&h->pauses[i], evhttp_bound_socket_get_listener(b),
                             &h->srv->counters.accept_pauses, "[http] listen");
        return 0;
    }
    if (!strcmp(l->path, cfg->daemon.socket))
        return br_error_set(err, -EINVAL, "[http] listen %s is the [daemon] socket", l->path);
    int fd = unix_listen(l->path, err);
    if (fd < 0)
        return fd;
    struct evhttp_bound_socket *b = evhttp_accept_socket_with_handle(h->evh, fd);
    if (!b) {
        close(fd);
        unlink(l->path);
        return br_error_set(err, -ENOMEM, "[http] listen %s: cannot accept", l->path);
    }
    bd_accept_pause_init(&h->pauses[i], evhttp_bound_socket_get_listener(b),
                         &h->srv->counters.accept_pauses, "[http] listen");
    h->unix_paths[i] = strdup(l->path);
    return 0;
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
    if (!h->listen || !h->rate || !h->evh) {
        bd_http_free(h);
        return br_error_set(err, -ENOMEM, "[http]: out of memory");
    }
    if (bd_http_conns_init(h) < 0 ||
        br_random_bytes(h->part_secret, sizeof(h->part_secret)) < 0) {
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
    for (size_t i = 0; i < cfg->http.n_listens && i < BD_HTTP_MAX_LISTEN; i++) {
        int rc = bind_one(h, cfg, &cfg->http.listens[i], i, err);
        if (rc < 0) {
            bd_http_free(h);
            return rc;
        }
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
    br_wipe(h->part_secret, sizeof(h->part_secret));
    for (size_t i = 0; i < BD_HTTP_MAX_LISTEN; i++)
        if (h->unix_paths[i]) {
            unlink(h->unix_paths[i]);
            free(h->unix_paths[i]);
        }
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
