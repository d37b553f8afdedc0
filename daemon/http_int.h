/* SPDX-License-Identifier: MIT */
/* Internal to the range endpoint (its contract is http.h): what its answers
 * (http_range.c) get from the endpoint itself (http.c: listeners,
 * connections, the request gate, replies and the access log): the
 * endpoint's struct, a request waiting for its range, and the replies. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accept_pause.h"
#include "http.h"
#include "http_rate.h"
#include "range/range.h"

struct event;
struct evhttp;
struct evhttp_request;
struct evbuffer;
struct bd_server;
struct bd_state;
struct bd_prepared;

#define BD_HTTP_MAX_LISTEN 16

/* One admitted connection of the endpoint. */
typedef struct bd_http_conn bd_http_conn;

/* A request waiting for its range. */
typedef struct bd_http_job bd_http_job;
struct bd_http_job {
    bd_http *http;              /* NULL once the endpoint stopped: answer nothing */
    struct evhttp_request *req; /* NULL with http */
    struct bd_state *state;     /* referenced */
    bd_http_job *prev, *next;
    br_range_kind kind;
    uint32_t prefix20;
    uint32_t partition; /* the client's (http_range.c) */
};

struct bd_http {
    struct bd_server *srv;
    struct evhttp *evh;
    char *listen;                               /* the [http] listen it serves */
    char *unix_paths[BD_HTTP_MAX_LISTEN];       /* sockets it created (unlinked at stop) */
    bd_accept_pause pauses[BD_HTTP_MAX_LISTEN]; /* its listeners out of descriptors */
    bd_rate_table *rate;
    bd_http_conn *conns, *fresh; /* admitted; accepted, to be admitted */
    bd_http_conn **by_fd;        /* admitted, by socket number */
    size_t n_by_fd;
    uint32_t n_conns; /* admitted */
    struct event *admit_ev;
    uint8_t part_secret[32];   /* keys the clients' cache partitions */
    struct bd_http_prep *prep; /* prepared bodies (http_prep.h) */
    bd_http_job *jobs;
    uint32_t n_jobs;
    uint32_t unsent; /* answers made while draining, not yet written */
    bool closing;    /* in bd_http_free */
};

/* Send a reply to a request of h and log it when access_log is on. body may
 * be NULL (no body). */
void bd_http_reply(bd_http *h, struct evhttp_request *req, int code, const char *reason,
                   struct evbuffer *body);
/* The same with a text body (HIBP's error texts) and Content-Type text/plain. */
void bd_http_reply_text(bd_http *h, struct evhttp_request *req, int code, const char *reason,
                        const char *text);
/* The cache partition of req's client (http.c, docs/privacy.md "An HTTP
 * client of the range endpoint"): a keyed hash of the client, made once per
 * connection (and again when [http] ipv6_prefix changed). */
uint32_t bd_http_partition(bd_http *h, struct evhttp_request *req);
/* A job for req on h (holds the current state); NULL when out of memory. */
bd_http_job *bd_http_job_new(bd_http *h, struct evhttp_request *req);
void bd_http_job_free(bd_http_job *j);

/* A plain GET answered without evhttp (http.c's fast path): the head, as
 * evhttp writes it for the same answer, and the prepared body's file. */
typedef struct bd_http_fast {
    char head[1024];
    size_t head_len;
    struct bd_prepared *e; /* held (http_prep.h): released once sent */
    int fd;                /* the identity body's file, sent with sendfile(2) */
    size_t len;            /* its length */
} bd_http_fast;
/* The answer to an HTTP/1.1 GET /range/{prefix20} (SHA-1, no padding, the
 * identity coding, no condition) of a client of partition: true with *out
 * when a fresh stored entry and its prepared body make it (date is the
 * Date value); false when the general path is to answer, nothing counted
 * then. Counts http_prepared; the caller counts the rest. */
bool bd_http_range_fast(bd_http *h, uint32_t partition, uint32_t prefix20, const char *date,
                        bd_http_fast *out);
