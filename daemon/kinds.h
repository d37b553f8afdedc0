/* SPDX-License-Identifier: MIT */
/* The filter kinds the daemon serves, as one table (docs/architecture.md,
 * "Filter kinds"): a row per kind says its configuration section, its range
 * kind and verb, its STATS prefix and answers, and whether it ages. The
 * state (state.h), the counters (counters.h) and STATS (stats.c) are arrays
 * indexed by bd_kind and loops over the rows, and so are the loaders
 * (state_filters.c), the canary (canary.c) and the offline warnings
 * (offline.c): each reads what it needs of a kind from its row. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "filter/filter_file.h"
#include "proto/protocol.h"
#include "range/range.h"

/* The order of the rows is the order of their STATS answer lines. */
typedef enum bd_kind {
    BD_KIND_PW,      /* [passwords] filter: PW, SHA-1 */
    BD_KIND_NT,      /* [ntlm] filter: NT, NT hashes */
    BD_KIND_URL,     /* [urls] filter: URL (a range filter or an offline set) */
    BD_KIND_SIMILAR, /* [passwords] similar_filter: SIMILAR (offline only) */
    BD_KINDS_
} bd_kind;

/* The answers counted per kind (bd_counters.answers), named by each row. */
typedef enum bd_answer {
    BD_ANS_PASS,    /* CLEAN, SAFE */
    BD_ANS_HIT,     /* PWNED, BLOCKED, SIMILAR */
    BD_ANS_ALLOWED, /* SAFE because an allow entry matched (counted in PASS too) */
    BD_ANS_UNKNOWN,
    BD_ANS_COUNT_
} bd_answer;

/* One STATS answer line: PREFIX name, and its counter. */
typedef struct bd_answer_row {
    const char *name; /* NULL ends the list */
    bd_answer answer;
} bd_answer_row;

struct breachd_config;

typedef struct bd_kind_row {
    /* its names */
    const char *name;          /* in log lines: "password", "NTLM" */
    const char *section;       /* its breachd.conf section */
    const char *checks;        /* before "check" in log lines: "NT" */
    const char *prefix;        /* of its STATS keys: "", "nt_" */
    const char *counts_prefix; /* of its answers and filter counts: "pw_", "nt_" */
    /* before the Prometheus help of a PREFIX key (stats_meta.c); NULL: no prefix */
    const char *stats_what;
    br_range_kind range;
    br_verb verb; /* its own: no two rows share one */

    /* its keys: offsetof(breachd_config, the key); 0: it has none */
    size_t filter_off;       /* its filter (always one) */
    const char *filter_key;  /* that key's name: "filter", "similar_filter" */
    size_t pubkey_off;       /* the pubkey its files verify against (always one) */
    size_t max_age_off;      /* max_filter_age_s; none: it never ages */
    size_t upstream_off;     /* upstream; none: it shares another kind's */
    size_t min_count_ok_off; /* min_count_ok */
    /* when_stale; none: a stale range filter is bypassed (an offline one
     * keeps answering) */
    size_t when_stale_off;

    /* its filter (state_filters.c) */
    uint32_t filter_kind; /* of its files (BR_KIND_*, filter_file.h) */
    /* its br_pwfilter must be offline ([urls]: a range one is a br_urlfilter, state.h) */
    bool offline_only;
    const char *build_hint; /* after "build one with" when its file is missing */
    const char *if_empty;   /* logged for a filter with no key */

    /* its upstream, for the offline warnings (offline.c) */
    bool range_endpoint;        /* [http] listen serves its range bodies */
    bool upstream_default_none; /* none by default: upstream = none says nothing */
    bool off_without_filter;    /* with no filter, upstream = none turns it off */

    /* its canary (canary.c; both NULL: none): the hex of a key every
     * breach corpus holds, which its filter must find, or the lookup
     * expression of a test URL, which a feed need not list */
    const char *canary_hex, *canary_expr;

    /* its STATS lines */
    bool counts_filter;    /* PREFIXfilter_no, _maybe, _bypassed */
    bool upstream_figures; /* its range API's figures (PREFIXupstream_*) */
    bool damage_figure;    /* PREFIXfilter_damaged */
    /* its PREFIXfilter_* figures after the other kinds' (the order STATS
     * has always had: [urls]' last) */
    bool filter_figures_last;
    bd_answer_row answers[BD_ANS_COUNT_ + 1];
} bd_kind_row;

extern const bd_kind_row bd_kinds[BD_KINDS_];

/* The kind whose row answers verb; BD_KINDS_ for a verb of no kind. */
bd_kind bd_kind_of_verb(br_verb verb);

/* A key of kind k's section in cfg, at offset off of breachd_config. */
#define BD_KIND_CFG_(cfg, off, type) (*(const type *)((const char *)(cfg) + (off)))

/* The configured filter path of kind k ("" when none). */
static inline const char *bd_kind_filter_path(const struct breachd_config *cfg, bd_kind k)
{
    return BD_KIND_CFG_(cfg, bd_kinds[k].filter_off, char *);
}

/* Its upstream (range API URL template; "" when none, or no such key). */
static inline const char *bd_kind_upstream(const struct breachd_config *cfg, bd_kind k)
{
    return bd_kinds[k].upstream_off ? BD_KIND_CFG_(cfg, bd_kinds[k].upstream_off, char *) : "";
}

/* Its max_filter_age in seconds; INT64_MAX for a kind that never ages. */
static inline int64_t bd_kind_max_age(const struct breachd_config *cfg, bd_kind k)
{
    return bd_kinds[k].max_age_off ? BD_KIND_CFG_(cfg, bd_kinds[k].max_age_off, int64_t)
                                   : INT64_MAX;
}
