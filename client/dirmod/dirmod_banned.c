/* SPDX-License-Identifier: MIT */
/* banned= of the directory modules (docs/directories.md, docs/banned.md):
 * the new password matched here (lib/banned/) against the terms breachd
 * holds (BANNED) and the names the server gave, before anything about it
 * is sent. Nothing here logs. */
#include <errno.h>
#include <string.h>

#include "banned/banned.h"
#include "dirmod.h"
#include "proto/client.h"
#include "core/util.h"

void dm_names_add(dm_names *names, const char *s, size_t len)
{
    if (s && len && names->n < DM_MAX_NAMES) {
        names->v[names->n] = s;
        names->len[names->n++] = len;
    }
}

/* breachd's terms into *terms: their count, or a negative errno. */
static int fetch(const dm_options *o, br_banned **terms, unsigned *min_score)
{
    br_error err = {{0}};
    _cleanup_(br_client_freep) br_client *c = NULL;
    int r = br_client_connect(o->socket, o->timeout_ms, &c, &err);
    if (r < 0)
        return r;
    *terms = br_banned_new();
    return *terms ? br_client_banned_terms(c, br_banned_take, terms, min_score, &err) : -ENOMEM;
}

void dm_ask_banned(const dm_options *o, const char *password, size_t len, const dm_names *names,
                   dm_answer *a)
{
    br_banned *terms = NULL, *user = br_banned_new();
    unsigned min_score = BR_BANNED_MIN_SCORE;
    int n = o->banned == DM_BANNED_OFF || !user ? 0 : fetch(o, &terms, &min_score);
    bool check = user && o->banned != DM_BANNED_OFF && (n > 0 || o->banned != DM_BANNED_DEFAULT);
    if (n < 0)
        min_score = BR_BANNED_MIN_SCORE;
    for (size_t i = 0; check && names && i < names->n; i++)
        check = br_banned_add_name(user, names->v[i], names->len[i]) >= 0;
    const br_banned *lists[] = {n > 0 ? terms : NULL, user};
    br_banned_result r;
    if (check && br_banned_check(lists, 2, password, len, (int)min_score, &r) == 0 && r.refused) {
        a->banned = true;
        a->banned_kinds = r.kinds;
        a->banned_reject = o->banned != DM_BANNED_WARN;
    }
    br_banned_free(terms);
    br_banned_free(user);
}
