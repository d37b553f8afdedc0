/* SPDX-License-Identifier: MIT */
/* The layout of similar.c's context, for the tests that check that nothing
 * of a password is left in its working memory after a call (test_similar,
 * fuzz_similar); similar.c alone uses it otherwise. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "similar.h"
#include "core/util.h"

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
    size_t hash_cap; /* br_similar_hashes's bound */
    br_similar_fn fn;
    void *fn_ctx;
    bool uncounted; /* fn left the variant it was handed out of the count */
    int rc;         /* first error */
    bool done;      /* the bound is reached, fn asked to stop, or an error */
};
