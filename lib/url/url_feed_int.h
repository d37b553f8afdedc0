/* SPDX-License-Identifier: MIT */
/* Internal to the feed reader: what url_feed.c (names, entries, the set)
 * gives url_feed_read.c (reading a feed line by line). Only these two
 * include it, and tests/unit/test_url_mirror.c (sets of raw keys). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/hash.h"
#include "url_feed.h"

/* An IPv4 address in dotted-quad form or an IPv6 address (an "%zone"
 * suffix allowed), as hosts files write them. */
bool br_feed_is_ip_address(const char *s, size_t n);

/* The index of category in the set, added when new: 0, or -EINVAL for a
 * name that does not match [a-z0-9_-]{1,32}, -E2BIG past
 * BR_FEED_MAX_CATEGORIES. */
int br_feedset_category_index(br_feedset *fs, const char *category, uint8_t *idx, br_error *err);
/* Append one entry (its expression's hash, the category index): 0, -E2BIG
 * or -ENOMEM. */
int br_feedset_push(br_feedset *fs, const uint8_t hash[BR_SHA256_LEN], uint8_t cat, br_error *err);
/* A domain entry "host/" blocks its subdomains: lookups must try host
 * suffixes of as many labels as it has (an IP address has no suffixes). */
void br_feedset_note_domain_labels(br_feedset *fs, const char *expr);
