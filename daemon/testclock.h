/* SPDX-License-Identifier: MIT */
/* The clock of the test-only build breachd-testclock (docs/architecture.md,
 * "Time"; tests/README.md, "Driven time"). The installed breachd links
 * testclock.c, where this does nothing and reads no environment; the test
 * build links testclock_hook.c instead, where BREACHD_TEST_CLOCK=FILE
 * drives lib/core/clock.h by the seconds written in FILE, and the loop's
 * pending timers follow. */
#pragma once

struct event_base;

/* Called once by main() with the loop, before any thread starts. 0, or a
 * negative errno (logged). */
int bd_testclock_start(struct event_base *base);
/* Undo bd_testclock_start() before the loop is freed. */
void bd_testclock_stop(void);
