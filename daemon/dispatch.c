/* SPDX-License-Identifier: MIT */
/* What each verb does. Local answers (a filter's "definitely not", a fresh
 * cache hit) are written at once, even while a slower upstream answer for an
 * earlier request on the same connection is pending: responses carry ids and
 * may come out of order. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

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
        bd_conn_reply(c, id, "UNKNOWN %s", res->reason ? res->reason : BR_REASON_ERROR);
        break;
    }
}

static void pw_resolved(void *ctx, const br_resolve_result *res)
{
    bd_waiter *w = ctx;
    pw_answer(w->conn, w->id, res);
    bd_waiter_free(w);
}

static void handle_pw(bd_conn *c, br_request *req)
{
    bd_server *srv = c->srv;
    bd_state *st = srv->state;
    bd_counters *k = &srv->counters;
    if (st->pwfilter) {
        if (bd_state_pw_filter_stale(st, (int64_t)time(NULL))) {
            k->pw_filter_bypassed++;
        } else if (!br_pwfilter_maybe(st->pwfilter, req->sha1)) {
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
    int r = br_resolver_resolve(st->resolver, BR_RANGE_PASSWORD_SHA1, req->sha1, pw_resolved, w, &res);
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

void bd_dispatch(bd_conn *c, const char *line, size_t len)
{
    bd_server *srv = c->srv;
    br_request req;
    br_proto_error e;
    bool ok = br_request_parse(line, len, &req, &e);
    if (ok)
        srv->counters.requests[req.verb]++;
    if (srv->draining) {
        bd_conn_reply_error(c, req.id, BR_PERR_SHUTTING_DOWN, "breachd is stopping");
        goto out;
    }
    if (!ok) {
        bd_conn_reply_error(c, req.id, e.code, e.text);
        goto out;
    }
    switch (req.verb) {
    case BR_VERB_PING:
        bd_conn_reply_text(c, req.id, "PONG");
        break;
    case BR_VERB_VERSION:
        bd_conn_reply(c, req.id, "VERSION breachd %s protocol %d", BREACHD_VERSION, BR_PROTO_VERSION);
        break;
    case BR_VERB_PW:
        handle_pw(c, &req);
        break;
    case BR_VERB_URL:
        bd_url_check(c, &req);
        break;
    case BR_VERB_STATS: {
        char buf[4096];
        bd_stats_render(srv, buf, sizeof(buf));
        bd_conn_reply(c, req.id, "STATS %s", buf);
        break;
    }
    case BR_VERB_RELOAD:
        handle_reload(c, &req);
        break;
    default:
        break;
    }
out:
    OPENSSL_cleanse(&req, sizeof(req));
}
