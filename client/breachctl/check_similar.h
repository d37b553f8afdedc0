/* SPDX-License-Identifier: MIT */
/* breachctl password --similar (breachctl(1), docs/similar.md): after the
 * exact check of a password, its variants (lib/similar/) hashed here and
 * asked with SIMILAR; a hit of at least --similar-min-count turns the
 * answer into "SIMILAR <count>". */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "proto/client.h"
#include "similar/similar.h"

typedef enum ctl_similar_mode {
    CTL_SIMILAR_DEFAULT = 0, /* no --similar: warn, quietly off without a filter */
    CTL_SIMILAR_WARN,        /* SIMILAR printed, the exit status unchanged */
    CTL_SIMILAR_REJECT,      /* SIMILAR counts as a hit: exit status 1 */
    CTL_SIMILAR_OFF,
} ctl_similar_mode;

/* --similar-min-count's default, as pam_breachd's similar_min_count. */
#define CTL_SIMILAR_MIN_COUNT 1000

/* --similar's argument (a CTL_OPT_FN, ctl_opts.h): reject, warn or off. */
bool ctl_opt_similar(const char *cmd, const char *arg, void *dst);

typedef struct ctl_similar {
    ctl_similar_mode mode;
    uint64_t min_count; /* a hit counts from this many sightings */
    bool nt;            /* --ntlm: NT hashes of the variants */
    br_similar *sim;
    uint8_t (*hash)[BR_SHA1_LEN]; /* BR_SIMILAR_MAX hashes, wiped after each password */
} ctl_similar;

/* Ready s: false when the check is off or cannot be made (out of memory,
 * no MD4 for --ntlm: said on stderr). */
bool ctl_similar_open(ctl_similar *s);
void ctl_similar_close(ctl_similar *s);

/* After a's exact answer (CLEAN or UNKNOWN) of the password pw: when a
 * variant hits at >= min_count, a becomes BR_ANSWER_OTHER "SIMILAR" with
 * the count. A daemon that cannot answer (UNKNOWN no-similar-filter, ERR
 * unknown-verb) closes s: said once on stderr under --similar=reject,
 * never asked again. 0, or a failure of the exchange with err set. */
int ctl_similar_apply(ctl_similar *s, br_client *c, const void *pw, size_t len, br_answer *a,
                      br_error *err);

/* Passwords read from standard input go in pipelined chunks of up to
 * CTL_SIMILAR_CHUNK: their plaintexts are kept here until the exact answers
 * are back, for the variants of those the exact check leaves room for. */
#define CTL_SIMILAR_CHUNK 256
typedef struct ctl_similar_chunk {
    char *text[CTL_SIMILAR_CHUNK];
    size_t len[CTL_SIMILAR_CHUNK];
} ctl_similar_chunk;

/* A copy of password i (< CTL_SIMILAR_CHUNK) in ch; nothing when ch is
 * NULL. 0 or -ENOMEM. */
int ctl_similar_keep(ctl_similar_chunk *ch, size_t i, const char *pw, size_t len);

/* Every kept password wiped and freed (ch may be NULL). */
void ctl_similar_chunk_wipe(ctl_similar_chunk *ch);

/* Whether a is such an answer. */
bool ctl_similar_answer(const br_answer *a);
