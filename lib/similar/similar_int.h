/* SPDX-License-Identifier: MIT */
/* Inside lib/similar: the context that similar.c (deduplication, hashing,
 * wiping) and similar_rules.c (the transformations) share. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "similar.h"
#include "util.h"

/* Open addressing over the variants made so far (and the password). */
#define SIM_SLOTS 8192

struct sim_slot {
    uint32_t off; /* offset + 1 into the arena; 0: empty */
    uint32_t hash;
};

struct br_similar {
    unsigned flags;
    br_nt_hasher *nt_hasher;
    uint8_t *arena; /* the variants' bytes, one after the other */
    size_t arena_used;
    struct sim_slot *slots;
    /* The current call. */
    size_t n, cap;
    uint8_t (*sha1)[BR_SHA1_LEN];
    uint8_t (*nt)[BR_NT_LEN];
    uint8_t exact_nt[BR_NT_LEN];
    br_similar_fn fn;
    void *fn_ctx;
    int rc;    /* first error */
    bool done; /* the bound is reached, fn asked to stop, or an error */
};

/* Offer one variant: made unless too short or long, already made, the
 * password itself, or past the bound. */
void sim_emit(br_similar *s, const uint8_t *v, size_t len);

/* Every step of similar.h's list, for the password p of n bytes. */
void sim_generate(br_similar *s, const uint8_t *p, size_t n);
