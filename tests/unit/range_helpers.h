/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test_range*.c programs (tests of lib/range/range.c):
 * a text buffer, a random password range set and its body in several
 * spellings, and the checks of a parsed set. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"
#include "range/range.h"

#define NREAL 400
#define NPAD 150
/* The suffix of "password" (SHA-1, range 5BAA6); a made-up SHA-256 suffix. */
#define S35 "1E4C9B93F3F0682250B6CF8331B7EE68FD8"
#define S59 "C4E1A9C3F2B5D6E7F8091A2B3C4D5E6F708192A3B4C5D6E7F8091A2B3C4"

/* A growing text buffer. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

void sb_add(sbuf *b, const char *s, size_t n);
void sb_str(sbuf *b, const char *s);

/* A full hash with the given 20-bit prefix and a random rest. */
void rand_hash(uint64_t *rng, uint32_t prefix, uint8_t *h, size_t hlen);
/* The suffix of h as hex (upper), NUL-terminated. */
void suffix_hex(const uint8_t *h, size_t hlen, char *out);

/* NREAL real lines (counts from 1 to UINT32_MAX) and NPAD padding lines of
 * range 5BAA6. */
typedef struct pw_set {
    uint8_t real[NREAL][BR_SHA1_LEN];
    uint32_t count[NREAL];
    uint8_t pad[NPAD][BR_SHA1_LEN];
} pw_set;
void make_pw_set(pw_set *s, uint64_t seed);

enum { EOL_LF, EOL_CRLF, EOL_MIXED };

/* Body of the set: real lines (shuffled or in order), then padding. */
void pw_body(const pw_set *s, sbuf *b, int eol, bool final_eol, bool lower, bool shuffle,
             bool padding);
/* v (len bytes) is the parsed set s: every real line found with its count,
 * and with expect_padding_absent, no padding line. */
void check_pw_set(const pw_set *s, const uint8_t *v, size_t len, bool expect_padding_absent);
/* br_range_parse that must succeed. */
void parse_ok(br_range_kind kind, const char *body, size_t len, uint8_t **v, size_t *vlen);
