/* SPDX-License-Identifier: MIT */
/* pam_breachd's module arguments (pam_breachd(8), OPTIONS). Every stage
 * accepts every option and uses those that concern it, so one list can
 * be copied to each line. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <security/pam_ext.h>

#include "config.h"
#include "pam_breachd.h"

const char *pb_policy_name(pb_policy p)
{
    return p == PB_DENY ? "deny" : "allow";
}

const char *pb_action_name(const pb_options *o, char *buf, size_t size)
{
    if (o->action == PB_GRACE)
        snprintf(buf, size, "grace=%d", o->grace_days);
    else
        snprintf(buf, size, "%s", o->action == PB_FORCE ? "force" : "warn");
    return buf;
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

static bool parse_policy(const char *s, pb_policy *out)
{
    if (strcmp(s, "deny") == 0)
        *out = PB_DENY;
    else if (strcmp(s, "allow") == 0)
        *out = PB_ALLOW;
    else
        return false;
    return true;
}

/* force | warn | grace=N */
static bool parse_action(const char *s, pb_options *o)
{
    const char *v;
    uint64_t n;
    if (strcmp(s, "force") == 0)
        o->action = PB_FORCE;
    else if (strcmp(s, "warn") == 0)
        o->action = PB_WARN;
    else if ((v = opt_value(s, "grace")) && parse_u64(v, 0, PB_MAX_GRACE_DAYS, &n))
        o->action = PB_GRACE, o->grace_days = (int)n;
    else
        return false;
    return true;
}

/* reject | warn | off, as values[0], [1], [2] (similar=, banned=). */
static bool parse_rwo(const char *s, const int values[3], int *out)
{
    static const char *const names[] = {"reject", "warn", "off"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = values[i];
            return true;
        }
    return false;
}

/* A comma list of names: no empty name, no space or control character. */
static bool parse_list(const char *s, const char **out)
{
    if (!*s || *s == ',' || s[strlen(s) - 1] == ',' || strstr(s, ",,"))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= 0x20 || *p == 0x7f)
            return false;
    *out = s;
    return true;
}

/* One option: false for a bad value; *unknown set for an unknown name. */
static bool parse_one(const char *a, pb_options *o, bool *unknown)
{
    const char *v;
    uint64_t n;
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
        return *v == '/' ? (o->socket = v, true) : false;
    else if ((v = opt_value(a, "log_file")))
        return *v == '/' && v[strlen(v) - 1] != '/' ? (o->log_file = v, true) : false;
    else if ((v = opt_value(a, "state")))
        return *v == '/' && v[strlen(v) - 1] != '/' ? (o->state = v, true) : false;
    else if ((v = opt_value(a, "timeout")))
        return parse_u64(v, 1, PB_MAX_TIMEOUT_MS, &n) ? (o->timeout_ms = (int)n, true) : false;
    else if ((v = opt_value(a, "min_count")))
        return parse_u64(v, 1, UINT64_MAX, &n) ? (o->min_count = n, true) : false;
    else if ((v = opt_value(a, "similar")))
        return parse_rwo(v, (const int[]){PB_SIMILAR_REJECT, PB_SIMILAR_WARN, PB_SIMILAR_OFF},
                         (int *)&o->similar);
    else if ((v = opt_value(a, "banned")))
        return parse_rwo(v, (const int[]){PB_BANNED_REJECT, PB_BANNED_WARN, PB_BANNED_OFF},
                         (int *)&o->banned);
    else if ((v = opt_value(a, "similar_min_count")))
        return parse_u64(v, 1, UINT64_MAX, &n) ? (o->similar_min_count = n, true) : false;
    else if ((v = opt_value(a, "retry")))
        return parse_u64(v, 0, 100, &n) ? (o->retry = n < 1 ? 1 : (int)n, true) : false;
    else if ((v = opt_value(a, "on_unknown")))
        return parse_policy(v, &o->on_unknown);
    else if ((v = opt_value(a, "on_error")))
        return parse_policy(v, &o->on_error);
    else if ((v = opt_value(a, "login_action")))
        return parse_action(v, o);
    else if ((v = opt_value(a, "skip_users")))
        return parse_list(v, &o->skip_users);
    else if ((v = opt_value(a, "skip_groups")))
        return parse_list(v, &o->skip_groups);
    else if ((v = opt_value(a, "only_groups")))
        return parse_list(v, &o->only_groups);
    else
        *unknown = true;
    return true;
}

/* As pam_pwquality does: an unknown option, or a bad value for a known one,
 * is logged and ignored (the default stays), so a typo never locks users
 * out. The defaults are the strict ones at a change and let a login
 * through when the daemon cannot answer. */
void pb_parse_options(pam_handle_t *pamh, pb_stage stage, int argc, const char **argv,
                      pb_options *o)
{
    pb_policy fail = stage == PB_CHANGE ? PB_DENY : PB_ALLOW;
    *o = (pb_options){
        .socket = BREACHD_DEFAULT_SOCKET,
        .timeout_ms = PB_DEFAULT_TIMEOUT_MS,
        .min_count = 1,
        .on_unknown = fail,
        .on_error = fail,
        .retry = 1,
        .action = PB_FORCE,
        .state = PB_DEFAULT_STATE,
        .similar = PB_SIMILAR_WARN,
        .similar_min_count = PB_DEFAULT_SIMILAR_MIN_COUNT,
    };
    for (int i = 0; i < argc; i++) /* where the lines below go, first */
        if (opt_value(argv[i], "log_file") && argv[i][strlen("log_file=")] == '/')
            o->log_file = argv[i] + strlen("log_file=");
    pb_log_to(pamh, o->log_file);
    for (int i = 0; i < argc; i++) {
        bool unknown = false;
        bool ok = parse_one(argv[i], o, &unknown);
        if (unknown)
            pb_syslog(pamh, LOG_ERR, "unknown option ignored: %s", argv[i]);
        else if (!ok)
            pb_syslog(pamh, LOG_ERR, "bad value ignored, keeping the default: %s", argv[i]);
    }
    if (o->debug) {
        char act[32];
        pb_syslog(pamh, LOG_DEBUG,
                  "socket=%s timeout=%d min_count=%" PRIu64 " on_unknown=%s on_error=%s "
                  "retry=%d login_action=%s similar=%s similar_min_count=%" PRIu64
                  " banned=%s state=%s skip_users=%s skip_groups=%s only_groups=%s%s%s%s",
                  o->socket, o->timeout_ms, o->min_count, pb_policy_name(o->on_unknown),
                  pb_policy_name(o->on_error), o->retry, pb_action_name(o, act, sizeof(act)),
                  o->similar == PB_SIMILAR_REJECT ? "reject"
                  : o->similar == PB_SIMILAR_WARN ? "warn"
                                                  : "off",
                  o->similar_min_count,
                  o->banned == PB_BANNED_REJECT ? "reject"
                  : o->banned == PB_BANNED_WARN ? "warn"
                  : o->banned == PB_BANNED_OFF  ? "off"
                                                : "default",
                  o->state, o->skip_users ? o->skip_users : "",
                  o->skip_groups ? o->skip_groups : "", o->only_groups ? o->only_groups : "",
                  o->audit ? " audit" : "", o->enforce_for_root ? " enforce_for_root" : "",
                  o->use_authtok ? " use_authtok" : "");
    }
}
