/* SPDX-License-Identifier: MIT */
/* The rows of STATS for the libraries' figure lists (stats_figures.h): one
 * per figure, made by expanding each list with a row macro per figure. */
#include <string.h>

#include "stats_figures.h"

/* SHOW(key, counter, help), SHOW_INTO(... sum): a line of STATS (and
 * added into a sum line); INTO(sum): only added into a sum; HIDE: not in
 * STATS. */
#define C true
#define G false
#define SHOW(k, c, h)                                                                              \
    {                                                                                              \
        .key = (k), .counter = (c), .help = (h)                                                    \
    }
#define SHOW_FORM(k, c, f, h)                                                                      \
    {                                                                                              \
        .key = (k), .counter = (c), .form = (f), .help = (h)                                       \
    }
#define SHOW_INTO(k, c, h, sum)                                                                    \
    {                                                                                              \
        .key = (k), .counter = (c), .help = (h), .into = 1 + (sum)                                 \
    }
#define INTO(sum)                                                                                  \
    {                                                                                              \
        .into = 1 + (sum)                                                                          \
    }
#define HIDE                                                                                       \
    {                                                                                              \
        0                                                                                          \
    }

/* clang-format off */
/* BR_UPSTREAM_FIGURES (upstream.h), one UP_<figure> each. */
#define UP_fetches SHOW("upstream_fetches", C, "range fetches asked of the upstream")
#define UP_transfers SHOW("upstream_transfers", C, "HTTP transfers started")
#define UP_retries SHOW("upstream_retries", C, "transfers after the first of a fetch")
#define UP_ok HIDE
#define UP_not_modified HIDE /* the resolver's cache_not_modified */
#define UP_err_http INTO(BD_UPS_ERRORS)
#define UP_err_timeout SHOW_INTO("upstream_timeouts", C, "fetches that timed out", BD_UPS_ERRORS)
#define UP_err_unavailable INTO(BD_UPS_ERRORS)
#define UP_err_too_large INTO(BD_UPS_ERRORS)
#define UP_err_circuit INTO(BD_UPS_CIRCUIT_REFUSED)
#define UP_cancelled HIDE
#define UP_refused_circuit INTO(BD_UPS_CIRCUIT_REFUSED)
#define UP_breaker_trips SHOW("upstream_breaker_trips", C, "times the circuit breaker opened")
#define UP_breaker_open_ms SHOW("upstream_breaker_open_ms", C, "time the circuit breaker was open or half-open")
#define UP_body_bytes HIDE
#define UP_inflight SHOW("upstream_in_flight", G, "transfers running")
#define UP_queued SHOW("upstream_queued", G, "fetches waiting for a slot or a token")
#define UP_backoff HIDE
#define UP_queued_max HIDE
#define UP_bulk_fetches HIDE
#define UP_promoted HIDE /* the resolver's upstream_promoted */
#define UP_bulk_queued SHOW("upstream_bulk_queued", G, "bulk-lane fetches waiting")
#define UP_bulk_queued_max HIDE
#define UP_bulk_inflight SHOW("upstream_bulk_in_flight", G, "bulk-lane transfers running")
#define UP_http_fetches HIDE
#define UP_http_queued SHOW("upstream_http_queued", G, "range endpoint (http lane) fetches waiting")
#define UP_http_inflight SHOW("upstream_http_in_flight", G, "range endpoint (http lane) transfers running")
#define UP_rate_limited SHOW("upstream_rate_limited", C, "429 answers, and 503 with Retry-After")
#define UP_err_rate_limited HIDE
#define UP_rate_decreases SHOW("upstream_rate_decreases", C, "halvings of the effective rate")
#define UP_pauses SHOW("upstream_pauses", C, "pauses a Retry-After started")
#define UP_paused_ms SHOW("upstream_paused_ms", C, "time paused by Retry-After")
#define UP_pause_left_ms SHOW("upstream_pause_left_ms", G, "time left of the pause now")
#define UP_rate_effective SHOW_FORM("upstream_rate_effective", G, BD_FIG_REAL, "transfers per second allowed now")
#define UP_breaker SHOW_FORM("circuit", G, BD_FIG_BREAKER, "the circuit breaker: 0 closed, 1 open, 2 half-open")

