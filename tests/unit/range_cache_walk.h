/* SPDX-License-Identifier: MIT */
/* Every committed entry of a range cache, for the tests that check what a
 * cache holds (test_range_cache_hygiene, test_range_cache_limits and the
 * resolver tests through tests/integration/rtest.c): a walk over the
 * cache's LMDB database through range_cache_int.h, which the product has
 * no use for. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "range/range.h"
#include "range/range_cache.h"

/* Called for every committed entry, in key order, inside one read
 * transaction of its own (cb may do lookups, not puts, touches or
 * flushes); value is the range set, pointing into the map, valid during
 * the call only. A non-zero return from cb stops the walk and is returned.
 * Entries whose header is corrupt are passed with value == NULL. */
typedef int (*rc_walk_cb)(void *ctx, uint32_t partition, br_range_kind kind, uint32_t prefix20,
                          int64_t fetched_at, int64_t expires_at, const uint8_t *value, size_t len);
/* 0, cb's non-zero return, -EINVAL, -EIO (a damaged cache) or an LMDB
 * failure as a negative errno. */
int rc_walk(br_range_cache *c, rc_walk_cb cb, void *ctx);
