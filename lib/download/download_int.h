/* SPDX-License-Identifier: MIT */
/* Internals of the corpus downloader (download.h), shared by download.c (a
 * run: its set-up, the fetch loop, its end), download_index.c (index,
 * journal, session), download_writer.c (the temporary files, the writer
 * and committer threads) and download_single.c (the single-file output),
 * and by the tests of the index and the single file. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "download.h"
#include "core/error.h"
#include "upstream/upstream.h"

#define DL_NPREFIX (UINT32_C(1) << 20)
#define DL_HASH_LEN 16 /* SHA-256 of a file, first 16 bytes */
#define DL_TMP_PREFIX ".dl-"
#define DL_TMP_SUFFIX ".tmp"
#define DL_INDEX_MAGIC "breachd-download-index"
#define DL_SESSION_MAGIC "BRDLSES1"

/* One prefix in the index. */
enum {
    DL_E_NONE = 0,   /* no record */
    DL_E_RECORD = 1, /* a record, file not checked (or not matching) */
    DL_E_OK = 2,     /* a record and the file on disk matches it (size, mtime) */
};

typedef struct dl_entry {
    uint64_t size;
    int64_t mtime_ns;
    uint8_t hash[DL_HASH_LEN];
    uint8_t state;
    char *val; /* "ETAG\0LAST-MODIFIED\0" (either may be empty), NULL when both are */
} dl_entry;

static inline const char *dl_entry_etag(const dl_entry *e)
{
    return e->val ? e->val : "";
}
static inline const char *dl_entry_lm(const dl_entry *e)
{
    return e->val ? e->val + strlen(e->val) + 1 : "";
}
/* "ETAG\0LM\0" in one allocation, or NULL when both are empty (or on ENOMEM:
 * the validators are an optimisation, losing them only costs a full fetch). */
char *dl_val_make(const char *etag, const char *lm);

typedef struct dl_index {
    int dirfd;
    dl_entry *e; /* DL_NPREFIX entries */
    char *upstream;
    int jfd;            /* journal, O_APPEND; -1 until opened */
    uint64_t jbytes;    /* bytes in the journal */
    uint64_t jrecords;  /* records loaded from the journal */
    uint64_t bad_lines; /* index / journal lines ignored (torn or corrupt) */
    bool rewrite;       /* the index file should be rewritten (other upstream, bad lines) */
    bool index_exists;  /* DIR has an index file */
    /* session: one bit per prefix confirmed in this session (atomic OR) */
    uint64_t *bits;
    int64_t session_start_ns; /* wall clock */
    bool session_force;
    bool session_ntlm; /* the session fetches the NTLM corpus */
    bool session_resumed;
    bool session_dirty; /* atomic: bits set since the last save (by the main thread) */
    /* one bit per file this process linked into place (set by the committer
     * after the batch was durable): the end check does not stat them again */
    uint64_t *placed;
} dl_index;

/* Load DIR's index and journal (missing: empty). Validators recorded for
 * another upstream template are dropped. 0 or -errno with err set. */
int dl_index_load(dl_index *ix, int dirfd, const char *upstream, br_error *err);
/* stat() the files of [first, last] that have a record: matching ones
 * become DL_E_OK. Files this process placed are DL_E_OK without a stat. */
void dl_index_check_files(dl_index *ix, uint32_t first, uint32_t last);
/* Write the whole index atomically (temp, fsync, rename, fsync DIR) and empty
 * the journal. */
int dl_index_compact(dl_index *ix, br_error *err);
/* With no index file yet, the journal holds every record: make it the index
 * (rename, fsync DIR) instead of writing it all again. */
int dl_index_promote_journal(dl_index *ix, br_error *err);
/* Open the journal for appending (creating it). */
int dl_index_journal_open(dl_index *ix, br_error *err);
/* Append and fdatasync. */
int dl_index_journal_append(dl_index *ix, const char *buf, size_t len);
/* One index line for prefix p (with its newline) into out; its length, 0 if cap is short. */
size_t dl_index_line(uint32_t p, const dl_entry *e, char *out, size_t cap);
void dl_index_free(dl_index *ix);

/* Session: load (resume unless force) or start a new one. */
void dl_session_begin(dl_index *ix, bool force, bool ntlm);
static inline void dl_session_set(dl_index *ix, uint32_t p)
{
    __atomic_fetch_or(&ix->bits[p >> 6], UINT64_C(1) << (p & 63), __ATOMIC_RELAXED);
}
static inline void dl_session_clear(dl_index *ix, uint32_t p)
{
    __atomic_fetch_and(&ix->bits[p >> 6], ~(UINT64_C(1) << (p & 63)), __ATOMIC_RELAXED);
}
static inline bool dl_session_has(const dl_index *ix, uint32_t p)
{
    return (__atomic_load_n(&ix->bits[p >> 6], __ATOMIC_RELAXED) >> (p & 63)) & 1;
}
static inline void dl_placed_set(dl_index *ix, uint32_t p)
{
    __atomic_fetch_or(&ix->placed[p >> 6], UINT64_C(1) << (p & 63), __ATOMIC_RELAXED);
}
static inline bool dl_placed_has(const dl_index *ix, uint32_t p)
{
    return (__atomic_load_n(&ix->placed[p >> 6], __ATOMIC_RELAXED) >> (p & 63)) & 1;
}
/* Write the session file atomically (no fsync: losing it only costs requests). */
int dl_session_save(dl_index *ix);
void dl_session_remove(dl_index *ix);

