/* SPDX-License-Identifier: MIT */
/* URL canonicalization, as Google Safe Browsing's "URLs and Hashing"
 * documents it (v4, with the v5 rules for IPv6), for the URL blocklist
 * (filter kind url-sha256, key encoding url-expression-sha256 v1 =
 * canonicalization v1). The lookup expressions of a canonical URL are
 * url_expr.h.
 *
 * A canonical URL is "scheme://host/path[?query]": no userinfo, no port, no
 * fragment; host lowercased, IDN in punycode (libidn2), IPv4 in dotted
 * decimal, IPv6 normalized; path resolved and escaped. A URL without a scheme
 * is taken as http://. */
#pragma once

#include <stddef.h>

#include "core/error.h"

#define BR_URL_CANON_VERSION 1
#define BR_URL_MAX_LEN 8192 /* longer input is refused */
#define BR_URL_MAX_HOST 253
#define BR_URL_MAX_LABEL 63

/* Canonicalize url (len bytes, need not be NUL-terminated, may hold any
 * byte) into a malloc'd NUL-terminated string; *out is NULL on failure and
 * err (may be NULL) holds a reason that never contains the URL. Refused:
 * -EINVAL for an empty URL, no host, a host over 253 bytes or a label over
 * 63 (measured unescaped, IDN labels in their A-label form), a scheme that is
 * not http/https/ftp/ws/wss, an input over 8 KiB or a canonical form over
 * 8 KiB, a port that is not digits, ':' '[' or ']' in a host name, an invalid
 * IPv6 literal or IDN; -EPERM for a mailto: URL or a bare e-mail address
 * (br_url_is_email in url_secret.h), or a host that holds one (a fullwidth
 * '@' in it): "secret-class data (e-mail address) is never indexed". The
 * canonical URL may still hold an address in its path or query: callers
 * that look it up use br_url_lookup_expressions (url_secret.h);
 * -ENOMEM. Idempotent: canonicalizing a canonical URL gives itself. Thread-
 * safe, no global state. See docs/filter-format.md, "URL canonicalization
 * v1", for the rules. */
int br_url_canonicalize(const char *url, size_t len, char **out, br_error *err);

/* The same into the caller's buf (cap bytes): the canonical URL is
 * buf[0..*out_len), NUL-terminated. No allocation when it fits (only a URL
 * with bytes to unescape or escape, or a canonical form of cap bytes or
 * more, takes a heap copy on the way, freed before return); -ENAMETOOLONG
 * when it does not fit. For callers that must not allocate per lookup (the
 * DNS library, docs/dns.md). */
int br_url_canonicalize_buf(const char *url, size_t len, char *buf, size_t cap, size_t *out_len,
                            br_error *err);
