/* SPDX-License-Identifier: MIT */
/* The lookup expressions of a canonical URL (url_canon.h), as Google Safe
 * Browsing's "URLs and Hashing" forms them: host suffixes times path
 * prefixes. An expression is "host/path[?query]" without the scheme; its
 * SHA-256 is the filter key (filter kind url-sha256, key encoding
 * url-expression-sha256). Callers that look expressions up use those free
 * of e-mail addresses (br_url_lookup_expressions, url_secret.h). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/hash.h"

#define BR_URL_MAX_EXPRESSIONS 30 /* Safe Browsing: 5 hosts times 6 paths */
/* Host suffixes of up to 5 components, as Safe Browsing forms them; a URL
 * filter whose domain entries have more labels asks for more (below). */
#define BR_URL_SB_HOST_COMPONENTS 5
#define BR_URL_MAX_HOST_LABELS 127 /* a 253-byte name has at most 127 labels */
/* With host suffixes up to BR_URL_MAX_HOST_LABELS components: the exact host
 * and the suffixes of 5 components and fewer make the 30, and a name of 127
 * labels adds one "suffix/" for each of its suffixes of 126..6 labels. */
#define BR_URL_MAX_LOOKUP_EXPRESSIONS                                                              \
    (BR_URL_MAX_EXPRESSIONS + BR_URL_MAX_HOST_LABELS - 1 - BR_URL_SB_HOST_COMPONENTS)

typedef struct br_url_exprs {
    size_t n;
    char *expr[BR_URL_MAX_LOOKUP_EXPRESSIONS]; /* most specific first, each in block */
    size_t len[BR_URL_MAX_LOOKUP_EXPRESSIONS]; /* strlen(expr[i]): hashed without a scan */
    char *block; /* every expression: one allocation per URL (br_url_exprs_clear wipes and frees it)
                  */
    size_t block_size;
} br_url_exprs;

/* The lookup expressions of a canonical URL, canonical[0..len) (the output
 * of br_url_canonicalize; it need not be NUL-terminated, a NUL in it is a
 * byte like others; anything that does not look like one is -EINVAL "not
 * a canonical URL ..."): host suffixes (the exact host, plus up to 4 formed
 * from the last 5 components, never the bare TLD, none for IP addresses)
 * times path prefixes (the exact path with the query unless the query is
 * empty, the exact path without it, and up to 4 prefixes from "/"); at most
 * 30, no duplicates.
 *
 * Order, most specific first: host-major from the exact host to the
 * shortest suffix; per host the path with the query, without it, then the
 * prefixes from the longest to "/". So expr[0] is the whole URL without its
 * scheme ("host/path?query": the expression a feed entry is indexed as), and
 * the first expression that matches a list is the most specific match.
 * out needs no initialisation; on failure out->n is 0.
 *
 * host_labels: host suffixes of up to that many components (values below 5
 * mean 5, BR_URL_SB_HOST_COMPONENTS: Safe Browsing's own; above
 * BR_URL_MAX_HOST_LABELS mean that): the suffixes of more than 5
 * components come with the path "/" only (they can only match a domain
 * entry, indexed as "host/"), after the exact host's expressions and before
 * the suffixes of 5 components and fewer. host_labels is the URL filter's
 * max_domain_labels (docs/filter-format.md). */
int br_url_exprs_of(const char *canonical, size_t len, unsigned host_labels, br_url_exprs *out,
                    br_error *err);
/* The host suffixes br_url_exprs_of forms for a canonical host[0..len),
 * without allocating: start[i] is where suffix i starts in host, most
 * specific first (the exact host; unless it is an IP address, the suffixes
 * of up to max(5, host_labels) components, longest first, down to two,
 * never the bare TLD). Returns how many. The expression of a domain entry
 * for suffix i is host + start[i] followed by "/". */
size_t br_url_host_suffixes(const char *host, size_t len, unsigned host_labels,
                            size_t start[BR_URL_MAX_HOST_LABELS]);
/* Free the expressions; e->n becomes 0. */
void br_url_exprs_clear(br_url_exprs *e);

/* SHA-256 of an expression: the filter key and the range query hash. */
int br_url_expr_hash(const char *expr, uint8_t out[BR_SHA256_LEN]);
