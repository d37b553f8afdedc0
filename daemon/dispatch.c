/* SPDX-License-Identifier: MIT */
/* What each verb does: the verb table, and a batch of request lines
 * handed by server.c through it. Local answers (a filter's "definitely
 * not", a fresh cache hit) are written at once, even while a slower
 * upstream answer for an earlier request on the same connection is
 * pending: responses carry ids and may come out of order. */
#include <stdio.h>
#include <string.h>

#include "core/br_assert.h"
#include "config.h"
#include "conn.h"
#include "dispatch.h"
#include "pw_check.h"
#include "banned_verb.h"
#include "similar_verb.h"
#include "stats.h"
#include "url_check.h"
#include "url_prep.h"
#include "core/util.h"

/* Who may use a verb (breachd.conf(5), [daemon] admin_users, stats_users);
 * every peer allowed to connect may use the others. */
typedef enum verb_access {
    FOR_ANYONE,
    FOR_STATS_USERS, /* admin_users and stats_users */
    FOR_ADMIN_USERS,
} verb_access;

/* How a verb is handled: one row per verb of BR_VERBS (protocol.h). */
typedef struct verb_def {
    /* Answer req, now or later from the loop, through conn.h. hint: what
     * prepare left for req (PW, NT: the filter's answer), else -1. */
    void (*handle)(bd_conn *c, const br_request *req, int hint);
    verb_access access;
    /* NULL, or: before a batch's requests are handled one by one, look at
     * every request of this verb at once (ok[i]: req[i] parsed), so that
     * their memory accesses overlap; may set hint[i]. */
    void (*prepare)(bd_conn *c, br_verb verb, const br_request *req, const bool *ok, size_t n,
                    int *hint);
    /* NULL, or: after the batch, drop what prepare kept. */
    void (*release)(void);
} verb_def;

static void handle_similar(bd_conn *c, const br_request *req, int hint)
{
    (void)hint;
    bd_similar_check(c, req);
}

static void handle_banned(bd_conn *c, const br_request *req, int hint)
{
    (void)hint;
    bd_banned_terms(c, req);
}

static void handle_ping(bd_conn *c, const br_request *req, int hint)
{
    (void)hint;
    bd_conn_reply_text(c, req->id, "PONG");
}

static void handle_version(bd_conn *c, const br_request *req, int hint)
{
    (void)hint;
    bd_conn_reply(c, req->id, "VERSION breachd %s protocol %d", BREACHD_VERSION, BR_PROTO_VERSION);
}

static void handle_url(bd_conn *c, const br_request *req, int hint)
{
    (void)hint;
    bd_url_check(c, req);
}

static void prepare_url(bd_conn *c, br_verb verb, const br_request *req, const bool *ok, size_t n,
                        int *hint)
{
    (void)verb;
    (void)hint;
    bd_url_prepare_batch(c, req, ok, n);
}

/* Counters tell who looks what up when (a cache hit count moving after
 * another user's check): STATS is not for every peer. */
static void handle_stats(bd_conn *c, const br_request *req, int hint)
{
    (void)hint;
    char buf[BR_PROTO_MAX_LINE - 64]; /* the line: "ID STATS " and this */
    bd_stats_render(c->srv, buf, sizeof(buf));
    bd_conn_reply(c, req->id, "STATS %s", buf);
}

static void handle_reload(bd_conn *c, const br_request *req, int hint)
{
    (void)hint;
    bd_waiter *w = bd_waiter_new(c, req);
    if (!w) {
        bd_conn_reply_error(c, req->id, BR_PERR_BUSY, "out of memory");
        return;
    }
    c->srv->reload(c->srv, w);
}

static void handle_lane(bd_conn *c, const br_request *req, int hint)
{
    (void)hint;
    c->lane = req->lane; /* for the requests read after this one */
    bd_conn_reply_text(c, req->id, "OK");
}

/* The verb table. A verb of BR_VERBS without its VERB_ row here does not
 * compile (VERB_<NAME> undeclared): no verb goes unhandled. */
/* clang-format off */
#define VERB_PING {.handle = handle_ping}
#define VERB_VERSION {.handle = handle_version}
#define VERB_PW {.handle = bd_pw_check, .prepare = bd_pw_prepare_batch}
#define VERB_NT {.handle = bd_pw_check, .prepare = bd_pw_prepare_batch}
#define VERB_URL {.handle = handle_url, .prepare = prepare_url, .release = bd_url_prep_release}
#define VERB_STATS {.handle = handle_stats, .access = FOR_STATS_USERS}
#define VERB_RELOAD {.handle = handle_reload, .access = FOR_ADMIN_USERS}
#define VERB_LANE {.handle = handle_lane}
#define VERB_SIMILAR {.handle = handle_similar}
#define VERB_BANNED {.handle = handle_banned}
/* clang-format on */

static const verb_def verbs[BR_VERB_COUNT_] = {
#define VERB_ROW_(name, arg, missing, bad) [BR_VERB_##name] = VERB_##name,
    BR_VERBS(VERB_ROW_)
#undef VERB_ROW_
};

/* False, with ERR forbidden answered, when c's peer may not use verb. */
static bool allowed(bd_conn *c, const br_request *req, verb_access access)
{
    const breachd_config *cfg = c->srv->state->cfg;
    const char *who = NULL;
    if (access == FOR_STATS_USERS && !breachd_config_may_stats(cfg, c->uid))
        who = "admin_users and stats_users";
    else if (access == FOR_ADMIN_USERS && !breachd_config_is_admin(cfg, c->uid))
        who = "admin_users";
    if (!who)
        return true;
    char text[96];
    snprintf(text, sizeof(text), "%s is for %s", br_verb_name(req->verb), who);
    bd_conn_reply_error(c, req->id, BR_PERR_FORBIDDEN, text);
    return false;
}

static void dispatch_one(bd_conn *c, const br_request *req, bool ok, const br_proto_error *e,
                         int hint)
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
    const verb_def *v = &verbs[req->verb];
    if (br_fails_assert(v->handle)) { /* a row left empty */
        bd_conn_reply_error(c, req->id, BR_PERR_UNKNOWN_VERB, "verb not handled");
        return;
    }
    if (v->access != FOR_ANYONE && !allowed(c, req, v->access))
        return;
    v->handle(c, req, hint);
}

void bd_dispatch_batch(bd_conn *c, const char *const *lines, const size_t *lens, size_t n)
{
    br_request req[BD_BATCH];
    br_proto_error e[BD_BATCH];
    bool ok[BD_BATCH];
    int hint[BD_BATCH];
    if (n == 0 || br_fails_assert(n <= BD_BATCH))
        return;
    bd_state_batch_begin();
    _Static_assert(BR_VERB_COUNT_ <= 32, "one bit per verb");
    unsigned present = 0; /* bit v: the batch holds a request of verb v */
    for (size_t i = 0; i < n; i++) {
        ok[i] = br_request_parse(lines[i], lens[i], &req[i], &e[i]);
        hint[i] = -1;
        present |= ok[i] ? 1u << req[i].verb : 0;
    }
    for (int v = 0; v < BR_VERB_COUNT_; v++)
        if (verbs[v].prepare && (present >> v & 1))
            verbs[v].prepare(c, (br_verb)v, req, ok, n, hint);
    for (size_t i = 0; i < n; i++)
        dispatch_one(c, &req[i], ok[i], &e[i], hint[i]);
    for (int v = 0; v < BR_VERB_COUNT_; v++)
        if (verbs[v].release && (present >> v & 1))
            verbs[v].release();
    br_wipe(req, sizeof(req[0]) * n);
}
