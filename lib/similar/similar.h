/* SPDX-License-Identifier: MIT */
/* Similar passwords (docs/similar.md): from a candidate password, the
 * normalised bases an attacker's tweak of a popular password would start
 * from, hashed, so that a client holding the plaintext can ask whether one
 * of them is a popular breached password without sending the password.
 *
 * What is made, in this order (each step from the password's bytes; only
 * ASCII is folded or substituted, every other byte is kept as it is):
 *   1. cores: the password, then with its leading run of digits and symbols
 *      taken off (at most 8 bytes) and, for each of those two, with 1..8
 *      trailing digits or symbols taken off, all of them, and a trailing
 *      run of one repeated character cut to one; a core that is cut keeps
 *      at least half of the password's bytes (a trailing repeat counted
 *      once), so that a random password does not shrink to a short word;
 *   2. forms of each core: as is, lowercase, Capitalised, and the lowercase
 *      and Capitalised forms with look-alike characters read back as the
 *      letters they stand for (@ 4 -> a, 0 -> o, 1 ! | -> i or l, 3 -> e,
 *      $ 5 -> s, 7 + -> t, 8 -> b, 6 -> b or g, 9 -> g or q, ( < { -> c,
 *      % -> x), at most
 *      BR_SIMILAR_LEET combinations per core;
 *   3. the last digit of the password changed (0..9), lowercase;
 *   4. undoing word mangling on the stripped lowercase bases: reversed,
 *      a doubled or mirrored word halved, plural and -ed/-ing/-er endings;
 *   5. edit distance one (a byte deleted, two neighbours swapped, a letter
 *      changed or inserted) from the stripped lowercase base, read with its
 *      look-alikes as letters when it has any, when it is
 *      BR_SIMILAR_ED1_MIN .. BR_SIMILAR_ED1_MAX bytes long and its letters
 *      were cased as people type (all lower, all upper, one capital first
 *      or last).
 * Variants shorter than BR_SIMILAR_MIN_LEN or longer than BR_SIMILAR_MAX_LEN
 * bytes are not made. Variants are deduplicated by their bytes, and the
 * password itself is never one of them. Generation stops at
 * BR_SIMILAR_MAX variants (the hard bound, whatever the input): later
 * steps are the ones cut.
 *
 * Every buffer that held a variant or a hash of one is wiped with
 * OPENSSL_cleanse before the call returns; nothing is logged. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/nthash.h"
#include "core/util.h"

/* The hard bound on the variants of one password. Each variant looked up
 * in a filter is one chance of a false positive: with an offline filter's
 * 2^-24 per lookup, a password is refused by chance with a probability of
 * at most 1024 * 2^-24 = 0.006%. */
#define BR_SIMILAR_MAX 1024
/* Variants are 3..64 bytes long. */
#define BR_SIMILAR_MIN_LEN 3
#define BR_SIMILAR_MAX_LEN 64
/* Combinations of look-alike readings tried per core. */
#define BR_SIMILAR_LEET 8
/* Edit distance one is applied to bases of this many bytes. */
#define BR_SIMILAR_ED1_MIN 5
#define BR_SIMILAR_ED1_MAX 16

/* What br_similar_hashes computes. */
enum {
    BR_SIMILAR_SHA1 = 1u << 0, /* the SHA-1 of each variant (password-sha1 keys) */
    BR_SIMILAR_NT = 1u << 1,   /* its NT hash (password-ntlm keys, nthash.h) */
};

/* A reusable context: the hashers and the working memory of one password
 * at a time (not thread-safe; one per thread). */
typedef struct br_similar br_similar;

/* flags: BR_SIMILAR_SHA1 and/or BR_SIMILAR_NT. NULL with err set when out of
 * memory, when flags asks for nothing, or (-ENOSYS) when NT hashes are asked
 * for and MD4 is not available. */
br_similar *br_similar_new(unsigned flags, br_error *err);
void br_similar_free(br_similar *s);

/* The variants of the password (len bytes, any bytes: NUL, invalid UTF-8,
 * any length) hashed into sha1[i] and/or nt[i] (the kinds asked for at
 * br_similar_new; the other may be NULL), at most min(cap, BR_SIMILAR_MAX)
 * of them; index i of both arrays is the same variant. A variant whose NT
 * hash equals the password's own (distinct bytes that read as the same
 * UTF-16 text) is left out. Returns the count, or -EIO / -ENOSYS (the
 * arrays are then wiped). The caller wipes the arrays when done. */
int br_similar_hashes(br_similar *s, const void *password, size_t len, uint8_t (*sha1)[BR_SHA1_LEN],
                      uint8_t (*nt)[BR_NT_LEN], size_t cap);

/* The same variants handed to fn one by one, in order, instead of hashed
 * (br_similar_hashes hashes them through it; the tests and the
 * benchmark's diagnostics see them plain; the bytes are wiped after
 * fn returns). fn returns 0 to go on, anything else to stop. Returns the
 * count handed over. */
typedef int (*br_similar_fn)(const uint8_t *variant, size_t len, void *ctx);
int br_similar_each(br_similar *s, const void *password, size_t len, br_similar_fn fn, void *ctx);
