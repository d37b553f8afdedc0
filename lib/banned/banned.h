/* SPDX-License-Identifier: MIT */
/* Banned terms (docs/banned.md): whether a candidate password is made of
 * the site's names, a banned term list or the user's own names, with
 * little else.
 *
 * Normalisation, the same for terms and passwords: the text read as
 * UTF-8 (an invalid byte reads as U+FFFD), case folded and decomposed
 * (NFKD), combining marks dropped (so é reads as e), composed again
 * (NFKC), and look-alike letters of other scripts read as the Latin
 * letter they look like (Cyrillic а, Greek ο ...). A password's digits
 * and symbols may also stand for the letters they look like (0 -> o,
 * 1 -> l or i, $ -> s, @ -> a, 4 -> a, € -> e, 6 -> g, 7 -> t, 8 -> b,
 * 9 -> g, § -> s and more: docs/banned.md has the table).
 *
 * A term is found in the password (as normalised) where:
 *   - it appears as is, when it is 4 or more characters long; a term of
 *     3 characters only when it is a whole run of letters (between the
 *     password's ends or non-letters);
 *   - it appears with one edit (a character changed, added, removed, or
 *     two neighbours swapped), where what appears is 4 or more characters;
 *   - any of these reversed.
 *
 * The score (Microsoft Entra Password Protection's rule, docs/banned.md):
 * a reading of the password as a sequence of pieces, each worth 1 point:
 * a term found, a run of 3 or more repeated characters or of a keyboard
 * or alphabet walk (qwerty, 4321, abc), the leading run and the trailing
 * run of digits and symbols (as far as their first 2 symbols from the
 * password's start or end), and any other single character. The score
 * is the smallest total of a reading that holds a term; a password with
 * no term found is not refused here, whatever its score. It is refused
 * when its score is below the minimum (BR_BANNED_MIN_SCORE by default).
 *
 * Nothing here logs, and every buffer that held a password is wiped. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/util.h"

/* A list holds at most this many terms. */
#define BR_BANNED_MAX_TERMS 10000
/* A term is 3 .. 64 characters long once normalised. */
#define BR_BANNED_TERM_MIN 3
#define BR_BANNED_TERM_MAX 64
/* Only the first 256 characters of a password are looked at (a longer one
 * scores above any sensible minimum from its rest). */
#define BR_BANNED_PW_MAX 256
/* Entra's: a password must score 5 points. */
#define BR_BANNED_MIN_SCORE 5

/* Where a term comes from; the refusal message names the kind. */
typedef enum br_banned_kind {
    BR_BANNED_TERM = 0, /* the banned term list ([passwords] banned_terms) */
    BR_BANNED_SITE = 1, /* the site's own names ([passwords] site_terms) */
    BR_BANNED_USER = 2, /* the user's own names */
    BR_BANNED_KINDS_
} br_banned_kind;

typedef struct br_banned br_banned;

br_banned *br_banned_new(void);
void br_banned_free(br_banned *b);
BR_DEFINE_FREEP(br_banned, br_banned_free)

/* Add one term (len bytes of UTF-8). 0 when added, 1 when it was there
 * already (its kind is kept); -EINVAL with err ("invalid UTF-8 at byte
 * N", "too short: ...", "too long: ...") and -ENOSPC when the list holds
 * BR_BANNED_MAX_TERMS; -ENOMEM. err never repeats the term. */
int br_banned_add(br_banned *b, br_banned_kind kind, const char *term, size_t len, br_error *err);

/* Add the parts of a name as BR_BANNED_USER terms: the whole (an account
 * name "jsmith"), and each run of letters of 3 or more characters in it
 * ("John Smith, Room 12" gives "john", "smith", "room"). Parts that do not
 * qualify are skipped. Returns how many terms were added, or -ENOMEM. */
int br_banned_add_name(br_banned *b, const char *name, size_t len);

/* The full name of a GECOS field (up to its first comma) added as
 * br_banned_add_name does. Returns the terms added, or -ENOMEM. */
int br_banned_add_gecos(br_banned *b, const char *gecos);

/* A term handed over by breachd (the callback of br_client_banned_terms,
 * lib/proto/client.h, whose type it matches): ctx is a br_banned **;
 * kind 's' a site term, 'b' a banned term, 0: forget the terms so far (the
 * list is replaced by an empty one). A term this build refuses is skipped.
 * 0, or -ENOMEM (then *ctx may be NULL). */
int br_banned_take(void *ctx, char kind, const char *term, size_t len);

size_t br_banned_count(const br_banned *b);
/* The i-th term (i < count), normalised, NUL-terminated UTF-8, and its kind;
 * NULL when i is out of range. */
const char *br_banned_term(const br_banned *b, size_t i, br_banned_kind *kind);

/* Read a terms file: one term a line, UTF-8; a line whose first non-blank
 * character is '#' is a comment. Blanks around a term are dropped. A bad
 * line (invalid UTF-8, empty, a term too short or too long, one past
 * BR_BANNED_MAX_TERMS) is handed to bad(ctx, "FILE:LINE: what") and
 * skipped: the rest still loads. Returns the terms added, or a negative
 * errno with err when the file cannot be read. */
typedef void (*br_banned_bad_fn)(void *ctx, const char *message);
int br_banned_load(br_banned *b, br_banned_kind kind, const char *path, br_banned_bad_fn bad,
                   void *ctx, br_error *err);

typedef struct br_banned_result {
    bool refused;   /* a term found and score < min_score */
    int score;      /* the smallest score of a reading holding a term; else of any */
    unsigned terms; /* terms in that reading (0: none found) */
    unsigned kinds; /* 1u << br_banned_kind of each of them */
} br_banned_result;

/* Check a password (len bytes, any bytes) against the terms of lists[0..n)
 * (NULL entries skipped: e.g. the site's list and one user's names).
 * min_score <= 0 takes BR_BANNED_MIN_SCORE. Returns 0, or -ENOMEM. */
int br_banned_check(const br_banned *const *lists, size_t n, const void *password, size_t len,
                    int min_score, br_banned_result *r);

/* What a refusal says matched, for a message ("it contains %s"): the
 * user's name, the organisation's name or a banned term, by priority in
 * that order of the kinds found. */
const char *br_banned_kinds_text(unsigned kinds);
