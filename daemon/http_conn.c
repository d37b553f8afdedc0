/* SPDX-License-Identifier: MIT */
/* The range endpoint's connections (http_int.h; breachd.conf(5) [http]
 * max_connections, max_connections_per_client, header_timeout): each one
 * is admitted or closed at once, then given a deadline for each whole
 * request (line, headers, body).
 *
 * libevent 2.1's evhttp accepts by itself and tells nothing of a new
 * connection until a whole request is in. Its bufferevent callback
 * (evhttp_set_bevcb) comes first, on accept: the bufferevent made there is
 * held (a reference) and an event made active runs right after the accept,
 * before any read: by then evhttp has given the bufferevent its descriptor
 * and its callbacks, whose argument is the evhttp_connection. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "http_int.h"
#include "conn.h"

struct bd_http_conn {
    bd_http *h;
    struct bufferevent *bev;         /* referenced until admitted */
    struct evhttp_connection *evcon; /* NULL until admitted */
    struct event *deadline;          /* the header deadline, or close_now */
    struct evbuffer_cb_entry *input_cb;
    bd_http_conn *prev, *next; /* h->fresh (waiting) or h->conns (admitted) */
    uint8_t key[16];
    bool keyed;         /* false: a Unix socket peer, no per-client cap */
    bool bad_bytes;     /* a NUL byte came in */
    bool close_after;   /* end the connection after the answer being written */
    bool close_now;     /* the deadline event closes, not a timeout */
    bool drain_pending; /* an answer made while draining, not written yet */
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

/* Bytes came in: a NUL anywhere in a request's head is refused (the
 * parser would cut the value at it); the endpoint takes no bodies. */
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
}

/* Admit c or close its connection. false when closed (c is then freed). */
static bool admit(bd_http *h, bd_http_conn *c, struct evhttp_connection *evcon)
{
    const struct sockaddr *sa = evhttp_connection_get_addr(evcon);
    const breachd_config *cfg = h->srv->state->cfg;
    c->keyed = sa && bd_http_client_key(sa, cfg->http.ipv6_prefix, c->key);
    c->evcon = evcon;
    c->deadline = evtimer_new(h->srv->base, deadline_cb, c);
    bool ok = c->deadline && h->n_conns < total_cap(h) &&
              (!c->keyed || same_client(h, c->key) < cfg->http.max_connections_per_client);
    if (ok) {
        c->input_cb = evbuffer_add_cb(bufferevent_get_input(c->bev), input_cb, c);
        ok = c->input_cb != NULL;
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
    event_active(h->admit_ev, EV_TIMEOUT, 0);
    return bev;
}

int bd_http_conns_init(bd_http *h)
{
    h->admit_ev = event_new(h->srv->base, -1, 0, admit_cb, h);
    if (!h->admit_ev)
        return -ENOMEM;
    evhttp_set_bevcb(h->evh, new_bev, h);
    return 0;
}

void bd_http_conns_fini(bd_http *h)
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

bd_http_conn *bd_http_conn_of(bd_http *h, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    if (!evcon)
        return NULL;
    for (bd_http_conn *c = h->conns; c; c = c->next)
        if (c->evcon == evcon)
            return c;
    return NULL;
}

static void request_done(struct evhttp_request *req, void *arg)
{
    (void)req;
    bd_http_conn *c = arg;
    drain_end(c);
    if (c->close_after) {
        /* now, before evhttp reads a next request from the buffer (that is
         * a deferred callback, run in the loop's next round) */
        c->close_now = true;
        event_active(c->deadline, EV_TIMEOUT, 0);
    } else {
        arm_deadline(c); /* for the next request on the connection */
    }
}

void bd_http_conn_request(bd_http_conn *c, struct evhttp_request *req)
{
    evtimer_del(c->deadline);
    evhttp_request_set_on_complete_cb(req, request_done, c);
}

bool bd_http_conn_bad_bytes(const bd_http_conn *c)
{
    return c->bad_bytes;
}

void bd_http_conn_close_after(bd_http_conn *c)
{
    c->close_after = true;
}

void bd_http_conn_drain_wait(bd_http_conn *c)
{
    if (c->drain_pending)
        return;
    c->drain_pending = true;
    c->h->unsent++;
    c->h->srv->http_unsent++;
}
