/* SPDX-License-Identifier: MIT */
/* What the directory server modules share (docs/directories.md): the MIT
 * Kerberos pwqual plugin (client/krb5/) and the OpenLDAP ppolicy check
 * module (client/ldap/). Their options (socket, min_count, on_error,
 * on_unknown, timeout), one question to breachd through the client library
 * (only the password's SHA-1 crosses the socket, every copy wiped), and the
 * decision: accept, or refuse with a message for the user. Nothing here
 * logs; the result carries at most one line for the server's log, which
 * never holds the password, its hash or the count. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DM_DEFAULT_TIMEOUT_MS 2000
#define DM_MAX_TIMEOUT_MS 60000
#define DM_SOCKET_MAX 108 /* sun_path */
#define DM_MESSAGE_MAX 200
#define DM_LOG_MAX 400

typedef enum dm_policy { DM_REJECT, DM_ALLOW } dm_policy;

/* similar=: a small change of a popular breached password (docs/similar.md)
 * refused, accepted with a log line, or not asked about. */
typedef enum dm_similar { DM_SIMILAR_WARN, DM_SIMILAR_REJECT, DM_SIMILAR_OFF } dm_similar;
#define DM_DEFAULT_SIMILAR_MIN_COUNT 1000

/* banned=: a password made of banned terms or the user's own names
 * (docs/banned.md) refused (the default once breachd holds terms),
 * accepted with a log line, or not checked. */
typedef enum dm_banned {
    DM_BANNED_DEFAULT, /* reject when breachd holds terms, else off */
    DM_BANNED_REJECT,
    DM_BANNED_WARN,
    DM_BANNED_OFF,
} dm_banned;

/* The user's own names a server knows (a principal's components, an
 * entry's cn, sn, givenName, uid, the local part of mail): pointers into
 * the caller's memory, at most DM_MAX_NAMES. */
#define DM_MAX_NAMES 24
typedef struct dm_names {
    const char *v[DM_MAX_NAMES];
    size_t len[DM_MAX_NAMES];
    size_t n;
} dm_names;
/* Add one (ignored when empty or when names is full). */
void dm_names_add(dm_names *names, const char *s, size_t len);

typedef struct dm_options {
    char socket[DM_SOCKET_MAX];
    uint64_t min_count;         /* a PWNED answer below it is accepted */
    dm_policy on_error;         /* breachd unreachable, timed out, garbage, ERR */
    dm_policy on_unknown;       /* UNKNOWN: a maybe that could not be resolved */
    int timeout_ms;             /* the whole exchange, connect included */
    dm_similar similar;         /* after an accepted exact check */
    uint64_t similar_min_count; /* a variant counts from this many sightings */
    dm_banned banned;           /* before anything is sent */
} dm_options;

/* The defaults: the compiled-in socket, min_count 1, on_error and
 * on_unknown reject, timeout 2 s, similar warn, similar_min_count 1000,
 * banned by breachd's terms (DM_BANNED_DEFAULT). */
void dm_options_init(dm_options *o);

/* Set one option from its name and value (not NUL-terminated): 0, or
 * -EINVAL with err (NUL-terminated, at most err_size bytes) naming the
 * option; unknown names are errors. Values: socket an absolute path;
 * min_count 1..2^63; on_error / on_unknown allow or reject (deny is taken
 * for reject); timeout milliseconds (N or Nms) or seconds (Ns), 1 ms to
 * 60 s; similar and banned reject, warn or off; similar_min_count
 * 1..2^63. */
int dm_option_set(dm_options *o, const char *key, size_t key_len, const char *val, size_t val_len,
                  char *err, size_t err_size);

/* Options as key=value words separated by blanks (len bytes, not
 * NUL-terminated; ppolicy's pwdCheckModuleArg). Stops at the first bad
 * word: 0 or -EINVAL with err. */
int dm_options_parse_words(dm_options *o, const char *s, size_t len, char *err, size_t err_size);

/* What breachd said, reduced to what a decision needs. */
typedef enum dm_kind { DM_CLEAN, DM_PWNED, DM_UNKNOWN, DM_ERROR } dm_kind;

typedef struct dm_answer {
    dm_kind kind;
    uint64_t count;   /* DM_PWNED */
    char reason[200]; /* DM_UNKNOWN, DM_ERROR: printable, no hex runs */
    bool similar;     /* a variant was seen similar_count times (dm_ask_similar) */
    uint64_t similar_count;
    bool banned;           /* made of banned terms or the user's names (dm_ask_banned) */
    unsigned banned_kinds; /* 1u << br_banned_kind of each kind found */
    bool banned_reject;    /* and that refuses it */
} dm_answer;

typedef struct dm_result {
    bool accept;
    bool breached;                /* refused because breachd found it (not an error or unknown) */
    char message[DM_MESSAGE_MAX]; /* refused: what the user sees */
    char log[DM_LOG_MAX];         /* an error or unknown: one log line; else empty */
} dm_result;

/* The decision (no I/O). */
void dm_decide(const dm_options *o, const dm_answer *a, dm_result *r);

/* Ask breachd about password (len bytes) within o->timeout_ms. Never
 * fails: a failure is a DM_ERROR answer with its reason. */
void dm_ask(const dm_options *o, const char *password, size_t len, dm_answer *a);

/* After an exact answer that o accepts (DM_CLEAN, DM_PWNED below
 * min_count), with similar= not off: the password's variants
 * (lib/similar/) asked with SIMILAR (only their SHA-1s are sent, wiped
 * after); a hit of at least similar_min_count sets a->similar and
 * a->similar_count. A check that cannot be made leaves a as it is. */
void dm_ask_similar(const dm_options *o, const char *password, size_t len, dm_answer *a);

/* Before anything else: the password matched here (lib/banned/) against
 * the terms breachd holds (BANNED) and names; a refusal sets a->banned,
 * a->banned_kinds, a->banned_reject (a zeroed answer otherwise left as it
 * is). breachd out of reach or without terms: not checked under the
 * default, names alone under banned=reject|warn. */
void dm_ask_banned(const dm_options *o, const char *password, size_t len, const dm_names *names,
                   dm_answer *a);

/* dm_ask_banned; unless that refuses it, dm_ask and dm_ask_similar; then
 * dm_decide. names may be NULL. */
void dm_check_user(const dm_options *o, const char *password, size_t len, const dm_names *names,
                   dm_result *r);

/* "once" / "9,545,824 times", for "it has been seen ... in data breaches". */
void dm_seen_times(uint64_t count, char *buf, size_t size);
