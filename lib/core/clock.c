/* SPDX-License-Identifier: MIT */
/* The one time source (clock.h): the system clocks plus the offset of a
 * test's driver, when one is installed. */
#include <stddef.h>

#include "clock.h"

static br_clock_offset_fn driver;
static void *driver_ctx;

static uint64_t offset_ns(void)
{
    return driver ? driver(driver_ctx) : 0;
}

void br_clock_drive(br_clock_offset_fn fn, void *ctx)
{
    driver = fn;
    driver_ctx = ctx;
}

uint64_t br_clock_now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + offset_ns();
}

void br_clock_now_real_ts(struct timespec *ts)
{
    clock_gettime(CLOCK_REALTIME, ts);
    uint64_t off = offset_ns();
    if (off) {
        uint64_t ns = (uint64_t)ts->tv_nsec + off % 1000000000u;
        ts->tv_sec += (time_t)(off / 1000000000u + ns / 1000000000u);
        ts->tv_nsec = (long)(ns % 1000000000u);
    }
}

int64_t br_clock_now_real(void)
{
    struct timespec ts;
    br_clock_now_real_ts(&ts);
    return (int64_t)ts.tv_sec;
}
