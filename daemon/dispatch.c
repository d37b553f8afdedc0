/* SPDX-License-Identifier: MIT */
/* What each verb does. Local answers (a filter's "definitely not", a fresh
 * cache hit) are written at once, even while a slower upstream answer for an
 * earlier request on the same connection is pending: responses carry ids and
 * may come out of order. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "br_assert.h"
#include "config.h"
#include "log.h"
#include "server.h"
#include "url_check.h"

static void pw_answer(bd_conn *c, const char *id, const br_resolve_result *res)
{
    bd_counters *k = &c->srv->counters;
    switch (res->status) {
    case BR_RESOLVE_FOUND:
        k->pw_pwned++;
        bd_conn_reply(c, id, "PWNED %u", res->count);
        break;
    case BR_RESOLVE_NOT_FOUND:
        k->pw_clean++; /* a filter false positive */
        bd_conn_reply_text(c, id, "CLEAN");
        break;
    default:
        k->pw_unknown++;
        bd_conn_reply(c, id, "UNKNOWN %s",
                      br_fails_assert(res->reason) ? BR_REASON_ERROR : res->reason);
        break;
    }
}

static void pw_resolved(void *ctx, const br_resolve_result *res)
{
    bd_waiter *w = ctx;
    pw_answer(w->conn, w->id, res);
    bd_waiter_free(w);
}

/* hint: the filter's answer when the batch already probed it (0 no,
 * 1 maybe), or -1 to probe here. */
static void handle_pw(bd_conn *c, br_request *req, int hint)
{
    bd_server *srv = c->srv;
    bd_state *st = srv->state;
    bd_counters *k = &srv->counters;
    if (st->pwfilter) {
        if (hint < 0 && bd_state_pw_filter_stale(st, (int64_t)time(NULL))) {
            k->pw_filter_bypassed++;
        } else if (hint == 0 || (hint < 0 && !br_pwfilter_maybe(st->pwfilter, req->sha1))) {
            k->pw_filter_no++;
            k->pw_clean++;
            bd_conn_reply_text(c, req->id, "CLEAN");
            return;
        } else {
            k->pw_filter_maybe++;
        }
    }
    if (c->inflight >= srv->limits.max_inflight) {
        bd_conn_reply_error(c, req->id, BR_PERR_BUSY, "too many requests in flight on this connection");
        return;
    }
    bd_waiter *w = bd_waiter_new(c, req);
    if (!w) {
        bd_conn_reply_error(c, req->id, BR_PERR_BUSY, "out of memory");
        return;
    }
    br_resolve_result res;
    int r = br_resolver_resolve(st->resolver, bd_state_partition(st, c->uid), BR_RANGE_PASSWORD_SHA1,
                                req->sha1, pw_resolved, w, &res);
    if (r == 0)
        return; /* answered later, from the loop */
    if (r < 0) {
        memset(&res, 0, sizeof(res));
        res.status = BR_RESOLVE_UNKNOWN;
        res.reason = BR_REASON_ERROR;
    }
    pw_answer(c, req->id, &res);
    bd_waiter_free(w);
}

static void handle_reload(bd_conn *c, br_request *req)
{
    if (!breachd_config_is_admin(c->srv->state->cfg, c->uid)) {
        bd_conn_reply_error(c, req->id, BR_PERR_FORBIDDEN, "RELOAD is for admin_users");
        return;
    }
    bd_waiter *w = bd_waiter_new(c, req);
    if (!w) {
        bd_conn_reply_error(c, req->id, BR_PERR_BUSY, "out of memory");
        return;
    }
    bd_server_reload(c->srv, w);
}

static void dispatch_one(bd_conn *c, br_request *req, bool ok, const br_proto_error *e, int hint)
{
    bd_server *srv = c->srv;
    if (ok)
        srv->counters.requests[req->verb]++;
    if (srv->draining) {
        bd_conn_reply_error(c, req->id, BR_PERR_SHUTTING_DOWN, "breachd is stopping");
        return;
    }
    if (!ok) {
        bd_conn_reply_error(c, req->id, e->code, e->text);
        return;
    }
    switch (req->verb) {
    case BR_VERB_PING:
        bd_conn_reply_text(c, req->id, "PONG");
        break;
    case BR_VERB_VERSION:
        bd_conn_reply(c, req->id, "VERSION breachd %s protocol %d", BREACHD_VERSION, BR_PROTO_VERSION);
        break;
    case BR_VERB_PW:
        handle_pw(c, req, hint);
        break;
    case BR_VERB_URL:
        bd_url_check(c, req);
        break;
    case BR_VERB_STATS: {
        /* Counters tell who looks what up when (a cache hit count moving
         * after another user's check): not for every peer. */
        if (!breachd_config_may_stats(srv->state->cfg, c->uid)) {
            bd_conn_reply_error(c, req->id, BR_PERR_FORBIDDEN, "STATS is for admin_users and stats_users");
            break;
        }
        char buf[4096];
        bd_stats_render(srv, buf, sizeof(buf));
        bd_conn_reply(c, req->id, "STATS %s", buf);
        break;
    }
    case BR_VERB_RELOAD:
        handle_reload(c, req);
        break;
    default: /* the parser accepted a verb without a handler here */
        (void)br_fails_assert(!"a verb without a handler");
        bd_conn_reply_error(c, req->id, BR_PERR_UNKNOWN_VERB, "verb not handled");
        break;
    }
}

void bd_dispatch_batch(bd_conn *c, char (*lines)[BD_LINE_BUF], const size_t *lens, size_t n)
{
    bd_server *srv = c->srv;
    bd_state *st = srv->state;
    br_request req[BD_BATCH];
    br_proto_error e[BD_BATCH];
    bool ok[BD_BATCH];
    int hint[BD_BATCH];
    uint64_t keys[BD_BATCH];
    size_t key_of[BD_BATCH], nk = 0;
    for (size_t i = 0; i < n; i++) {
        ok[i] = br_request_parse(lines[i], lens[i], &req[i], &e[i]);
        hint[i] = -1;
    }
    /* Probe the filter for every PW of the batch at once, so that their
     * cache misses overlap instead of being waited for one by one. */
    if (st->pwfilter && !srv->draining && !bd_state_pw_filter_stale(st, (int64_t)time(NULL))) {
        for (size_t i = 0; i < n; i++)
            if (ok[i] && req[i].verb == BR_VERB_PW) {
                key_of[nk] = i;
                keys[nk++] = br_hash_key64(req[i].sha1);
            }
        if (nk > 1) {
            bool maybe[BD_BATCH];
            br_pwfilter_contains_batch(st->pwfilter, keys, nk, maybe);
            for (size_t j = 0; j < nk; j++)
                hint[key_of[j]] = maybe[j];
        }
    }
    for (size_t i = 0; i < n; i++)
        dispatch_one(c, &req[i], ok[i], &e[i], hint[i]);
    OPENSSL_cleanse(req, sizeof(req[0]) * n);
    OPENSSL_cleanse(keys, sizeof(keys[0]) * nk);
}
