/* SPDX-License-Identifier: MIT */
/* Bulk download of a Pwned Passwords range corpus into the per-prefix layout
 * (docs/upstream.md): DIR/XXXXX.txt holds the body the upstream served for
 * prefix XXXXX, byte for byte (decoded from the transfer compression), the
 * way the official .NET downloader writes it. This is `breachctl download`;
 * docs/corpus.md documents the behaviour and the files in DIR.
 *
 * Engine, in short:
 *  - one br_upstream (libcurl multi on libevent): `parallel` transfers in
 *    flight, HTTP/2 multiplexed over a few connections where the server
 *    offers it, compressed transfer, no Add-Padding, User-Agent
 *    breachd/<version>, retries with jittered backoff inside a fetch, and at
 *    most max_fetches fetches of a prefix per run (so at most max_fetches x
 *    max_attempts transfers);
 *  - every 200 body is parsed with br_range_parse (passwords: SHA-1, or NT
 *    hashes with opts.ntlm) before anything is written: a body that does not
 *    parse is an error for that prefix, never a file;
 *  - a writer thread writes each body to a temporary file (an O_TMPFILE
 *    one where the filesystem can, else DIR/.dl-XXXXX.tmp); per batch
 *    (batch_files files or batch_ms, whichever first) a committer thread
 *    calls syncfs(), links (or renames) the batch into place, fsyncs DIR and
 *    appends the batch's index records to the journal (fdatasync), while the
 *    writer fills the next batch. A file under a final name is always whole;
 *  - the index (DIR/.breachd-download-index + its journal) records each
 *    prefix's size, mtime, content hash, ETag and Last-Modified. A later run
 *    sends conditional requests (304: nothing is written) and a 200 whose
 *    content is unchanged is not rewritten either; force: unconditional;
 *  - a session file (DIR/.breachd-download-session) remembers which prefixes
 *    this run has already confirmed: an interrupted run (signal, SIGKILL,
 *    network loss, give-up) resumes and asks only for the rest;
 *  - at the end every requested prefix is checked (its file exists and
 *    matches its index record, which was written only after the body parsed):
 *    complete only when all are present.
 *
 * Threads: the caller's (event loop, network, parsing), the writer and the
 * committer (download_writer.c). */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "upstream/upstream.h"

#define BR_DOWNLOAD_DEFAULT_UPSTREAM "https://api.pwnedpasswords.com/range/{prefix}"
#define BR_DOWNLOAD_DEFAULT_NTLM_UPSTREAM "https://api.pwnedpasswords.com/range/{prefix}?mode=ntlm"
#define BR_DOWNLOAD_DEFAULT_PARALLEL 64
#define BR_DOWNLOAD_MAX_PARALLEL 1024
#define BR_DOWNLOAD_DEFAULT_MAX_FETCHES 3
#define BR_DOWNLOAD_DEFAULT_STALL_MS 300000u
#define BR_DOWNLOAD_DEFAULT_BATCH_FILES 4096
#define BR_DOWNLOAD_DEFAULT_BATCH_MS 1000
#define BR_DOWNLOAD_MISSING_LIST 16 /* missing prefixes listed in a result */

/* Names inside the output directory. */
#define BR_DOWNLOAD_INDEX_NAME ".breachd-download-index"
#define BR_DOWNLOAD_JOURNAL_NAME ".breachd-download-index.journal"
#define BR_DOWNLOAD_SESSION_NAME ".breachd-download-session"
#define BR_DOWNLOAD_LOCK_NAME ".breachd-download.lock"

typedef struct br_download_progress {
    uint32_t total;        /* requested prefixes */
    uint32_t done;         /* confirmed present: the sum of the next four */
    uint32_t written;      /* fetched (200) and written (durable) */
    uint32_t unchanged;    /* fetched (200), same content as the file: not rewritten */
    uint32_t not_modified; /* answered 304 */
    uint32_t resumed;      /* confirmed earlier in this session: not asked again */
    uint32_t failed;       /* given up for this run */
    uint64_t requests;     /* transfers made (retries included) */
    uint64_t bytes;        /* decoded body bytes received */
    double elapsed_s;
} br_download_progress;

