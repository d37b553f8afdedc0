/* SPDX-License-Identifier: MIT */
/* Internal to lib/url: the growable string that URL canonicalization v1
 * (url_canon.c) builds into, and canonicalization into such a string, which
 * br_url_lookup_expressions (url_secret.c) uses to keep the canonical URL on
 * its stack. Only these two, and test_url_buffers, include it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/util.h"

/* A growable byte string. It may start on a caller's array (sb_init_on:
 * no allocation while it fits) and moves to the heap when it outgrows it.
 * Failure to grow sets oom and later appends are ignored, so that callers
 * check once at the end. It holds URL bytes: sb_wipe clears every byte it
 * ever wrote (up to hw) before it frees or gives back the array. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    size_t hw;   /* bytes of p ever written (the NUL included): what sb_wipe clears */
    char *stack; /* the caller's array p started on, NULL for none */
    bool oom;
} sbuf;

/* Start b on the caller's array a (n >= 1 bytes), empty. */
static inline void sb_init_on(sbuf *b, char *a, size_t n)
{
    *b = (sbuf){.p = a, .cap = n, .hw = 1, .stack = a};
    a[0] = '\0';
}

/* Move to a larger heap block (need bytes at least): the old one, the
 * caller's array or a heap block, is wiped (and freed) after the copy. */
static inline bool sb_grow(sbuf *b, size_t need)
{
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *p = malloc(cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    if (b->p) {
        memcpy(p, b->p, b->hw);
        br_wipe(b->p, b->hw);
        if (b->p != b->stack)
            free(b->p);
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static inline bool sb_reserve(sbuf *b, size_t extra)
{
    if (b->oom)
        return false;
    size_t need = b->len + extra + 1;
    if (need > b->cap && !sb_grow(b, need))
        return false;
    if (need > b->hw)
        b->hw = need;
    return true;
}

/* Room for extra bytes and the NUL, without counting them as written: a
 * caller that writes into p directly calls sb_wrote after. */
static inline bool sb_room(sbuf *b, size_t extra)
{
    if (b->oom)
        return false;
    size_t need = b->len + extra + 1;
    return need <= b->cap || sb_grow(b, need);
}

/* Bytes up to len and the NUL after it were written. */
static inline void sb_wrote(sbuf *b)
{
    if (b->len + 1 > b->hw)
        b->hw = b->len + 1;
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

/* Wipe what b wrote, free it if it is on the heap; b is empty. */
static inline void sb_wipe(sbuf *b)
{
    if (b->p)
        br_wipe(b->p, b->hw);
    if (b->p != b->stack)
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

/* Room for a canonical URL on the stack (br_url_canonicalize and
 * br_url_lookup_expressions): the usual URL fits, a longer one moves to the
 * heap. */
#define BR_URL_CANON_ROOM 1024

/* br_url_canonicalize into out (an sbuf, empty, possibly on the caller's
 * stack array): the canonical URL is out->p[0..out->len), NUL-terminated;
 * the same errors. On failure out holds no result (the caller wipes it
 * either way). */
int br_url_canon_into(sbuf *out, const char *url, size_t len, br_error *err);
