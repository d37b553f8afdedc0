/* SPDX-License-Identifier: MIT */
/* Functions return 0 or a negative errno; those that can say more fill a
 * br_error with one human line ("FILE:LINE: what is wrong"). */
#pragma once

#include <stdarg.h>

typedef struct br_error {
    char text[512];
} br_error;

/* Set err (if not NULL) and return code (a negative errno), so that callers
 * can write `return br_error_set(err, -EINVAL, "...")`. */
int br_error_set(br_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Like br_error_set but prefixes the current text: "prefix: old text". */
int br_error_prefix(br_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
