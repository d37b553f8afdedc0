/* SPDX-License-Identifier: MIT */
/* Prepared range bodies of the range endpoint (http_prep.c): the formatted
 * body of one range, and its gzip and brotli codings, kept per cache
 * partition, kind and prefix, so that a range asked again is sent by
 * reference (the plain body from a file) instead of formatted (and
 * compressed) again, with the validators made once. An entry is for one
 * version of the cache entry (when it was fetched or confirmed, its size,
 * the upstream's ETag and Last-Modified, or without them its entity tag
 * core): a changed entry is prepared anew. The memory is bounded in all
 * ([http] prepared_size) and per partition ([cache] partition_share of
 * it), as the range cache is (docs/privacy.md, "An HTTP client of the
 * range endpoint"). Used by http_range.c, on the loop's thread only. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "range/range.h"

struct evbuffer;

#define BD_PREP_CODINGS 3 /* bd_http_enc: identity, gzip, br */

typedef struct bd_http_prep bd_http_prep;
typedef struct bd_prepared bd_prepared;

/* What a prepared body is of, and which version of it. */
typedef struct bd_prep_key {
    uint32_t partition;
    uint32_t prefix20;
    br_range_kind kind;
    int64_t fetched_at;        /* the version: br_range_answer's fetched_at, */
    size_t len;                /* ... the size of its range set, */
    const char *etag;          /* ... the upstream's validators ("" when none; */
    const char *last_modified; /*     borrowed: an entry keeps copies) */
    char core[33];             /* ... without validators, the entity tag core */
} bd_prep_key;

/* What every answer of one version shares, made once with its entry. */
typedef struct bd_prep_meta {
    char core[33]; /* the entity tag core */
    char lm[64];   /* Last-Modified (the upstream's, canonical), "" when none */
    int64_t lm_s;  /* its time in seconds, -1 when none */
} bd_prep_meta;

/* A table whose identity bodies are unnamed files in dir (the range
 * cache's directory; NULL or "": memfds, as when dir takes none), or NULL
 * when out of memory. */
bd_http_prep *bd_http_prep_new(const char *dir);
/* Drops every entry; bodies still being sent stay until they are. */
void bd_http_prep_free(bd_http_prep *t);

/* The entry for key, or NULL. An entry of the same partition, kind and
 * prefix but another version is dropped (the cache entry changed). The
 * caller holds the entry until bd_http_prep_release. */
bd_prepared *bd_http_prep_find(bd_http_prep *t, const bd_prep_key *key);
/* A new entry for key with meta and without bodies (held, as by find), or
 * NULL when out of memory. */
bd_prepared *bd_http_prep_add(bd_http_prep *t, const bd_prep_key *key, const bd_prep_meta *meta);
/* Done with an entry find or add gave (NULL is fine). */
void bd_http_prep_release(bd_prepared *e);
/* Give the entry the body of coding enc (malloc'd bytes p, len, taken),
 * with n_lines lines for the identity coding; then drop the oldest
 * entries of its partition past share bytes, and the oldest of all past
 * budget; e itself last, when it alone is past either (it still serves the
 * caller's answer). 0, or -EINVAL (a coding it has already; p freed). */
int bd_http_prep_set(bd_http_prep *t, bd_prepared *e, int enc, char *p, size_t len,
                     uint32_t n_lines, uint64_t budget, uint64_t share);
/* Has e a body of coding enc? Its bytes and length, and the identity
 * body's line count. */
bool bd_http_prep_body(const bd_prepared *e, int enc, const char **p, size_t *len);
uint32_t bd_http_prep_lines(const bd_prepared *e);
/* The file the identity body of e is in (sent with sendfile(2)), -1 when
 * it is in memory only; *len its length. */
int bd_http_prep_file(const bd_prepared *e, size_t *len);
/* The validators add gave e. */
const bd_prep_meta *bd_http_prep_meta(const bd_prepared *e);
/* Append e's body of coding enc to out by reference: e stays (even if
 * dropped) until out is done with it. 0 or -ENOMEM. */
int bd_http_prep_give(bd_prepared *e, int enc, struct evbuffer *out);
