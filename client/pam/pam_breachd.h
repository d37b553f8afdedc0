/* SPDX-License-Identifier: MIT */
/* pam_breachd.so's internals, shared by its files (pam_breachd(8)):
 *   options.c    the module arguments, per stage
 *   check.c      one question to breachd (client.h), its outcome
 *   similar.c    the similarity question at change time (lib/similar/)
 *   banned.c     banned terms and the user's names at change time (lib/banned/)
 *   messages.c   what the user sees, the user name for log lines
 *   exempt.c     skip_users, skip_groups, only_groups (groups through NSS)
 *   grace.c      the grace state file of login_action=grace=N
 *   clock.c      the time (clock_testhook.c in the test-only build)
 *   chauthtok.c  the `password` stage
 *   login.c      the `auth` and `account` stages
 * Only the pam_sm_* functions are exported (pam_breachd.map). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <security/pam_modules.h>

#define PB_DEFAULT_TIMEOUT_MS 3000
#define PB_MAX_TIMEOUT_MS 600000
#define PB_MAX_GRACE_DAYS 3650
#define PB_DEFAULT_STATE "/var/lib/pam_breachd/grace"

/* The stage decides the defaults: a change refuses what it cannot check,
 * a login lets it through (pam_breachd(8), FAILURES AT LOGIN). */
typedef enum pb_stage { PB_CHANGE, PB_LOGIN } pb_stage;

typedef enum pb_policy { PB_DENY, PB_ALLOW } pb_policy;

typedef enum pb_action { PB_FORCE, PB_WARN, PB_GRACE } pb_action;

/* similar= at change time (docs/similar.md): a small change of a popular
 * breached password refused, accepted with a warning, or not checked. */
typedef enum pb_similar { PB_SIMILAR_WARN, PB_SIMILAR_REJECT, PB_SIMILAR_OFF } pb_similar;
#define PB_DEFAULT_SIMILAR_MIN_COUNT 1000

/* banned= at change time (docs/banned.md): a password made of banned
 * terms or the user's own names refused (the default once breachd holds
 * terms), accepted with a warning, or not checked. */
typedef enum pb_banned {
    PB_BANNED_DEFAULT, /* reject when breachd holds terms, else off */
    PB_BANNED_REJECT,
    PB_BANNED_WARN,
    PB_BANNED_OFF,
} pb_banned;

typedef struct pb_options {
    const char *socket;
    int timeout_ms;
    uint64_t min_count;
    pb_policy on_unknown;
    pb_policy on_error;
    int retry;
    pb_action action;
    int grace_days;
    pb_similar similar;
    uint64_t similar_min_count;
    pb_banned banned;
    const char *state;      /* the grace state file */
    const char *skip_users; /* comma lists, or NULL */
    const char *skip_groups;
    const char *only_groups;
    bool audit;
    bool enforce_for_root;
    bool use_authtok;
    bool debug;
    const char *log_file; /* log_file=PATH, or NULL: syslog (logging.c) */
} pb_options;

/* Arguments from the PAM configuration only, never the environment (the
 * module runs inside set-user-ID programs). */
/* The module's log (logging.c): pb_syslog as pam_syslog, into the file that
 * pb_log_to set for this handle (log_file=) when it may be used, else to
 * syslog. */
