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
#include "check_banned.h"
#include "core/util.h"

bool ctl_opt_banned(const char *cmd, const char *arg, void *dst)
{
    ctl_banned_mode *m = dst;
    if (strcmp(arg, "reject") == 0)
        *m = CTL_BANNED_REJECT;
    else if (strcmp(arg, "warn") == 0)
        *m = CTL_BANNED_WARN;
    else if (strcmp(arg, "off") == 0)
        *m = CTL_BANNED_OFF;
    else {
        ctl_err("%s: --banned '%s': expected reject, warn or off", cmd, arg);
        return false;
    }
    return true;
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
    if (n < 0 && !(n == -EOPNOTSUPP && b->mode == CTL_BANNED_DEFAULT)) {
        ctl_err("password: banned terms not checked: %s",
                n == -ENOMEM ? "out of memory" : err.text);
        *failed = b->mode == CTL_BANNED_REJECT;
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

bool ctl_banned_check(const ctl_banned *b, const void *pw, size_t len, br_answer *a)
{
    const br_banned *lists[] = {b->terms, b->names};
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

bool ctl_banned_answer(const br_answer *a)
{
    return a->kind == BR_ANSWER_OTHER && strncmp(a->detail, "BANNED ", 7) == 0;
}
