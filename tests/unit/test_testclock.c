/* SPDX-License-Identifier: MIT */
/* The driven clock of breachd-testclock (daemon/testclock_hook.c;
 * tests/README.md, "Driven time"): on a jump the timers now due fire, a
 * later timer is moved by the jump, and a wake-up that is on the active
 * queue at the jump (event_active with res 0) still runs, even when its
 * event once held a timeout that lies beyond the jump. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "core/clock.h"
#include "testclock.h"

static char dir[] = "/tmp/breachd-testclock.XXXXXX";
static char clock_path[256];

static void count_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (*(int *)arg)++;
}

/* FILE gets the offset in seconds, renamed over it as tests/README.md says. */
static void jump_to(const char *secs)
{
    char tmp[300];
    snprintf(tmp, sizeof(tmp), "%s.new", clock_path);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", secs);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, clock_path), 0);
}

/* Loop until FILE.PID acknowledges the offset (at most about 2 s). */
static void loop_until_acknowledged(struct event_base *base, const char *want)
{
    char ack[300], got[64] = "";
    snprintf(ack, sizeof(ack), "%s.%d", clock_path, (int)getpid());
    for (int i = 0; i < 400; i++) {
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        FILE *f = fopen(ack, "r");
        if (f) {
            size_t n = fread(got, 1, sizeof(got) - 1, f);
            got[n] = '\0';
            fclose(f);
            if (strcmp(got, want) == 0)
                return;
        }
        usleep(5000);
    }
    fail_msg("the clock never acknowledged %s (last: %s)", want, got);
}

static void test_jump(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(clock_path, sizeof(clock_path), "%s/clock", dir);
    jump_to("0");
    setenv("BREACHD_TEST_CLOCK", clock_path, 1);

    struct event_base *base = event_base_new();
    assert_non_null(base);
    /* priority 2 runs after the clock's watch (priority 1, the default) */
    assert_int_equal(event_base_priority_init(base, 3), 0);
    assert_int_equal(bd_testclock_start(base), 0);
    int soon = 0, later = 0, woken = 0;
    struct event *a = evtimer_new(base, count_cb, &soon);
    struct event *b = evtimer_new(base, count_cb, &later);
    struct event *w = event_new(base, -1, 0, count_cb, &woken);
    assert_int_equal(event_priority_set(w, 2), 0);
    event_add(a, &(struct timeval){.tv_sec = 60});
    event_add(b, &(struct timeval){.tv_sec = 3600});
    /* the wake-up's event once held a timeout two hours out */
    event_add(w, &(struct timeval){.tv_sec = 7200});
    event_del(w);
    uint64_t mono0 = br_clock_now_mono();

    jump_to("61");
    usleep(20000); /* the watch (every 5 ms) is due when the loop runs */
    event_active(w, 0, 0);
    loop_until_acknowledged(base, "61.000000\n");
    event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);

    assert_int_equal(soon, 1);
    assert_int_equal(later, 0);
    assert_int_equal(woken, 1);
    assert_true(br_clock_now_mono() - mono0 >= UINT64_C(61000000000));
    struct timeval when, now;
    assert_true(event_pending(b, EV_TIMEOUT, &when) & EV_TIMEOUT);
    event_base_gettimeofday_cached(base, &now);
    long left = (long)(when.tv_sec - now.tv_sec);
    assert_true(left > 3600 - 61 - 5 && left <= 3600 - 61); /* moved by the jump */

    event_free(a);
    event_free(b);
    event_free(w);
    bd_testclock_stop();
    event_base_free(base);
    char ack[300];
    snprintf(ack, sizeof(ack), "%s.%d", clock_path, (int)getpid());
    unlink(ack);
    unlink(clock_path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jump),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
