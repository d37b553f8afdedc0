/* SPDX-License-Identifier: MIT */
/* bench_url's data (bench_url_gen.c): a blocklist of domains and URL
 * entries and a stream of URLs, 1% of them under the list (bench_url.c
 * describes them). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct strs {
    char *buf; /* NUL-separated */
    size_t *off;
    size_t n;
} strs;

const char *str_at(const strs *s, size_t i);

typedef struct data {
    strs domains, urls; /* the list: "domain", "host/path" */
    strs stream;        /* URLs */
    size_t hits;        /* stream URLs generated under the list */
    bool *is_hit;
    bool check; /* count listed URLs and false positives (after the timed runs) */
} data;

/* Generate n_urls URLs and an n_list-entry list into d (fixed seeds). */
void gen(data *d, size_t n_urls, size_t n_list);
/* Write d as DIR/list-domains.txt, list-urls.txt and stream.txt. 0 or an
 * exit status. */
int emit(const data *d, const char *dir);
