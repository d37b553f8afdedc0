/* SPDX-License-Identifier: MIT */
/* Upstream fetcher: the circuit breaker (its rules are in upstream.h). A
 * request's final outcome moves it (up_breaker_record, from up_finish); a trip
 * ends every request not yet on the wire. Every change of state is logged,
 * so that an outage can be followed in the log (docs/upstream.md "Rate and
 * back-off"): the circuit opening (warning), turning half-open for its trial
 * and opening again after a failed trial (notice), closing (notice, with how
 * long it was open and the fetches it refused). */
#include <stdio.h>
#include <syslog.h>

#include "upstream_int.h"

br_breaker_state up_breaker_now(br_upstream *up, uint64_t now)
{
    if (up->breaker == BR_BREAKER_OPEN && now >= up->open_until_ns) {
        up->breaker = BR_BREAKER_HALF_OPEN;
        up->trials_running = 0;
        up->trial_burst = 0;
        up_log(up, LOG_NOTICE,
               "upstream circuit half-open after %llu s: the next fetch (with its decoys) is "
               "the trial",
               (unsigned long long)((now - up->opened_ns) / 1000000000u));
    }
    return up->breaker;
}

br_breaker_state br_upstream_breaker(br_upstream *up)
{
    return up_breaker_now(up, br_now_ns());
}

static bool counts_as_failure(br_upstream_status s, long http)
{
    switch (s) {
    case BR_UPSTREAM_TIMEOUT:
    case BR_UPSTREAM_UNAVAILABLE:
        return true;
    case BR_UPSTREAM_ERROR:
        return http >= 500;
    default:
        return false;
    }
}

void br_upstream_trial_burst(br_upstream *up, uint32_t n)
{
    /* One trial at a time: a burst that comes while one runs is refused. */
    if (up)
        up->trial_burst = up->trials_running ? 0 : n;
}

/* The trial is over (the circuit closed or opened again): the requests that
 * were part of it are ordinary ones from now on. */
static void end_trials(br_upstream *up)
{
    up->trials_running = 0;
    up->trial_burst = 0;
    for (req *r = up->all; r; r = r->next)
        r->trial = false;
}

static void breaker_trip(br_upstream *up, uint64_t now)
{
    bool again = up->breaker == BR_BREAKER_HALF_OPEN; /* the trial failed */
    up->breaker = BR_BREAKER_OPEN;
    up->open_until_ns = now + up->breaker_cooldown_ns;
    end_trials(up);
    up->st.breaker_trips++;
    if (!again) {
        up->opened_ns = now;
        up->refused_now = 0;
    }
    up_log(up, again ? LOG_NOTICE : LOG_WARNING,
           "upstream circuit open%s after %u consecutive failures, cool-down %llu ms",
           again ? " again" : "", up->consecutive_failures,
           (unsigned long long)(up->breaker_cooldown_ns / 1000000u));

    /* Everything not yet on the wire ends now, bulk requests too. Collect
     * first: the callbacks may call br_upstream_fetch() (refused, so the
     * lists do not grow). */
    req *victims = NULL;
    for (req *r = up->all; r; r = r->next) {
        if (r->state == RQ_QUEUED || r->state == RQ_BACKOFF) {
            r->vnext = victims;
            victims = r;
        }
    }
    while (victims) {
        req *r = victims;
        victims = r->vnext;
        r->vnext = NULL;
        if (!r->last_error[0])
            snprintf(r->last_error, sizeof(r->last_error), "circuit open");
        up_finish(r, BR_UPSTREAM_CIRCUIT_OPEN);
    }
}

/* The final outcome of a request moves the breaker. */
void up_breaker_record(br_upstream *up, req *r, br_upstream_status s)
{
    if (s == BR_UPSTREAM_CANCELLED || s == BR_UPSTREAM_CIRCUIT_OPEN) {
        if (r->trial && up->trials_running)
            up->trials_running--;
        return;
    }
    if (r->attempts == 0) {
        /* never sent (its deadline passed in the queue): no evidence; a
         * trial's turn goes to the next fetch */
        if (r->trial && up->trials_running)
            up->trials_running--;
        return;
    }
    uint64_t now = br_now_ns();
    bool failed = counts_as_failure(s, r->http_status);
    br_breaker_state bs = up_breaker_now(up, now);
    if (bs == BR_BREAKER_OPEN)
        return; /* started before the trip: no evidence either way */
    if (bs == BR_BREAKER_HALF_OPEN) {
        if (!r->trial)
            return;
        up->trials_running--;
        if (failed) {
            up->consecutive_failures++;
            breaker_trip(up, now);
        } else {
            up->breaker = BR_BREAKER_CLOSED;
            up->consecutive_failures = 0;
            up->open_total_ns += now - up->opened_ns;
            end_trials(up);
            up_log(up, LOG_NOTICE,
                   "upstream circuit closed: the trial request succeeded after %llu s open, "
                   "%llu fetches refused",
                   (unsigned long long)((now - up->opened_ns) / 1000000000u),
                   (unsigned long long)up->refused_now);
            up->refused_now = 0;
        }
        return;
    }
    if (!failed) {
        up->consecutive_failures = 0;
        return;
    }
    if (++up->consecutive_failures >= up->breaker_threshold)
        breaker_trip(up, now);
}
