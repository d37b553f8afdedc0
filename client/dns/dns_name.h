/* SPDX-License-Identifier: MIT */
/* A DNS query name as the keys of an offline URL filter (docs/dns.md,
 * "Which names match"): the presentation form unescaped and checked as a
 * host name, canonicalized as a URL's host (url_canon.h), then the domain
 * entry expression "SUFFIX/" of the host and each parent domain that URL
 * checks form (br_url_host_suffixes), each a probe (pwfilter.h: its XXH3;
 * its SHA-256 when a lookup needs it). No allocation: everything is in
 * the caller's bdns_keys. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "filter/pwfilter.h"
#include "url/url_canon.h"
#include "url/url_expr.h"

typedef struct bdns_keys {
    size_t n;                             /* suffixes, most specific first */
    size_t start[BR_URL_MAX_HOST_LABELS]; /* where suffix i starts in host */
    /* suffix i's expression host[start[i]..host_len], its '/' included:
     * valid while this bdns_keys is */
    br_url_probe probe[BR_URL_MAX_HOST_LABELS];
    char host[BR_URL_MAX_HOST + 2]; /* the canonical host, then '/' */
    size_t host_len;                /* without the '/' */
} bdns_keys;

/* 0 and out filled, or -EINVAL when name[0..len) is not a host name: an
 * empty name or label, a label over 63 bytes or a name over 253 (after
 * unescaping, without the trailing dot), a byte other than a letter, digit,
 * '-' or '_', a bad escape, or a host the URL canonicalization refuses.
 * labels: the filter's lookup label count (br_pwfilter_max_domain_labels). */
int bdns_name_keys(const char *name, size_t len, unsigned labels, bdns_keys *out);
