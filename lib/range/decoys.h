/* SPDX-License-Identifier: MIT */
/* Decoy prefixes (docs/upstream.md "Decoys"): which extra prefixes go out
 * with a real range request.
 *
 * The choice is a pure function of a secret key, the kind and the real
 * prefix: the same real prefix always brings the same decoys. So when a
 * range is asked for again after its TTL, its decoys (fetched and cached
 * with it, so expiring with it) are revalidated with it, conditionally like
 * it, and an observer who sees many bursts for one prefix cannot single the
 * real prefix out by intersecting them. The key is secret (the cache's,
 * br_range_cache_secret), so the upstream cannot compute the decoys of a
 * prefix itself. Decoys do not depend on who asked: two local users asking
 * for one prefix send the same burst.
 *
 * The decoys are drawn uniformly, without repetition, from a population of
 * prefixes, minus the real one: every prefix, or those whose bit is set in a
 * 2^20-bit bitmap (bit p is bit p mod 8 of byte p / 8: the layout of the
 * URL filter's prefix bitmap, docs/filter-format.md), since a URL mirror
 * serves only the prefixes that hold entries. Candidates come from an
 * AES-128-CTR keystream (OpenSSL) keyed with the secret, its IV naming the
 * kind and the real prefix; a candidate outside the population is skipped,
 * so a prefix leaving the population changes no other decoy (one joining
 * it may take a later decoy's place: the resolver keeps a range's decoys
 * with its cache entry and reuses them, resolver.h).
 *
 * Threads: any; no state. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "range.h"

#define BR_DECOY_KEY_LEN 16
#define BR_DECOY_PREFIXES (UINT32_C(1) << 20)
#define BR_DECOY_BITMAP_BYTES (BR_DECOY_PREFIXES / 8)

/* Set bits in a prefix bitmap (BR_DECOY_BITMAP_BYTES bytes). */
uint32_t br_decoy_population(const uint8_t *bitmap);

/* Write up to n decoys for real_prefix into out[0..n). bitmap NULL: every
 * prefix; else pop_count must be br_decoy_population(bitmap). Returns how
 * many were written: n, or fewer when the population is too small (or, for
 * a population of a few prefixes, after a bounded search), or a negative
 * errno (-EINVAL bad arguments, -EIO when OpenSSL fails). */
int br_decoy_pick(const uint8_t key[BR_DECOY_KEY_LEN], br_range_kind kind, uint32_t real_prefix,
                  const uint8_t *bitmap, uint32_t pop_count, uint32_t n, uint32_t *out);