void pb_syslog(pam_handle_t *pamh, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pb_log_to(pam_handle_t *pamh, const char *path);

void pb_parse_options(pam_handle_t *pamh, pb_stage stage, int argc, const char **argv,
                      pb_options *o);
const char *pb_policy_name(pb_policy p);
/* "force", "warn" or "grace=N" into buf. */
const char *pb_action_name(const pb_options *o, char *buf, size_t size);

typedef enum pb_verdict {
    PB_ACCEPT,  /* CLEAN, or PWNED below min_count */
    PB_PWNED,   /* PWNED (at or above min_count once pb_apply_min_count ran) */
    PB_UNKNOWN, /* the daemon could not tell */
    PB_ERROR,   /* the daemon could not be asked, or answered ERR */
} pb_verdict;

typedef struct pb_outcome {
    pb_verdict v;
    uint64_t count;
    char reason[96];  /* for the user: UNKNOWN reason, or a short error reason */
    char detail[256]; /* for the log: sanitized library error or ERR code */
    /* PB_ACCEPT at change time: a small change of a password seen
     * similar_count times (at least similar_min_count), pb_ask_similar */
    bool similar;
    uint64_t similar_count;
    /* at change time: made of banned terms (pb_check_banned), the kinds
     * found (1u << br_banned_kind), and whether that refuses it */
    bool banned;
    unsigned banned_kinds;
    bool banned_reject;
} pb_outcome;

/* Ask breachd about password (hashed by the client library; PING when
 * NULL), all within o->timeout_ms. A PWNED answer is PB_PWNED whatever
 * its count: see pb_apply_min_count. */
void pb_ask(const pb_options *o, const char *password, pb_outcome *out);
/* After an accepted new password: its variants (lib/similar/) hashed and
 * asked with SIMILAR within o->timeout_ms; a hit of at least
 * o->similar_min_count sets res->similar and res->similar_count. A check
 * that cannot be made leaves res as it is and is logged at debug level
 * only (the exact check passed; similar= is best effort). Never logs the
 * password, a variant, a hash or the count. */
void pb_ask_similar(pam_handle_t *pamh, const pb_options *o, const char *password, pb_outcome *res);
/* Before pb_ask at change time: the new password matched here against the
 * terms breachd holds (BANNED) and the user's own names (user and its
 * GECOS full name); a refusal sets res->banned, res->banned_kinds and
 * res->banned_reject. breachd out of reach or with no terms: not checked
 * under the default, the names alone under banned=reject|warn. */
void pb_check_banned(pam_handle_t *pamh, const pb_options *o, const char *user,
                     const char *password, pb_outcome *res);
/* PB_PWNED below o->min_count becomes PB_ACCEPT (the count stays). */
void pb_apply_min_count(const pb_options *o, pb_outcome *res);

/* The user name for messages and log lines, control characters replaced;
 * "(unknown)" without PAM_USER. */
typedef struct pb_user_buf {
    char s[64];
} pb_user_buf;
const char *pb_user_name(pam_handle_t *pamh, pb_user_buf *b);

/* 9545824 -> "9,545,824". */
void pb_group_thousands(uint64_t count, char *buf, size_t size);
/* The message for a refused new password (change stage); for one accepted
 * under similar=warn with res->similar, the warning. */
void pb_refusal_message(const pb_outcome *res, char *buf, size_t size);
/* The message at login for a password that failed the check (PWNED, or
 * unchecked under deny): days_left < 0: it must be changed now; 0: a
 * warning without a deadline; > 0: it must be changed within that many
 * days. */
void pb_login_message(const pb_outcome *res, int days_left, char *buf, size_t size);

/* Is user exempt at this stage: named in skip_users, a member of a group in
 * skip_groups, or not a member of any in only_groups (through NSS:
 * getgrouplist). user NULL: exempt only under only_groups. */
bool pb_exempt(pam_handle_t *pamh, const pb_options *o, const char *user);

/* The grace state file: "user YYYY-MM-DD" lines (the first breached login,
 * UTC), nothing else, in a directory reachable by root only. The day of the
 * user's line, adding one with today when there is none (not written when
 * the state stays locked: logged): 0, or -errno with the reason logged. */
int pb_grace_first_seen(pam_handle_t *pamh, const char *path, const char *user, int64_t today,
                        int64_t *first);
/* Remove the user's line if there is one: 1 removed, 0 none, -errno. */
int pb_grace_forget(pam_handle_t *pamh, const char *path, const char *user);

/* Seconds since the epoch. */
int64_t pb_now(void);
