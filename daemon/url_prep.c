/* SPDX-License-Identifier: MIT */
/* URL checks of one batch of request lines: see url_prep.h. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "offline.h"
#include "url_prep.h"
#include "url/url_secret.h"
#include "core/clock.h"
#include "core/util.h"

/* The loop has one thread: one batch at a time. */
static bd_url_prep preps[BD_BATCH];
static size_t n_preps, next_prep, n_keys;
static uint8_t batch_keys[BD_BATCH * BR_URL_MAX_LOOKUP_EXPRESSIONS][BR_SHA256_LEN];
static bool batch_maybe[BD_BATCH * BR_URL_MAX_LOOKUP_EXPRESSIONS];

/* The SHA-256 of p's expressions into p->keys, for a Bloom or range
 * filter; an offline set hashes what it needs as it looks them up
 * (url_check.c, pwfilter.h's probes), so that an unlisted URL usually
 * costs no SHA-256 (docs/filter-format.md, "Key encodings"). */
static int hash_exprs(const bd_state *st, bd_url_prep *p)
{
    const br_url_exprs *x = &p->exprs;
    if (!st->urlfilter && st->filter[BD_KIND_URL])
        return 0;
    return br_sha256_many((const void *const *)x->expr, x->len, x->n, p->keys);
}

void bd_url_prep_one(const bd_state *st, const br_request *req, bd_url_prep *p,
                     uint8_t (*keys)[BR_SHA256_LEN], bool *maybe)
{
    /* Field by field: the expressions' arrays (most of *p) need no
     * clearing, br_url_lookup_expressions sets their count. */
    p->req = req;
    p->st = st;
    p->err.text[0] = '\0';
    p->keys = keys;
    p->maybe = maybe;
    p->probed = p->taken = false;
    unsigned labels = st->urlfilter             ? br_urlfilter_lookup_labels(st->urlfilter)
                      : st->filter[BD_KIND_URL] ? bd_offline_url_labels(st->filter[BD_KIND_URL])
                                                : BR_URL_SB_HOST_COMPONENTS;
    p->r = br_url_lookup_expressions(req->arg, req->arg_len, labels, &p->exprs, NULL, &p->err);
    if (p->r == 0 && hash_exprs(st, p) < 0) {
        br_url_exprs_clear(&p->exprs);
        p->r = -ENOMEM;
    }
}

void bd_url_prepare_batch(const bd_conn *c, const br_request *req, const bool *ok, size_t n)
{
    const bd_server *srv = c->srv;
    const bd_state *st = srv->state;
    n_preps = next_prep = n_keys = 0;
    size_t urls = 0;
    for (size_t i = 0; i < n; i++)
        urls += ok[i] && req[i].verb == BR_VERB_URL;
    if (urls < 2 || srv->draining || !st->urlfilter ||
        bd_state_filter_stale(st, BD_KIND_URL, br_clock_now_real()))
        return;
    for (size_t i = 0; i < n; i++) {
        if (!ok[i] || req[i].verb != BR_VERB_URL)
            continue;
        bd_url_prep *p = &preps[n_preps++];
        bd_url_prep_one(st, &req[i], p, batch_keys + n_keys, batch_maybe + n_keys);
        if (p->r == 0)
            n_keys += p->exprs.n;
    }
    br_urlfilter_maybe_batch(st->urlfilter, (const uint8_t(*)[BR_SHA256_LEN])batch_keys, n_keys,
                             batch_maybe);
    bd_state_url_recheck(srv->state, batch_maybe, n_keys);
    for (size_t i = 0; i < n_preps; i++)
        preps[i].probed = preps[i].r == 0;
}

bd_url_prep *bd_url_prep_take(const br_request *req)
{
    /* Requests are dispatched in batch order. */
    for (size_t i = next_prep; i < n_preps; i++) {
        if (preps[i].req == req && !preps[i].taken) {
            next_prep = i + 1;
            preps[i].taken = true;
            return &preps[i];
        }
    }
    return NULL;
}

void bd_url_prep_release(void)
{
    for (size_t i = 0; i < n_preps; i++)
        if (!preps[i].taken)
            br_url_exprs_clear(&preps[i].exprs);
    br_wipe(batch_keys, n_keys * sizeof(batch_keys[0]));
    n_preps = next_prep = n_keys = 0;
}
