/* SPDX-License-Identifier: MIT */
/* breachctl health: one check for monitoring systems, in the Nagios /
 * monitoring-plugins conventions (breachctl(1) HEALTH CHECKS,
 * docs/operations.md): one status line "BREACHD STATE - text | perfdata",
 * exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN. It reads STATS, so the
 * caller must be in admin_users or stats_users. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "breachctl.h"
#include "proto/client.h"
#include "ctl_opts.h"
#include "core/util.h"

enum { H_OK, H_WARNING, H_CRITICAL, H_UNKNOWN };
static const char *const state_names[] = {"OK", "WARNING", "CRITICAL", "UNKNOWN"};

typedef struct health {
    const char *stats; /* "key=value key=value ..." */
    int state;
    char problems[1024]; /* "; "-separated, in the order found */
    char info[512];      /* what is fine, said when nothing is wrong */
    char perf[2048];
} health;

static const ctl_usage health_usage[] = {
    {"health",
     "[--warning-age DURATION] [--critical-age DURATION] [--warning-feed-age DURATION] "
     "[--critical-feed-age DURATION] [--timeout MS] [--socket PATH]",
     "One line for monitoring systems (Nagios, Icinga, monitoring-plugins): BREACHD OK, "
     "WARNING, CRITICAL or UNKNOWN, what is wrong, and performance data after '|'. Checks the "
     "daemon answers, filter ages (defaults 30d warning, 60d critical) and damage, the ages of "
     "a followed publisher's feeds ([urls] follow; defaults 15m warning, 1h critical), the last "
     "canary, the upstream circuit breaker and the cache. Needs admin_users or stats_users. "
     "Exit status 0 OK, 1 WARNING, 2 CRITICAL (also: daemon unreachable), 3 UNKNOWN."},
};

void cmd_health_summary(FILE *out)
{
    ctl_usage_summary(out, health_usage, BR_ARRAY_SIZE(health_usage));
}

static void usage(FILE *out)
{
    ctl_usage_command(out, health_usage, BR_ARRAY_SIZE(health_usage), "health");
    fputs("DURATION: a whole number with a unit s, m, h or d (bare: seconds); 0: no limit.\n", out);
}

/* A duration in seconds: N[s|m|h|d]. */
static bool opt_age(const char *cmd, const char *arg, void *dst)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    uint64_t mul = !*end               ? 1
                   : !strcmp(end, "s") ? 1
                   : !strcmp(end, "m") ? 60
                   : !strcmp(end, "h") ? 3600
                   : !strcmp(end, "d") ? 86400
                                       : 0;
    if (errno || end == arg || *arg == '-' || !mul || v > UINT64_MAX / 86400) {
        ctl_err("%s: '%s': expected a duration such as 30d, 12h or 3600s", cmd, arg);
        return false;
    }
    *(uint64_t *)dst = v * mul;
    return true;
}

/* The value of key in the STATS line, NULL when absent. */
static const char *value_of(const health *h, const char *key, char *buf, size_t size)
{
    size_t kl = strlen(key);
    for (const char *p = h->stats; *p;) {
        size_t n = strcspn(p, " ");
        if (n > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            snprintf(buf, size, "%.*s", (int)(n - kl - 1), p + kl + 1);
            return buf;
        }
        p += n;
        while (*p == ' ')
            p++;
    }
    return NULL;
}

static uint64_t num_of(const health *h, const char *key)
{
    char buf[64];
    const char *v = value_of(h, key, buf, sizeof(buf));
    return v ? strtoull(v, NULL, 10) : 0;
}

