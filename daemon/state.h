/* SPDX-License-Identifier: MIT */
/* The daemon's reloadable state: configuration, verified filters, and the
 * resolver. A reload builds a complete new state off to the side (config and
 * filters in a worker thread, since verifying a multi-GiB filter takes
 * seconds) and swaps it in only when every part validated. Requests hold a
 * reference to the state they started on, so in-flight answers finish on the
 * old one. The LMDB cache is shared between states with the same path: LMDB
 * forbids opening one environment twice in a process. */
#pragma once

#include "filter/manifest.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "core/error.h"
#include "filter/pwfilter.h"
#include "filter/urlfilter.h"
#include "kinds.h"
#include "range/range_cache.h"
#include "range/resolver.h"
#include "state_banned.h"
#include "state_filters.h"

struct event_base;

typedef struct bd_cache {
    int refs;
    char *path;
    br_range_cache *cache;
} bd_cache;

typedef struct bd_state {
    int refs;
    struct bd_state *prev, *next; /* every live state, current and old */
    breachd_config *cfg;
    /* Each kind's filter (kinds.h), NULL: none configured. [urls]: an
     * offline set (offline.h), answered on the host; a range (Bloom) URL
     * filter is urlfilter instead. */
    br_pwfilter *filter[BD_KINDS_];
    br_urlfilter *urlfilter; /* NULL (and no offline set): URL checks answer UNKNOWN */
    br_banned *banned;       /* [passwords] banned_terms, site_terms (BANNED); NULL: none */
    uint64_t banned_generation;
    br_manifest follow[BD_KINDS_]; /* a followed section's accepted manifest (feed ages) */
    bd_cache *cache;
    br_resolver *resolver;
    int64_t loaded_at;              /* wall clock, seconds */
    bd_filter_ids filter_ids;       /* what each filter path held when loaded */
    int64_t stale_after[BD_KINDS_]; /* wall clock, s (bd_state_filter_stale) */
    bool told[BD_KINDS_];           /* its damage was logged */
    uint64_t intact[BD_KINDS_];     /* when (br_now_ns) each was last found intact */
} bd_state;

/* The parts a worker thread can build without the event loop. */
typedef struct bd_state_files {
    breachd_config *cfg;
    br_pwfilter *filter[BD_KINDS_];
    br_urlfilter *urlfilter;
    br_banned *banned;
    uint64_t banned_generation;
    br_manifest follow[BD_KINDS_]; /* a followed section's accepted manifest (feed ages) */
    bd_filter_ids filter_ids;
} bd_state_files;

/* Read the config and open and verify every filter it names. Thread-safe. */
int bd_state_files_load(const char *config_path, bd_state_files *out, br_error *err);
void bd_state_files_clear(bd_state_files *f);

/* Finish a state on the loop thread: cache (shared with old when it has the
 * same path) and resolver. Takes the files over (also on failure). A file
 * older than the one old serves from the same path is refused
 * (bd_filters_check_order). */
int bd_state_new(struct event_base *base, bd_state_files *files, const bd_state *old,
                 bd_state **out, br_error *err);

bd_state *bd_state_ref(bd_state *s);
/* At exit: answer every lookup still pending on any state (UNKNOWN
 * shutting-down) and free the resolvers, which flushes the cache. */
void bd_state_shutdown_all(void);
void bd_state_unref(bd_state *s);

/* Resolver and password-upstream figures summed over every state this
 * process had (live and retired), so reloads do not reset them. The
 * in-flight, queued and breaker figures are those of the current state. */
typedef struct bd_totals {
    br_resolver_stats resolver;
    /* each kind's range API (the PW one's are STATS upstream_*, the NT
     * one's nt_upstream_*); 0 for a kind with none */
    br_upstream_stats upstream[BD_KINDS_];
} bd_totals;
void bd_state_totals(const bd_state *current, bd_totals *t);

/* Whether a filter's "no" may be answered: false when a file of the set
 * was rewritten in place since it was loaded (br_pwfilter_changed) or
 * truncated under its mapping; then the set answers "maybe" until a
 * reload, and the first time this is logged at once. The files are
 * fstat'ed at a "no" unless they were found intact less than
 * BD_INTACT_RECHECK_NS ago: an fstat costs about as much as the rest of a
 * pipelined request. A kind with no filter is intact. Loop thread. */
#define BD_INTACT_RECHECK_NS 100000 /* 100 us */
/* The clock of those checks, read once per batch of requests. */
void bd_state_batch_begin(void);
bool bd_state_intact(bd_state *s, bd_kind k);
/* After a probe of the URL filter: when it said "no" to any of maybe[0..n)
 * and is not intact, every answer becomes "maybe". */
void bd_state_url_recheck(bd_state *s, bool *maybe, size_t n);
/* The same check of every filter of s, logging each damaged one once: the
 * housekeeping tick's. */
void bd_state_check_filters(bd_state *s);
/* Kind k's filter was found damaged: logged, or truncated now. */
bool bd_state_damaged(const bd_state *s, bd_kind k);

/* A filter's read lease was broken (SIGIO: someone opened a filter file for
 * writing; filter_file.h, br_filter_file_lease): every live state's
 * broken leases are let go at once, so that the opener proceeds, those
 * filters being damaged from now on, and current's checked and logged as
 * bd_state_check_filters does. Loop thread. */
void bd_state_writers_check(bd_state *current);

/* Log what the state serves, at start and after each reload: each filter's
 * generation and key count, a warning for a filter with no key. */
void bd_state_log_filters(const bd_state *s);

/* Kind k's filter, whichever its form (a range URL filter's header too);
 * NULL: none. */
const br_filter_header *bd_state_filter_header(const bd_state *s, bd_kind k);
/* The filter answers "definitely not" only when present and not older than
 * its section's max_filter_age; a stale filter is bypassed (every check goes
 * upstream), an offline one still answers, and [urls] follows when_stale. */
static inline bool bd_state_filter_stale(const bd_state *s, bd_kind k, int64_t now)
{
    return now > s->stale_after[k]; /* INT64_MAX: no filter, or it never ages */
}
/* The resolver partition of a peer's lookups ([cache] partition). */
uint32_t bd_state_partition(const bd_state *s, uid_t uid);
/* The resolver partition of the range endpoint's clients on a Unix socket
 * listener (breachd.conf(5) [http]; a TCP client has one of its own, a
 * keyed hash of its address in the upper half of the numbers, below this
 * one: http_range.c): theirs alone, whatever [cache] partition says. No
 * peer has it:
 * with partition = uid the one uid equal to it, 4294967294, is given
 * BR_RESOLVER_PARTITION_SHARED instead, which no other uid can have. */
#define BD_PARTITION_HTTP (UINT32_MAX - 1)
/* The canary's (canary.h): given to no peer either, in the same way. */
#define BD_PARTITION_CANARY (UINT32_MAX - 2)
/* The time kind k's data is as recent as: for a followed set ([urls],
 * [passwords], [ntlm] follow) the oldest last success of the publisher's feeds in the accepted
 * manifest (docs/fleet.md), so that a publisher whose feeds are held, or
 * that stopped, ages it; otherwise the filter's build time. 0: none. Its
 * age against max_filter_age is bd_state_filter_stale's. */
int64_t bd_state_data_time(const bd_state *s, bd_kind k);
