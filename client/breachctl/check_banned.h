/* SPDX-License-Identifier: MIT */
/* breachctl password --banned (breachctl(1), docs/banned.md): before any
 * question to breachd, the password matched here against the banned terms
 * and the site's names breachd holds (BANNED) and the user's own names
 * (--user, --full-name; else the invoking user and its GECOS name). A
 * refusal under reject sends nothing about that password to breachd and
 * prints "BANNED <kind>": site, user or term. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "banned/banned.h"
#include "proto/client.h"

typedef enum ctl_banned_mode {
    CTL_BANNED_DEFAULT = 0, /* no --banned: reject when breachd holds terms, else off */
    CTL_BANNED_REJECT,      /* BANNED counts as a hit: exit status 1, nothing sent */
    CTL_BANNED_WARN,        /* BANNED printed instead of CLEAN, the exit status unchanged */
    CTL_BANNED_OFF,
} ctl_banned_mode;

/* --banned's argument (a CTL_OPT_FN, ctl_opts.h): reject, warn or off. */
bool ctl_opt_banned(const char *cmd, const char *arg, void *dst);

typedef struct ctl_banned {
    ctl_banned_mode mode;
    const char *user;      /* --user, or NULL: the invoking user */
    const char *full_name; /* --full-name, or NULL: the user's GECOS name */
    br_banned *terms;      /* breachd's (BANNED) */
    br_banned *names;      /* the user's own names */
    unsigned min_score;
} ctl_banned;

/* Ready b over connection c: breachd's terms fetched and the user's names
 * added. False when the check is off (--banned=off; no --banned and no
 * terms on breachd) or cannot be made (said on stderr; under
 * --banned=reject that is an error: *failed is set). */
bool ctl_banned_open(ctl_banned *b, br_client *c, bool *failed);
void ctl_banned_close(ctl_banned *b);

/* The password pw (len bytes) refused by the terms: true, with a made a
 * BR_ANSWER_OTHER "BANNED <kind>" answer. */
bool ctl_banned_check(const ctl_banned *b, const void *pw, size_t len, br_answer *a);

/* The same with the names of one input line (--user-fields): user and
 * full (len bytes each, either may be empty; an empty full name is the
 * user's GECOS name from the password database) instead of b's. */
bool ctl_banned_check_names(const ctl_banned *b, const char *user, size_t user_len,
                            const char *full, size_t full_len, const void *pw, size_t len,
                            br_answer *a);

/* --user-fields: a line NAME:FULL NAME:PASSWORD (the password is
 * everything after the second ':') split in place: true with the parts,
 * false when the line has fewer than two ':'. */
typedef struct ctl_user_fields {
    const char *user, *full, *pw;
    size_t user_len, full_len, pw_len;
} ctl_user_fields;
bool ctl_user_fields_split(const char *line, size_t len, ctl_user_fields *f);

/* Whether a is such an answer. */
bool ctl_banned_answer(const br_answer *a);