static void problem(health *h, int state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problem(health *h, int state, const char *fmt, ...)
{
    if (state > h->state)
        h->state = state;
    size_t len = strlen(h->problems);
    if (len && len + 2 < sizeof(h->problems)) {
        memcpy(h->problems + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->problems + len, sizeof(h->problems) - len, fmt, ap);
    va_end(ap);
}

static void perf(health *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void perf(health *h, const char *fmt, ...)
{
    size_t len = strlen(h->perf);
    if (len + 2 >= sizeof(h->perf))
        return;
    if (len)
        h->perf[len++] = ' ';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->perf + len, sizeof(h->perf) - len, fmt, ap);
    va_end(ap);
}

static void age_text(uint64_t s, char *buf, size_t size)
{
    if (s >= 2 * 86400)
        snprintf(buf, size, "%llud", (unsigned long long)(s / 86400));
    else if (s >= 2 * 3600)
        snprintf(buf, size, "%lluh", (unsigned long long)(s / 3600));
    else
        snprintf(buf, size, "%llus", (unsigned long long)s);
}

/* One filter (prefix "", "nt_", "url_"): age against the thresholds, stale,
 * damaged. */
static void check_filter(health *h, const char *prefix, const char *what, uint64_t warn,
                         uint64_t crit)
{
    char key[64], age[32];
    snprintf(key, sizeof(key), "%sfilter_loaded", prefix);
    if (!num_of(h, key))
        return;
    snprintf(key, sizeof(key), "%sfilter_age_seconds", prefix);
    uint64_t a = num_of(h, key);
    age_text(a, age, sizeof(age));
    perf(h, "%sfilter_age=%llus;%llu;%llu;0", prefix, (unsigned long long)a,
         (unsigned long long)warn, (unsigned long long)crit);
    size_t il = strlen(h->info);
    snprintf(h->info + il, sizeof(h->info) - il, "%s%s filter %s old", il ? ", " : "", what, age);
    snprintf(key, sizeof(key), "%sfilter_damaged", prefix);
    if (num_of(h, key))
        problem(h, H_CRITICAL, "%s filter damaged (truncated or rewritten in place)", what);
    if (crit && a >= crit)
        problem(h, H_CRITICAL, "%s filter %s old", what, age);
    else if (warn && a >= warn)
        problem(h, H_WARNING, "%s filter %s old", what, age);
    snprintf(key, sizeof(key), "%sfilter_stale", prefix);
    if (num_of(h, key))
        problem(h, H_WARNING, "%s filter past max_filter_age", what);
}

/* One canary (prefix "", "nt_", "url_"): failed, or not run for 3 periods. */
static void check_canary(health *h, const char *prefix, const char *what, int64_t now)
{
    char key[64], buf[64], reason[64];
    snprintf(key, sizeof(key), "%scanary", prefix);
    const char *st = value_of(h, key, buf, sizeof(buf));
    if (!st || !strcmp(st, "off") || !strcmp(st, "pending"))
        return;
    snprintf(key, sizeof(key), "%scanary_last_time", prefix);
    int64_t last = (int64_t)num_of(h, key);
    uint64_t ago = now > last ? (uint64_t)(now - last) : 0;
    perf(h, "%scanary_age=%llus", prefix, (unsigned long long)ago);
    snprintf(key, sizeof(key), "%scanary_failures", prefix);
    perf(h, "%scanary_failures=%lluc", prefix, (unsigned long long)num_of(h, key));
    size_t il = strlen(h->info);
    snprintf(h->info + il, sizeof(h->info) - il, "%s%s canary %s %llus ago", il ? ", " : "", what,
             st, (unsigned long long)ago);
    if (!strcmp(st, "failed")) {
        snprintf(key, sizeof(key), "%scanary_reason", prefix);
        if (!value_of(h, key, reason, sizeof(reason)))
            snprintf(reason, sizeof(reason), "?");
        problem(h, !strcmp(reason, "stale-answer") ? H_WARNING : H_CRITICAL, "%s canary failed: %s",
                what, reason);
    }
    /* Three periods and the longest a lookup may take: not running. */
    uint64_t interval_s = num_of(h, "canary_interval_ms") / 1000;
    if (interval_s && ago > 3 * interval_s + 120)
        problem(h, H_WARNING, "%s canary last ran %llus ago", what, (unsigned long long)ago);
}

/* Every feed_age_NAME of a followed publisher ([urls] follow). */
static void check_feeds(health *h, uint64_t warn, uint64_t crit)
{
    static const char key[] = "feed_age_";
    for (const char *p = h->stats; (p = strstr(p, key));) {
        bool start = p == h->stats || p[-1] == ' ';
        const char *name = p + strlen(key), *eq = strchr(name, '=');
        p = name;
        if (!start || !eq)
            continue;
        uint64_t a = strtoull(eq + 1, NULL, 10);
        char age[32];
        age_text(a, age, sizeof(age));
        int n = (int)(eq - name);
        perf(h, "feed_age_%.*s=%llus;%llu;%llu;0", n, name, (unsigned long long)a,
             (unsigned long long)warn, (unsigned long long)crit);
        if (crit && a >= crit)
            problem(h, H_CRITICAL, "feed %.*s last succeeded %s ago", n, name, age);
        else if (warn && a >= warn)
            problem(h, H_WARNING, "feed %.*s last succeeded %s ago", n, name, age);
    }
}

static void check_daemon(health *h, uint64_t warn, uint64_t crit)
{
    char buf[64];
    check_filter(h, "", "password", warn, crit);
    check_filter(h, "nt_", "NTLM", warn, crit);
    check_filter(h, "url_", "URL", warn, crit);
    int64_t now = (int64_t)time(NULL);
    check_canary(h, "", "password", now);
    check_canary(h, "nt_", "NT", now);
    check_canary(h, "url_", "URL", now);
    static const char *const circuits[][2] = {{"circuit", "password"}, {"nt_circuit", "NTLM"}};
    for (size_t i = 0; i < BR_ARRAY_SIZE(circuits); i++) {
        const char *c = value_of(h, circuits[i][0], buf, sizeof(buf));
        if (c && !strcmp(c, "open"))
            problem(h, H_CRITICAL, "%s upstream circuit open (checks answer UNKNOWN)",
                    circuits[i][1]);
        else if (c && strcmp(c, "closed"))
            problem(h, H_WARNING, "%s upstream circuit %s", circuits[i][1], c);
    }
    if (num_of(h, "cache_damaged"))
        problem(h, H_WARNING, "range cache damaged (checks go on uncached)");
    if (num_of(h, "internal_errors"))
        problem(h, H_WARNING, "%llu internal errors (see the log)",
                (unsigned long long)num_of(h, "internal_errors"));
    static const char *const counters[] = {"cache_errors", "upstream_errors", "pw_unknown",
                                           "nt_unknown",   "url_unknown",     "pw_filter_bypassed"};
    for (size_t i = 0; i < BR_ARRAY_SIZE(counters); i++)
        perf(h, "%s=%lluc", counters[i], (unsigned long long)num_of(h, counters[i]));
    perf(h, "upstream_breaker_open=%.3fs", (double)num_of(h, "upstream_breaker_open_ms") / 1000.0);
}

/* Connect and read STATS into h->stats (owned by a). H_OK or the state of
 * the failure, with its text in h->problems. */
static int read_stats(health *h, const char *sock, int timeout_ms, br_answer *a)
{
    br_error err = {{0}};
    _cleanup_(br_client_freep) br_client *c = NULL;
    if (br_client_connect(sock, timeout_ms, &c, &err) < 0 ||
        br_client_command(c, "STATS", a, &err) < 0) {
        problem(h, H_CRITICAL, "breachd does not answer: %s", err.text);
        return h->state;
    }
    if (a->kind == BR_ANSWER_ERROR) {
        bool forbidden = strncmp(a->detail, "forbidden", 9) == 0;
        problem(h, H_UNKNOWN, "%s%s",
                forbidden ? "cannot read STATS (add this user to "
                            "stats_users): "
                          : "STATS: ",
                a->detail);
        return h->state;
    }
    h->stats = a->detail + (strncmp(a->detail, "STATS ", 6) == 0 ? 6 : 0);
    return H_OK;
}

int cmd_health(const ctl_globals *g, int argc, char **argv)
{
    const char *sock = g->socket_path;
    uint64_t warn = 30 * 86400ull, crit = 60 * 86400ull, fwarn = 15 * 60, fcrit = 3600;
    int timeout_ms = 10000;
    const ctl_opt opts[] = {
        CTL_FN("warning-age", &warn, opt_age),
        CTL_FN("critical-age", &crit, opt_age),
        CTL_FN("warning-feed-age", &fwarn, opt_age),
        CTL_FN("critical-feed-age", &fcrit, opt_age),
        CTL_FN("timeout", &timeout_ms, ctl_opt_timeout_ms),
        CTL_STR("socket", &sock),
        CTL_HELP,
    };
    int first;
    int r = ctl_getopt("health", opts, BR_ARRAY_SIZE(opts), usage, argc, argv, &first);
    if (r > 0)
        return H_OK;
    if (r == 0 && first < argc)
        ctl_err("health: unexpected argument '%s'", argv[first]);
    if (r < 0 || first < argc) { /* UNKNOWN, as the plugins answer a bad command line */
        printf("BREACHD UNKNOWN - bad command line (see breachctl health --help)\n");
        return H_UNKNOWN;
    }
    health *h = calloc(1, sizeof(*h));
    br_answer *a = calloc(1, sizeof(*a));
    if (!h || !a) {
        free(h);
        free(a);
        printf("BREACHD UNKNOWN - out of memory\n");
        return H_UNKNOWN;
    }
    if (read_stats(h, sock, timeout_ms, a) == H_OK) {
        check_daemon(h, warn, crit);
        check_feeds(h, fwarn, fcrit);
    }
    int state = h->state;
    printf("BREACHD %s - %s%s%s\n", state_names[state],
           h->problems[0] ? h->problems
           : h->info[0]   ? h->info
                          : "breachd answers",
           h->perf[0] ? " | " : "", h->perf);
    free(h);
    free(a);
    return state;
}
