/* SPDX-License-Identifier: MIT */
/* Secret-class data in URLs: the one rule that decides whether a string
 * holds an e-mail address, and the lookup expressions of a URL that are free
 * of one. Used by the feed builder, the daemon's URL verb, breachctl url and
 * url-expressions, the Squid helper, and (through the feed builder) the
 * range mirror writer. docs/filter-format.md, "E-mail addresses in URLs",
 * states the same rule for users.
 *
 * Folding. Before it is judged, a string is folded:
 *   1. percent-decoded (%XX, two hex digits in any case, and %uXXXX, u in
 *      any case, into UTF-8) until no escape is left, so %40, %2540,
 *      %252540, %u0040 ... are all '@';
 *   2. NFKC-normalized (libunistring's u8_normalize) wherever it is valid
 *      UTF-8 (bytes that are not are kept as they are), so the fullwidth
 *      commercial at U+FF20, the small commercial at U+FE6B, fullwidth
 *      letters, digits, '.', ':' and '%' become their ASCII forms; the
 *      ideographic full stop U+3002 (and so the halfwidth U+FF61), a label
 *      separator of IDNA (UTS #46), becomes '.';
 *   3. steps 1 and 2 again while they change anything (a fullwidth
 *      "％40" decodes only after NFKC), at most 8 rounds; a string still
 *      changing after that is taken to hold an address.
 * Letters are compared in any case.
 *
 * What counts as an e-mail address, in the folded text:
 *   - LOCAL@DOMAIN, where
 *       LOCAL is at least one local character before the '@', right before
 *       it or before blanks (space, tab) and further '@' ("alice @x.com",
 *       "alice@@x.com"): an ASCII letter or digit, any of
 *       . _ % + - ! $ ' * ^ ` { | } ~ " or a byte >= 0x80 (an
 *       internationalized local part). '/', '?', '#', '&', '=', ':', ';',
 *       ',', '@', blanks and controls are not, so "medium.com/@name",
 *       "/@@x.com" and "?to=@x.com" hold no address;
 *       DOMAIN, right after the '@', is a bracketed address literal
 *       ("[" then 1..64 of [0-9A-Za-z.:], then "]"), or two or more labels
 *       of [A-Za-z0-9_-] and bytes >= 0x80 joined by single dots whose last
 *       label holds a letter or a byte >= 0x80 (so "pkg@1.2.3" and
 *       "repo@master" are not addresses), or a dotted-quad IPv4 address;
 *   - "mailto:" followed by a local character ("mailto:carol" names a
 *     mailbox even without a domain);
 *   - in a query (anything after the string's first '?') LOCAL@DOMAIN
 *     whose DOMAIN may also be one label or a number ("?e=alice@corp",
 *     "?e=alice@3232235777", "?e=alice@0xC0A80101"): "?email=" is where
 *     an address usually leaks;
 *   - the whole string, when it is a bare address (br_url_is_email), whose
 *     DOMAIN may also be one label or a number there ("alice@corp",
 *     "alice@3232235777"): inside a path such a domain is too often a
 *     version or a branch ("vue@3", "repo@main"), so there it does not
 *     count.
 * A string holds an address when one appears anywhere in it: in userinfo,
 * host, path segments, query or fragment.
 *
 * Not detected (and documented as such): addresses spelled with words
 * ("alice at example dot com"), HTML entities, base64 or hashes of them.
 *
 * Thread-safe, no global state; nothing here logs. Out of memory counts as
 * "holds an address" (fail closed). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "core/error.h"
#include "url_expr.h"

#define BR_URL_SECRET_TEXT "secret-class data (e-mail address) is never indexed"
#define BR_URL_ALL_SECRET_TEXT "every lookup expression of the URL holds an e-mail address"

/* True when s (n bytes, any bytes) holds an e-mail address anywhere. */
bool br_url_holds_email(const char *s, size_t n);

/* True when s (n bytes) is printable ASCII without '%', '@', '\' and
 * "mailto:" in any case: nothing in it decodes, folds or holds an address,
 * and canonicalization's first steps (controls out, '\' to '/', userinfo
 * out, escapes decoded) leave it as it is. 16 bytes at a time where SSE2 is there. */
bool br_url_is_plain(const char *s, size_t n);

/* False only when s (n bytes) cannot hold an e-mail address, nor become
 * one through canonicalization (br_url_canonicalize) or lookup
 * expressions: once each %XX escape is decoded (one pass), ASCII without
 * '@', '%', control bytes (which canonicalization removes, joining what
 * was around them) and "mailto:" in any case; a '%' that starts no escape
 * counts as a '%'. So "?q=a%20b%2Fc" needs no folding, "%2540" does. True
 * says "check": br_url_holds_email decides. One pass, no allocation: the
 * fast path of every check here, of the Squid helper's secret-class check
 * and of br_url_lookup_expressions. */
bool br_url_may_hold_email(const char *s, size_t n);

/* br_url_holds_email and br_url_is_email without their fast path
 * (br_url_may_hold_email), always folding: the checks themselves, which
 * test_url_secret holds the fast path to (where it says "cannot hold",
 * these must say no). */
bool br_url_holds_email_folded(const char *s, size_t n);
bool br_url_is_email_folded(const char *s, size_t n);

/* True when s IS secret-class as a whole: after folding and trimming bytes
 * <= 0x20 at both ends, it starts with "mailto:" (any case), or it is a bare
 * address: LOCAL@DOMAIN as above with none of ':' '/' '?' '#' before the
 * first '@' (whatever follows DOMAIN: "alice@example.com/x" is one too),
 * DOMAIN starting after any blanks and '@' that follow it, and here also
 * one label or labels without a letter ("alice@corp", "alice@0xC0A80101").
 * Canonicalization refuses such input (-EPERM), and a feed entry of this
 * kind refuses the whole build. */
bool br_url_is_email(const char *s, size_t n);

/* Remove from e the expressions that hold an address (br_url_holds_email),
 * keeping the order of the others; their text is wiped before it is freed.
 * Returns how many were removed. */
size_t br_url_exprs_drop_email(br_url_exprs *e);

/* The lookup expressions of url (len bytes, as a client sent it) that are
 * free of e-mail addresses: canonicalize, form the expressions with host
 * suffixes of up to host_labels components (br_url_exprs_of),
 * drop those holding an address. *dropped (may be NULL) gets how many were
 * dropped. -EPERM when the URL is secret-class as a whole (its
 * canonicalization refused it, text BR_URL_SECRET_TEXT) or when every
 * expression holds an address (text BR_URL_ALL_SECRET_TEXT); -EINVAL and
 * -ENOMEM as br_url_canonicalize. On failure out->n is 0. No error text
 * ever holds the URL. */
int br_url_lookup_expressions(const char *url, size_t len, unsigned host_labels, br_url_exprs *out,
                              size_t *dropped, br_error *err);
