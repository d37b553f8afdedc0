/* SPDX-License-Identifier: MIT */
/* The recoverable assertion (lib/core/br_assert.h): a holding condition
 * costs nothing and is not counted; a failing one is counted, reaches the
 * hook with its text and place, and lets the caller return an error. The
 * trace: an error code passed through, its place to the trace hook. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/br_assert.h"

static int hook_calls;
static char hook_expr[64], hook_func[64];
static int hook_line;

static void hook(const char *expr, const char *file, int line, const char *func)
{
    hook_calls++;
    snprintf(hook_expr, sizeof(hook_expr), "%s", expr);
    snprintf(hook_func, sizeof(hook_func), "%s", func);
    hook_line = line;
    assert_non_null(strstr(file, "test_br_assert.c"));
}

static int checked_div(int a, int b, int *out)
{
    if (br_fails_assert(b != 0))
        return -EINVAL;
    *out = a / b;
    return 0;
}

static void test_holds(void **state)
{
    (void)state;
    br_assert_set_hook(hook);
    uint64_t before = br_assert_failures();
    int q = 0;
    assert_int_equal(checked_div(6, 3, &q), 0);
    assert_int_equal(q, 2);
    assert_int_equal(br_assert_failures(), before);
    assert_int_equal(hook_calls, 0);
}

static void test_fails(void **state)
{
    (void)state;
    br_assert_set_hook(hook);
    uint64_t before = br_assert_failures();
    int q = 7;
    assert_int_equal(checked_div(6, 0, &q), -EINVAL);
    assert_int_equal(q, 7);
    assert_int_equal(br_assert_failures(), before + 1);
    assert_int_equal(hook_calls, 1);
    assert_string_equal(hook_expr, "b != 0");
    assert_string_equal(hook_func, "checked_div");
    assert_true(hook_line > 0);

    /* Without a hook: still counted, still recoverable. */
    br_assert_set_hook(NULL);
    assert_int_equal(checked_div(1, 0, &q), -EINVAL);
    assert_int_equal(br_assert_failures(), before + 2);
    assert_int_equal(hook_calls, 1);
}

static int trace_calls, trace_r, trace_line;
static char trace_func[64];

static void trace_hook(int r, const char *file, int line, const char *func)
{
    trace_calls++;
    trace_r = r;
    trace_line = line;
    snprintf(trace_func, sizeof(trace_func), "%s", func);
    assert_non_null(strstr(file, "test_br_assert.c"));
}

static int allocate(bool fail)
{
    if (fail)
        return br_trace(-ENOMEM);
    return br_trace(3);
}

/* br_trace(r) is r; only a negative r reaches the hook, with its place. */
static void test_trace(void **state)
{
    (void)state;
    br_trace_set_hook(trace_hook);
    assert_int_equal(allocate(false), 3);
    assert_int_equal(trace_calls, 0);
    assert_int_equal(allocate(true), -ENOMEM);
    assert_int_equal(trace_calls, 1);
    assert_int_equal(trace_r, -ENOMEM);
    assert_string_equal(trace_func, "allocate");
    assert_true(trace_line > 0);
    br_trace_set_hook(NULL);
    assert_int_equal(allocate(true), -ENOMEM);
    assert_int_equal(trace_calls, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_holds),
        cmocka_unit_test(test_fails),
        cmocka_unit_test(test_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
