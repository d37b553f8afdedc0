/* SPDX-License-Identifier: MIT */
/* The SIMILAR verb of protocol v1 (docs/protocol.md, docs/similar.md): the
 * hashes of a password's variants (lib/similar/), looked up in an offline
 * filter of popular passwords only.
 *   request  = ID SP "SIMILAR" SP ("sha1" | "nt") SP HASH *("," HASH)
 *              1 .. BR_SIMILAR_PER_REQUEST hashes, 40 (sha1) or 32 (nt) hex
 *   response = ID SP "SIMILAR" SP COUNT SP HITS   the highest count among
 *                                                 the hits, how many hit
 *            | ID SP "CLEAN"                      none is in the filter
 *            | ID SP "UNKNOWN" SP REASON          no-similar-filter, ...
 * A password's variants (up to 1,024) take ceil(n / 128) requests, sent
 * pipelined. Parsing and formatting only: never logs, and no error text
 * echoes a hash. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"
#include "core/nthash.h"
#include "protocol.h"

/* 128 SHA-1s make a line of at most 5,280 bytes, under BR_PROTO_MAX_LINE. */
#define BR_SIMILAR_PER_REQUEST 128

typedef struct br_similar_request {
    bool nt;  /* NT hashes (password-ntlm), else SHA-1s (password-sha1) */
    size_t n; /* 1 .. BR_SIMILAR_PER_REQUEST */
    uint8_t hash[BR_SIMILAR_PER_REQUEST][BR_SHA1_LEN]; /* NT: the first 16 bytes */
} br_similar_request;

/* The argument of a SIMILAR request (after "SIMILAR "): true, or false
 * with *e set (bad-request). The caller wipes *out. */
bool br_similar_request_parse(const char *arg, size_t len, br_similar_request *out,
                              br_proto_error *e);

/* "ID SIMILAR sha1|nt H,H,...\n" for n (1 .. BR_SIMILAR_PER_REQUEST)
 * raw hashes of BR_SHA1_LEN (or BR_NT_LEN when nt) bytes each, into buf:
 * 0 and *len, or -EINVAL (bad n, too small a buffer: nothing usable is
 * left in buf). The caller wipes buf. */
int br_similar_request_format(char *buf, size_t size, uint64_t id, bool nt, const uint8_t *hashes,
                              size_t n, size_t *len);

/* An answer's text after "ID " (the detail of a BR_ANSWER_OTHER,
 * protocol.h): true with *count and *hits for "SIMILAR COUNT HITS". */
bool br_similar_answer_parse(const char *s, uint64_t *count, unsigned *hits);
