/* SPDX-License-Identifier: MIT */
/* The code tables of offline filters (docs/filter-format.md, "Algorithm 4:
 * binary-fuse-offline"): an 8-bit code per key, 1..255 (0: not a member).
 *
 * Counts (passwords): codes 1..100 are the exact count; codes 101..255 are
 * buckets whose lower bounds bound[101..255] grow by a ratio r <= 1.1 chosen
 * at build time from the largest count, and bound[256] is the first count
 * the table cannot hold. A count n > 100 gets the code of the largest bound
 * <= n, and a hit reports that bound: never above the true count, and above
 * 100 less than 10% below it.
 *
 * Categories (URLs): code c names category c - 1 of a table of up to 255
 * names of [a-z0-9_-]{1,32}. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* What the codes of a file stand for (its code_kind param). */
enum { BR_CODES_COUNTS = 1, BR_CODES_CATEGORIES = 2 };

#define BR_COUNT_EXACT_MAX 100
/* Bytes of the count table in a file: bound[101..256], u64 little-endian. */
#define BR_COUNT_TABLE_BYTES (156 * 8)
/* The largest count any table can hold (the one of ratio 1.1), so that an
 * input line past it is refused where it is read. */
uint64_t br_count_codes_limit(void);

typedef struct br_count_codes {
    uint64_t bound[257]; /* [101..256] used */
    uint32_t ratio_ppm;  /* r * 1e6, rounded up (informative) */
} br_count_codes;

/* The table of the smallest ratio whose codes hold max_count. -ERANGE when
 * even 1.1 is not enough (max_count > br_count_codes_limit()). */
int br_count_codes_make(uint64_t max_count, br_count_codes *t);
/* Code of a count >= 1 (count < bound[256]). */
uint8_t br_count_code(const br_count_codes *t, uint64_t count);
/* The count a code reports (the lower bound of its bucket); 0 for code 0. */
uint64_t br_count_of_code(const br_count_codes *t, uint8_t code);
void br_count_codes_encode(const br_count_codes *t, uint8_t raw[BR_COUNT_TABLE_BYTES]);
/* Decode and check: bound[101] = 101, increasing, each step at most 10%
 * (or +1). -EINVAL with the reason in err. */
int br_count_codes_decode(const uint8_t raw[BR_COUNT_TABLE_BYTES], br_count_codes *t,
                          br_error *err);

/* The category of an allow-list: a URL with an expression listed in it is
 * SAFE even when a blocklist lists the URL too. Offline files keep it in
 * their exact table only (docs/filter-format.md, "The exact table"). */
#define BR_URL_ALLOW_CATEGORY "allow"

#define BR_CATEGORY_MAX 255
#define BR_CATEGORY_NAME_MAX 32
/* Bytes of one entry of a category table: the name, NUL-padded. */
#define BR_CATEGORY_ENTRY_BYTES 32

typedef struct br_category_table {
    unsigned count;
    char names[BR_CATEGORY_MAX][BR_CATEGORY_NAME_MAX + 1];
} br_category_table;

/* The code of name, adding it when new: 1..255, or -E2BIG past 255 names. */
int br_category_code(br_category_table *t, const char *name);
/* The name of a code, NULL for 0 or a code past the table. */
const char *br_category_name(const br_category_table *t, uint8_t code);
/* raw: count * BR_CATEGORY_ENTRY_BYTES bytes. */
void br_category_table_encode(const br_category_table *t, uint8_t *raw);
/* Each name 1..32 of [a-z0-9_-], NUL-padded, all distinct. */
int br_category_table_decode(const uint8_t *raw, unsigned count, br_category_table *t,
                             br_error *err);
