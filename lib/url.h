/* SPDX-License-Identifier: MIT */
/* URL canonicalization and lookup expressions, as Google Safe Browsing's
 * "URLs and Hashing" documents them (v4, with the v5 rules for IPv6), for
 * the URL blocklist (filter kind url-sha256, key encoding
 * url-expression-sha256 v1 = canonicalization v1).
 *
 * A canonical URL is "scheme://host/path[?query]": no userinfo, no port, no
 * fragment; host lowercased, IDN in punycode (libidn2), IPv4 in dotted
 * decimal, IPv6 normalized; path resolved and escaped. A URL without a scheme
 * is taken as http://. An expression is "host/path[?query]" without the
 * scheme; its SHA-256 is the filter key. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "hash.h"

#define BR_URL_CANON_VERSION 1
#define BR_URL_MAX_LEN 8192        /* longer input is refused */
#define BR_URL_MAX_HOST 253
#define BR_URL_MAX_LABEL 63
#define BR_URL_MAX_EXPRESSIONS 30

/* Canonicalize url (len bytes, need not be NUL-terminated) into a malloc'd
 * NUL-terminated string. -EINVAL with a reason for: no host, a host over 253
 * bytes or a label over 63, a scheme that is not http/https/ftp/ws/wss, a
 * URL over 8 KiB, a mailto: URL or e-mail address (secret-class, -EPERM),
 * an invalid IDN. Idempotent: canonicalizing a canonical URL gives itself. */
int br_url_canonicalize(const char *url, size_t len, char **out, br_error *err);

typedef struct br_url_exprs {
    size_t n;
    char *expr[BR_URL_MAX_EXPRESSIONS]; /* malloc'd, most specific first */
} br_url_exprs;

/* The lookup expressions of a canonical URL: host suffixes (the exact host,
 * plus up to 4 formed from the last 5 components, never the bare TLD, none
 * for IP addresses) times path prefixes (the exact path with the query, the
 * exact path without it, and up to 4 prefixes from "/"); at most 30. */
int br_url_expressions(const char *canonical, br_url_exprs *out, br_error *err);
void br_url_exprs_clear(br_url_exprs *e);

/* SHA-256 of an expression: the filter key and the range query hash. */
int br_url_expr_hash(const char *expr, uint8_t out[BR_SHA256_LEN]);
