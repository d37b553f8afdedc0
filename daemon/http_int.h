/* SPDX-License-Identifier: MIT */
/* Internal to the range endpoint (its contract is http.h): what its files
 * share. http.c: listeners, the request gate (networks, rate, route,
 * method), the pending requests and the access log; http_range.c: the
 * /range/ answers; http_body.c: bodies, padding, validators and the
 * conditional checks; http_encode.c: Accept-Encoding, gzip and brotli;
 * http_rate.c: the per-address token buckets. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "accept_pause.h"
#include "http.h"
#include "range.h"
#include "resolver.h"

struct evhttp;
struct evhttp_request;
struct evhttp_bound_socket;
struct evbuffer;
struct bd_server;
struct bd_state;

#define BD_HTTP_MAX_LISTEN 16

/* ---- http_rate.c ---- */

typedef struct bd_rate_table bd_rate_table;
bd_rate_table *bd_rate_new(void);
void bd_rate_free(bd_rate_table *t);
/* Take a token from addr's bucket (rate per second, as deep as one second's
 * worth) at now_ms. 0: allowed; else the milliseconds until the next token.
 * A full table (a flood of new addresses) lets new addresses through
 * untracked rather than refusing them. */
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
};

struct bd_http {
    struct bd_server *srv;
    struct evhttp *evh;
    char *listen;                         /* the [http] listen it serves */
    char *unix_paths[BD_HTTP_MAX_LISTEN]; /* sockets it created (unlinked at stop) */
    bd_accept_pause pauses[BD_HTTP_MAX_LISTEN]; /* its listeners out of descriptors */
    bd_rate_table *rate;
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
