/* SPDX-License-Identifier: MIT */
/* BANNED: the current state's terms ([passwords] site_terms and
 * banned_terms, normalised), from the index asked for, as many as fit
 * one answer (protocol_terms.h). */
#include <inttypes.h>

#include "banned_verb.h"
#include "proto/protocol_terms.h"
#include "state.h"

void bd_banned_terms(bd_conn *c, const br_request *req)
{
    const bd_state *st = c->srv->state;
    const br_banned *b = st->banned;
    size_t total = br_banned_count(b), i = req->index, len = 0;
    char items[BR_TERMS_PAGE_BYTES + 1] = "";
    br_banned_kind kind;
    for (const char *t; i < total && (t = br_banned_term(b, i, &kind)); i++)
        if (!br_terms_item_format(items, sizeof(items), &len, kind == BR_BANNED_SITE ? 's' : 'b',
                                  t))
            break;
    if (i > total)
        i = total;
    bd_conn_reply(c, req->id, "TERMS %" PRIu64 " %u %zu %zu%s%s", st->banned_generation,
                  (unsigned)st->cfg->passwords.min_score, total, i, len ? " " : "", items);
}
