/* SPDX-License-Identifier: MIT */
/* The URL verb: canonicalize, form the lookup expressions, probe the URL
 * filter with each, and resolve the maybes with range queries (one per
 * expression, coalesced and cached like passwords). The answer is BLOCKED
 * with the most specific expression found, else UNKNOWN if any maybe could
 * not be resolved, else SAFE; an expression found in the category "allow"
 * (an allow-list, BD_URL_ALLOW_CATEGORY) makes it SAFE whatever else is
 * found. Expressions holding an e-mail address are
 * dropped first (url_secret.h); a URL left with none is ERR secret-class.
 * Neither the URL nor its host is logged. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/br_assert.h"
#include "core/clock.h"
#include "conn.h"
#include "log.h"
#include "offline.h"
#include "url/url_canon.h"
#include "url/url_expr.h"
#include "url/url_secret.h"
#include "url_check.h"
#include "url_prep.h"
#include "core/util.h"

typedef struct url_job {
    bd_waiter *w;
    unsigned pending;    /* lookups not answered yet */
    int best;            /* index of the most specific expression found, -1 */
    const char *unknown; /* reason of an unresolved maybe, NULL */
    bool allowed;        /* an expression is listed as BD_URL_ALLOW_CATEGORY */
    char category[BR_RANGE_CATEGORY_MAX + 1];
    br_url_exprs exprs;
} url_job;

typedef struct url_lookup {
    url_job *job;
    int index;
} url_lookup;

static void job_finish(url_job *j)
{
    bd_conn *c = j->w->conn;
    bd_counters *k = &c->srv->counters;
    if (j->allowed) {
        k->answers[BD_KIND_URL][BD_ANS_ALLOWED]++;
        k->answers[BD_KIND_URL][BD_ANS_PASS]++;
        bd_conn_reply(c, j->w->id, "SAFE");
    } else if (j->best >= 0) {
        k->answers[BD_KIND_URL][BD_ANS_HIT]++;
        bd_conn_reply(c, j->w->id, "BLOCKED %s %s", j->category, j->exprs.expr[j->best]);
    } else if (j->unknown) {
        k->answers[BD_KIND_URL][BD_ANS_UNKNOWN]++;
        k->unknown_by_reason[bd_unknown_reason_of(j->unknown)]++;
        bd_conn_reply(c, j->w->id, "UNKNOWN %s", j->unknown);
    } else {
        k->answers[BD_KIND_URL][BD_ANS_PASS]++;
        bd_conn_reply(c, j->w->id, "SAFE");
    }
    br_url_exprs_clear(&j->exprs);
    bd_waiter_free(j->w);
    free(j);
}

static void job_take(url_job *j, int index, const br_resolve_result *res)
{
    if (res->status == BR_RESOLVE_FOUND) {
        if (strcmp(res->category, BD_URL_ALLOW_CATEGORY) == 0) {
            j->allowed = true; /* overrides every blocklist, whatever is more specific */
            return;
        }
        if (j->best < 0 || index < j->best) {
            j->best = index;
            memcpy(j->category, res->category, sizeof(j->category));
        }
    } else if (res->status == BR_RESOLVE_UNKNOWN && !j->unknown) {
        j->unknown = br_fails_assert(res->reason) ? BR_REASON_ERROR : res->reason;
    }
}

/* Which expressions may be listed (maybe[i]), by the URL filter. A filter
 * past max_filter_age is still used ([urls] when_stale = filter: a warning
 * at most once an hour) or bypassed (when_stale = upstream: every
 * expression goes upstream, up to 30 correlated prefixes); when_stale =
 * unknown is answered before this. */
static void probe_filter(bd_state *st, bd_counters *k, const uint8_t (*keys)[BR_SHA256_LEN],
                         size_t n, bool *maybe, int64_t now)
{
    static int64_t warned_at = INT64_MIN;
    if (bd_state_filter_stale(st, BD_KIND_URL, now)) {
        if (st->cfg->urls.when_stale == BREACHD_WHEN_STALE_UPSTREAM) {
            k->filter[BD_KIND_URL].bypassed++;
            for (size_t i = 0; i < n; i++)
                maybe[i] = true;
            return;
        }
        if (warned_at == INT64_MIN || now - warned_at >= 3600) {
            warned_at = now;
            bd_log(LOG_WARNING,
                   "[urls] filter is older than max_filter_age: still answering from it "
                   "(when_stale = filter); fetch a new one");
        }
    }
    br_urlfilter_maybe_batch(st->urlfilter, keys, n, maybe);
    bd_state_url_recheck(st, maybe, n);
}

static void lookup_done(void *ctx, const br_resolve_result *res)
{
    url_lookup *l = ctx;
    url_job *j = l->job;
    job_take(j, l->index, res);
    free(l);
    if (--j->pending == 0)
        job_finish(j);
}

/* Answer a request whose URL could not be looked up: ERR (refused by
 * canonicalization, secret-class), UNKNOWN without a usable filter, ERR busy.
 * False when it goes on to the filter. */
