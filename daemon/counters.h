/* SPDX-License-Identifier: MIT */
/* The daemon's counters: kept in bd_server (server_types.h), counted by the
 * verbs and the range endpoint, rendered by stats.c. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "kinds.h"
#include "proto/protocol.h"

/* The reasons of an UNKNOWN answer, counted apart (docs/operations.md):
 * the resolver's (BR_REASON_* in resolver.h), the URL filter's, and any
 * other. */
/* An offline filter changed or truncated in place (pw_check.c, url_check.c). */
#define BD_REASON_FILTER_DAMAGED "filter-damaged"

typedef enum bd_unknown_reason {
    BD_UNK_UPSTREAM_UNAVAILABLE,
    BD_UNK_UPSTREAM_ERROR,
    BD_UNK_TIMEOUT,
    BD_UNK_RATE_LIMITED,
    BD_UNK_CIRCUIT_OPEN,
    BD_UNK_SHUTTING_DOWN,
    BD_UNK_FILTER_UNAVAILABLE,
    BD_UNK_FILTER_STALE,
    BD_UNK_FILTER_DAMAGED,
    BD_UNK_OTHER,
    BD_UNK_COUNT_
} bd_unknown_reason;

/* The canary of one kind (canary.h): its last outcome. */
typedef struct bd_canary_figures {
    uint64_t runs, failures;
    int64_t last_time;  /* wall clock, s; 0: not run yet */
    bool configured;    /* this kind is checked at all */
    bool ok;            /* the last run passed */
    const char *reason; /* the last failure's reason (static), NULL after a pass */
} bd_canary_figures;

/* What a kind's filter answered (STATS PREFIXfilter_no, _maybe, _bypassed). */
typedef struct bd_filter_counts {
    uint64_t no, maybe, bypassed;
} bd_filter_counts;

typedef struct bd_counters {
    uint64_t requests[BR_VERB_COUNT_];
    uint64_t errors[BR_PERR_COUNT_];
    /* each kind's answers (kinds.h: the row names them in STATS);
     * SIMILAR's never count the variants looked up, whose count would tell
     * another user which password made them (docs/privacy.md) */
    uint64_t answers[BD_KINDS_][BD_ANS_COUNT_];
    bd_filter_counts filter[BD_KINDS_]; /* kinds whose row counts_filter */
    uint64_t connections_total, connections_refused;
    uint64_t accept_pauses; /* accepting paused: out of descriptors or memory */
    uint64_t writes_early;  /* answers written between the batches of one read (server.c) */
    uint64_t reloads, reload_failures;
    /* the range endpoint (http.h): requests, and their answers by kind */
    uint64_t http_requests, http_ok, http_not_modified, http_bad_requests, http_forbidden,
        http_rate_limited, http_unavailable;
    /* UNKNOWN answers of PW, NT and URL by reason (bd_unknown_reason) */
    uint64_t unknown_by_reason[BD_UNK_COUNT_];
    /* the canary (canary.h): its interval (0: off) and each kind's outcome */
    uint64_t canary_interval_ms;
    bd_canary_figures canary[BD_KINDS_]; /* kinds whose row has a canary */
    /* connections closed at accept past [http] max_connections(_per_client),
     * and closed at [http] header_timeout */
    uint64_t http_connections_refused, http_header_timeouts;
    /* 200 answers whose body came from a prepared one (http_prep.h) */
    uint64_t http_prepared;
    /* requests answered by the fast path, without evhttp (http.c) */
    uint64_t http_fast;
} bd_counters;

/* The counter index of an UNKNOWN reason string. */
bd_unknown_reason bd_unknown_reason_of(const char *reason);
