/* SPDX-License-Identifier: MIT */
/* A range set (range.h) written back out as a range API response body, the
 * way HIBP serves one (docs/upstream.md "Serving the range API"):
 *
 *   - one line "SUFFIX:COUNT" per entry, in the set's order (ascending);
 *   - SUFFIX: the hash minus its 5-hex prefix in uppercase hex (35 digits
 *     for SHA-1); COUNT in decimal, without leading zeros;
 *   - lines separated by CRLF, no line end after the last one; a set with
 *     no entries is an empty body.
 *
 * Only kinds whose values are counts (passwords) are written; a URL range
 * set is refused (-EINVAL).
 *
 * Padding lines, as HIBP adds them for "Add-Padding: true", are
 * "SUFFIX:0" with a random SUFFIX: br_range_format_padding writes them from
 * random bytes the caller supplies.
 *
 * Nothing here allocates or logs; every function is pure and thread-safe. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "range.h"

/* Bytes of one padding line of kind, without its CRLF separator ("SUFFIX:0"),
 * 0 for an unknown kind. */
size_t br_range_pad_line_len(br_range_kind kind);

/* Check that value is a range set of kind with count values (O(1): header
 * and sizes, as br_range_lookup does) and give its number of entries and the
 * largest body br_range_format can write for it. 0, or -EINVAL. */
int br_range_format_size(br_range_kind kind, const uint8_t *value, size_t len, uint32_t *n_entries,
                         size_t *max_body);

/* Write the body of a range set into out (cap bytes, at least the max_body
 * of br_range_format_size). 0 and *out_len, or -EINVAL (not a range set of a
 * count kind) or -ENOBUFS (cap too small; out is then garbage). */
int br_range_format(br_range_kind kind, const uint8_t *value, size_t len, char *out, size_t cap,
                    size_t *out_len);

/* Random bytes one padding line of kind takes (two hex digits a byte), 0
 * for an unknown kind. */
size_t br_range_pad_random_len(br_range_kind kind);

/* Write n padding lines of kind into out, each preceded by CRLF (so that they
 * follow a body; after an empty body the caller drops the first two bytes).
 * random holds n * br_range_pad_random_len(kind) bytes. cap must hold
 * n * (2 + br_range_pad_line_len(kind)) bytes. Returns the bytes written, 0
 * for an unknown kind or a cap too small. */
size_t br_range_format_padding(br_range_kind kind, const uint8_t *random, size_t n, char *out,
                               size_t cap);
