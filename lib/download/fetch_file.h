/* SPDX-License-Identifier: MIT */
/* One file over HTTP(S) or file:// with libcurl, for `breachctl filter
 * fetch` (docs/fleet.md): a conditional GET against the validators of the
 * copy already installed (If-None-Match / If-Modified-Since), and a resumed
 * GET (Range + If-Range) of a partial download left by an earlier attempt.
 * Blocking; any thread. Nothing here knows about filters. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"

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
    /* Called once, as soon as the output file holds its first head_len
     * bytes (received now, or kept from the partial body), with a copy of
     * them: 0 to go on, with *limit set to the size the whole file may
     * have (0: any); or a negative errno to stop the transfer at once, the
     * reason written into reason. A body that goes past *limit fails with
     * -EFBIG as soon as the byte past it arrives. NULL: no check. */
    int (*check_head)(void *ctx, const uint8_t *head, size_t len, uint64_t *limit, char *reason,
                      size_t reason_len);
    void *check_ctx;
    size_t head_len;
    /* Accept-Encoding: gzip, the body decoded before it is written (and
     * counted against max_bytes): a server with the file's NAME.gz beside
     * it (nginx gzip_static) sends fewer bytes. Ignored with partial. The
     * validators are then the compressed file's. */
    bool accept_gzip;
    /* A filter file: once whole and fsynced, its page cache (written in
     * libcurl's small pieces) is dropped, so that its first reader reads it
     * back in large folios and maps it in huge pages (docs/filter-format.md,
     * "Huge pages"). */
    bool drop_cache;
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

/* Fetch opts->url into path. path is opened without following a symbolic
 * link: a partial body (opts->partial) is continued only when path is a
 * regular file of this uid with a single name and no group or world write
 * bit; otherwise whatever is at path is removed and path is created anew
 * (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0644 whatever the umask). A full answer
 * replaces path's content; a resumed one (206) appends to it; "not
 * modified" leaves it alone. On failure (-EIO, -ETIMEDOUT, -EFBIG, -ENOENT
 * for a 404, -errno) err names the URL and the reason, and path keeps what
 * was received: opts->partial with res->got resumes it. res->got is filled
 * as soon as the headers arrived, also on failure. */
int br_fetch_file(const char *path, const br_fetch_opts *opts, br_fetch_result *res, br_error *err);
