/* SPDX-License-Identifier: MIT */
/* The `password` stage: refuse a new password found in the breach corpus
 * (pam_breachd(8)).
 *
 * It follows pam_pwquality's conventions: nothing to do but an optional
 * readiness probe in PAM_PRELIM_CHECK; in PAM_UPDATE_AUTHTOK it takes the new
 * password from PAM_AUTHTOK when an earlier module set it, or prompts for it
 * itself (check first, then ask to retype it, so a refused password is typed
 * once), and leaves it in PAM_AUTHTOK for the modules after it (pam_unix
 * use_authtok). root changing a password gets the message as a warning
 * unless enforce_for_root is set. An exempt user is prompted the same way,
 * without a check.
 *
 * The password is never copied here: libpam owns PAM_AUTHTOK, the client
 * library hashes it and wipes its own copies. Nothing logged holds the
 * password, its hash, or the exact breach count (a count identifies a common
 * password about as well as the password itself). A new password that
 * passes the check clears the user's grace state line once the whole change
 * has succeeded (at pam_end). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#define PAM_SM_PASSWORD
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include "banned/banned.h"
#include "pam_breachd.h"

/* Is res a refusal under the options? */
static bool refuses(const pb_options *o, const pb_outcome *res)
{
    if (res->banned && res->banned_reject)
        return true;
    if (res->v == PB_ACCEPT && res->similar)
        return o->similar == PB_SIMILAR_REJECT;
    switch (res->v) {
    case PB_PWNED:
        return true;
    case PB_UNKNOWN:
        return o->on_unknown == PB_DENY;
    case PB_ERROR:
        return o->on_error == PB_DENY;
    default:
        return false;
    }
}

/* Log the outcome of a check (never the password, its hash or the count). */
static void log_outcome(pam_handle_t *pamh, const pb_options *o, const pb_outcome *res,
                        bool refused, bool enforced)
{
    pb_user_buf ub;
    const char *user = pb_user_name(pamh, &ub);
    const char *what = !refused   ? "accepted"
                       : o->audit ? "audit: would be refused"
                       : enforced ? "refused"
                                  : "not enforced for root: accepted with a warning";
    if (res->banned && (res->banned_reject || res->v == PB_ACCEPT)) {
        pb_syslog(pamh, refused && enforced && !o->audit ? LOG_NOTICE : LOG_WARNING,
                  "user %s: new password %s: it is made of %s (banned=%s)", user,
                  refused ? what : "accepted with a warning",
                  br_banned_kinds_text(res->banned_kinds), res->banned_reject ? "reject" : "warn");
        return;
    }
    switch (res->v) {
    case PB_ACCEPT:
        if (res->similar)
            pb_syslog(pamh, refused && enforced && !o->audit ? LOG_NOTICE : LOG_WARNING,
                       "user %s: new password %s: it is a small change of a popular breached "
                       "password (similar=%s)",
                       user, refused ? what : "accepted with a warning",
                       o->similar == PB_SIMILAR_REJECT ? "reject" : "warn");
        else if (o->debug)
            pb_syslog(pamh, LOG_DEBUG, "user %s: new password accepted: %s", user,
                       res->count ? "in known breaches, but fewer times than min_count"
                                  : "not in known breaches");
        break;
    case PB_PWNED:
        pb_syslog(pamh, refused && enforced && !o->audit ? LOG_NOTICE : LOG_WARNING,
                   "user %s: new password %s: it appears in known data breaches", user, what);
        break;
    case PB_UNKNOWN:
        pb_syslog(pamh, LOG_WARNING,
                   "user %s: breachd could not check the new password (UNKNOWN %s); "
                   "on_unknown=%s: %s",
                   user, res->reason, pb_policy_name(o->on_unknown), what);
        break;
    case PB_ERROR:
        pb_syslog(pamh, LOG_ERR,
                   "user %s: cannot check the new password with breachd at %s: "
                   "%s; on_error=%s: %s",
                   user, o->socket, res->detail, pb_policy_name(o->on_error), what);
        break;
    }
}

