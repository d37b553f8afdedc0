/* SPDX-License-Identifier: MIT */
/* A DNS query name as the keys of an offline URL filter (docs/dns.md,
 * "Which names match"): the presentation form unescaped and checked as a
 * host name, canonicalized as a URL's host (url_canon.h), then the domain
 * entry expression "SUFFIX/" of the host and each parent domain that URL
 * checks form (br_url_host_suffixes), with their SHA-256 (only those a
 * quick filter lets through, when given one). No allocation:
 * everything is in the caller's bdns_keys. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"
#include "filter/pwfilter.h"
#include "url/url_canon.h"
#include "url/url_expr.h"

typedef struct bdns_keys {
    size_t n;                             /* suffixes, most specific first */
    size_t start[BR_URL_MAX_HOST_LABELS]; /* where suffix i starts in host */
    /* key[i] holds suffix i's SHA-256 when hashed[i]; else the quick filter
     * said no member holds it, and key[i] is not set */
    bool hashed[BR_URL_MAX_HOST_LABELS];
    uint8_t key[BR_URL_MAX_HOST_LABELS][BR_SHA256_LEN];
    char host[BR_URL_MAX_HOST + 1]; /* the canonical host */
    size_t host_len;
} bdns_keys;

/* 0 and out filled, or -EINVAL when name[0..len) is not a host name: an
 * empty name or label, a label over 63 bytes or a name over 253 (after
 * unescaping, without the trailing dot), a byte other than a letter, digit,
 * '-' or '_', a bad escape, or a host the URL canonicalization refuses.
 * labels: the filter's lookup label count (br_pwfilter_max_domain_labels).
 * quick: a set with quick filters in every member (br_pwfilter_has_quick):
 * a suffix's SHA-256 is computed only when br_pwfilter_quick_maybe says
 * maybe for the XXH3 of its expression (docs/filter-format.md, "The quick
 * filter"); the others are left unhashed (hashed[i] false), as no member
 * holds them. NULL: every suffix is hashed. */
int bdns_name_keys(const char *name, size_t len, unsigned labels, const br_pwfilter *quick,
                   bdns_keys *out);
