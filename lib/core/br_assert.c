/* SPDX-License-Identifier: MIT */
/* The recoverable assertion's counter and hook, and the trace hook
 * (br_assert.h). */
#include "br_assert.h"

static br_assert_hook_fn *assert_hook;
static uint64_t assert_failures;
static br_trace_hook_fn *trace_hook;

void br_assert_set_hook(br_assert_hook_fn *hook)
{
    __atomic_store_n(&assert_hook, hook, __ATOMIC_RELEASE);
}

uint64_t br_assert_failures(void)
{
    return __atomic_load_n(&assert_failures, __ATOMIC_RELAXED);
}

bool br_assert_fail(const char *expr, const char *file, int line, const char *func)
{
    __atomic_fetch_add(&assert_failures, 1, __ATOMIC_RELAXED);
    br_assert_hook_fn *hook = __atomic_load_n(&assert_hook, __ATOMIC_ACQUIRE);
    if (hook)
        hook(expr, file, line, func);
    return true;
}

void br_trace_set_hook(br_trace_hook_fn *hook)
{
    __atomic_store_n(&trace_hook, hook, __ATOMIC_RELEASE);
}

int br_trace_at(int r, const char *file, int line, const char *func)
{
    br_trace_hook_fn *hook = __atomic_load_n(&trace_hook, __ATOMIC_ACQUIRE);
    if (r < 0 && hook)
        hook(r, file, line, func);
    return r;
}
