/* SPDX-License-Identifier: MIT */
/* The time, for the grace period. The installed module reads the clock
 * only; the test-only build links clock_testhook.c instead. */
#include <time.h>

#include "core/clock.h"

#include "pam_breachd.h"

int64_t pb_now(void)
{
    return br_clock_now_real();
}
