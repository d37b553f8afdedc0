/* SPDX-License-Identifier: MIT */
/* Upstream fetcher: the pump, which starts the queued requests that the
 * limits allow (upstream.h, "Limits" and "Lanes"): max_inflight slots, of
 * which the bulk lane may use bulk_slots; the shared token bucket (rate,
 * burst deep) and the bulk lane's own (rate and burst times bulk_share). An
 * interactive request goes whenever a slot and a shared token are there; a
 * bulk one only when no interactive request is queued, with a token of its
 * own lane, and leaving the shared bucket a reserve for interactive
 * arrivals. And what the upstream asks for (upstream.h "Rate limits"):
 * nothing starts during a pause, and the rate is the effective one, halved
 * by a 429 and climbing back. */
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "upstream_int.h"

static double bulk_cap(const br_upstream *up)
{
    return BR_MAX(1.0, up->burst * up->bulk_share);
}

/* Shared tokens a bulk request must leave behind: burst * (1 - bulk_share),
 * but never so many that a full bucket would not let it go. */
static double bulk_reserve(const br_upstream *up)
{
    return BR_MIN(up->burst * (1.0 - up->bulk_share), up->burst - 1.0);
}

/* ---- the effective rate ----------------------------------------------------- */

/* The effective rate, and the burst in proportion to it. */
static void set_rate(br_upstream *up, double rate)
{
    up->rate = rate;
    up->burst = BR_MAX(1.0, up->burst_cfg * rate / up->rate_cfg);
    up->tokens = BR_MIN(up->tokens, up->burst);
    up->bulk_tokens = BR_MIN(up->bulk_tokens, bulk_cap(up));
}

/* Additive increase since rate_at_ns (which a pause moves to its end). */
void up_rate_update(br_upstream *up, uint64_t now)
{
    if (up->rate_cfg <= 0 || now <= up->rate_at_ns)
        return;
    if (up->rate < up->rate_cfg)
        set_rate(up, BR_MIN(up->rate_cfg, up->rate + (double)(now - up->rate_at_ns) * up->rate_step));
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
    up->bulk_tokens = BR_MIN(up->bulk_tokens, 1.0);
    up->tokens_at_ns = until;
    up_rate_update(up, now);
    up->rate_at_ns = until;
    for (req *r = up->all; r; r = r->next)
        r->saw_pause = true;
    up_log(up, LOG_NOTICE, "upstream answered %ld with Retry-After: no new request for %llu ms", http,
           (unsigned long long)(ns / 1000000u));
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
    snprintf(r->last_error, sizeof(r->last_error), "HTTP status %ld (rate limited)", r->http_status);
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
    up->bulk_tokens = BR_MIN(bulk_cap(up), up->bulk_tokens + dt * up->rate * up->bulk_share);
    up->tokens_at_ns = now;
}

/* How long until a request of lane may take its tokens; 0: now. */
static uint64_t token_wait_ns(const br_upstream *up, br_lane lane)
{
    if (up->rate <= 0)
        return 0;
    double need = 1.0, wait_s = 0;
    if (lane == BR_LANE_BULK) {
        need += bulk_reserve(up);
        if (up->bulk_tokens < 1.0)
            wait_s = (1.0 - up->bulk_tokens) / (up->rate * up->bulk_share);
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
    if (lane == BR_LANE_BULK)
        up->bulk_tokens -= 1.0;
}

/* The next request to start: the interactive queue's head, else the bulk
 * queue's while a bulk slot is free; NULL: none may start. */
static req *next_request(br_upstream *up)
{
    if (up->q[BR_LANE_INTERACTIVE].head)
        return up->q[BR_LANE_INTERACTIVE].head;
    if (up->st.bulk_inflight >= up->bulk_slots)
        return NULL; /* a transfer that ends runs the pump again */
    return up->q[BR_LANE_BULK].head;
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
        req *r = next_request(up);
        if (!r)
            return;
        uint64_t wait_ns = token_wait_ns(up, r->lane);
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
