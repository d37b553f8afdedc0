/* SPDX-License-Identifier: MIT */
/* pam_breachd: a `password` stack module that refuses a new password found
 * in the breach corpus, asking breachd over its Unix socket (pam_breachd(8), docs/protocol.md).
 *
 * It follows pam_pwquality's conventions: nothing to do but an optional
 * readiness probe in PAM_PRELIM_CHECK; in PAM_UPDATE_AUTHTOK it takes the new
 * password from PAM_AUTHTOK when an earlier module set it, or prompts for it
 * itself (check first, then ask to retype it, so a refused password is typed
 * once), and leaves it in PAM_AUTHTOK for the modules after it (pam_unix
 * use_authtok). root changing a password gets the message as a warning
 * unless enforce_for_root is set.
 *
 * The password is never copied here: libpam owns PAM_AUTHTOK, the client
 * library hashes it and wipes its own copies. Nothing logged holds the
 * password, its hash, or the exact breach count (a count identifies a common
 * password about as well as the password itself). Options come only from the
 * PAM configuration, never from the environment: the module runs inside
 * setuid programs such as passwd(1). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#define PAM_SM_PASSWORD
#include <security/pam_ext.h>
#include <security/pam_modules.h>

#include <openssl/crypto.h>

#include "client.h"
#include "config.h"

#define DEFAULT_TIMEOUT_MS 3000
#define MAX_TIMEOUT_MS 600000

typedef enum policy { POLICY_DENY, POLICY_ALLOW } policy;

typedef struct options {
    const char *socket;
    int timeout_ms;
    uint64_t min_count;
    policy on_unknown;
    policy on_error;
    int retry;
    bool audit;
    bool enforce_for_root;
    bool use_authtok;
    bool debug;
} options;

static const char *policy_name(policy p)
{
    return p == POLICY_DENY ? "deny" : "allow";
}

/* "name=value": the value when arg starts with name and '=', else NULL. */
static const char *opt_value(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

static bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static bool parse_policy(const char *s, policy *out)
{
    if (strcmp(s, "deny") == 0)
        *out = POLICY_DENY;
    else if (strcmp(s, "allow") == 0)
        *out = POLICY_ALLOW;
    else
        return false;
    return true;
}

/* As pam_pwquality does: an unknown option, or a bad value for a known one,
 * is logged and ignored (the default stays, and every default is the safe
 * one), so a typo never locks users out of changing their password. */
static void parse_options(pam_handle_t *pamh, int argc, const char **argv, options *o)
{
    *o = (options){
        .socket = BREACHD_DEFAULT_SOCKET,
        .timeout_ms = DEFAULT_TIMEOUT_MS,
        .min_count = 1,
        .on_unknown = POLICY_DENY,
        .on_error = POLICY_DENY,
        .retry = 1,
    };
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v;
        uint64_t n;
        bool ok = true;
        if (strcmp(a, "debug") == 0)
            o->debug = true;
        else if (strcmp(a, "audit") == 0)
            o->audit = true;
        else if (strcmp(a, "enforce_for_root") == 0)
            o->enforce_for_root = true;
        else if (strcmp(a, "use_authtok") == 0)
            o->use_authtok = true;
        else if (strcmp(a, "use_first_pass") == 0 || strcmp(a, "try_first_pass") == 0 ||
                 opt_value(a, "authtok_type"))
            ; /* read by pam_get_authtok() itself */
        else if ((v = opt_value(a, "socket")))
            ok = *v == '/' ? (o->socket = v, true) : false;
        else if ((v = opt_value(a, "timeout")))
            ok = parse_u64(v, 1, MAX_TIMEOUT_MS, &n) ? (o->timeout_ms = (int)n, true) : false;
        else if ((v = opt_value(a, "min_count")))
            ok = parse_u64(v, 1, UINT64_MAX, &n) ? (o->min_count = n, true) : false;
        else if ((v = opt_value(a, "retry")))
            ok = parse_u64(v, 0, 100, &n) ? (o->retry = n < 1 ? 1 : (int)n, true) : false;
        else if ((v = opt_value(a, "on_unknown")))
            ok = parse_policy(v, &o->on_unknown);
        else if ((v = opt_value(a, "on_error")))
            ok = parse_policy(v, &o->on_error);
        else {
            pam_syslog(pamh, LOG_ERR, "unknown option ignored: %s", a);
            continue;
        }
        if (!ok)
            pam_syslog(pamh, LOG_ERR, "bad value ignored, keeping the default: %s", a);
    }
    if (o->debug)
        pam_syslog(
            pamh, LOG_DEBUG,
            "socket=%s timeout=%d min_count=%" PRIu64 " on_unknown=%s on_error=%s retry=%d%s%s%s",
            o->socket, o->timeout_ms, o->min_count, policy_name(o->on_unknown),
            policy_name(o->on_error), o->retry, o->audit ? " audit" : "",
            o->enforce_for_root ? " enforce_for_root" : "", o->use_authtok ? " use_authtok" : "");
}