static bool url_refused(bd_conn *c, const br_request *req, const bd_url_prep *p)
{
    bd_server *srv = c->srv;
    bd_state *st = srv->state;
    if (p->r < 0) {
        if (p->r == -EPERM)
            bd_conn_reply_error(c, req->id, BR_PERR_SECRET_CLASS,
                                "e-mail addresses are never looked up");
        else if (p->r == -ENOMEM)
            bd_conn_reply_error(c, req->id, BR_PERR_BUSY, "out of memory");
        else /* the reasons of br_url_canonicalize never contain the URL */
            bd_conn_reply_error(c, req->id, BR_PERR_BAD_REQUEST,
                                p->err.text[0] ? p->err.text : "invalid URL");
        return true;
    }
    const char *unknown = NULL;
    if (!st->urlfilter && !st->filter[BD_KIND_URL])
        unknown = "UNKNOWN filter-unavailable";
    else if (st->cfg->urls.when_stale == BREACHD_WHEN_STALE_UNKNOWN &&
             bd_state_filter_stale(st, BD_KIND_URL, br_clock_now_real()))
        unknown = "UNKNOWN filter-stale";
    if (unknown) {
        srv->counters.answers[BD_KIND_URL][BD_ANS_UNKNOWN]++;
        srv->counters.unknown_by_reason[bd_unknown_reason_of(unknown + strlen("UNKNOWN "))]++;
        bd_conn_reply_text(c, req->id, unknown);
        return true;
    }
    const char *busy = bd_conn_admit(c);
    if (busy) {
        bd_conn_reply_error(c, req->id, BR_PERR_BUSY, busy);
        return true;
    }
    return false;
}

/* The range lookups of a URL with maybes: a job that answers once all are
 * in. Takes p's expressions. */
static void url_resolve(bd_conn *c, const br_request *req, bd_url_prep *p)
{
    bd_server *srv = c->srv;
    bd_state *st = srv->state;
    /* Set field by field: most of a job is its expressions' arrays, of
     * which only the first exprs.n entries are read. */
    url_job *j = malloc(sizeof(*j));
    bd_waiter *w = j ? bd_waiter_new(c, req) : NULL;
    if (!w) {
        free(j);
        br_url_exprs_clear(&p->exprs);
        bd_conn_reply_error(c, req->id, BR_PERR_BUSY, "out of memory");
        return;
    }
    j->w = w;
    j->best = -1;
    j->unknown = NULL;
    j->allowed = false;
    j->category[0] = '\0';
    /* the block is j's now */
    j->exprs.n = p->exprs.n;
    j->exprs.block = p->exprs.block;
    j->exprs.block_size = p->exprs.block_size;
    memcpy(j->exprs.expr, p->exprs.expr, p->exprs.n * sizeof(p->exprs.expr[0]));
    memcpy(j->exprs.len, p->exprs.len, p->exprs.n * sizeof(p->exprs.len[0]));
    p->exprs.n = 0;
    p->exprs.block = NULL;
    /* One reference for this loop, so that answers made synchronously
     * cannot finish the job before every lookup is issued. */
    j->pending = 1;
    uint32_t part = bd_state_partition(st, c->uid);
    for (size_t i = 0; i < j->exprs.n; i++) {
        if (!p->maybe[i])
            continue;
        url_lookup *l = malloc(sizeof(*l));
        br_resolve_result res;
        if (!l) {
            j->unknown = BR_REASON_ERROR;
            continue;
        }
        l->job = j;
        l->index = (int)i;
        int r = br_resolver_resolve_lane(st->resolver, part, BR_RANGE_URL_SHA256, p->keys[i],
                                         c->lane, lookup_done, l, &res);
        if (r == 0) {
            j->pending++;
            continue;
        }
        free(l);
        if (r < 0) {
            memset(&res, 0, sizeof(res));
            res.status = BR_RESOLVE_UNKNOWN;
            res.reason = BR_REASON_ERROR;
        }
        job_take(j, (int)i, &res);
    }
    if (--j->pending == 0)
        job_finish(j);
}

/* An offline [urls] filter changed or truncated in place: UNKNOWN
 * filter-damaged, never the range API (docs/privacy.md, "What an offline
 * host sends"). */
static void url_offline_damaged(bd_conn *c, const br_request *req, bd_url_prep *p)
{
    c->srv->counters.answers[BD_KIND_URL][BD_ANS_UNKNOWN]++;
    c->srv->counters.unknown_by_reason[BD_UNK_FILTER_DAMAGED]++;
    bd_conn_reply_text(c, req->id, "UNKNOWN " BD_REASON_FILTER_DAMAGED);
    br_url_exprs_clear(&p->exprs);
}

