/* SPDX-License-Identifier: MIT */
/* The one time source of breachd and its tools: every "now" in product code
 * comes from here, never from time(), clock_gettime() or gettimeofday()
 * (docs/architecture.md, "Time"). Normally the two clocks are the system's
 * monotonic and wall clocks. A test-only build (breachd-testclock, never
 * installed; tests/README.md) installs a driver with br_clock_drive() that
 * adds an offset a test sets, so TTLs, cool-downs and buckets run out
 * without the test sleeping. Both clocks only move forward under a driver.
 *
 * Thread-safe: any thread may read the clocks. */
#pragma once

#include <stdint.h>
#include <time.h>

/* Monotonic clock in nanoseconds (an arbitrary origin): for intervals,
 * deadlines and rates. */
uint64_t br_clock_now_mono(void);

/* Wall clock in seconds since the epoch: for what is stored or shown
 * (cache expiry, file ages, STATS times). */
int64_t br_clock_now_real(void);

/* Wall clock with nanoseconds, for log time stamps. */
void br_clock_now_real_ts(struct timespec *ts);

/* A driver: returns the nanoseconds to add to both clocks (never less than
 * it returned before). Called on every read, from any thread. */
typedef uint64_t (*br_clock_offset_fn)(void *ctx);

/* Install (fn != NULL) or remove a driver. For the test-only builds: the
 * installed programs never call it. Not thread-safe against readers: call
 * it before starting threads. */
void br_clock_drive(br_clock_offset_fn fn, void *ctx);

/* The monotonic clock, under its older name. */
static inline uint64_t br_now_ns(void)
{
    return br_clock_now_mono();
}
