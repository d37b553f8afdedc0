/* SPDX-License-Identifier: MIT */
/* Collects the 64-bit keys of a filter build with bounded memory. Keys stay in
 * memory up to a budget; past it they spill to bucket files (by their top 9
 * bits) in a private directory under tmpdir. After br_keyset_finish(), the
 * keys of each shard (a range of leading bits) come back sorted and without
 * duplicates, whichever way they were stored, so the build is the same. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/util.h"

typedef struct br_keyset br_keyset;

/* tmpdir NULL: $TMPDIR, else /var/tmp. mem_keys 0: the default budget. */
int br_keyset_new(const char *tmpdir, size_t mem_keys, br_keyset **out, br_error *err);
/* Removes any spill files. */
void br_keyset_free(br_keyset *ks);
BR_DEFINE_FREEP(br_keyset, br_keyset_free)

int br_keyset_add(br_keyset *ks, uint64_t key, br_error *err);
/* Counted mode (an offline filter's build): each key with its count, twice
 * the memory per key. The first add decides the mode; mixing is -EINVAL.
 * br_keyset_shard then gives pairs (key, count), sorted by key, one per
 * key: a key added twice keeps its largest count. */
int br_keyset_add_counted(br_keyset *ks, uint64_t key, uint64_t count, br_error *err);
bool br_keyset_counted(const br_keyset *ks);
/* Keys added so far, duplicates included. */
uint64_t br_keyset_count(const br_keyset *ks);
bool br_keyset_spilled(const br_keyset *ks);

/* No more adds; prepare to hand out shards keyed by the top shard_bits bits. */
int br_keyset_finish(br_keyset *ks, unsigned shard_bits, br_error *err);

/* After finish: the most keys one shard can hold (duplicates included; for
 * spilled keys an estimate from the bucket sizes). Sizes build memory. */
uint64_t br_keyset_max_shard_keys(const br_keyset *ks);

/* The keys of one shard, sorted and deduplicated, in a malloc'd array that the
 * caller frees (counted mode: *n pairs, 2 * *n words). Safe to call from
 * several threads for different shards. */
int br_keyset_shard(br_keyset *ks, uint32_t shard, uint64_t **keys, size_t *n, br_error *err);

/* n pairs (key, count): sort by key, one per key with its largest count;
 * returns the new number of pairs. */
size_t br_pairs_sort_unique(uint64_t *pairs, size_t n);
/* Sort ascending (LSD radix) and drop duplicates in place; returns the new count. */
size_t br_keys_sort_unique(uint64_t *keys, size_t n);
