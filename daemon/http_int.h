/* SPDX-License-Identifier: MIT */
/* Internal to the range endpoint (its contract is http.h): what its files
 * share. http.c: listeners, the request gate (networks, rate, route,
 * method), the pending requests and the access log; http_range.c: the
 * /range/ answers and the clients' cache partitions; http_body.c: bodies,
 * padding, validators and the conditional checks; http_encode.c:
 * Accept-Encoding, gzip and brotli; http_rate.c: the clients (addresses,
 * IPv6 networks) and their token buckets; http_conn.c: the connection caps
 * and the header deadline. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "accept_pause.h"
#include "http.h"
#include "range.h"
#include "resolver.h"

struct event;
struct evhttp;
struct evhttp_request;
struct evhttp_bound_socket;
struct evbuffer;
struct bd_server;
struct bd_state;

#define BD_HTTP_MAX_LISTEN 16

/* ---- http_rate.c ---- */

/* [http] ipv6_prefix's default: an IPv6 client is its /64 (what one host
 * or one customer usually gets; it can take any address in it). */
#define BD_HTTP_DEFAULT_IPV6_PREFIX 64

/* The client a peer address counts as, for the rate, the connection caps
 * and the cache partitions: an IPv4 address (IPv4-mapped), or the first
 * v6_bits bits of an IPv6 address, the rest zero, in key. false for other
 * families (Unix sockets). */
bool bd_http_client_key(const struct sockaddr *sa, unsigned v6_bits, uint8_t key[16]);

typedef struct bd_rate_table bd_rate_table;
/* A table with ipv6_prefix at its default. */
bd_rate_table *bd_rate_new(void);
void bd_rate_free(bd_rate_table *t);
/* Count IPv6 clients by their first bits bits (0..128); a change empties
 * the table. */
void bd_rate_set_ipv6_prefix(bd_rate_table *t, unsigned bits);
/* Take a token from the bucket of sa's client (rate per second, as deep as
 * one second's worth) at now_ms. 0: allowed; else the milliseconds until
 * the next token. When the table is full of busy clients (a flood of new
 * addresses), the clients it cannot track share one overflow bucket. */
uint32_t bd_rate_take(bd_rate_table *t, const struct sockaddr *sa, uint32_t rate, uint64_t now_ms);
/* Addresses tracked now. */
size_t bd_rate_size(const bd_rate_table *t);

/* ---- http_encode.c ---- */

typedef enum bd_http_enc {
    BD_ENC_IDENTITY = 0,
    BD_ENC_GZIP,
    BD_ENC_BR,
} bd_http_enc;

/* Whether this build can write brotli (libbrotlienc). */
bool bd_http_have_brotli(void);
/* The coding to answer with for an Accept-Encoding value (NULL: none
 * given): the acceptable one (q > 0, by name or "*") the server prefers,
 * br before gzip when prefer_br, else gzip before br; identity otherwise. */
bd_http_enc bd_http_pick_encoding(const char *accept, bool prefer_br);
/* "gzip", "br", or NULL for identity. */
const char *bd_http_enc_name(bd_http_enc enc);
/* The largest output of bd_http_compress for len bytes with enc. */
size_t bd_http_compress_bound(bd_http_enc enc, size_t len);
/* Compress in (len bytes) with enc (gzip or br) into out (cap bytes, at
 * least the bound): 0 and *out_len, -EINVAL (identity, or brotli not built),
 * -ENOMEM or -EIO. */
int bd_http_compress(bd_http_enc enc, const void *in, size_t len, void *out, size_t cap,
                     size_t *out_len);

/* ---- http_body.c ---- */

/* How many padding lines to add to a body of n real lines: what HIBP adds
 * (docs/upstream.md "Serving the range API"), r a uniform random number. */
size_t bd_http_pad_count(uint32_t n, uint32_t r);
/* Answer bytes in a buffer of the body pool (bodies are some 80 KB: a
 * malloc of that size is an mmap and page faults per answer, so buffers are
 * reused, by the loop's thread only). */