/* Copy text that came from the daemon or the client library into out for a
 * message: printable ASCII only, and any run of 16 or more hex digits (a
 * hash or part of one, should a peer ever echo it) replaced by "[hex]". */
static void safe_text(const char *in, char *out, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; in[i] && o + 1 < size;) {
        size_t run = 0;
        while (br_hexval((unsigned char)in[i + run]) >= 0)
            run++;
        if (run >= 16) {
            int w = snprintf(out + o, size - o, "[hex]");
            o = w < 0 || (size_t)w >= size - o ? size - 1 : o + (size_t)w;
            i += run;
            continue;
        }
        if (run == 0)
            run = 1;
        for (size_t k = 0; k < run && o + 1 < size; k++, i++) {
            unsigned char c = (unsigned char)in[i];
            out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
        }
    }
    out[o] = '\0';
}

/* The first word of a daemon answer's detail (an UNKNOWN reason, an ERR
 * code), sanitized. */
static void first_word(const char *in, char *out, size_t size)
{
    char tmp[64];
    size_t n = strcspn(in, " ");
    snprintf(tmp, sizeof(tmp), "%.*s", (int)BR_MIN(n, sizeof(tmp) - 1), in);
    safe_text(tmp[0] ? tmp : "no reason given", out, size);
}

static int64_t now_ms(void)
{
    return (int64_t)(br_now_ns() / 1000000u);
}

/* A short reason for the user, from a client library failure. */
static const char *error_reason(int r)
{
    switch (r) {
    case -ENOENT:
    case -ECONNREFUSED:
        return "breachd is not running";
    case -EACCES:
    case -EPERM:
        return "no permission to use breachd's socket";
    case -ETIMEDOUT:
        return "no answer in time";
    default:
        return "cannot talk to breachd";
    }
}

typedef enum verdict {
    V_ACCEPT,  /* CLEAN, or PWNED below min_count */
    V_PWNED,   /* PWNED at or above min_count */
    V_UNKNOWN, /* the daemon could not tell */
    V_ERROR,   /* the daemon could not be asked, or answered ERR */
} verdict;

typedef struct outcome {
    verdict v;
    uint64_t count;
    char reason[96];  /* for the user: UNKNOWN reason, or a short error reason */
    char detail[256]; /* for the log: sanitized library error or ERR code */
} outcome;

/* Connect within the timeout and send one request; the whole exchange has
 * one deadline of o->timeout_ms. password NULL: PING (readiness probe). */
