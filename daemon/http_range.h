/* SPDX-License-Identifier: MIT */
/* The answers of the range endpoint (http_range.c): GET or HEAD
 * /range/{prefix}[?mode=ntlm], and its parts that the unit tests reach
 * (tests/unit/test_http_parts.c): content codings, bodies with HIBP's
 * padding, the body pool, entity tags and the conditional checks. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "range/range.h"
#include "range/resolver.h"

struct evbuffer;
struct evhttp_request;

/* GET or HEAD /range/... */
void bd_http_range(bd_http *h, struct evhttp_request *req, const char *rest);

/* ---- content codings ---- */

typedef enum bd_http_enc {
    BD_ENC_IDENTITY = 0,
    BD_ENC_GZIP,
    BD_ENC_BR,
} bd_http_enc;

/* The coding to answer with for an Accept-Encoding value (NULL: none
 * given): the acceptable one (q > 0, by name or "*") the server prefers,
 * br before gzip when prefer_br, else gzip before br; identity otherwise. */
bd_http_enc bd_http_pick_encoding(const char *accept, bool prefer_br);
/* "gzip", "br", or NULL for identity. */
const char *bd_http_enc_name(bd_http_enc enc);

/* ---- bodies and validators ---- */

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
/* The entity tag core of an answer for (kind, prefix20): 32 hex digits and a
 * NUL (docs/upstream.md "Serving the range API"). 0 or -EIO. */
int bd_http_etag_core(br_range_kind kind, uint32_t prefix20, const br_range_answer *a,
                      char out[33]);
/* Does an If-None-Match value match the core (any listed tag, weak or
 * strong, with or without a -gzip / -br suffix, or "*")? */
bool bd_http_inm_matches(const char *inm, const char *core);
/* Seconds since the epoch of an HTTP date (IMF-fixdate), -1 if not one. */
int64_t bd_http_parse_date(const char *s);