static int prelim_check(pam_handle_t *pamh, const pb_options *o, bool enforced)
{
    /* PAM asks network-backed modules to verify they can do the update in
     * this phase and to answer PAM_TRY_AGAIN when they cannot: then the user
     * is stopped before typing any password. Only when a failure would
     * refuse the change anyway. */
    if (!enforced || o->on_error == PB_ALLOW)
        return PAM_SUCCESS;
    pb_outcome res;
    pb_ask(o, NULL, &res);
    if (res.v == PB_ACCEPT) {
        if (o->debug)
            pb_syslog(pamh, LOG_DEBUG, "breachd at %s is ready", o->socket);
        return PAM_SUCCESS;
    }
    char msg[256];
    pb_refusal_message(&res, msg, sizeof(msg));
    pb_syslog(pamh, LOG_ERR, "preliminary check: breachd at %s is not usable: %s; on_error=deny",
               o->socket, res.detail);
    pam_error(pamh, "%s", msg);
    return PAM_TRY_AGAIN;
}

/* Clearing the grace state line waits for pam_end: only a change that
 * succeeded as a whole (every module after this one too) ends the grace
 * period. A forked child's pam_end (PAM_DATA_SILENT) does nothing. */
#define CLEAR_KEY "pam_breachd_clear_grace"

typedef struct clear_data {
    char *state;
    char *user;
} clear_data;

static void clear_at_end(pam_handle_t *pamh, void *data, int status)
{
    clear_data *d = data;
    if (status == PAM_SUCCESS && /* no PAM_DATA_REPLACE, no PAM_DATA_SILENT */
        pb_grace_forget(pamh, d->state, d->user) > 0) {
        pb_user_buf ub;
        pb_syslog(pamh, LOG_NOTICE, "user %s: password changed: grace period ended",
                   pb_user_name(pamh, &ub));
    }
    free(d->state);
    free(d->user);
    free(d);
}

static void clear_grace_later(pam_handle_t *pamh, const pb_options *o, const char *user)
{
    clear_data *d = calloc(1, sizeof(*d));
    if (d && (d->state = strdup(o->state)) && (d->user = strdup(user)) &&
        pam_set_data(pamh, CLEAR_KEY, d, clear_at_end) == PAM_SUCCESS)
        return;
    if (d) {
        free(d->state);
        free(d->user);
        free(d);
    }
}

/* The check of one new password: PAM_SUCCESS to go on (retype), PAM_TRY_AGAIN
 * to prompt again, or the final error. */
static int check_new(pam_handle_t *pamh, const pb_options *o, const char *tok, bool preset,
                     bool enforced, const char *user)
{
    pb_outcome res, ban = {0};
    pb_check_banned(pamh, o, user, tok, &ban); /* first: a refusal here sends nothing */
    if (ban.banned && ban.banned_reject) {
        res = ban;
    } else {
        pb_ask(o, tok, &res);
        pb_apply_min_count(o, &res);
        if (res.v == PB_ACCEPT && o->similar != PB_SIMILAR_OFF)
            pb_ask_similar(pamh, o, tok, &res);
        res.banned = ban.banned;
        res.banned_kinds = ban.banned_kinds;
    }
    bool refused = refuses(o, &res);
    log_outcome(pamh, o, &res, refused, enforced);
    if (res.v == PB_ACCEPT && !refused && user)
        clear_grace_later(pamh, o, user);
    else /* an earlier try's password is not the one set */
        pam_set_data(pamh, CLEAR_KEY, NULL, NULL);
    char msg[256];
    if ((res.similar || res.banned) && !refused) { /* similar=warn, banned=warn */
        pb_refusal_message(&res, msg, sizeof(msg));
        pam_info(pamh, "Warning: %s", msg + strlen("BAD PASSWORD: "));
    }
    if (!refused || o->audit)
        return PAM_SUCCESS;
    pb_refusal_message(&res, msg, sizeof(msg));
    pam_error(pamh, "%s", msg);
    if (!enforced)
        return PAM_SUCCESS;
    pam_set_item(pamh, PAM_AUTHTOK, NULL);
    /* A password from an earlier module cannot be asked again here (that
     * would bypass the module that chose it), and a daemon that cannot be
     * asked will not be fixed by retyping. */
    return preset || res.v == PB_ERROR ? PAM_AUTHTOK_ERR : PAM_TRY_AGAIN;
}

