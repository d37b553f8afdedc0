/* SPDX-License-Identifier: MIT */
/* Inside lib/banned/: the normalisation (banned_norm.c) that the term list
 * and the matcher (banned.c) share, the walks, and the list's layout. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "banned.h"

/* Up to cap code points of s (n bytes, any bytes) normalised as banned.h
 * says into out. Returns the count, or -ENOMEM. Every temporary copy is
 * wiped. */
int br_banned_norm(const uint8_t *s, size_t n, uint32_t *out, size_t cap);

/* A password's character and up to two letters it may stand for (the
 * look-alike table of docs/banned.md); alt[] 0 when unused. */
typedef struct br_banned_cp {
    uint32_t c;
    uint32_t alt[2];
} br_banned_cp;
void br_banned_cp_of(uint32_t c, br_banned_cp *out);

/* A character's bit in a 32-bit signature: a..z their own, others
 * hashed onto the 6 bits left. A term can be found within one edit in a
 * window only when at most one of its bits is missing from the window's. */
static inline uint32_t br_banned_sig(uint32_t c)
{
    return c >= 'a' && c <= 'z' ? 1u << (c - 'a') : 1u << (26 + c % 6);
}

/* c is a letter (general category L). */
bool br_banned_is_letter(uint32_t c);

/* The end of the longest run from p[s] of repeated characters or of a
 * keyboard or alphabet walk, at least 3 long: s when there is none. */
size_t br_banned_run_end(const uint32_t *p, size_t n, size_t s);

typedef struct br_banned_term_ {
    uint32_t *cp;  /* normalised */
    uint32_t *rcp; /* the same reversed (a reversed term is found too) */
    uint32_t sig;  /* br_banned_sig of its characters, OR-ed */
    uint8_t len;   /* code points */
    uint8_t kind;  /* br_banned_kind */
    char *text;    /* normalised, UTF-8 */
} br_banned_term_;

struct br_banned {
    br_banned_term_ *t;
    size_t n, cap;
};