static void ask_breachd(const options *o, const char *password, outcome *out)
{
    memset(out, 0, sizeof(*out));
    br_error err = {{0}};
    br_answer a;
    int64_t deadline = now_ms() + o->timeout_ms;
    _cleanup_(br_client_freep) br_client *c = NULL;
    int r = br_client_connect(o->socket, o->timeout_ms, &c, &err);
    if (r == 0) {
        int64_t left = deadline - now_ms();
        br_client_set_timeout(c, left < 1 ? 1 : (int)left);
        if (password)
            r = br_client_check_password(c, password, strlen(password), &a, &err);
        else
            r = br_client_command(c, "PING", &a, &err);
    }
    if (r < 0) {
        out->v = V_ERROR;
        snprintf(out->reason, sizeof(out->reason), "%s", error_reason(r));
        safe_text(err.text[0] ? err.text : strerror(-r), out->detail, sizeof(out->detail));
        return;
    }
    switch (a.kind) {
    case BR_ANSWER_CLEAN:
        out->v = V_ACCEPT;
        break;
    case BR_ANSWER_PWNED:
        out->count = a.count;
        out->v = a.count >= o->min_count ? V_PWNED : V_ACCEPT;
        break;
    case BR_ANSWER_UNKNOWN:
        out->v = V_UNKNOWN;
        first_word(a.detail, out->reason, sizeof(out->reason));
        break;
    case BR_ANSWER_OTHER:
        if (!password) { /* PONG */
            out->v = V_ACCEPT;
            break;
        }
        /* fall through */
    default: {
        char code[64];
        first_word(a.detail, code, sizeof(code));
        out->v = V_ERROR;
        snprintf(out->reason, sizeof(out->reason), "breachd answered %s",
                 a.kind == BR_ANSWER_ERROR ? code : "something unexpected");
        snprintf(out->detail, sizeof(out->detail), "unexpected answer %s %s",
                 br_answer_kind_name(a.kind), code);
        break;
    }
    }
    OPENSSL_cleanse(&a, sizeof(a));
}

/* The user name for a log line, control characters replaced. */
typedef struct user_buf {
    char s[64];
} user_buf;

static const char *user_name(pam_handle_t *pamh, user_buf *b)
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

/* count with plain thousands separators: 9545824 -> "9,545,824". */
static void group_thousands(uint64_t count, char *buf, size_t size)
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

/* The message the user sees for a refusal (or a warning for root). HIBP's
 * count is how often a password was seen, not a number of breaches. A check
 * that could not be made is not a bad password: the message says so and
 * what happens next; the daemon's reason goes to the log only. */
