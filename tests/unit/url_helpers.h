/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test_url*.c programs (tests of lib/url/):
 * canonicalization tables, expression lists, a feed read from a path, an
 * offline set opened or failed, and the exact texts of two rejection
 * reasons. */
#pragma once

#include <stddef.h>

#include "filter/filter_file.h"
#include "filter/pwfilter.h"
#include "url/url_feed.h"

/* A table row: input (with its length, for embedded NUL and control
 * bytes) and the expected canonical URL. */
typedef struct canon_case {
    const char *in;
    size_t len; /* 0: strlen(in) */
    const char *want;
} canon_case;

/* Every row canonicalizes to its want, and that to itself. */
void check_canon_table(const canon_case *t, size_t n);
/* Compare out (most specific first) with want as an ordered list. */
void check_exprs(const char *url, const char *const *want, size_t nwant);

/* br_feedset_read of the file at path ("FILE: strerror" when it does not
 * open): the feed tests' files. */
int read_feed_path(br_feedset *fs, const char *path, const char *category, const br_feed_opts *o,
                   br_feed_stats *st, br_error *err);

/* br_pwfilter_open_set of paths[0..n), or the test fails naming the
 * newest file and the reason; body: the newest member's body SHA-256
 * (what a delta of the set names), or NULL. */
br_pwfilter *open_url_set(const char *const *paths, size_t n, uint8_t body[32]);

/* br_pwfilter_lookup_category and _code of an expression known by its
 * SHA-256 only: what a set keyed by SHA-256 (key encodings v1..v5) can
 * answer; a key encoding v6 member answers -ENOTSUP. */
int lookup_sha256(const br_pwfilter *pf, const uint8_t key[32], const char **category);
int lookup_sha256_code(const br_pwfilter *pf, const uint8_t key[32], uint8_t *code);
/* br_pwfilter_lookup_category of expr's bytes (its XXH3, and its SHA-256
 * when a member needs it). */
int lookup_expr(const br_pwfilter *pf, const char *expr, const char **category);

/* What a test changes in a header: field := v. */
typedef void (*header_edit)(br_filter_header *h, uint32_t v);
/* The header's key encoding version, and its check filters' bits. */
void set_key_encoding(br_filter_header *h, uint32_t v);
void set_check_bits(br_filter_header *h, uint32_t v);
/* path with edit(header, v) applied (the header checksummed again)
 * written to out, then opened: the test fails unless it is refused with
 * a reason that contains what. */
void expect_header_refused(const char *path, const char *out, header_edit edit, uint32_t v,
                           const char *what);

#define SECRET "secret-class data (e-mail address) is never indexed"
#define BADSCHEME "scheme is not http, https, ftp, ws or wss"
