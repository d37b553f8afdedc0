/* SPDX-License-Identifier: MIT */
/* The installed breachd's clock hook (testclock.h): nothing, so the clocks
 * are the system's. The test build links testclock_hook.c instead. */
#include "testclock.h"

int bd_testclock_start(struct event_base *base)
{
    (void)base;
    return 0;
}

void bd_testclock_stop(void) {}