/* BR_RESOLVER_FIGURES (resolver.h), one RS_<figure> each. */
#define RS_lookups HIDE
#define RS_range_lookups HIDE
#define RS_cache_fresh SHOW("cache_hits", C, "lookups answered from a fresh cache entry")
#define RS_stale_answers SHOW("cache_stale_answers", C, "answers from an expired entry after an upstream failure")
#define RS_fetches SHOW("cache_misses", C, "range fetches started")
#define RS_revalidations SHOW("cache_revalidations", C, "conditional range fetches")
#define RS_coalesced SHOW("lookups_coalesced", C, "lookups that joined a pending fetch")
#define RS_not_modified SHOW("cache_not_modified", C, "304 answers to them")
#define RS_found HIDE
#define RS_not_found HIDE
#define RS_unknown HIDE /* the daemon counts its UNKNOWN answers by reason */
#define RS_unknown_unavailable HIDE
#define RS_unknown_error HIDE
#define RS_unknown_timeout HIDE
#define RS_unknown_circuit HIDE
#define RS_unknown_rate_limited HIDE
#define RS_parse_errors SHOW("upstream_parse_errors", C, "range bodies rejected")
#define RS_cache_errors SHOW("cache_errors", C, "failed cache reads and writes")
#define RS_flushes HIDE
#define RS_decoys SHOW("upstream_decoys", C, "decoy fetches sent")
#define RS_bulk_lookups HIDE
#define RS_promoted SHOW("upstream_promoted", C, "bulk fetches promoted by an interactive check")
#define RS_bulk_resent HIDE
#define RS_pending_fetches HIDE
#define RS_pending_lookups HIDE
/* clang-format on */

#define UP_ROW_(type, name, how) [BD_UPF_##name] = UP_##name,
#define RS_ROW_(type, name, how) [BD_RSF_##name] = RS_##name,

const bd_figure_meta bd_upstream_meta[BD_UPF_COUNT_] = {BR_UPSTREAM_FIGURES(UP_ROW_)};
const bd_figure_meta bd_resolver_meta[BD_RSF_COUNT_] = {BR_RESOLVER_FIGURES(RS_ROW_)};

const bd_figure_meta bd_upstream_sum_meta[BD_UPS_COUNT_] = {
    [BD_UPS_ERRORS] = SHOW("upstream_errors", C, "fetches that failed"),
    [BD_UPS_CIRCUIT_REFUSED] =
        SHOW("upstream_circuit_refused", C, "fetches the open circuit refused or ended"),
};

/* A figure's value, a double kept apart from the whole numbers (a negative
 * rate_effective is "unlimited", not a number to convert). */
#define VALUE_(field)                                                                              \
    (bd_figure_value)                                                                              \
    {                                                                                              \
        .u = _Generic((field), double : 0, default : (uint64_t)(field)), .d = (double)(field)      \
    }
#define UP_GET_(type, name, how)                                                                   \
    case BD_UPF_##name:                                                                            \
        return VALUE_(s->name);
#define RS_GET_(type, name, how)                                                                   \
    case BD_RSF_##name:                                                                            \
        return VALUE_(s->name);

bd_figure_value bd_upstream_value(const br_upstream_stats *s, bd_upstream_figure f)
{
    switch (f) {
        BR_UPSTREAM_FIGURES(UP_GET_)
    case BD_UPF_COUNT_:
        break;
    }
    return (bd_figure_value){0, 0};
}

bd_figure_value bd_resolver_value(const br_resolver_stats *s, bd_resolver_figure f)
{
    switch (f) {
        BR_RESOLVER_FIGURES(RS_GET_)
    case BD_RSF_COUNT_:
        break;
    }
    return (bd_figure_value){0, 0};
}

uint64_t bd_upstream_sum_value(const br_upstream_stats *s, bd_upstream_sum sum)
{
    uint64_t v = 0;
    for (int f = 0; f < BD_UPF_COUNT_; f++)
        if (bd_upstream_meta[f].into == 1 + sum)
            v += bd_upstream_value(s, (bd_upstream_figure)f).u;
    return v;
}

static const bd_figure_meta *find_in(const bd_figure_meta *rows, size_t n, const char *key,
                                     size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].key && strlen(rows[i].key) == len && strncmp(rows[i].key, key, len) == 0)
            return &rows[i];
    return NULL;
}

static const bd_figure_meta *find_key(const char *key, size_t len)
{
    const bd_figure_meta *m = find_in(bd_upstream_meta, BD_UPF_COUNT_, key, len);
    if (!m)
        m = find_in(bd_resolver_meta, BD_RSF_COUNT_, key, len);
    if (!m)
        m = find_in(bd_upstream_sum_meta, BD_UPS_COUNT_, key, len);
    return m;
}

const bd_figure_meta *bd_figure_meta_find(const char *key)
{
    size_t n = strlen(key);
    const bd_figure_meta *m = find_key(key, n);
    /* Prometheus names a KEY_ms figure KEY_seconds (stats.c) */
    if (!m && n > 8 && strcmp(key + n - 8, "_seconds") == 0) {
        char ms[96];
        if (n - 8 + 3 < sizeof(ms)) {
            memcpy(ms, key, n - 8);
            memcpy(ms + n - 8, "_ms", 4);
            m = find_key(ms, n - 5);
        }
    }
    /* the breaker's Prometheus line: KEY_state */
    if (!m && n > 6 && strcmp(key + n - 6, "_state") == 0) {
        m = find_key(key, n - 6);
        m = m && m->form == BD_FIG_BREAKER ? m : NULL;
    }
    return m;
}
