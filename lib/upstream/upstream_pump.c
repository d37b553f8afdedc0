/* SPDX-License-Identifier: MIT */
/* Upstream fetcher (upstream.h): what starts when. The pump, which starts
 * the queued requests that the limits and the lanes allow, and the circuit
 * breaker, which a request's final outcome moves and whose trip ends every
 * request not yet on the wire. The requests themselves are upstream.c,
 * their transfers upstream_transfer.c (upstream_int.h). */
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "upstream_int.h"

/* ---- the pump ---- */

/* The pump, which starts the queued requests that the
 * limits allow (upstream.h, "Limits" and "Lanes"): max_inflight slots, of
 * which the bulk and http lanes may each use their slots; the shared token
 * bucket (rate, burst deep) and each of those lanes' own (rate and burst
 * times its share). An interactive request goes whenever a slot and a
 * shared token are there; an http or bulk one only when no interactive
 * request is queued (http before bulk), with a token of its own lane, and
 * leaving the shared bucket a reserve for interactive arrivals. And what
 * the upstream asks for (upstream.h "Rate limits"): nothing starts during a
 * pause, and the rate is the effective one, halved by a 429 and climbing
 * back. */

static double lane_cap(const br_upstream *up, br_lane lane)
{
    return BR_MAX(1.0, up->burst * up->share[lane]);
}

/* Shared tokens a request of a shared lane (http, bulk) must leave behind:
 * burst * (1 - share), but never so many that a full bucket would not let
 * it go. */
static double lane_reserve(const br_upstream *up, br_lane lane)
{
    return BR_MIN(up->burst * (1.0 - up->share[lane]), up->burst - 1.0);
}

/* ---- the effective rate ----------------------------------------------------- */

/* The effective rate, and the burst in proportion to it. */
static void set_rate(br_upstream *up, double rate)
{
    up->rate = rate;
    up->burst = BR_MAX(1.0, up->burst_cfg * rate / up->rate_cfg);
    up->tokens = BR_MIN(up->tokens, up->burst);
    for (int l = 0; l < BR_LANES; l++)
        up->lane_tokens[l] = BR_MIN(up->lane_tokens[l], lane_cap(up, (br_lane)l));
}

/* Additive increase since rate_at_ns (which a pause moves to its end). */
void up_rate_update(br_upstream *up, uint64_t now)
{
    if (up->rate_cfg <= 0 || now <= up->rate_at_ns)
        return;
    if (up->rate < up->rate_cfg)
        set_rate(up,
                 BR_MIN(up->rate_cfg, up->rate + (double)(now - up->rate_at_ns) * up->rate_step));
    up->rate_at_ns = now;
}

/* Multiplicative decrease, once for the transfers started before it. */
static void decrease_rate(br_upstream *up, const req *r, uint64_t now)
{
    if (up->rate_cfg <= 0 || r->started_ns < up->last_decrease_ns)
        return;
    up_rate_update(up, now);
    set_rate(up, BR_MAX(up->rate / 2, BR_MIN(up->rate_cfg, 1.0)));
    up->last_decrease_ns = now;
    up->st.rate_decreases++;
    up_log(up, LOG_NOTICE, "upstream answered 429: effective rate now %.2f/s (configured %.0f/s)",
           up->rate, up->rate_cfg);
}

/* No transfer starts for ms (cut to max_pause_ms) from now. */
static void pause_for(br_upstream *up, uint64_t now, uint64_t ms, long http)
{
    uint64_t ns = ms > up->max_pause_ns / 1000000u ? up->max_pause_ns : ms * 1000000u;
    uint64_t until = now + ns;
    if (until <= up->pause_until_ns)
        return; /* already paused as long */
    if (up->pause_until_ns <= now)
        up->st.pauses++;
    up->st.paused_ms += (until - BR_MAX(now, up->pause_until_ns)) / 1000000u;
    up->pause_until_ns = until;
    /* After it: one token at once, then the (effective) rate. */
    up->tokens = BR_MIN(up->tokens, 1.0);
    for (int l = 0; l < BR_LANES; l++)
        up->lane_tokens[l] = BR_MIN(up->lane_tokens[l], 1.0);
    up->tokens_at_ns = until;
    up_rate_update(up, now);
    up->rate_at_ns = until;
    for (req *r = up->all; r; r = r->next)
        r->saw_pause = true;
    up_log(up, LOG_NOTICE, "upstream answered %ld with Retry-After: no new request for %llu ms",
           http, (unsigned long long)(ns / 1000000u));
}