/* An offline [urls] filter answers on the host: the most specific
 * expression it holds, BLOCKED with its category, or SAFE (also when an
 * expression is in the allow category); no range query, decoy or cache
 * entry (docs/privacy.md), also past max_filter_age (when_stale = upstream
 * is taken as filter: an offline filter never sends a check; unknown is
 * answered before this) and once damaged (UNKNOWN filter-damaged). */
static void url_offline(bd_conn *c, const br_request *req, bd_url_prep *p)
{
    bd_state *st = c->srv->state;
    bd_counters *k = &c->srv->counters;
    if (!bd_state_intact(st, BD_KIND_URL)) {
        url_offline_damaged(c, req, p);
        return;
    }
    const br_pwfilter *set = st->filter[BD_KIND_URL];
    br_url_probe probe[BR_URL_MAX_LOOKUP_EXPRESSIONS];
    bool hit[BR_URL_MAX_LOOKUP_EXPRESSIONS];
    uint8_t code[BR_URL_MAX_LOOKUP_EXPRESSIONS];
    for (size_t i = 0; i < p->exprs.n; i++)
        br_url_probe_init(&probe[i], p->exprs.expr[i], p->exprs.len[i]);
    int r = br_pwfilter_lookup_codes(set, probe, p->exprs.n, hit, code);
    br_wipe(probe, p->exprs.n * sizeof(probe[0])); /* the expressions' hashes */
    if (r < 0) {
        url_offline_damaged(c, req, p);
        return;
    }
    const char *best_category = NULL;
    size_t best = 0;
    bool found = false, allowed = false;
    for (size_t i = 0; i < p->exprs.n; i++) { /* most specific first */
        if (hit[i] && code[i] == 0)
            allowed = true; /* an allow-list entry overrides every blocklist */
        else if (hit[i] && !best_category) {
            best_category = br_category_name(br_pwfilter_categories(set), code[i]);
            best = i;
        }
        found = found || hit[i];
    }
    if (found)
        k->filter[BD_KIND_URL].maybe++;
    else
        k->filter[BD_KIND_URL].no++;
    if (best_category && !allowed) {
        k->answers[BD_KIND_URL][BD_ANS_HIT]++;
        bd_conn_reply(c, req->id, "BLOCKED %s %s", best_category, p->exprs.expr[best]);
        br_url_exprs_clear(&p->exprs);
        return;
    }
    k->answers[BD_KIND_URL][BD_ANS_ALLOWED] += allowed;
    k->answers[BD_KIND_URL][BD_ANS_PASS]++;
    bd_conn_reply_text(c, req->id, "SAFE");
    br_url_exprs_clear(&p->exprs);
}

void bd_url_check(bd_conn *c, const br_request *req)
{
    bd_server *srv = c->srv;
    bd_state *st = srv->state;
    bd_counters *k = &srv->counters;
    uint8_t keys[BR_URL_MAX_LOOKUP_EXPRESSIONS][BR_SHA256_LEN];
    bool maybe[BR_URL_MAX_LOOKUP_EXPRESSIONS];
    bd_url_prep local;
    /* Prepared with the batch (url_prep.h), or here alone. */
    bd_url_prep *p = bd_url_prep_take(req);
    if (p && p->st != st) {
        br_url_exprs_clear(&p->exprs);
        p = NULL;
    }
    if (!p) {
        p = &local;
        bd_url_prep_one(st, req, p, keys, maybe);
    }
    /* The keys of a batch's prep are wiped with the batch's, all at once
     * (bd_url_prep_release); only a prep made here has its own. */
    size_t n = p->exprs.n, n_maybe = 0, n_own = p == &local ? n : 0;
    if (url_refused(c, req, p)) {
        br_url_exprs_clear(&p->exprs);
        br_wipe(p->keys, n_own * sizeof(p->keys[0]));
        return;
    }
    if (st->filter[BD_KIND_URL]) {
        url_offline(c, req, p);
        br_wipe(p->keys, n_own * sizeof(p->keys[0]));
        return;
    }
    if (!p->probed)
        probe_filter(st, k, (const uint8_t(*)[BR_SHA256_LEN])p->keys, n, p->maybe,
                     br_clock_now_real());
    for (size_t i = 0; i < n; i++)
        n_maybe += p->maybe[i];
    if (n_maybe == 0) {
        k->filter[BD_KIND_URL].no++;
        k->answers[BD_KIND_URL][BD_ANS_PASS]++;
        bd_conn_reply_text(c, req->id, "SAFE");
        br_url_exprs_clear(&p->exprs);
    } else if (bd_upstream_none(st->cfg->urls.upstream)) {
        k->filter[BD_KIND_URL].maybe++;
        k->answers[BD_KIND_URL][BD_ANS_UNKNOWN]++;
        bd_conn_reply_text(c, req->id, "UNKNOWN no-upstream");
        br_url_exprs_clear(&p->exprs);
    } else {
        k->filter[BD_KIND_URL].maybe++;
        url_resolve(c, req, p);
    }
    br_wipe(p->keys, n_own * sizeof(p->keys[0]));
}
