/* SPDX-License-Identifier: MIT */
/* Range responses (docs/upstream.md): parse the body of a k-anonymity range
 * query ("SUFFIX:VALUE" lines) into a compact binary "range set", and look a
 * full hash up in such a set by binary search directly on its bytes, so that
 * a value read from an mmap'd LMDB page is used without copying or parsing.
 *
 * Body rules (br_range_parse):
 *  - lines "SUFFIX:VALUE" ended by LF or CRLF, final line ending optional
 *    (a last line ended by a lone CR is accepted too), any hex case, any order;
 *  - SUFFIX is the hash minus its 5-hex prefix: 35 hex digits for
 *    BR_RANGE_PASSWORD_SHA1, 27 for BR_RANGE_PASSWORD_NTLM (NT hashes,
 *    HIBP's ?mode=ntlm), 59 for BR_RANGE_URL_SHA256;
 *  - passwords (both password kinds): VALUE is a decimal count 0 ..
 *    4294967295 (leading zeros accepted); count-0 lines are HIBP padding and
 *    are dropped;
 *  - URLs: VALUE is a category name matching [a-z0-9_-]{1,32};
 *  - a UTF-8 byte order mark (EF BB BF) at the start of a line is ignored;
 *  - nothing else is allowed: no blank lines, no spaces, no signs.
 * Errors (the whole response is rejected, nothing is half-used):
 *  - -EFBIG  body longer than max_len;
 *  - -ENODATA empty body (zero bytes, or only line terminators) for the
 *    password kinds. For BR_RANGE_URL_SHA256 an empty body is a
 *    valid answer with no entries: a URL mirror serves one for the prefixes
 *    that hold none (docs/upstream.md);
 *  - -EBADMSG a malformed line, or more than BR_RANGE_MAX_CATEGORIES distinct
 *    categories; the reason gives the line and column but never the prefix
 *    nor any hash or value text, so it is safe to log. A suffix of the other
 *    password kind's length is named: "this is an NTLM range" (27 digits
 *    read as SHA-1), "this is a SHA-1 range" (35 read as NTLM).
 * Choices:
 *  - a non-empty body whose lines are all padding (count 0) is a valid answer
 *    with no entries: a server that padded its answer did answer, and a mirror
 *    may legitimately hold nothing for a prefix. HIBP itself never does this
 *    for a 5-hex prefix; an empty password body stays an error
 *    (docs/upstream.md);
 *  - a suffix that appears more than once is merged, not an error: the answer
 *    "breached / blocked" does not depend on which line wins. Passwords keep
 *    the largest count; URLs keep the category of the first such line in body
 *    order. Padding lines never merge with real ones (they are dropped first).
 *
 * Range set layout, version 1 (all integers little-endian, no alignment
 * assumed anywhere, readers use byte loads):
 *
 *   off  size        field
 *   0    4           magic 'B' 'R' 'S' 0x01 (the last byte is the version)
 *   4    1           kind (br_range_kind)
 *   5    1           W, suffix width: 18 (SHA-1), 14 (NT hash) or 30 (SHA-256)
 *   6    1           V, value width: 4 (passwords: u32 count) or 1 (URLs: u8 category index)
 *   7    1           C, number of categories (0 for passwords, 1..255 for URLs with entries)
 *   8    4           N, number of entries
 *   12   4           T, size in bytes of the category table
 *   16   N*(W+V)     entries, strictly ascending by their W suffix bytes (memcmp)
 *   16+N*(W+V)  T    category table: C records [u8 len 1..32][len bytes [a-z0-9_-]],
 *                    sorted by name; an entry's index refers to the record order
 *   total length is exactly 16 + N*(W+V) + T.
 *
 * An entry's suffix bytes are the full hash from byte 2 on, with the high
 * nibble of byte 2 (the 5th hex digit, part of the prefix) set to 0: 18 bytes
 * for SHA-1, 14 for an NT hash, 30 for SHA-256. Hex suffix order and byte order agree. A count
 * is never 0 in a range set (padding was dropped).
 *
 * br_range_lookup() checks the header and that the sizes add up to len
 * exactly (O(1)), then binary-searches; it never reads outside [value,
 * value+len) whatever the bytes are, and returns -EINVAL for a value that is
 * not a well-formed range set of the requested kind. It does not re-check the
 * sort order (O(N)); br_range_validate() does the full check. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* Same numbers as the filter kinds of filter_file.h; stored in range sets and
 * cache keys, so they never change. */
