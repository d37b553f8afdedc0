/* SPDX-License-Identifier: MIT */
/* Internal to URL canonicalization v1 (url_canon.c, the steps and the
 * whole; url_canon_host.c, step 5: the host): the growable string both
 * build into and the host step. Only these two include it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hash.h"

/* A growable byte string. Failure to grow sets oom and later appends are
 * ignored, so that callers check once at the end. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static inline bool sb_reserve(sbuf *b, size_t extra)
{
    if (b->oom)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static inline void sb_add(sbuf *b, const void *s, size_t n)
{
    if (!sb_reserve(b, n))
        return;
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static inline void sb_addc(sbuf *b, char c)
{
    sb_add(b, &c, 1);
}

static inline void sb_free(sbuf *b)
{
    free(b->p);
    *b = (sbuf){0};
}

static inline bool is_hex(unsigned char c)
{
    return br_hexval(c) >= 0;
}

static inline bool is_ascii_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline bool is_ascii_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static inline char ascii_lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
}

/* Step 5: canonicalize the host (raw bytes h[0..n), userinfo and port
 * already removed) and append it to out: 0, -EINVAL with the reason in err,
 * or -ENOMEM. */
int br_canon_host(sbuf *out, const char *h, size_t n, br_error *err);
