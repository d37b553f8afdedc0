/* SPDX-License-Identifier: MIT */
/* The driven clock of breachd-testclock, a build of breachd used only by
 * the tests and never installed (tests/README.md, "Driven time"). With
 * BREACHD_TEST_CLOCK=FILE, FILE holds a number of seconds (fractions
 * allowed) to add to both clocks of lib/core/clock.h; a test rewrites it
 * (a temporary file renamed over it) to move time forward. A 5 ms timer on
 * the loop reads it; on a jump it moves the loop's pending one-shot timers
 * forward by as much, so that the ones now due run (idle connections, the
 * canary, the purge), makes the clocks jump at the same moment, and once
 * those timers' callbacks have run (a timer due 1 ms after them), writes
 * the offset to FILE.PID, which the test waits for: from then on every
 * request and timer sees the new time. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/clock.h"
#include "core/util.h"
#include "log.h"
#include "testclock.h"

#define WATCH_MS 5

static char *path;
static _Atomic uint64_t current; /* the clocks' offset; only grows */
static struct event *watch, *ack_ev;

/* FILE's offset in nanoseconds, or the last one when it cannot be read. */
static uint64_t file_offset(void)
{
    char buf[64];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end;
    double s = strtod(buf, &end);
    return end == buf || s < 0 ? 0 : (uint64_t)(s * 1e9 + 0.5);
}

static uint64_t offset_ns(void *ctx)
{
    (void)ctx;
    return atomic_load(&current);
}

/* FILE.PID: the offset in effect, for the test. */
static void acknowledge(uint64_t ns)
{
    char ack[4096], tmp[4096 + 8];
    snprintf(ack, sizeof(ack), "%s.%d", path, (int)getpid());
    snprintf(tmp, sizeof(tmp), "%s.tmp", ack);
    FILE *f = fopen(tmp, "we");
    if (!f)
        return;
    fprintf(f, "%.6f\n", (double)ns / 1e9);
    if (fclose(f) == 0)
        rename(tmp, ack);
}

typedef struct timers {
    struct event *ev[256];
    size_t n;
} timers;

/* The loop's pending one-shot timers (not the watch; persistent events are
 * libevent's and the sockets'). */
static int collect(const struct event_base *base, const struct event *ev, void *arg)
{
    (void)base;
    timers *t = arg;
    if (ev == watch || ev == ack_ev || (event_get_events(ev) & EV_PERSIST) ||
        !event_pending(ev, EV_TIMEOUT, NULL))
        return 0;
    if (t->n == BR_ARRAY_SIZE(t->ev))
        return 1;
    t->ev[t->n++] = (struct event *)ev;
    return 0;
}

/* Microseconds from now until when, clamped to [0, BR_SHIFT_MAX_US]: a
 * timeval libevent reports is trusted only that far. */
#define BR_SHIFT_MAX_US ((int64_t)400 * 86400 * 1000000)
static int64_t usec_until(const struct timeval *now, const struct timeval *when)
{
    struct timeval d;
    evutil_timersub(when, now, &d);
    if (d.tv_sec < 0)
        return 0;
    if (d.tv_sec > BR_SHIFT_MAX_US / 1000000)
        return BR_SHIFT_MAX_US;
    return (int64_t)d.tv_sec * 1000000 + d.tv_usec;
}

/* Every pending timer due by_ns sooner. A timer already due is left as it
 * is: it fires in this round anyway, and re-adding it would take it off
 * libevent's active queue. Wake-ups made with event_active() carry res 0,
 * not EV_TIMEOUT, so they are never collected (their timeval is not set). */
static void shift_timers(struct event_base *base, uint64_t by_ns)
{
    timers t = {.n = 0};
    event_base_foreach_event(base, collect, &t);
    struct timeval now;
    event_base_gettimeofday_cached(base, &now);
    int64_t by_us =
        by_ns / 1000 > (uint64_t)BR_SHIFT_MAX_US ? BR_SHIFT_MAX_US : (int64_t)(by_ns / 1000);
    for (size_t i = 0; i < t.n; i++) {
        struct timeval when = now;
        if (!(event_pending(t.ev[i], EV_TIMEOUT, &when) & EV_TIMEOUT))
            continue;
        int64_t left = usec_until(&now, &when);
        if (left == 0)
            continue;
        left = left > by_us ? left - by_us : 0;
        struct timeval tv = {.tv_sec = left / 1000000, .tv_usec = left % 1000000};
        event_add(t.ev[i], &tv);
    }
}

static void ack_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    acknowledge(atomic_load(&current));
}

static void watch_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    uint64_t off = file_offset(), now = atomic_load(&current);
    if (off > now) {
        shift_timers(arg, off - now);
        atomic_store(&current, off);
        struct timeval tv = {.tv_sec = 0, .tv_usec = 1000}; /* after the timers now due */
        event_add(ack_ev, &tv);
    }
}

int bd_testclock_start(struct event_base *base)
{
    const char *p = getenv("BREACHD_TEST_CLOCK");
    if (!p || !*p)
        return 0;
    if (!(path = strdup(p)))
        return -ENOMEM;
    atomic_store(&current, file_offset());
    acknowledge(atomic_load(&current));
    br_clock_drive(offset_ns, NULL);
    watch = event_new(base, -1, EV_PERSIST, watch_cb, base);
    ack_ev = evtimer_new(base, ack_cb, NULL);
    struct timeval tv = {.tv_sec = 0, .tv_usec = WATCH_MS * 1000};
    if (!watch || !ack_ev || event_add(watch, &tv) < 0) {
        bd_log(LOG_ERR, "test clock: cannot add its timer");
        return -ENOMEM;
    }
    bd_log(LOG_WARNING, "test clock: the time is driven by %s (a test build)", path);
    return 0;
}

void bd_testclock_stop(void)
{
    if (watch)
        event_free(watch);
    if (ack_ev)
        event_free(ack_ev);
    watch = ack_ev = NULL;
}
