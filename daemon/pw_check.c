/* SPDX-License-Identifier: MIT */
/* The PW and NT verbs: a password hash (SHA-1, NT) checked against its
 * filter, then, for a maybe, its range (through the resolver: cached,
 * coalesced, one query per prefix). See pw_check.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/br_assert.h"
#include "core/clock.h"
#include "conn.h"
#include "offline.h"
#include "pw_check.h"
#include "core/util.h"

/* PW (SHA-1, [passwords]) and NT (NT hashes, [ntlm]) differ only in their
 * row of the kinds table (kinds.h) and their counters. */
typedef struct pw_kind {
    bd_kind kind;
    uint64_t *answers;         /* bd_counters.answers[kind] */
    bd_filter_counts *counted; /* bd_counters.filter[kind] */
} pw_kind;

static pw_kind kind_of(bd_counters *k, br_verb verb)
{
    bd_kind kind = bd_kind_of_verb(verb);
    return (pw_kind){kind, k->answers[kind], &k->filter[kind]};
}

/* The filter of a PW or NT request, NULL when none; *stale when past its
 * max_filter_age (then bypassed, unless it is offline). */
static br_pwfilter *filter_of(const bd_state *st, br_verb verb, bool *stale)
{
    bd_kind kind = bd_kind_of_verb(verb);
    *stale = bd_state_filter_stale(st, kind, br_clock_now_real());
    return st->filter[kind];
}

static void pw_answer(bd_conn *c, const char *id, br_verb verb, const br_resolve_result *res)
{
    pw_kind kd = kind_of(&c->srv->counters, verb);
    switch (res->status) {
    case BR_RESOLVE_FOUND:
        kd.answers[BD_ANS_HIT]++;
        bd_conn_reply(c, id, "PWNED %u", res->count);
        break;
    case BR_RESOLVE_NOT_FOUND:
        kd.answers[BD_ANS_PASS]++; /* a filter false positive */
        bd_conn_reply_text(c, id, "CLEAN");
        break;
    default: {
        const char *reason = br_fails_assert(res->reason) ? BR_REASON_ERROR : res->reason;
        kd.answers[BD_ANS_UNKNOWN]++;
        c->srv->counters.unknown_by_reason[bd_unknown_reason_of(reason)]++;
        bd_conn_reply(c, id, "UNKNOWN %s", reason);
        break;
    }
    }
}

static void pw_resolved(void *ctx, const br_resolve_result *res)
{
    bd_waiter *w = ctx;
    pw_answer(w->conn, w->id, w->verb, res);
    bd_waiter_free(w);
}

/* An offline filter answers every check on the host: no range query, decoy
 * or cache entry, whatever its state (docs/privacy.md, "What an offline
 * host sends"). Past max_filter_age it still answers (filter_stale, the
 * warning of housekeeping.c); changed or truncated in place, UNKNOWN
 * filter-damaged. */
static void pw_offline(bd_conn *c, const br_request *req, br_pwfilter *filter, const uint8_t *hash)
{
    pw_kind kd = kind_of(&c->srv->counters, req->verb);
    uint64_t count = 0;
    /* a hit of the batch's probe (hint 1) is looked up again for its count
     * (hits are the rare case); its no (hint 0) was answered before */
    int r = -EIO;
    if (bd_state_intact(c->srv->state, kd.kind))
        r = br_pwfilter_lookup_count(filter, hash, &count);
    if (r < 0) {
        kd.answers[BD_ANS_UNKNOWN]++;
        c->srv->counters.unknown_by_reason[BD_UNK_FILTER_DAMAGED]++;
        bd_conn_reply_text(c, req->id, "UNKNOWN " BD_REASON_FILTER_DAMAGED);
    } else if (r == 0) {
        kd.counted->no++;
        kd.answers[BD_ANS_PASS]++;
        bd_conn_reply_text(c, req->id, "CLEAN");
    } else {
        kd.answers[BD_ANS_HIT]++;
        bd_conn_reply(c, req->id, "PWNED %" PRIu64, count);
    }
}

/* PW and NT. hint: the filter's answer when the batch already probed it (0
 * no, 1 maybe), or -1 to probe here. */