typedef enum br_range_kind {
    BR_RANGE_PASSWORD_SHA1 = 1,
    BR_RANGE_URL_SHA256 = 2,
    BR_RANGE_PASSWORD_NTLM = 3,
} br_range_kind;
#define BR_RANGE_KIND_MAX BR_RANGE_PASSWORD_NTLM

#define BR_RANGE_DEFAULT_MAX_BODY ((size_t)8 << 20) /* 8 MiB */
#define BR_RANGE_PREFIX_HEX 5
#define BR_RANGE_CATEGORY_MAX 32 /* a category buffer holds BR_RANGE_CATEGORY_MAX + 1 bytes */
#define BR_RANGE_MAX_CATEGORIES 255
#define BR_RANGE_HEADER_SIZE 16

/* Bytes of the full hash of a kind (20, 32, 16), 0 for an unknown kind. */
size_t br_range_hash_len(br_range_kind kind);
/* Hex digits of a suffix in a response body (35, 59, 27), 0 for an unknown kind. */
size_t br_range_suffix_hex(br_range_kind kind);
/* True for the kinds whose VALUE is a count (password-sha1, password-ntlm). */
static inline bool br_range_kind_counted(br_range_kind kind)
{
    return kind == BR_RANGE_PASSWORD_SHA1 || kind == BR_RANGE_PASSWORD_NTLM;
}

/* The 20-bit prefix (first 5 hex digits) of a full hash. */
static inline uint32_t br_range_prefix20(const uint8_t *full_hash)
{
    return ((uint32_t)full_hash[0] << 12) | ((uint32_t)full_hash[1] << 4) |
           ((uint32_t)full_hash[2] >> 4);
}
/* Write the prefix as 5 uppercase hex digits and a NUL (the {prefix} of an upstream URL). */
void br_range_prefix_hex(uint32_t prefix20, char out[BR_RANGE_PREFIX_HEX + 1]);

/* Parse a response body into a newly allocated range set (*out_value, free()
 * it) of *out_len bytes. max_len is the body size limit, 0 meaning
 * BR_RANGE_DEFAULT_MAX_BODY. body may be NULL when len is 0. Returns 0 or a
 * negative errno: -EFBIG, -ENODATA, -EBADMSG (see above), -EINVAL (bad
 * arguments or kind), -ENOMEM. On error *out_value is NULL. */
int br_range_parse(br_range_kind kind, const char *body, size_t len, size_t max_len,
                   uint8_t **out_value, size_t *out_len, br_error *err);

/* Look full_hash (br_range_hash_len(kind) bytes; its prefix is not checked)
 * up in a range set. Returns 1 when found, filling *count_out (passwords) or
 * category_out (URLs, BR_RANGE_CATEGORY_MAX + 1 bytes, NUL-terminated); 0 when
 * not found; -EINVAL when value is not a range set of this kind (bad magic,
 * version, kind, widths, sizes, or a category index or table out of bounds).
 * count_out and category_out may be NULL. On a URL hit *count_out is set to 1;
 * on a password hit category_out is set to "". */
int br_range_lookup(br_range_kind kind, const uint8_t *value, size_t len, const uint8_t *full_hash,
                    uint32_t *count_out, char *category_out);

/* Full check of a range set of this kind: header and sizes, entries strictly
 * ascending, suffix padding nibble 0, counts non-zero, category indexes in
 * range, category table well-formed. 0 and *n_entries (may be NULL) set, or
 * -EINVAL. O(N). */
int br_range_validate(br_range_kind kind, const uint8_t *value, size_t len, uint32_t *n_entries);
