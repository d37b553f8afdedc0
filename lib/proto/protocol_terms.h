/* SPDX-License-Identifier: MIT */
/* The BANNED verb of protocol v1 (docs/protocol.md, docs/banned.md): the
 * banned terms and the site's names that clients check new passwords
 * against, handed over a page at a time (the terms are not secret; the
 * password never leaves the client).
 *   request  = ID SP "BANNED" SP START          the index of the first term
 *   response = ID SP "TERMS" SP GENERATION SP MIN_SCORE SP TOTAL SP NEXT
 *              [SP ITEM *("," ITEM)]
 *   ITEM     = KIND TERM   KIND "b" (banned_terms) or "s" (site_terms);
 *                          TERM normalised UTF-8, every byte outside
 *                          0x21..0x7e and "%" "," written %XX
 * NEXT is the index to ask for next; the list is whole when NEXT equals
 * TOTAL. GENERATION changes when a reload changes the list: a client that
 * sees it change between pages starts again. Parsing and formatting only;
 * never logs. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The items of one answer take at most this many bytes. */
#define BR_TERMS_PAGE_BYTES 7000

typedef struct br_terms_page {
    uint64_t generation;
    unsigned min_score;
    uint32_t total, next;
} br_terms_page;

/* Append the item (kind, the NUL-terminated term) to buf, which holds *len
 * bytes of items (NUL-terminated, size bytes, at least
 * BR_TERMS_PAGE_BYTES + 1): true, or false (buf unchanged) when it would
 * take the items past BR_TERMS_PAGE_BYTES. */
bool br_terms_item_format(char *buf, size_t size, size_t *len, char kind, const char *term);

/* An item, decoded: kind 'b' or 's', the term (len bytes, not
 * NUL-terminated). A negative return stops the parse and is returned. */
typedef int (*br_terms_fn)(void *ctx, char kind, const char *term, size_t len);

/* An answer's text after "ID " (s, NUL-terminated): 0 with *page set and
 * each item handed to fn (may be NULL), or -EPROTO when it is not a
 * well-formed TERMS answer (items before the fault may have been
 * handed). */
int br_terms_answer_parse(const char *s, br_terms_page *page, br_terms_fn fn, void *ctx);
