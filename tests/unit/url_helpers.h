/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test_url*.c programs (tests of lib/url/url_canon.c):
 * canonicalization tables, expression lists, and the exact texts of two
 * rejection reasons. */
#pragma once

#include <stddef.h>

/* A table row: input (with its length, for embedded NUL and control
 * bytes) and the expected canonical URL. */
typedef struct canon_case {
    const char *in;
    size_t len; /* 0: strlen(in) */
    const char *want;
} canon_case;

/* Every row canonicalizes to its want, and that to itself. */
void check_canon_table(const canon_case *t, size_t n);
/* Compare out (most specific first) with want as an ordered list. */
void check_exprs(const char *url, const char *const *want, size_t nwant);

#define SECRET "secret-class data (e-mail address) is never indexed"
#define BADSCHEME "scheme is not http, https, ftp, ws or wss"