typedef void (*br_download_progress_fn)(void *ctx, const br_download_progress *p, bool final);

/* How a file is written before it gets its final name (opts.temp_files). */
typedef enum br_download_temp {
    BR_DOWNLOAD_TEMP_AUTO = 0, /* the first of the next three the directory allows */
    BR_DOWNLOAD_TEMP_LINK,     /* O_TMPFILE, linkat(AT_EMPTY_PATH) */
    BR_DOWNLOAD_TEMP_PROC,     /* O_TMPFILE, linkat through /proc/self/fd */
    BR_DOWNLOAD_TEMP_NAMED,    /* DIR/.dl-XXXXX.tmp, renameat */
} br_download_temp;

typedef struct br_download_opts {
    const char *out_dir;      /* required; created (one level) when missing */
    const char *url_template; /* NULL: BR_DOWNLOAD_DEFAULT_UPSTREAM (_NTLM_UPSTREAM with ntlm) */
    bool ntlm;                /* the NTLM corpus: bodies of 27-hex suffixes (NT hashes) */
    uint32_t first, last;     /* inclusive prefix range, 0 .. 0xFFFFF */
    uint32_t parallel;        /* transfers in flight; 0: 64 */
    bool force;               /* refetch everything, unconditionally */
    const char *single_file;  /* also write HASH40:COUNT (HASH32 with ntlm) lines here
                                 (complete runs only) */
    /* tuning; 0 means the default */
    uint32_t max_fetches;             /* fetches of one prefix per run: 3 (at most 255) */
    uint32_t stall_ms;                /* give up when nothing was answered for this long: 300 s */
    uint32_t batch_files;             /* files per durable batch: 4096 */
    uint32_t batch_ms;                /* longest a written file waits for its batch: 1000 */
    uint32_t h2_streams;              /* HTTP/2 streams per connection: max(8, parallel / 4) */
    br_download_temp temp_files;      /* AUTO; the others are for tests (a mode the directory
                                         does not allow fails the run) */
    const char *ca_file;              /* NULL: the system store */
    const char *proxy;                /* NULL: libcurl's environment variables */
    volatile sig_atomic_t *stop;      /* polled: non-zero stops the run (it stays resumable) */
    br_download_progress_fn progress; /* called about every progress_ms and once at the end */
    void *progress_ctx;
    uint32_t progress_ms; /* 0: 250 */
    br_log_fn log;        /* NULL: silent */
    void *log_ctx;
} br_download_opts;

typedef struct br_download_result {
    br_download_progress p;
    bool complete;    /* every requested prefix present and valid */
    bool interrupted; /* stopped by opts->stop */
    bool gave_up;     /* nothing answered for stall_ms */
    uint32_t missing; /* requested prefixes not present */
    uint32_t missing_prefix[BR_DOWNLOAD_MISSING_LIST]; /* the first ones, ascending */
    char missing_reason[BR_DOWNLOAD_MISSING_LIST][80];
    uint32_t n_missing_listed;
    uint64_t single_file_lines; /* lines written to single_file */
} br_download_result;

/* Run a download. Returns 0 when the run happened (complete or not: see
 * res->complete), or a negative errno with err set when it could not run or
 * had to stop on a local error: bad options, DIR not usable, DIR locked by
 * another run (-EBUSY), a write error (disk full...), single-file failure.
 * res is filled in either case. */
int br_download_run(const br_download_opts *o, br_download_result *res, br_error *err);

/* Parse "FIRST-LAST" (1 to 5 hex digits each, any case, FIRST <= LAST) or
 * a single prefix "XXXXX". 0 or -EINVAL. */
int br_download_parse_range(const char *s, uint32_t *first, uint32_t *last);
