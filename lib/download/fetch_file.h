/* SPDX-License-Identifier: MIT */
/* One file over HTTP(S) or file:// with libcurl, for `breachctl filter
 * fetch` (docs/fleet.md): a conditional GET against the validators of the
 * copy already installed (If-None-Match / If-Modified-Since), and a resumed
 * GET (Range + If-Range) of a partial download left by an earlier attempt.
 * Blocking; any thread. Nothing here knows about filters. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* What identifies one version of a remote file. */
typedef struct br_fetch_validators {
    char etag[256];        /* the ETag header as sent, quotes included; "" none */
    int64_t last_modified; /* Last-Modified (file://: the mtime), seconds; -1 none */
} br_fetch_validators;

typedef struct br_fetch_opts {
    const char *url; /* http://, https:// or file:// */
    /* The validators of the installed copy: the answer is "not modified"
     * when the remote file still has them. NULL: unconditional. */
    const br_fetch_validators *have;
    /* The validators of the partial body already in the output file: the
     * transfer continues after its bytes when the remote file still has
     * them (If-Range), else starts over. NULL: start over. */
    const br_fetch_validators *partial;
    uint32_t connect_timeout_ms; /* 0: 10 s */
    uint32_t stall_timeout_ms;   /* no byte for this long fails the transfer; 0: 60 s */
    uint64_t max_bytes;          /* a longer body fails the transfer; 0: no limit */
    const char *ca_file;         /* NULL: the system store */
} br_fetch_opts;

typedef enum br_fetch_status {
    BR_FETCH_NEW = 0,          /* the output file holds the whole current body */
    BR_FETCH_NOT_MODIFIED = 1, /* the remote file still has the `have` validators */
} br_fetch_status;

typedef struct br_fetch_result {
    br_fetch_status status;
    br_fetch_validators got; /* the remote file's (BR_FETCH_NEW) */
    bool resumed;            /* the body continued a partial one (206) */
    uint64_t received;       /* body bytes transferred by this call */
    uint64_t size;           /* bytes in the output file */
    long http_code;          /* 0 for file:// */
} br_fetch_result;

/* Fetch opts->url into path (created mode 0644 when missing). A full answer
 * replaces path's content; a resumed one (206) appends to it; "not
 * modified" leaves it alone. On failure (-EIO, -ETIMEDOUT, -EFBIG, -ENOENT
 * for a 404, -errno) err names the URL and the reason, and path keeps what
 * was received: opts->partial with res->got resumes it. res->got is filled
 * as soon as the headers arrived, also on failure. */
int br_fetch_file(const char *path, const br_fetch_opts *opts, br_fetch_result *res,
                  br_error *err);