void up_rate_limited(br_upstream *up, req *r)
{
    uint64_t now = br_now_ns();
    up->st.rate_limited++;
    r->limited++;
    if (r->http_status == 429)
        decrease_rate(up, r, now);
    if (r->retry_after_ms > 0)
        pause_for(up, now, (uint64_t)r->retry_after_ms, r->http_status);
    snprintf(r->last_error, sizeof(r->last_error), "HTTP status %ld (rate limited)",
             r->http_status);
    if (r->trial) {
        up_finish(r, BR_UPSTREAM_RATE_LIMITED); /* the upstream is up: closes the circuit */
        return;
    }
    up->st.backoff--; /* it was between states */
    up_queue_push(up, r, true);
    up_schedule_pump(up);
}

/* ---- tokens and slots -------------------------------------------------------- */

static void refill_tokens(br_upstream *up, uint64_t now)
{
    up_rate_update(up, now);
    if (up->rate <= 0 || now <= up->tokens_at_ns)
        return;
    double dt = (double)(now - up->tokens_at_ns) / 1e9;
    up->tokens = BR_MIN(up->burst, up->tokens + dt * up->rate);
    for (int l = 0; l < BR_LANES; l++)
        up->lane_tokens[l] =
            BR_MIN(lane_cap(up, (br_lane)l), up->lane_tokens[l] + dt * up->rate * up->share[l]);
    up->tokens_at_ns = now;
}

/* How long until a request of lane may take its tokens; 0: now. */
static uint64_t token_wait_ns(const br_upstream *up, br_lane lane)
{
    if (up->rate <= 0)
        return 0;
    double need = 1.0, wait_s = 0;
    if (lane != BR_LANE_INTERACTIVE) {
        need += lane_reserve(up, lane);
        if (up->lane_tokens[lane] < 1.0)
            wait_s = (1.0 - up->lane_tokens[lane]) / (up->rate * up->share[lane]);
    }
    if (up->tokens < need)
        wait_s = BR_MAX(wait_s, (need - up->tokens) / up->rate);
    if (wait_s <= 0)
        return 0;
    return wait_s < 3600 ? (uint64_t)(wait_s * 1e9) + 1 : (uint64_t)3600e9;
}

static void take_tokens(br_upstream *up, br_lane lane)
{
    if (up->rate <= 0)
        return;
    up->tokens -= 1.0;
    if (lane != BR_LANE_INTERACTIVE)
        up->lane_tokens[lane] -= 1.0;
}

/* The next request to start and how long it must wait for its tokens (0:
 * none): the interactive queue's head; else, of the http and bulk queues'
 * heads whose lane has a free slot, the first that may go now, or the one
 * that waits least. NULL: none may start (a transfer that ends runs the
 * pump again). */
static req *next_request(br_upstream *up, uint64_t *wait_ns)
{
    req *r = up->q[BR_LANE_INTERACTIVE].head;
    if (r) {
        *wait_ns = token_wait_ns(up, BR_LANE_INTERACTIVE);
        return r;
    }
    static const br_lane shared[] = {BR_LANE_HTTP, BR_LANE_BULK};
    req *best = NULL;
    for (size_t i = 0; i < BR_ARRAY_SIZE(shared); i++) {
        br_lane l = shared[i];
        const uint32_t *running = up_lane_inflight(up, l);
        if (!up->q[l].head || (running && *running >= up->slots[l]))
            continue;
        uint64_t w = token_wait_ns(up, l);
        if (!best || w < *wait_ns) {
            best = up->q[l].head;
            *wait_ns = w;
        }
        if (w == 0)
            break;
    }
    return best;
}

void up_pump_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    br_upstream *up = arg;
    uint64_t now = br_now_ns();
    if (now < up->pause_until_ns) {
        struct timeval tv = up_ns_to_tv(up->pause_until_ns - now);
        event_add(up->pump_ev, &tv);
        return;
    }
    refill_tokens(up, now);
    while (!up->closing && up->st.inflight < up->max_inflight) {
        uint64_t wait_ns = 0;
        req *r = next_request(up, &wait_ns);
        if (!r)
            return;
        if (wait_ns) {
            struct timeval tv = up_ns_to_tv(wait_ns);
            event_add(up->pump_ev, &tv);
            return;
        }
        up_queue_remove(up, r);
        r->state = RQ_BACKOFF; /* transient: not queued, not running */
        up->st.backoff++;
        int rc = up_start_transfer(up, r, now);
        if (rc < 0) {
            if (!r->last_error[0])
                snprintf(r->last_error, sizeof(r->last_error), "cannot start: %s", strerror(-rc));
            up_finish(r, BR_UPSTREAM_ERROR);
            continue;
        }
        up->st.backoff--;
        take_tokens(up, r->lane);
    }
}

/* ---- the circuit breaker ---- */

/* The circuit breaker (its rules are in upstream.h). A
 * request's final outcome moves it (up_breaker_record, from up_finish); a trip
 * ends every request not yet on the wire. Every change of state is logged,
 * so that an outage can be followed in the log (docs/upstream.md "Rate and
 * back-off"): the circuit opening (warning), turning half-open for its trial
 * and opening again after a failed trial (notice), closing (notice, with how
 * long it was open and the fetches it refused). */

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
