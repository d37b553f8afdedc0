/* SPDX-License-Identifier: MIT */
/* Counters of the daemon, rendered as the one-line STATS answer and as
 * Prometheus text at metrics_listen (libevent's evhttp, loopback only). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

struct bd_server;
struct event_base;

typedef struct bd_counters {
    uint64_t requests[BR_VERB_COUNT_];
    uint64_t errors[BR_PERR_COUNT_];
    uint64_t pw_clean, pw_pwned, pw_unknown;
    uint64_t pw_filter_no, pw_filter_maybe, pw_filter_bypassed;
    uint64_t nt_clean, nt_pwned, nt_unknown; /* NT: as pw_* for NT hashes */
    uint64_t nt_filter_no, nt_filter_maybe, nt_filter_bypassed;
    uint64_t url_safe, url_blocked, url_unknown;
    uint64_t url_filter_no, url_filter_maybe, url_filter_bypassed;
    uint64_t connections_total, connections_refused;
    uint64_t accept_pauses; /* accepting paused: out of descriptors or memory */
    uint64_t reloads, reload_failures;
    /* the range endpoint (http.h): requests, and their answers by kind */
    uint64_t http_requests, http_ok, http_not_modified, http_bad_requests, http_forbidden,
        http_rate_limited, http_unavailable;
} bd_counters;

/* Render every figure as "key=value" pairs separated by sep, with a prefix
 * before each key ("" for STATS, "breachd_" for Prometheus), into buf.
 * Returns the length (truncated to fit, never over size-1). */
size_t bd_stats_render(struct bd_server *srv, char *buf, size_t size);

typedef struct bd_metrics bd_metrics;
/* Serve GET /metrics on host:port. */
int bd_metrics_start(struct event_base *base, struct bd_server *srv, const char *host,
                     uint16_t port, bd_metrics **out);
void bd_metrics_stop(bd_metrics *m);
