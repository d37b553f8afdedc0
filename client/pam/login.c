/* SPDX-License-Identifier: MIT */
/* The `auth` and `account` stages: a password found in the breach corpus at
 * login (pam_breachd(8), AT LOGIN).
 *
 * auth (optional, after the module that verified the password): reads
 * PAM_AUTHTOK, asks breachd exactly as at a change (the client library
 * hashes it and sends only PW), and keeps the outcome in the PAM handle
 * (pam_set_data: the verdict, the count, the reasons, the user name; never
 * the password or its hash). It never prompts and always returns
 * PAM_IGNORE, so it cannot change the authentication result whatever its
 * control keyword.
 *
 * account: acts on that outcome, which exists only once the authentication
 * succeeded: login_action=force returns PAM_NEW_AUTHTOK_REQD (the program
 * makes the user change the password now), warn shows a message, grace=N
 * warns for N days from the first failed check (grace.c) and forces after
 * that. A password that passes clears the user's grace state line. What
 * could not be checked is let through unless on_error / on_unknown say
 * deny: a login must not fail because the daemon is down. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#define PAM_SM_AUTH
#define PAM_SM_ACCOUNT
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "pam_breachd.h"
#include "core/util.h"

#define LOGIN_KEY "pam_breachd_login"

typedef struct login_data {
    pb_outcome res;
    size_t ulen;
    char user[]; /* PAM_USER when checked */
} login_data;

static void free_login_data(pam_handle_t *pamh, void *data, int status)
{
    (void)pamh;
    (void)status;
    login_data *d = data;
    br_wipe(d, sizeof(*d) + d->ulen + 1);
    free(d);
}

static const char *verdict_name(pb_verdict v)
{
    static const char *const names[] = {"clean", "pwned", "unknown", "error"};
    return names[v];
}

PAM_EXTERN int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)flags;
    pb_options o;
    pb_parse_options(pamh, PB_LOGIN, argc, argv, &o);
    pam_set_data(pamh, LOGIN_KEY, NULL, NULL); /* forget an earlier attempt's outcome */

    pb_user_buf ub;
    const void *user = NULL, *tok = NULL;
    if (pam_get_item(pamh, PAM_USER, &user) != PAM_SUCCESS || !user || !*(const char *)user)
        return PAM_IGNORE;
    if (pb_exempt(pamh, &o, user))
        return PAM_IGNORE;
    /* Only what an earlier module read and left in PAM_AUTHTOK: this
     * module never prompts at login. */
    if (pam_get_item(pamh, PAM_AUTHTOK, &tok) != PAM_SUCCESS || !tok || !*(const char *)tok) {
        if (o.debug)
            pb_syslog(pamh, LOG_DEBUG, "user %s: no password in PAM_AUTHTOK: not checked",
                      pb_user_name(pamh, &ub));
        return PAM_IGNORE;
    }
    size_t ulen = strlen(user);
    login_data *d = calloc(1, sizeof(*d) + ulen + 1);
    if (!d)
        return PAM_IGNORE;
    d->ulen = ulen;
    memcpy(d->user, user, ulen + 1);
    pb_ask(&o, tok, &d->res);
    if (o.debug)
        pb_syslog(pamh, LOG_DEBUG, "user %s: password checked at login: %s",
                  pb_user_name(pamh, &ub), verdict_name(d->res.v));
    if (pam_set_data(pamh, LOGIN_KEY, d, free_login_data) != PAM_SUCCESS) {
        pb_syslog(pamh, LOG_ERR, "cannot keep the outcome of the check for the account stage");
        free_login_data(pamh, d, 0);
    }
    return PAM_IGNORE;
}

PAM_EXTERN int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    (void)pamh, (void)flags, (void)argc, (void)argv;
    return PAM_IGNORE;
}

/* Days of grace left for user: > 0, or -1 when it is over. A state file that
 * cannot be used (logged) counts as over: a fault of the state, which only
 * root can reach, never gives a breached password its period back. */
static int grace_left(pam_handle_t *pamh, const pb_options *o, const char *user)
{
    if (o->grace_days == 0)
        return -1;
    int64_t now = pb_now();
    int64_t today = now / 86400 - (now % 86400 < 0), first;
    if (pb_grace_first_seen(pamh, o->state, user, today, &first) < 0)
        return -1;
    int64_t left = o->grace_days - (today - first);
    return left <= 0 ? -1 : left > o->grace_days ? o->grace_days : (int)left;
}

