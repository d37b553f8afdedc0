/* SPDX-License-Identifier: MIT */
/* The local part of URL checks, for a whole batch of request lines at once
 * (docs/architecture.md, "The life of a URL request"): each URL's lookup
 * expressions free of e-mail addresses and their SHA-256s (an offline set
 * hashes as it looks up: url_check.c), then one
 * prefetching Bloom probe over every key of the batch, so that the cache
 * misses of many URLs overlap, as the PW path does for passwords. url_check.c
 * takes each URL's result in order and answers it exactly as it would have
 * alone. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "core/hash.h"
#include "proto/protocol.h"
#include "server_types.h"
#include "url/url_expr.h"

typedef struct bd_url_prep {
    const br_request *req; /* the request it was made for */
    const bd_state *st;    /* the state whose filter answered */
    int r;                 /* br_url_lookup_expressions' result; err when < 0 */
    br_error err;
    br_url_exprs exprs;
    uint8_t (*keys)[BR_SHA256_LEN]; /* exprs.n keys; not set for an offline set */
    bool *maybe;                    /* exprs.n filter answers, when probed */
    bool probed;
    bool taken;
} bd_url_prep;

/* A URL's expressions free of e-mail addresses (url_secret.h) and their
 * keys, into p (keys: room for BR_URL_MAX_LOOKUP_EXPRESSIONS); not probed.
 * With an offline set, no keys: its lookup hashes what it needs. */
void bd_url_prep_one(const bd_state *st, const br_request *req, bd_url_prep *p,
                     uint8_t (*keys)[BR_SHA256_LEN], bool *maybe);

/* Prepare and probe every URL request of a batch (ok[i]: req[i] parsed),
 * when the batch holds two or more and the state's URL filter is loaded
 * and fresh (a stale one, and no filter, are answered one by one). */
void bd_url_prepare_batch(const bd_conn *c, const br_request *req, const bool *ok, size_t n);

/* The prepared result of req, NULL when it has none; the caller owns its
 * exprs from then on (and clears them). */
bd_url_prep *bd_url_prep_take(const br_request *req);

/* After the batch: free what no request took, and wipe the keys. */
void bd_url_prep_release(void);
