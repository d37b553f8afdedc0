/* SPDX-License-Identifier: MIT */
/* bench_url's data, deterministic (fixed seeds): see bench_url.c for the
 * 1M-entry list and stream, and gen_squid below for the Squid comparison
 * (tests/bench/README.md, "URL checks and the Squid helper"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct strs {
    char *buf; /* NUL-separated */
    size_t *off;
    size_t n;
} strs;

typedef struct data {
    strs domains, urls; /* the list: "domain", "host/path" */
    strs stream;        /* URLs */
    size_t hits;        /* stream URLs generated under the list */
    bool *is_hit;
    bool check; /* count listed URLs and false positives (after the timed runs) */
} data;

const char *str_at(const strs *s, size_t i);
/* n_list entries (70% domains, 30% URL entries) and n_urls URLs, 1% under
 * the list. */
void gen(data *d, size_t n_urls, size_t n_list);
/* The Squid comparison: n_list domains, n_urls URLs of which 10% on a
 * listed domain (some with "www.", "m." or "cdn." in front). */
void gen_squid(data *d, size_t n_urls, size_t n_list);
/* Write DIR/list-domains.txt, DIR/list-urls.txt and DIR/stream.txt. */
int emit(const data *d, const char *dir);
