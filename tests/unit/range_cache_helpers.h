/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test_range_cache*.c programs that test
 * lib/range/range_cache*.c on a fixture directory: range contents derived
 * from (kind, prefix, seed), stored and checked. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "range/range.h"
#include "range/range_cache.h"

typedef struct fixture {
    char dir[64];   /* mkdtemp directory */
    char cache[96]; /* the cache directory inside it (created by open) */
} fixture;

/* cmocka setup and teardown: a fresh temp dir in *state, removed after. */
int fixture_setup(void **state);
int fixture_teardown(void **state);

/* The content of (kind, prefix, seed): min_n to max_n entries. */
typedef struct gen {
    size_t n;
    uint8_t hash[256][BR_SHA256_LEN];
    uint32_t count[256];
    char cat[256][16];
} gen;
void gen_make(gen *g, br_range_kind kind, uint32_t prefix, uint64_t seed, size_t min_n,
              size_t max_n);
/* g as a parsed range set (*v, malloc'ed). */
void gen_value(const gen *g, br_range_kind kind, uint8_t **v, size_t *len);
/* Store generation seed of (kind, prefix) in partition 0. */
void put_gen(br_range_cache *c, br_range_kind kind, uint32_t prefix, uint64_t seed, size_t min_n,
             size_t max_n, int64_t fetched, int64_t expires, const char *etag, const char *lm);
/* Check that (kind, prefix) answers exactly like generation seed. */
void check_gen(br_range_cache *c, br_range_kind kind, uint32_t prefix, uint64_t seed, size_t min_n,
               size_t max_n, int64_t now, br_range_cache_state want_state);
/* The fixture's cache, opened (must succeed). */
br_range_cache *open_cache(const fixture *f, uint64_t max_size);
/* A hash of prefix (hl bytes), the rest fixed. */
void hash_for(uint32_t prefix, uint8_t *h, size_t hl);
