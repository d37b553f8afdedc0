/* SPDX-License-Identifier: MIT */
/* SIMILAR: answered from an offline filter only ([passwords]
 * similar_filter, else [passwords] filter when it is offline; [ntlm]
 * filter when it is offline for NT hashes). Nothing here reaches the
 * resolver: a variant never causes a range query, a decoy or a cache entry
 * (docs/privacy.md), and no hash is ever logged. */
#include <inttypes.h>
#include <stdlib.h>

#include "proto/protocol_similar.h"
#include "similar_verb.h"
#include "state.h"
#include "core/util.h"

/* The filter that answers SIMILAR of this kind, NULL when none. */
static const br_pwfilter *similar_filter_of(const bd_state *st, bool nt)
{
    const br_pwfilter *f = st->filter[nt ? BD_KIND_NT : BD_KIND_PW];
    if (!nt && st->filter[BD_KIND_SIMILAR])
        return st->filter[BD_KIND_SIMILAR];
    return f && br_pwfilter_offline(f) ? f : NULL;
}

/* The highest count among the n hashes of q in f and how many hit (*hits);
 * 0, or -EIO / -ENOTSUP as br_pwfilter_count_batch. */
static int lookup_all(const br_pwfilter *f, const br_similar_request *q, uint64_t *best,
                      unsigned *hits)
{
    uint64_t keys[BR_SIMILAR_PER_REQUEST], counts[BR_SIMILAR_PER_REQUEST];
    for (size_t i = 0; i < q->n; i++)
        keys[i] = br_hash_key64(q->hash[i]);
    int r = br_pwfilter_count_batch(f, keys, q->n, counts);
    *best = 0;
    *hits = 0;
    for (size_t i = 0; r == 0 && i < q->n; i++) {
        if (counts[i] > 0)
            (*hits)++;
        if (counts[i] > *best)
            *best = counts[i];
    }
    br_wipe(keys, sizeof(keys));
    br_wipe(counts, sizeof(counts));
    return r;
}

static void answer(bd_conn *c, const char *id, const br_pwfilter *f, const br_similar_request *q)
{
    uint64_t *k = c->srv->counters.answers[BD_KIND_SIMILAR];
    uint64_t best;
    unsigned hits;
    /* A file rewritten in place or truncated under its mapping answers
     * nothing (its "no" cannot be trusted). */
    if (br_pwfilter_changed(f) || br_pwfilter_damaged(f) || lookup_all(f, q, &best, &hits) < 0) {
        k[BD_ANS_UNKNOWN]++;
        bd_conn_reply_text(c, id, "UNKNOWN filter-unavailable");
        return;
    }
    if (hits == 0) {
        k[BD_ANS_PASS]++;
        bd_conn_reply_text(c, id, "CLEAN");
        return;
    }
    k[BD_ANS_HIT]++;
    bd_conn_reply(c, id, "SIMILAR %" PRIu64 " %u", best, hits);
}

void bd_similar_check(bd_conn *c, const br_request *req)
{
    br_similar_request *q = malloc(sizeof(*q));
    br_proto_error e;
    if (!q) {
        bd_conn_reply_error(c, req->id, BR_PERR_BUSY, "out of memory");
        return;
    }
    if (!br_similar_request_parse(req->arg, req->arg_len, q, &e)) {
        bd_conn_reply_error(c, req->id, e.code, e.text);
    } else {
        const br_pwfilter *f = similar_filter_of(c->srv->state, q->nt);
        if (f) {
            answer(c, req->id, f, q);
        } else {
            c->srv->counters.answers[BD_KIND_SIMILAR][BD_ANS_UNKNOWN]++;
            bd_conn_reply_text(c, req->id, "UNKNOWN no-similar-filter");
        }
    }
    br_wipe(q, sizeof(*q));
    free(q);
}
