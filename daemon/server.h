/* SPDX-License-Identifier: MIT */
/* The socket server: a libevent loop with a Unix stream socket (created by
 * breachd, or handed over by systemd), one bufferevent per connection, line
 * framing with the protocol's limits, peer credentials, backpressure,
 * reload and a draining shutdown. Request semantics live in dispatch.c. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "accept_pause.h"
#include "protocol.h"
#include "state.h"
#include "stats.h"

struct bufferevent;
struct event;
struct event_base;
struct evconnlistener;

/* The [limits] section of breachd.conf(5), as the server uses it: taken at
 * start and at every reload. */
typedef struct bd_limits {
    uint32_t max_connections;
    uint32_t max_inflight; /* per connection */
    uint32_t idle_timeout_ms;
    size_t max_unread;         /* unread response bytes before reading pauses */
    uint32_t drain_timeout_ms; /* SIGTERM: wait for in-flight answers */
} bd_limits;

typedef struct bd_conn bd_conn;
typedef struct bd_waiter bd_waiter;

typedef struct bd_server {
    struct event_base *base;
    char *config_path;
    bd_state *state; /* the current state; requests hold their own reference */
    bd_limits limits;
    bd_counters counters;
    int64_t started_at;

    int listen_fd;
    bool socket_activated;
    char *socket_path; /* the path we created (unlinked at exit); NULL if activated */
    struct evconnlistener *listener;
    bd_accept_pause accept; /* the listener's pauses when out of descriptors */
    bd_conn *conns;
    uint32_t n_conns;
    uint64_t inflight; /* requests waiting for an answer, all connections */
    uint64_t bulk_pending; /* ... of which on bulk connections ([upstream] bulk_queue) */

    bool draining;
    struct event *drain_timer;
    struct event *signals[4];

    /* Reload: config and filters are loaded in a thread; its end is signalled
     * through a pipe so the swap happens on the loop thread. */
    bool reloading;
    pthread_t reload_thread;
    int reload_pipe[2];
    struct event *reload_ev;
    bd_state_files reload_files;
    int reload_result;
    br_error reload_err;
    bd_waiter *reload_waiters;

    struct bd_metrics *metrics;
    char metrics_addr[64]; /* "host:port" being served, "" = none */
    struct bd_http *http;  /* the range endpoint ([http] listen), NULL = off */
} bd_server;

struct bd_conn {
    bd_server *srv;
    struct bufferevent *bev;
    bd_conn *prev, *next;
    struct event *idle;
    int refs;        /* 1 while open, +1 per pending request */
    bool open;
    bool discarding; /* skipping the rest of an over-long line */
    bool eof;        /* the peer closed its side: answer, then close */
    bool closing;    /* close once the output is written */
    bool paused;     /* not reading: too many unread responses */
    uint32_t inflight;
    br_lane lane; /* LANE: of this connection's range lookups (interactive by default) */
    uid_t uid;
    pid_t pid;
};

/* A request whose answer comes later (resolver, reload). */
struct bd_waiter {
    bd_conn *conn;
    bd_state *state;
    bd_waiter *next;
    bool bulk; /* made on a bulk connection: counted in bulk_pending */
    char id[BR_PROTO_MAX_ID + 1];
    br_verb verb;
};

void bd_limits_from_config(bd_limits *l, const breachd_config *cfg);

int bd_server_init(bd_server *srv, struct event_base *base, const char *config_path,
                   bd_state *state, br_error *err);
/* Take the systemd socket, or create the configured one. */
int bd_server_listen(bd_server *srv, br_error *err);
/* Stop accepting, refuse new requests, exit the loop once in-flight ones are
 * answered (or the drain timeout passes). */
void bd_server_drain(bd_server *srv);
/* Start a reload (SIGHUP: waiter NULL; RELOAD: the request to answer). */
void bd_server_reload(bd_server *srv, bd_waiter *waiter);
void bd_server_fini(bd_server *srv);

/* ---- used by dispatch.c ---- */

/* Append one response line (fmt without the id and the newline). */
void bd_conn_reply(bd_conn *c, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for a fixed text ("CLEAN", "PONG"): no formatting. */
void bd_conn_reply_text(bd_conn *c, const char *id, const char *text);
void bd_conn_reply_error(bd_conn *c, const char *id, br_proto_err code, const char *text);
/* NULL when c may start one more request that waits for an answer, else the
 * text of its ERR busy: an interactive connection has [limits] max_inflight,
 * the bulk lane [upstream] bulk_queue for all bulk connections together. */
const char *bd_conn_admit(const bd_conn *c);
/* A waiter for a request on c (takes references on c and the current state). */
bd_waiter *bd_waiter_new(bd_conn *c, const br_request *req);
/* Done with a waiter (answered or not): drops its references. */
void bd_waiter_free(bd_waiter *w);

/* dispatch.c: handle up to BD_BATCH complete request lines (without their
 * LF) read from one connection in one go. */
#define BD_BATCH 32
#define BD_LINE_BUF (BR_PROTO_MAX_LINE + 2)
void bd_dispatch_batch(bd_conn *c, char (*lines)[BD_LINE_BUF], const size_t *lens, size_t n);