static void refusal_message(const outcome *res, char *buf, size_t size)
{
    char n[32];
    switch (res->v) {
    case V_PWNED:
        group_thousands(res->count, n, sizeof(n));
        if (res->count == 1)
            snprintf(buf, size, "BAD PASSWORD: it has been seen once in data breaches");
        else
            snprintf(buf, size, "BAD PASSWORD: it has been seen %s times in data breaches", n);
        break;
    case V_UNKNOWN:
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

/* Is res a refusal under the options? */
static bool refuses(const options *o, const outcome *res)
{
    switch (res->v) {
    case V_PWNED:
        return true;
    case V_UNKNOWN:
        return o->on_unknown == POLICY_DENY;
    case V_ERROR:
        return o->on_error == POLICY_DENY;
    default:
        return false;
    }
}

/* Log the outcome of a check (never the password, its hash or the count). */
static void log_outcome(pam_handle_t *pamh, const options *o, const outcome *res, bool refused,
                        bool enforced)
{
    user_buf ub;
    const char *user = user_name(pamh, &ub);
    const char *what = !refused   ? "accepted"
                       : o->audit ? "audit: would be refused"
                       : enforced ? "refused"
                                  : "not enforced for root: accepted with a warning";
    switch (res->v) {
    case V_ACCEPT:
        if (o->debug)
            pam_syslog(pamh, LOG_DEBUG, "user %s: new password accepted: %s", user,
                       res->count ? "in known breaches, but fewer times than min_count"
                                  : "not in known breaches");
        break;
    case V_PWNED:
        pam_syslog(pamh, refused && enforced && !o->audit ? LOG_NOTICE : LOG_WARNING,
                   "user %s: new password %s: it appears in known data breaches", user, what);
        break;
    case V_UNKNOWN:
        pam_syslog(pamh, LOG_WARNING,
                   "user %s: breachd could not check the new password (UNKNOWN %s); "
                   "on_unknown=%s: %s",
                   user, res->reason, policy_name(o->on_unknown), what);
        break;
    case V_ERROR:
        pam_syslog(pamh, LOG_ERR,
                   "user %s: cannot check the new password with breachd at %s: "
                   "%s; on_error=%s: %s",
                   user, o->socket, res->detail, policy_name(o->on_error), what);
        break;
    }
}

static int prelim_check(pam_handle_t *pamh, const options *o, bool enforced)
{
    /* PAM asks network-backed modules to verify they can do the update in
     * this phase and to answer PAM_TRY_AGAIN when they cannot: then the user
     * is stopped before typing any password. Only when a failure would
     * refuse the change anyway. */
    if (!enforced || o->on_error == POLICY_ALLOW)
        return PAM_SUCCESS;
    outcome res;
    ask_breachd(o, NULL, &res);
    if (res.v == V_ACCEPT) {
        if (o->debug)
            pam_syslog(pamh, LOG_DEBUG, "breachd at %s is ready", o->socket);
        return PAM_SUCCESS;
    }
    char msg[256];
    refusal_message(&res, msg, sizeof(msg));
    pam_syslog(pamh, LOG_ERR, "preliminary check: breachd at %s is not usable: %s; on_error=deny",
               o->socket, res.detail);
    pam_error(pamh, "%s", msg);
    return PAM_TRY_AGAIN;
}

PAM_EXTERN int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv)
{
    options o;
    parse_options(pamh, argc, argv, &o);

    /* pam_pwquality's rule: root changing a password gets a warning, unless
     * enforce_for_root or the password has expired. */
    bool enforced =
        !o.audit && (getuid() != 0 || o.enforce_for_root || (flags & PAM_CHANGE_EXPIRED_AUTHTOK));

    if (flags & PAM_PRELIM_CHECK)
        return prelim_check(pamh, &o, enforced);
    if (!(flags & PAM_UPDATE_AUTHTOK)) {
        pam_syslog(pamh, LOG_ERR, "called with unknown flags 0x%x", (unsigned)flags);
        return PAM_SERVICE_ERR;
    }

    user_buf ub;
    const void *item = NULL;
    bool preset = pam_get_item(pamh, PAM_AUTHTOK, &item) == PAM_SUCCESS && item;
    if (o.debug)
        pam_syslog(pamh, LOG_DEBUG, "%s",
                   preset          ? "new password set by an earlier module"
                   : o.use_authtok ? "use_authtok but no new password yet"
                                   : "no new password yet: prompting");

    for (int tries = 0; tries < o.retry; tries++) {
        const char *tok = NULL;
        int r = pam_get_authtok_noverify(pamh, &tok, NULL);
        if (r != PAM_SUCCESS || !tok) {
            if (o.use_authtok && !preset)
                pam_syslog(pamh, LOG_ERR,
                           "use_authtok: no earlier module in the stack set a new password");
            else if (r == PAM_AUTHTOK_ERR || r == PAM_CONV_ERR || !tok)
                pam_syslog(pamh, LOG_INFO, "user %s aborted the password change",
                           user_name(pamh, &ub));
            else
                pam_syslog(pamh, LOG_ERR, "cannot get the new password: %s", pam_strerror(pamh, r));
            return PAM_AUTHTOK_ERR;
        }

        outcome res;
        ask_breachd(&o, tok, &res);
        bool refused = refuses(&o, &res);
        log_outcome(pamh, &o, &res, refused, enforced);
        if (refused && !o.audit) {
            char msg[256];
            refusal_message(&res, msg, sizeof(msg));
            pam_error(pamh, "%s", msg);
            if (enforced) {
                pam_set_item(pamh, PAM_AUTHTOK, NULL);
                /* A password from an earlier module cannot be asked again
                 * here (that would bypass the module that chose it), and a
                 * daemon that cannot be asked will not be fixed by retyping. */
                if (preset || res.v == V_ERROR)
                    return PAM_AUTHTOK_ERR;
                continue;
            }
        }

        if (preset)
            return PAM_SUCCESS;
        r = pam_get_authtok_verify(pamh, &tok, NULL);
        if (r == PAM_SUCCESS && tok)
            return PAM_SUCCESS;
        pam_set_item(pamh, PAM_AUTHTOK, NULL);
        if (r == PAM_TRY_AGAIN)
            continue; /* mistyped: "Sorry, passwords do not match." */
        pam_syslog(pamh, LOG_INFO, "user %s aborted the password change", user_name(pamh, &ub));
        return PAM_AUTHTOK_ERR;
    }
    pam_set_item(pamh, PAM_AUTHTOK, NULL);
    /* As pam_pwquality: with one try the real reason, else "too many tries". */
    return o.retry > 1 ? PAM_MAXTRIES : PAM_AUTHTOK_ERR;
}
