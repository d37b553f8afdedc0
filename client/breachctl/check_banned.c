/* SPDX-License-Identifier: MIT */
/* breachctl password --banned: see check_banned.h. The password is
 * matched in this process (lib/banned/); only the terms come from
 * breachd. */
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "breachctl.h"
#include "ctl_opts.h"
#include "check_banned.h"
#include "core/util.h"

bool ctl_opt_banned(const char *cmd, const char *arg, void *dst)
{
    static const int values[] = {CTL_BANNED_REJECT, CTL_BANNED_WARN, CTL_BANNED_OFF};
    return ctl_opt_reject_warn_off(cmd, "banned", arg, values, dst);
}

/* The account name and the full name: the options, else the password
 * database's (the GECOS field up to its first comma). */
static int add_names(ctl_banned *b)
{
    const struct passwd *pw = b->user ? getpwnam(b->user) : getpwuid(getuid());
    const char *user = b->user ? b->user : pw ? pw->pw_name : NULL;
    int r = user ? br_banned_add_name(b->names, user, strlen(user)) : 0;
    if (r >= 0 && b->full_name)
        r = br_banned_add_name(b->names, b->full_name, strlen(b->full_name));
    else if (r >= 0 && pw)
        r = br_banned_add_gecos(b->names, pw->pw_gecos);
    return r < 0 ? r : 0;
}

bool ctl_banned_open(ctl_banned *b, br_client *c, bool *failed)
{
    br_error err = {{0}};
    *failed = false;
    if (b->mode == CTL_BANNED_OFF)
        return false;
    b->terms = br_banned_new();
    b->names = br_banned_new();
    int n = b->terms && b->names
                ? br_client_banned_terms(c, br_banned_take, &b->terms, &b->min_score, &err)
                : -ENOMEM;
    if (n == -EOPNOTSUPP && b->mode != CTL_BANNED_DEFAULT) { /* an older daemon: names only */
        n = 0;
        b->min_score = BR_BANNED_MIN_SCORE;
    }
    if (n >= 0 && !b->terms)
        n = -ENOMEM;
    if (n >= 0 && (n > 0 || b->mode != CTL_BANNED_DEFAULT))
        n = add_names(b) < 0 ? -ENOMEM : 1;
    if (n > 0) {
        if (b->mode == CTL_BANNED_DEFAULT)
            b->mode = CTL_BANNED_REJECT;
        return true;
    }
    /* The exchange failed (no answer in time, the connection lost): the
     * checks after it would fail the same way, so this is the command's
     * failure, as a daemon that cannot be reached is. A daemon without
     * BANNED or with a garbled answer leaves the default off quietly. */
    bool quiet = (n == -EOPNOTSUPP || n == -EPROTO) && b->mode == CTL_BANNED_DEFAULT;
    if (n < 0 && !quiet) {
        ctl_err("%s%s", n == -ENOMEM ? "password: banned terms not checked: out of memory" : "",
                n == -ENOMEM ? "" : err.text);
        *failed = b->mode == CTL_BANNED_REJECT || (n != -EOPNOTSUPP && n != -EPROTO);
    }
    ctl_banned_close(b);
    return false;
}

void ctl_banned_close(ctl_banned *b)
{
    br_banned_free(b->terms);
    br_banned_free(b->names);
    b->terms = b->names = NULL;
}

/* The password checked against b's terms and names (one list of names or
 * the other): true with a BANNED answer in a. */
static bool check_with(const ctl_banned *b, const br_banned *names, const void *pw, size_t len,
                       br_answer *a)
{
    const br_banned *lists[] = {b->terms, names};
    br_banned_result r;
    if (!b->terms || br_banned_check(lists, 2, pw, len, (int)b->min_score, &r) < 0 || !r.refused)
        return false;
    memset(a, 0, sizeof(*a));
    a->kind = BR_ANSWER_OTHER;
    snprintf(a->detail, sizeof(a->detail), "BANNED %s",
             r.kinds & (1u << BR_BANNED_USER)   ? "user"
             : r.kinds & (1u << BR_BANNED_SITE) ? "site"
                                                : "term");
    return true;
}

bool ctl_banned_check(const ctl_banned *b, const void *pw, size_t len, br_answer *a)
{
    return check_with(b, b->names, pw, len, a);
}

bool ctl_banned_check_names(const ctl_banned *b, const char *user, size_t user_len,
                            const char *full, size_t full_len, const void *pw, size_t len,
                            br_answer *a)
{
    _cleanup_(br_banned_freep) br_banned *names = br_banned_new();
    char name[256];
    if (!names || br_banned_add_name(names, user, user_len) < 0 ||
        br_banned_add_name(names, full, full_len) < 0)
        return false;
    snprintf(name, sizeof(name), "%.*s", (int)user_len, user);
    const struct passwd *p = !full_len && user_len < sizeof(name) ? getpwnam(name) : NULL;
    if (p && br_banned_add_gecos(names, p->pw_gecos) < 0)
        return false;
    return check_with(b, names, pw, len, a);
}

bool ctl_user_fields_split(const char *line, size_t len, ctl_user_fields *f)
{
    const char *c1 = memchr(line, ':', len);
    const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
    if (!c2)
        return false;
    *f = (ctl_user_fields){.user = line,
                           .user_len = (size_t)(c1 - line),
                           .full = c1 + 1,
                           .full_len = (size_t)(c2 - c1 - 1),
                           .pw = c2 + 1,
                           .pw_len = len - (size_t)(c2 + 1 - line)};
    return true;
}

bool ctl_banned_answer(const br_answer *a)
{
    return a->kind == BR_ANSWER_OTHER && strncmp(a->detail, "BANNED ", 7) == 0;
}
