/* SPDX-License-Identifier: MIT */
/* The one time source (lib/core/clock.h): the system clocks without a
 * driver; with one, both clocks move by the driver's offset, and come back
 * when it is removed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "core/clock.h"

static uint64_t offset_of(void *ctx)
{
    return *(uint64_t *)ctx;
}

static void test_system_clocks(void **state)
{
    (void)state;
    struct timespec sys;
    clock_gettime(CLOCK_REALTIME, &sys);
    int64_t real = br_clock_now_real();
    assert_true(real >= (int64_t)sys.tv_sec && real <= (int64_t)sys.tv_sec + 1);
    uint64_t a = br_clock_now_mono(), b = br_clock_now_mono();
    assert_true(b >= a);
    assert_int_equal(br_now_ns() >= b, 1);
}

static void test_driven(void **state)
{
    (void)state;
    uint64_t off = 0;
    br_clock_drive(offset_of, &off);
    int64_t real0 = br_clock_now_real();
    uint64_t mono0 = br_clock_now_mono();
    off = 3600 * UINT64_C(1000000000) + 999999999u; /* an hour and nearly a second */
    int64_t real1 = br_clock_now_real();
    uint64_t mono1 = br_clock_now_mono();
    assert_true(real1 - real0 >= 3600 && real1 - real0 <= 3602);
    assert_true(mono1 - mono0 >= off);
    struct timespec ts;
    br_clock_now_real_ts(&ts);
    assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000);
    assert_true((int64_t)ts.tv_sec >= real1 && (int64_t)ts.tv_sec <= real1 + 1);
    br_clock_drive(NULL, NULL);
    assert_true(br_clock_now_real() < real1 - 3000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_system_clocks),
        cmocka_unit_test(test_driven),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