/* A password that failed the check (PWNED, or unchecked under deny). */
static int failed(pam_handle_t *pamh, const pb_options *o, const pb_outcome *res, const char *user,
                  int flags)
{
    pb_user_buf ub;
    char act[32], why[160];
    pb_action_name(o, act, sizeof(act));
    if (res->v == PB_PWNED)
        snprintf(why, sizeof(why), "appears in known data breaches");
    else if (res->v == PB_UNKNOWN)
        snprintf(why, sizeof(why), "could not be checked (UNKNOWN %s); on_unknown=deny",
                 res->reason);
    else
        snprintf(why, sizeof(why), "could not be checked (%s); on_error=deny", res->reason);
    if (o->audit) {
        pb_syslog(pamh, LOG_WARNING,
                  "user %s: password used at login %s: audit: "
                  "login_action=%s not applied",
                  pb_user_name(pamh, &ub), why, act);
        return PAM_IGNORE;
    }
    int left = o->action == PB_FORCE ? -1 : o->action == PB_WARN ? 0 : grace_left(pamh, o, user);
    char msg[256];
    pb_login_message(res, left, msg, sizeof(msg));
    if (!(flags & PAM_SILENT)) {
        if (left < 0)
            pam_error(pamh, "%s", msg);
        else
            pam_info(pamh, "%s", msg);
    }
    char done[64];
    if (left < 0)
        snprintf(done, sizeof(done), "password change required");
    else if (left == 0)
        snprintf(done, sizeof(done), "warned");
    else
        snprintf(done, sizeof(done), "warned, %d day%s of grace left", left, left == 1 ? "" : "s");
    pb_syslog(pamh, LOG_NOTICE, "user %s: password used at login %s: login_action=%s: %s",
              pb_user_name(pamh, &ub), why, act, done);
    return left < 0 ? PAM_NEW_AUTHTOK_REQD : PAM_SUCCESS;
}

static int act(pam_handle_t *pamh, const pb_options *o, const pb_outcome *res, const char *user,
               int flags)
{
    pb_user_buf ub;
    switch (res->v) {
    case PB_ACCEPT:
        if (o->debug)
            pb_syslog(pamh, LOG_DEBUG, "user %s: password used at login passed the check",
                      pb_user_name(pamh, &ub));
        if (!o->audit && o->action == PB_GRACE && pb_grace_forget(pamh, o->state, user) > 0)
            pb_syslog(pamh, LOG_NOTICE,
                      "user %s: password used at login passed the check: "
                      "grace period ended",
                      pb_user_name(pamh, &ub));
        return PAM_SUCCESS;
    case PB_UNKNOWN:
        if (o->on_unknown == PB_DENY)
            break;
        pb_syslog(pamh, LOG_WARNING,
                  "user %s: breachd could not check the password used at "
                  "login (UNKNOWN %s); on_unknown=allow: login allowed",
                  pb_user_name(pamh, &ub), res->reason);
        return PAM_IGNORE;
    case PB_ERROR:
        if (o->on_error == PB_DENY)
            break;
        pb_syslog(pamh, LOG_ERR,
                  "user %s: cannot check the password used at login with "
                  "breachd: %s; on_error=allow: login allowed",
                  pb_user_name(pamh, &ub), res->detail);
        return PAM_IGNORE;
    case PB_PWNED:
        break;
    }
    return failed(pamh, o, res, user, flags);
}

PAM_EXTERN int pam_sm_acct_mgmt(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    pb_options o;
    pb_parse_options(pamh, PB_LOGIN, argc, argv, &o);
    pb_user_buf ub;
    const void *user = NULL, *data = NULL;
    if (pam_get_item(pamh, PAM_USER, &user) != PAM_SUCCESS || !user || !*(const char *)user)
        return PAM_IGNORE;
    if (pb_exempt(pamh, &o, user))
        return PAM_IGNORE;
    if (pam_get_data(pamh, LOGIN_KEY, &data) != PAM_SUCCESS || !data) {
        if (o.debug)
            pb_syslog(pamh, LOG_DEBUG,
                      "user %s: no password was checked at login "
                      "(not a password login, or no pam_breachd in the auth stack)",
                      pb_user_name(pamh, &ub));
        return PAM_IGNORE;
    }
    const login_data *d = data;
    if (strcmp(d->user, user) != 0) {
        pb_syslog(pamh, LOG_WARNING,
                  "user %s: the password was checked for another user: "
                  "ignored",
                  pb_user_name(pamh, &ub));
        return PAM_IGNORE;
    }
    pb_outcome res = d->res;
    pb_apply_min_count(&o, &res);
    int r = act(pamh, &o, &res, user, flags);
    br_wipe(&res, sizeof(res));
    return r;
}
