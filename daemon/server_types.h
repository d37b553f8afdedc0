/* SPDX-License-Identifier: MIT */
/* The daemon's server, its connections and its waiters as data: what
 * server.h (the server's functions), conn.h (answering), dispatch.h (the
 * verbs), http.h and stats.h (the figures) all need, so that none of them
 * includes another. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "accept_pause.h"
#include "counters.h"
#include "proto/protocol.h"
#include "state.h"

struct evbuffer;
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

/* The request lines server.c frames and hands to dispatch.c at once: at
 * most BD_BATCH lines, each where the read put it. BD_READ: the most one
 * read of a connection takes, as libevent's bufferevent read before: a
 * larger read starts more requests at once, and [limits] max_inflight
 * counts those waiting for the upstream (a pipelining client would meet
 * ERR busy sooner). */
#define BD_BATCH 32
#define BD_READ 4096

typedef struct bd_conn bd_conn;
typedef struct bd_waiter bd_waiter;
typedef struct bd_server bd_server;

/* Start a reload (server_control.c: SIGHUP with waiter NULL; the RELOAD
 * verb with the request to answer). */
typedef void bd_reload_fn(bd_server *srv, bd_waiter *waiter);

struct bd_server {
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
    uint64_t inflight;     /* requests waiting for an answer, all connections */
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
    /* Asked for while a reload ran (it may have read the files already):
     * one more reload follows, and these requests get its result. */
    bool reload_again;
    bd_waiter *reload_next_waiters;

    struct bd_metrics *metrics;
    char metrics_addr[64]; /* "host:port" being served, "" = none */
    struct bd_http *http;  /* the range endpoint ([http] listen), NULL = off */
    /* the range endpoint's answers made while draining, not yet written
     * (http.c): the drain ends after them, as after socket answers */
    uint32_t http_unsent;

    /* The one service of the server's own that a verb uses (RELOAD): set
     * by bd_server_init, so that the verbs need not call server_control.c. */
    bd_reload_fn *reload;
};

struct bd_conn {
    bd_server *srv;
    int fd;
    struct event *rev; /* EV_READ | EV_PERSIST: added while reading */
    struct event *wev; /* EV_WRITE: added only while the socket is full */
    bd_conn *prev, *next;
    struct event *idle;
    int refs; /* 1 while open, +1 per pending request */
    bool open;
    bool reading;      /* rev is added */
    bool wev_armed;    /* wev is added (a write met EAGAIN) */
    bool flush_queued; /* wev made active to write answers made outside a read */
    bool serving;      /* in the read path: answers go out at its end */
    bool discarding;   /* skipping the rest of an over-long line */
    bool eof;          /* the peer closed its side: answer, then close */
    bool closing;      /* close once the output is written */
    bool paused;       /* not reading: too many unread responses */
    bool broken;       /* out of memory for an answer: close */
    /* Input read but not worked on yet (a line's start, or the rest of a
     * read while paused), wiped before it is freed (server.c). */
    char *carry;
    size_t carry_len;
    /* Answers not yet written: out[out_off, out_len) (conn_out.c). */
    char *out;
    size_t out_off, out_len, out_cap;
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