typedef struct bd_http_buf {
    char *p;
    size_t len, cap;
} bd_http_buf;
/* A buffer of at least cap bytes, len 0. 0 or -ENOMEM. */
int bd_http_buf_get(size_t cap, bd_http_buf *b);
/* Back to the pool (an empty b is fine); b is emptied. */
void bd_http_buf_put(bd_http_buf *b);
/* Append b's bytes to out by reference: the pool gets the buffer back once
 * out is done with it. b is emptied, also on failure (-ENOMEM). */
int bd_http_buf_give(bd_http_buf *b, struct evbuffer *out);
/* The body of range set (value, len) of kind with n_pad padding lines, in a
 * buffer from the pool. 0, -EINVAL (not a count range set) or -ENOMEM. */
int bd_http_body(br_range_kind kind, const uint8_t *value, size_t len, size_t n_pad,
                 bd_http_buf *b);
/* The entity tag core of an answer for (kind, prefix20): 32 hex digits and a
 * NUL (docs/upstream.md "Serving the range API"). 0 or -EIO. */
int bd_http_etag_core(br_range_kind kind, uint32_t prefix20, const br_range_answer *a,
                      char out[33]);
/* Does an If-None-Match value match the core (any listed tag, weak or
 * strong, with or without a -gzip / -br suffix, or "*")? */
bool bd_http_inm_matches(const char *inm, const char *core);
/* Seconds since the epoch of an HTTP date (IMF-fixdate), -1 if not one. */
int64_t bd_http_parse_date(const char *s);

/* ---- http_conn.c ---- */

/* One admitted connection of the endpoint. */
typedef struct bd_http_conn bd_http_conn;
/* Watch h->evh's connections: past [http] max_connections (at most half
 * RLIMIT_NOFILE) or max_connections_per_client a new connection is closed
 * at once (http_connections_refused); an admitted one is closed when a
 * whole request (line, headers, body) is not in within header_timeout of
 * the connection's start or of the previous answer written
 * (http_header_timeouts). 0 or -ENOMEM. */
int bd_http_conns_init(bd_http *h);
/* After evhttp_free (which closes the admitted ones). */
void bd_http_conns_fini(bd_http *h);
/* The connection of req; NULL when it is gone or was not tracked. */
bd_http_conn *bd_http_conn_of(bd_http *h, struct evhttp_request *req);
/* req came in whole on c: its deadline ends; the next starts once req's
 * answer is written. */
void bd_http_conn_request(bd_http_conn *c, struct evhttp_request *req);
/* A NUL byte came in on c. */
bool bd_http_conn_bad_bytes(const bd_http_conn *c);
/* End c once the answer being made is written, before any next request is
 * read (evhttp keeps a CONNECT's connection open whatever it says). */
void bd_http_conn_close_after(bd_http_conn *c);
/* An answer made while draining on c: h->unsent (and the server's
 * http_unsent, which the drain's end looks at) count it until it is
 * written or c is gone. */
void bd_http_conn_drain_wait(bd_http_conn *c);

/* ---- http.c ---- */

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
    char *listen;                         /* the [http] listen it serves */
    char *unix_paths[BD_HTTP_MAX_LISTEN]; /* sockets it created (unlinked at stop) */
    bd_accept_pause pauses[BD_HTTP_MAX_LISTEN]; /* its listeners out of descriptors */
    bd_rate_table *rate;
    bd_http_conn *conns, *fresh; /* admitted; accepted, to be admitted */
    uint32_t n_conns;            /* admitted */
    struct event *admit_ev;
    uint8_t part_secret[32]; /* keys the clients' cache partitions */
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
/* A job for req on h (holds the current state); NULL when out of memory. */
bd_http_job *bd_http_job_new(bd_http *h, struct evhttp_request *req);
void bd_http_job_free(bd_http_job *j);

/* ---- http_range.c ---- */

/* GET or HEAD /range/... */
void bd_http_range(bd_http *h, struct evhttp_request *req, const char *rest);
