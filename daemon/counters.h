/* SPDX-License-Identifier: MIT */
/* The daemon's counters: kept in bd_server (server_types.h), counted by the
 * verbs and the range endpoint, rendered by stats.c. */
#pragma once

#include <stdint.h>

#include "protocol.h"

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
    uint64_t writes_early;  /* answers written between the batches of one read (server.c) */
    uint64_t reloads, reload_failures;
    /* the range endpoint (http.h): requests, and their answers by kind */
    uint64_t http_requests, http_ok, http_not_modified, http_bad_requests, http_forbidden,
        http_rate_limited, http_unavailable;
    /* connections closed at accept past [http] max_connections(_per_client),
     * and closed at [http] header_timeout */
    uint64_t http_connections_refused, http_header_timeouts;
} bd_counters;
