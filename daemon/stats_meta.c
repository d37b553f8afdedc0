/* SPDX-License-Identifier: MIT */
/* What each figure of STATS is, for the Prometheus text format's # HELP and
 * # TYPE lines (stats.c): a counter (named with _total there) or a gauge,
 * and one line of help. docs/protocol.md "STATS" describes the keys. */
#include <stdio.h>
#include <string.h>

#include "kinds.h"
#include "stats_figures.h"
#include "stats_meta.h"

typedef struct meta {
    const char *key; /* a trailing '*' matches any rest */
    bool counter;
    const char *help;
} meta;

/* clang-format off */
#define C(k, h) {k, true, h}
#define G(k, h) {k, false, h}

static const meta metas[] = {
    G("uptime_seconds", "seconds since breachd started"),
    G("urls_generation", "generation of the offline URL set served ([urls] follow)"),
    G("feed_age_*", "seconds since the feed's last success at the publisher ([urls] follow)"),
    G("connections", "open client connections"),
    C("connections_total", "client connections accepted"),
    C("connections_refused", "connections refused (max_connections, allowed_users)"),
    C("accept_pauses", "times accepting paused: out of descriptors or memory"),
    C("writes_early", "answers written between the batches of one read"),
    G("requests_in_flight", "requests waiting for an answer"),
    C("requests_total", "requests, every verb"),
    C("requests_*", "requests of this verb"),
    C("errors_*", "ERR answers of this code"),
    C("pw_clean", "CLEAN answers"),
    C("pw_pwned", "PWNED answers"),
    C("pw_unknown", "UNKNOWN answers"),
    C("pw_filter_no", "checks the filter answered definitely not"),
    C("pw_filter_maybe", "checks the filter answered maybe (then a range lookup)"),
    C("pw_filter_bypassed", "checks that bypassed a stale filter (then a range lookup)"),
    C("similar_hits", "SIMILAR answers: a variant is a popular password"),
    C("similar_clean", "CLEAN answers to SIMILAR"),
    C("similar_unknown", "UNKNOWN answers to SIMILAR (no offline filter, damaged)"),
    C("safe", "SAFE answers"),
    C("blocked", "BLOCKED answers"),
    C("allowed", "SAFE answers because an allow entry matched (counted in safe too)"),
    C("unknown", "UNKNOWN answers"),
    G("filter_loaded", "1 when the filter is loaded"),
    G("filter_generation", "the loaded filter's generation"),
    G("filter_keys", "the loaded filter's key count"),
    G("filter_age_seconds", "seconds since the loaded filter was built (a followed set: "
                            "since its oldest feed's or corpus's last success)"),
    G("filter_stale", "1 when the filter is past max_filter_age (bypassed, unless offline)"),
    G("filter_damaged", "1 when the filter was found truncated or rewritten in place"),
    C("filter_no", "checks the filter answered definitely not"),
    C("filter_maybe", "checks the filter answered maybe"),
    C("filter_bypassed", "checks that bypassed a stale filter"),
    G("cache_entries", "entries in the range cache"),
    G("cache_bytes", "bytes the range cache uses"),
    G("cache_max_bytes", "the range cache's max_size"),
    C("cache_evicted", "entries evicted for room"),
    G("cache_damaged", "1 when the cache files were found truncated or rewritten in place"),
    G("bulk_queue_depth", "bulk-lane checks waiting"),
    C("http_requests", "range endpoint requests"),
    C("http_ok", "range endpoint 200 answers"),
    C("http_not_modified", "range endpoint 304 answers"),
    C("http_bad_requests", "range endpoint 400 answers"),
    C("http_forbidden", "range endpoint 403 answers"),
    C("http_rate_limited", "range endpoint 429 answers"),
    C("http_unavailable", "range endpoint 503 answers"),
    C("http_prepared", "range endpoint 200 answers sent from a prepared body"),
    C("http_fast", "range endpoint requests answered without evhttp (plain GETs)"),
    C("reloads", "reloads that succeeded"),
    C("reload_failures", "reloads that failed"),
    C("internal_errors", "internal checks that failed (a bug to report)"),
    C("unknown_*", "UNKNOWN answers (PW, NT, URL) of this reason"),
    G("canary_interval_ms", "the canary's interval; 0: off"),
    G("canary_interval_seconds", "the canary's interval; 0: off"),
    G("canary_ok", "1 when the last canary run passed"),
    G("canary_last_time", "Unix time of the last canary run; 0: none yet"),
    C("canary_runs", "canary runs"),
    C("canary_failures", "canary runs that failed"),
};
/* clang-format on */

/* The metadata of key: the table above, or the row of a library's figure
 * (stats_figures.h). */
static bool find(const char *key, bool *counter, const char **help)
{
    for (size_t i = 0; i < sizeof(metas) / sizeof(metas[0]); i++) {
        const char *k = metas[i].key;
        size_t n = strlen(k);
        if (k[n - 1] == '*' ? strncmp(key, k, n - 1) == 0 : strcmp(key, k) == 0) {
            *counter = metas[i].counter;
            *help = metas[i].help;
            return true;
        }
    }
    const bd_figure_meta *f = bd_figure_meta_find(key);
    if (f) {
        *counter = f->counter;
        *help = f->help;
    }
    return f != NULL;
}

bool bd_stats_meta(const char *key, char *help, size_t size)
{
    /* a kind's key: PREFIX and the key of the meta it shares (kinds.h) */
    bool counter = false;
    const char *h = NULL;
    bool found = find(key, &counter, &h);
    const char *what = "";
    for (int i = 0; !found && i < BD_KINDS_; i++) {
        size_t n = strlen(bd_kinds[i].prefix);
        if (n && strncmp(key, bd_kinds[i].prefix, n) == 0 && find(key + n, &counter, &h)) {
            what = bd_kinds[i].stats_what;
            found = true;
        }
    }
    if (!found) {
        snprintf(help, size, "the STATS key %s (docs/protocol.md)", key);
        return false;
    }
    snprintf(help, size, "%s%s", what, h);
    return counter;
}
