/* SPDX-License-Identifier: MIT */
/* The clock of pam_breachd_testclock.so, a build of the module used only by
 * tests/integration/test_pam_login.py and never installed: it reads the
 * time from BREACHD_PAM_TEST_NOW (seconds since the epoch) when set, so
 * the tests can let a grace period run out. The installed pam_breachd.so
 * links clock.c, which reads no environment. */
#include <stdlib.h>
#include <time.h>

#include "core/clock.h"

#include "pam_breachd.h"

int64_t pb_now(void)
{
    const char *s = getenv("BREACHD_PAM_TEST_NOW");
    if (s && *s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (!*end)
            return (int64_t)v;
    }
    return br_clock_now_real();
}
