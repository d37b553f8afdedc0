/* SPDX-License-Identifier: MIT */
/* Process hygiene, the SIGBUS handler for truncated filters and cache files,
 * and the purge timer; see housekeeping.h. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include <event2/event.h>

#include "housekeeping.h"
#include "log.h"
#include "core/clock.h"
#include "core/map_guard.h"
#include "range/range_cache.h"

/* ---- at start ------------------------------------------------------------------- */

static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
    (void)uctx;
    /* A fault in a filter's or the range cache's mapping (si_code > 0:
     * raised by the kernel for this access) is repaired and the read resumes
     * on zero pages. */
    if (si->si_code > 0 && br_map_guard_fault(si->si_addr))
        return;
    /* Anything else gets the default action: for a fault, the faulting
     * instruction runs again and raises it; a sent signal is raised again. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (si->si_code <= 0)
        raise(sig);
}

int bd_hygiene_init(void)
{
    /* Not dumpable: no core file (it would hold hashes and cached ranges),
     * and other processes of the breachd user cannot ptrace it or read
     * /proc/PID/mem, environ, maps or fd. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return -errno;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, NULL) < 0)
        return -errno;
    /* A broken read lease on a filter (filter_file.h) is told with SIGIO,
     * whose default action would end the process: ignored until the loop
     * handles it (bd_housekeeping_new). */
    if (signal(SIGIO, SIG_IGN) == SIG_ERR)
        return -errno;
    return 0;
}

/* ---- the timer -------------------------------------------------------------------- */

#define TICK_MIN_S 1
#define TICK_MAX_S 60

struct bd_housekeeping {
    bd_server *srv;
    struct event *ev;
    struct event *lease_ev; /* SIGIO: a filter's read lease broken */
    /* The damaged cache already reported (compared by address only). */
    const void *told_cache; /* the filters' reports: bd_state_check_filters */
    /* The filters already reported past their max_filter_age. */
    const void *stale[BD_KINDS_]; /* each kind's filter last told stale */
};

/* A tenth of the horizon, between 1 s and a minute: an entry is gone at
 * most that long after it passed ttl + max_stale. */
static int64_t tick_s(const bd_server *srv)
{
    const breachd_config *cfg = srv->state->cfg;
    int64_t horizon = cfg->cache.ttl_s + cfg->cache.max_stale_s;
    return BR_MIN(BR_MAX(horizon / 10, (int64_t)TICK_MIN_S), (int64_t)TICK_MAX_S);
}

static void schedule(bd_housekeeping *hk)
{
    struct timeval tv = {.tv_sec = (time_t)tick_s(hk->srv), .tv_usec = 0};
    evtimer_add(hk->ev, &tv);
}

static void purge(bd_housekeeping *hk)
{
    bd_state *st = hk->srv->state;
    if (!st->cache || !st->cache->cache || br_range_cache_damaged(st->cache->cache))
        return; /* damaged: nothing can be read or deleted (report_damage says so) */
    uint64_t n = 0;
    int rc =
        br_range_cache_purge(st->cache->cache, br_clock_now_real(), st->cfg->cache.max_stale_s, &n);
    if (rc < 0)
        bd_log(LOG_WARNING, "range cache %s: purging entries past ttl + max_stale failed: %s",
               st->cache->path, strerror(-rc));
    else if (n)
        bd_log(LOG_DEBUG, "range cache: purged %llu entries past ttl + max_stale",
               (unsigned long long)n);
}

static void report_damage(bd_housekeeping *hk)
{
    bd_state *st = hk->srv->state;
    if (st->cache && hk->told_cache != st->cache->cache &&
        br_range_cache_damaged(st->cache->cache)) {
        hk->told_cache = st->cache->cache;
        bd_log(LOG_ERR,
               "range cache %s: data.mdb or lock.mdb was truncated or rewritten in place while in "
               "use: "
               "checks go on without the cache, from the upstream; remove both files and reload",
               st->cache->path);
    }
    bd_state_check_filters(st);
}

/* What a stale filter of a password section does: a range filter is
 * bypassed, an offline one keeps answering (it never sends a check:
 * docs/privacy.md). */
static void tell_stale(const char *what, const char *section, const char *path, bool offline,
                       const char *checks)
{
    if (offline)
        bd_log(LOG_WARNING,
               "offline %s filter %s is past [%s] max_filter_age: still answering from it (an "
               "offline filter never sends a check to the range API); install a fresh filter "
               "and reload",
               what, path, section);
    else
        bd_log(LOG_WARNING,
               "%s filter %s is past [%s] max_filter_age: it is bypassed, every %s check goes "
               "to the range API; install a fresh filter and reload",
               what, path, section, checks);
}

/* A filter past max_filter_age, once per filter: the bypass (passwords) or
 * [urls] when_stale is no longer silent (docs/operations.md). */
static void report_stale(bd_housekeeping *hk)
{
    bd_state *st = hk->srv->state;
    int64_t now = br_clock_now_real();
    for (int k = 0; k < BD_KINDS_; k++) {
        const bd_kind_row *row = &bd_kinds[k];
        const void *f = bd_state_filter_header(st, (bd_kind)k); /* its identity */
        if (!f || hk->stale[k] == f || !bd_state_filter_stale(st, (bd_kind)k, now))
            continue;
        hk->stale[k] = f;
        const char *path = bd_kind_filter_path(st->cfg, (bd_kind)k);
        if (row->when_stale_off)
            bd_log(LOG_WARNING,
                   "%s filter %s is past [%s] max_filter_age: %s checks follow when_stale%s; "
                   "install a fresh filter and reload",
                   row->name, path, row->section, row->checks,
                   st->filter[k] ? " (an offline filter: upstream is taken as filter)" : "");
        else
            tell_stale(row->name, row->section, path, br_pwfilter_offline(st->filter[k]),
                       row->checks);
    }
}

void bd_housekeeping_run(bd_housekeeping *hk)
{
    report_stale(hk);
    report_damage(hk);
    purge(hk);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bd_housekeeping *hk = arg;
    bd_housekeeping_run(hk);
    schedule(hk);
}

/* Someone opened a filter for writing (or truncated it): its lease is let
 * go at once, so that the opener does not wait for the lease break time,
 * and the filter is damaged from now on (docs/filter-format.md). */
static void lease_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bd_housekeeping *hk = arg;
    bd_state_writers_check(hk->srv->state);
}

bd_housekeeping *bd_housekeeping_new(bd_server *srv)
{
    bd_housekeeping *hk = calloc(1, sizeof(*hk));
    if (!hk)
        return NULL;
    hk->srv = srv;
    hk->ev = evtimer_new(srv->base, tick_cb, hk);
    hk->lease_ev = evsignal_new(srv->base, SIGIO, lease_cb, hk);
    if (!hk->ev || !hk->lease_ev || evsignal_add(hk->lease_ev, NULL) < 0) {
        bd_housekeeping_free(hk);
        return NULL;
    }
    schedule(hk);
    return hk;
}

void bd_housekeeping_free(bd_housekeeping *hk)
{
    if (!hk)
        return;
    if (hk->ev)
        event_free(hk->ev);
    if (hk->lease_ev)
        event_free(hk->lease_ev);
    free(hk);
}
