/* SPDX-License-Identifier: MIT */
/* What the user sees, in pam_pwquality's style (pam_breachd(8),
 * MESSAGES), and the user name for log lines. HIBP's count is how often a
 * password was seen, not a number of breaches. The count is shown to the
 * user whose password it is and never logged. */
#include <inttypes.h>
#include <stdio.h>

#include <security/pam_ext.h>

#include "banned/banned.h"
#include "pam_breachd.h"

const char *pb_user_name(pam_handle_t *pamh, pb_user_buf *b)
{
    const void *u = NULL;
    if (pam_get_item(pamh, PAM_USER, &u) != PAM_SUCCESS || !u || !*(const char *)u)
        return "(unknown)";
    size_t i = 0;
    for (const unsigned char *p = u; *p && i + 1 < sizeof(b->s); p++)
        b->s[i++] = *p >= 0x20 && *p != 0x7f ? (char)*p : '?';
    b->s[i] = '\0';
    return b->s;
}

void pb_group_thousands(uint64_t count, char *buf, size_t size)
{
    char digits[24];
    int n = snprintf(digits, sizeof(digits), "%" PRIu64, count);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < size; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
}

/* "seen once" / "seen 9,545,824 times". */
static void seen(uint64_t count, char *buf, size_t size)
{
    char n[32];
    pb_group_thousands(count, n, sizeof(n));
    if (count == 1)
        snprintf(buf, size, "seen once");
    else
        snprintf(buf, size, "seen %s times", n);
}

/* A check that could not be made is not a bad password: the message says
 * so and what happens next; the daemon's reason goes to the log only. */
void pb_refusal_message(const pb_outcome *res, char *buf, size_t size)
{
    char s[48];
    if (res->banned && (res->banned_reject || res->v == PB_ACCEPT)) {
        /* the kind of term, never the term or the password */
        snprintf(buf, size, "BAD PASSWORD: it is made of %s",
                 br_banned_kinds_text(res->banned_kinds));
        return;
    }
    if (res->v == PB_ACCEPT && res->similar) {
        /* which kind of thing matched, never the matched password */
        seen(res->similar_count, s, sizeof(s));
        snprintf(buf, size, "BAD PASSWORD: it is a small change of a password %s in data breaches",
                 s);
        return;
    }
    switch (res->v) {
    case PB_PWNED:
        seen(res->count, s, sizeof(s));
        snprintf(buf, size, "BAD PASSWORD: it has been %s in data breaches", s);
        break;
    case PB_UNKNOWN:
        snprintf(buf, size,
                 "The new password could not be checked against known data breaches "
                 "right now, so it was not accepted; try again later");
        break;
    default:
        snprintf(buf, size,
                 "Cannot check the new password against known data breaches (%s); "
                 "try again later",
                 res->reason);
        break;
    }
}

void pb_login_message(const pb_outcome *res, int days_left, char *buf, size_t size)
{
    char what[96], s[48], when[64];
    if (res->v == PB_PWNED) {
        seen(res->count, s, sizeof(s));
        snprintf(what, sizeof(what), "Your password has been %s in data breaches", s);
    } else {
        snprintf(what, sizeof(what),
                 "Your password could not be checked against known data breaches");
    }
    if (days_left < 0)
        snprintf(when, sizeof(when), "you must change it now");
    else if (days_left == 0)
        snprintf(when, sizeof(when), "please change it");
    else
        snprintf(when, sizeof(when), "you must change it within %d day%s", days_left,
                 days_left == 1 ? "" : "s");
    snprintf(buf, size, "%s; %s", what, when);
}