/* Remove DIR/.dl-*.tmp and stale index temp files left by a killed run. */
void dl_clean_temp(int dirfd);

/* ---- the writer (download_writer.c): two threads ---- */

typedef struct dl_job dl_job;
struct dl_job {
    dl_job *next;
    uint32_t prefix;
    char *val; /* validators (dl_val_make), owned */
    size_t len;
    char body[]; /* len bytes */
};

typedef struct dl_batch dl_batch;

typedef struct dl_writer {
    dl_index *ix;
    pthread_t th, committer;
    bool started, committer_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* writer: jobs or finish */
    pthread_cond_t cv_commit; /* committer: batches or writer done */
    pthread_cond_t cv_space;  /* writer: room in the commit queue */
    dl_job *head, *tail;
    size_t queued, queued_bytes; /* written under mu, read with __atomic loads */
    /* the main thread's jobs not handed over yet (main thread only): one
     * lock and at most one wake-up per DL_PUSH_BATCH jobs, not per job */
    dl_job *phead, *ptail;
    size_t pending, pending_bytes;
    bool finish;                 /* under mu: no more jobs are coming */
    dl_batch *cq_head, *cq_tail; /* under mu: batches waiting for the committer */
    size_t cq_len;
    bool writer_done; /* under mu: no more batches are coming */
    uint32_t batch_files;
    uint64_t batch_ns;
    bool tmpfile;    /* O_TMPFILE + linkat works in DIR */
    bool empty_path; /* ... with AT_EMPTY_PATH (else /proc/self/fd) */
    /* read by the main thread with __atomic loads */
    uint32_t written, unchanged;
    uint64_t bytes_written;
    int error; /* first fatal error (negative errno), then errtext */
    char errtext[256];
} dl_writer;

int dl_writer_start(dl_writer *w, dl_index *ix, br_download_temp temp, uint32_t batch_files,
                    uint32_t batch_ms, br_error *err);
/* Queue a job (takes ownership). Jobs go to the writer thread in groups of
 * DL_PUSH_BATCH, or at dl_writer_flush (the fetch loop's tick) and stop. */
void dl_writer_push(dl_writer *w, dl_job *j);
void dl_writer_flush(dl_writer *w);
/* Jobs and bytes waiting (not yet taken by the writer thread). */
void dl_writer_backlog(dl_writer *w, size_t *jobs, size_t *bytes);
/* Finish the queued work, commit the last batch, join. 0 or the writer's error. */
int dl_writer_stop(dl_writer *w);
int dl_writer_error(dl_writer *w);

/* ---- the run (download.c) ---- */

struct event_base;
struct event;

/* A prefix's state in a run (download.c). */
enum { PS_PENDING = 0, PS_INFLIGHT, PS_WAIT, PS_WRITING, PS_DONE, PS_RESUMED, PS_FAILED };

/* Why a prefix is not there: > 0 an HTTP status, else one of these. */
enum {
    WHY_NONE = 0,
    WHY_TIMEOUT = -1,
    WHY_UNAVAILABLE = -2,
    WHY_TOO_LARGE = -3,
    WHY_MALFORMED = -4,
    WHY_EMPTY = -5,
    WHY_ERROR = -6,
    WHY_NOFILE = -7,
};

typedef struct dl_run dl_run;

/* One outstanding fetch. Slots are reused; a fetch waiting in the upstream's
 * retry backoff keeps its slot but not a transfer, so there can be more slots
 * than `parallel`. */
typedef struct dl_slot {
    dl_run *run;
    uint32_t prefix;
    struct dl_slot *next; /* free list */
    struct dl_slot *all;  /* every slot, for freeing */
} dl_slot;

typedef struct dl_wait {
    uint64_t due_ns;
    uint32_t prefix;
} dl_wait;

/* One run (set up, then its fetch loop run, by download.c). */
struct dl_run {
    const br_download_opts *o;
    struct event_base *base;
    br_upstream *up;
    dl_index ix;
    dl_writer w;
    struct event *tick;
    uint32_t first, last, total, parallel, max_fetches;
    bool force, is_file;
    uint8_t *st;    /* per prefix of the range */
    uint8_t *tries; /* fetches that counted */
    int16_t *why;
    uint32_t next; /* the sweep */
    dl_wait *heap;
    size_t nheap, heap_cap;
    dl_slot *all_slots, *free_slots;
    uint32_t inflight;
    uint32_t not_modified, resumed, failed;
    uint64_t start_ns, last_answer_ns, last_progress_ns, stall_ns;
    uint64_t rng;
    bool stopping, interrupted, gave_up;
    int fatal;
    br_error fatal_err;
};

/* ---- single file ---- */

/* Write [first, last]'s per-prefix files as HASH40:COUNT lines (CRLF, hash
 * order) to path, atomically. 0 or -errno with err set; *lines counted. */
int dl_write_single(int dirfd, uint32_t first, uint32_t last, const char *path, uint64_t *lines,
                    br_error *err);

/* "XXXXX.txt" / ".dl-XXXXX.tmp" names. */
void dl_name_final(uint32_t p, char out[16]);
void dl_name_temp(uint32_t p, char out[24]);