static int update_authtok(pam_handle_t *pamh, const pb_options *o, bool enforced, bool exempt)
{
    pb_user_buf ub;
    const void *item = NULL;
    const char *user = NULL;
    bool preset = pam_get_item(pamh, PAM_AUTHTOK, &item) == PAM_SUCCESS && item;
    if (pam_get_item(pamh, PAM_USER, &item) == PAM_SUCCESS)
        user = item;
    if (o->debug)
        pb_syslog(pamh, LOG_DEBUG, "%s",
                   preset           ? "new password set by an earlier module"
                   : o->use_authtok ? "use_authtok but no new password yet"
                                    : "no new password yet: prompting");

    for (int tries = 0; tries < o->retry; tries++) {
        const char *tok = NULL;
        int r = pam_get_authtok_noverify(pamh, &tok, NULL);
        if (r != PAM_SUCCESS || !tok) {
            if (o->use_authtok && !preset)
                pb_syslog(pamh, LOG_ERR,
                           "use_authtok: no earlier module in the stack set a new password");
            else if (r == PAM_AUTHTOK_ERR || r == PAM_CONV_ERR || !tok)
                pb_syslog(pamh, LOG_INFO, "user %s aborted the password change",
                           pb_user_name(pamh, &ub));
            else
                pb_syslog(pamh, LOG_ERR, "cannot get the new password: %s", pam_strerror(pamh, r));
            return PAM_AUTHTOK_ERR;
        }
        r = exempt ? PAM_SUCCESS : check_new(pamh, o, tok, preset, enforced, user);
        if (r == PAM_TRY_AGAIN)
            continue;
        if (r != PAM_SUCCESS || preset)
            return r;
        r = pam_get_authtok_verify(pamh, &tok, NULL);
        if (r == PAM_SUCCESS && tok)
            return PAM_SUCCESS;
        pam_set_item(pamh, PAM_AUTHTOK, NULL);
        if (r == PAM_TRY_AGAIN)
            continue; /* mistyped: "Sorry, passwords do not match." */
        pb_syslog(pamh, LOG_INFO, "user %s aborted the password change", pb_user_name(pamh, &ub));
        return PAM_AUTHTOK_ERR;
    }
    pam_set_item(pamh, PAM_AUTHTOK, NULL);
    /* As pam_pwquality: with one try the real reason, else "too many tries". */
    return o->retry > 1 ? PAM_MAXTRIES : PAM_AUTHTOK_ERR;
}

PAM_EXTERN int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    pb_options o;
    pb_parse_options(pamh, PB_CHANGE, argc, argv, &o);

    /* pam_pwquality's rule: root changing a password gets a warning, unless
     * enforce_for_root or the password has expired. */
    bool enforced =
        !o.audit && (getuid() != 0 || o.enforce_for_root || (flags & PAM_CHANGE_EXPIRED_AUTHTOK));
    const void *user = NULL;
    pam_get_item(pamh, PAM_USER, &user);
    bool exempt = pb_exempt(pamh, &o, user);

    if (flags & PAM_PRELIM_CHECK)
        return exempt ? PAM_SUCCESS : prelim_check(pamh, &o, enforced);
    if (!(flags & PAM_UPDATE_AUTHTOK)) {
        pb_syslog(pamh, LOG_ERR, "called with unknown flags 0x%x", (unsigned)flags);
        return PAM_SERVICE_ERR;
    }
    return update_authtok(pamh, &o, enforced, exempt);
}
