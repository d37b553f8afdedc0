/* SPDX-License-Identifier: MIT */
/* One way to say "cannot happen" and still recover (docs/architecture.md,
 * "Errors"):
 *
 *     if (br_fails_assert(n <= cap))
 *         return -EINVAL;
 *
 * br_fails_assert(cond) is false when cond holds. When it does not, it counts
 * the failure, calls the hook (if one is set) with the condition's text and
 * place, and is true, so that the caller takes its way out: an error
 * return, an UNKNOWN answer, never a silent fallback. lib/ never logs: the
 * program sets the hook (breachd logs it and shows the count in STATS as
 * internal_errors). Thread-safe; the hook may be called from any thread. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* expr: the condition that failed, as written; file, line, func: where. */
typedef void br_assert_hook_fn(const char *expr, const char *file, int line, const char *func);

/* Set (or with NULL clear) the hook. Set it once, before threads start. */
void br_assert_set_hook(br_assert_hook_fn *hook);

/* How many assertions failed in this process. */
uint64_t br_assert_failures(void);

/* Counts, calls the hook, returns true. Use br_fails_assert(). */
bool br_assert_fail(const char *expr, const char *file, int line, const char *func);

#define br_fails_assert(cond)                                                                      \
    (__builtin_expect(!(cond), 0) ? br_assert_fail(#cond, __FILE__, __LINE__, __func__) : false)

/* An internal error on its way up, with its place (as dbus-broker's
 * error_trace):
 *
 *     if (!p)
 *         return br_trace(-ENOMEM);
 *
 * br_trace(r) is r, unchanged; a negative r is passed with the function,
 * file and line to the trace hook, which breachd writes to its debug log
 * ("internal error -12 (Cannot allocate memory) at foo() in x.c:42"), so
 * that a failure deep in a library can be placed without a debugger. Only
 * the place and the code: never data. Thread-safe. */
typedef void br_trace_hook_fn(int r, const char *file, int line, const char *func);

/* Set (or with NULL clear) the trace hook. Set it once, before threads start. */
void br_trace_set_hook(br_trace_hook_fn *hook);

/* Calls the hook for r < 0, returns r. Use br_trace(). */
int br_trace_at(int r, const char *file, int line, const char *func);

#define br_trace(r) br_trace_at((r), __FILE__, __LINE__, __func__)
