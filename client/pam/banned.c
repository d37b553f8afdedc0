/* SPDX-License-Identifier: MIT */
/* banned= at change time (pam_breachd(8), docs/banned.md): the new
 * password matched here (lib/banned/) against the terms breachd holds
 * (BANNED) and the user's own names (the account name, the GECOS full
 * name), before anything about it is sent. Nothing here logs the
 * password or the term matched. */
#include <errno.h>
#include <pwd.h>
#include <string.h>
#include <syslog.h>

#include "banned/banned.h"
#include "pam_breachd.h"
#include "proto/client.h"
#include "core/util.h"

/* breachd's terms into *terms: their count, or a negative errno. */
static int fetch(const pb_options *o, br_banned **terms, unsigned *min_score, br_error *err)
{
    _cleanup_(br_client_freep) br_client *c = NULL;
    int r = br_client_connect(o->socket, o->timeout_ms, &c, err);
    if (r < 0)
        return r;
    *terms = br_banned_new();
    return *terms ? br_client_banned_terms(c, br_banned_take, terms, min_score, err) : -ENOMEM;
}

static int add_names(br_banned *names, const char *user)
{
    struct passwd pwbuf, *pw = NULL;
    char buf[4096];
    int r = br_banned_add_name(names, user, strlen(user));
    if (r >= 0 && getpwnam_r(user, &pwbuf, buf, sizeof(buf), &pw) == 0 && pw)
        r = br_banned_add_gecos(names, pw->pw_gecos);
    return r;
}

void pb_check_banned(pam_handle_t *pamh, const pb_options *o, const char *user,
                     const char *password, pb_outcome *res)
{
    br_banned *terms = NULL, *names = br_banned_new();
    br_error err = {{0}};
    unsigned min_score = BR_BANNED_MIN_SCORE;
    if (o->banned == PB_BANNED_OFF || !names)
        goto out;
    int n = fetch(o, &terms, &min_score, &err);
    if (n <= 0 && o->banned == PB_BANNED_DEFAULT) { /* no terms: off unless asked for */
        if (n < 0 && o->debug)
            pb_syslog(pamh, LOG_DEBUG, "banned terms: not checked: cannot get them from breachd");
        goto out;
    }
    if (n < 0) /* banned=reject|warn: the user's names alone */
        min_score = BR_BANNED_MIN_SCORE;
    if (user && add_names(names, user) < 0)
        goto out;
    const br_banned *lists[] = {n >= 0 ? terms : NULL, names};
    br_banned_result r;
    if (br_banned_check(lists, 2, password, strlen(password), (int)min_score, &r) == 0 &&
        r.refused) {
        res->banned = true;
        res->banned_kinds = r.kinds;
        res->banned_reject = o->banned != PB_BANNED_WARN;
    }
out:
    br_banned_free(terms);
    br_banned_free(names);
}