void bd_pw_check(bd_conn *c, const br_request *req, int hint)
{
    bd_server *srv = c->srv;
    bd_state *st = srv->state;
    pw_kind kd = kind_of(&srv->counters, req->verb);
    if (hint == 0) { /* the batch's probe: no, from a filter found intact and usable */
        kd.counted->no++;
        kd.answers[BD_ANS_PASS]++;
        bd_conn_reply_text(c, req->id, "CLEAN");
        return;
    }
    const uint8_t *hash = req->verb == BR_VERB_NT ? req->nt : req->sha1;
    bool stale;
    br_pwfilter *filter = filter_of(st, req->verb, &stale);
    if (filter && br_pwfilter_offline(filter)) {
        pw_offline(c, req, filter, hash);
        return;
    }
    if (filter) {
        if (hint < 0 && stale) {
            kd.counted->bypassed++;
        } else if (hint < 0 && !br_pwfilter_maybe(filter, hash) && bd_state_intact(st, kd.kind)) {
            kd.counted->no++;
            kd.answers[BD_ANS_PASS]++;
            bd_conn_reply_text(c, req->id, "CLEAN");
            return;
        } else {
            kd.counted->maybe++;
            if (br_pwfilter_damaged(filter)) /* logged at once, not at the next tick */
                (void)bd_state_intact(st, kd.kind);
        }
    }
    if (bd_upstream_none(bd_kind_upstream(st->cfg, kd.kind))) {
        kd.answers[BD_ANS_UNKNOWN]++;
        bd_conn_reply_text(c, req->id, "UNKNOWN no-upstream");
        return;
    }
    const char *busy = bd_conn_admit(c);
    if (busy) {
        bd_conn_reply_error(c, req->id, BR_PERR_BUSY, busy);
        return;
    }
    bd_waiter *w = bd_waiter_new(c, req);
    if (!w) {
        bd_conn_reply_error(c, req->id, BR_PERR_BUSY, "out of memory");
        return;
    }
    br_resolve_result res;
    int r = br_resolver_resolve_lane(st->resolver, bd_state_partition(st, c->uid),
                                     bd_kinds[kd.kind].range, hash, c->lane, pw_resolved, w, &res);
    if (r == 0)
        return; /* answered later, from the loop */
    if (r < 0) {
        memset(&res, 0, sizeof(res));
        res.status = BR_RESOLVE_UNKNOWN;
        res.reason = BR_REASON_ERROR;
    }
    pw_answer(c, req->id, req->verb, &res);
    bd_waiter_free(w);
}

/* An offline filter's batch: hint 0 (no code), 1 (a hit, its count looked
 * up when answered); none when the set is damaged (each is then probed and
 * refused on its own). */
static void offline_batch(const br_pwfilter *filter, const uint64_t *keys, const size_t *key_of,
                          size_t nk, int *hint)
{
    uint64_t counts[BD_BATCH];
    if (br_pwfilter_count_batch(filter, keys, nk, counts) == 0)
        for (size_t j = 0; j < nk; j++)
            hint[key_of[j]] = counts[j] != 0;
    br_wipe(counts, sizeof(counts[0]) * nk);
}

/* Probe the filter of verb (PW or NT) for every such request of the batch
 * at once, so that their cache misses overlap instead of being waited for
 * one by one: hint[i] = 0 (no) or 1 (maybe; offline: a hit). The filter's
 * state (present, fresh unless offline, intact) is looked at once for the
 * batch: a hint is only given from a filter that answers. */
void bd_pw_prepare_batch(bd_conn *c, br_verb verb, const br_request *req, const bool *ok, size_t n,
                         int *hint)
{
    uint64_t keys[BD_BATCH];
    size_t key_of[BD_BATCH], nk = 0;
    for (size_t i = 0; i < n; i++)
        if (ok[i] && req[i].verb == verb) {
            key_of[nk] = i;
            keys[nk++] = br_hash_key64(verb == BR_VERB_NT ? req[i].nt : req[i].sha1);
        }
    bool stale;
    br_pwfilter *filter = nk ? filter_of(c->srv->state, verb, &stale) : NULL;
    if (!filter || (stale && !br_pwfilter_offline(filter)) || c->srv->draining ||
        !bd_state_intact(c->srv->state, kind_of(&c->srv->counters, verb).kind)) {
        br_wipe(keys, sizeof(keys[0]) * nk);
        return;
    }
    if (br_pwfilter_offline(filter)) {
        offline_batch(filter, keys, key_of, nk, hint);
    } else {
        bool maybe[BD_BATCH];
        br_pwfilter_contains_batch(filter, keys, nk, maybe);
        for (size_t j = 0; j < nk; j++)
            hint[key_of[j]] = maybe[j];
    }
    br_wipe(keys, sizeof(keys[0]) * nk);
}
