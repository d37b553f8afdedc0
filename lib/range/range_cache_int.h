/* SPDX-License-Identifier: MIT */
/* Internal to the range cache (design and layouts in range_cache.h): what its
 * files share. range_cache.c has the API (open, lookup, put, touch, walk) and
 * the transactions; range_cache_value.c the entry encoding and the pending
 * table; range_cache_evict.c the flush, eviction, purge and space accounting;
 * range_cache_quota.c the partition share; range_cache_files.c the checks
 * of the files' owners and modes;
 * range_cache_guard.c the mappings guarded against truncation. These
 * files are the only ones that include this header, and so lmdb.h. */
#pragma once

#include <lmdb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "range.h"
#include "range_cache.h"
#include "util.h"

#define RKEY_LEN 8
#define AGEKEY_LEN (8 + RKEY_LEN)

/* A ranges key as a number: partition << 32 | kind << 24 | prefix20. */
typedef uint64_t rkey_t;

/* A pending write: the complete encoded entry. rkey 0 is an empty slot (kinds
 * start at 1); val NULL with rkey set is a dropped write. */
typedef struct pend {
    rkey_t rkey;
    uint8_t *val;
    size_t len;
} pend;

struct br_range_cache {
    MDB_env *env;
    MDB_dbi dbi_ranges, dbi_age, dbi_meta;
    MDB_txn *rtxn; /* read txn, reset between uses; NULL while the map is resized */
    uint64_t max_size;
    uint64_t partition_quota; /* bytes of entries per partition; 0: none */
    /* Upper bounds of partitions' stored bytes, from their last measure
     * (range_cache_quota.c): a partition whose bound fits is not measured. */
    struct {
        uint32_t partition;
        bool used;
        uint64_t bytes;
    } share_memo[32];
    uint64_t headroom;
    uint64_t psize;
    pend *slots;
    size_t cap, n_slots, n_live;
    uint64_t pending_bytes, pending_bytes_max;
    uint64_t evicted, commits;
    uint8_t secret[BR_RANGE_CACHE_SECRET_LEN]; /* meta "secret" */
    atomic_int damaged;         /* set by br_range_cache_fault() */
    int guard_data, guard_lock; /* slots of range_cache_guard.c, -1 when none */
    char *dir;                  /* the directory's real path, for the guard; may be NULL */
};

/* ---- errors and transactions (range_cache.c) ------------------------------ */

/* An LMDB return code as 0 or a negative errno. */
int br_rc_errno(int rc);
/* Renew (or begin) c->rtxn, adopting a map grown by another process. */
int br_rc_rtxn_renew(br_range_cache *c);
/* rkey's value as the cache has it: the pending batch's, else the stored
 * one, read in c->rtxn (renewed; *in_txn: the caller resets it once done
 * with *val). 1 with *val and *len, 0 when there is none, or a negative
 * errno. */
int br_rc_value_of(br_range_cache *c, rkey_t rkey, const uint8_t **val, size_t *len, bool *in_txn);
/* Begin a write transaction, adopting a map grown by another process. */
int br_rc_wtxn_begin(br_range_cache *c, MDB_txn **txn);

/* mdb_env_set_mapsize, then the guard moved to the new mapping. */
int br_rc_set_mapsize(br_range_cache *c, uint64_t size);

static inline void rtxn_reset(br_range_cache *c)
{
    if (c->rtxn)
        mdb_txn_reset(c->rtxn);
}

/* The directory, data.mdb and lock.mdb: ours, not group- or world-writable,
 * not symbolic links (range_cache_files.c). 0 or a negative errno with the
 * path and the fix in err. */
int br_rc_check_files(const char *path, br_error *err);

/* ---- mappings guarded against truncation (range_cache_guard.c) ------------ */

/* (Re)register the data file's mapping, and the lock file's with with_lock
 * (at open: it never moves). Unguarded when not found. */
void br_rc_guard_update(br_range_cache *c, bool with_lock);
void br_rc_guard_remove(br_range_cache *c);

static inline bool br_rc_damaged(const br_range_cache *c)
{
    return atomic_load(&((br_range_cache *)c)->damaged) != 0;
}

/* ---- keys ---------------------------------------------------------------- */

static inline rkey_t rkey_of(uint32_t partition, br_range_kind kind, uint32_t prefix20)
{
    return ((rkey_t)partition << 32) | ((rkey_t)kind << 24) | (prefix20 & 0xFFFFF);
}

static inline br_range_kind rkey_kind(rkey_t rkey)
{
    return (br_range_kind)((rkey >> 24) & 0xFF);
}

static inline uint32_t rkey_partition(rkey_t rkey)
{
    return (uint32_t)(rkey >> 32);
}

static inline void rkey_store(uint8_t out[RKEY_LEN], rkey_t rkey)
{
    for (int i = 0; i < RKEY_LEN; i++)
        out[i] = (uint8_t)(rkey >> (56 - 8 * i));
}

static inline rkey_t rkey_load(const uint8_t *p)
{
    rkey_t k = 0;
    for (int i = 0; i < RKEY_LEN; i++)
        k = (k << 8) | p[i];
    return k;
}

static inline void agekey_store(uint8_t out[AGEKEY_LEN], int64_t fetched_at, rkey_t rkey)
{
    uint64_t t = (uint64_t)fetched_at ^ (UINT64_C(1) << 63);
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(t >> (56 - 8 * i));
    rkey_store(out + 8, rkey);
}

/* ---- entries and the pending table (range_cache_value.c) ------------------- */

/* FRESH, STALE or EXPIRED at now for an entry expiring at expires_at. */
static inline br_range_cache_state br_rc_state_at(int64_t now, int64_t expires_at, int64_t max_stale)
{
    int64_t past;
    if (now < expires_at)
        return BR_RANGE_CACHE_FRESH;
    if (!__builtin_sub_overflow(now, expires_at, &past) && past <= BR_MAX(max_stale, 0))
        return BR_RANGE_CACHE_STALE;
    return BR_RANGE_CACHE_EXPIRED;
}

typedef struct entry_view {
    int64_t fetched_at, expires_at;
    const uint8_t *etag, *lm;
    size_t etag_len, lm_len;
    const uint8_t *decoys; /* n_decoys prefixes of 3 bytes; NULL when none */
    size_t n_decoys;
    const uint8_t *rs;
    size_t rs_len;
} entry_view;

/* 0, or -EINVAL when v is not a version 1 entry. */
int br_rc_entry_parse(const uint8_t *v, size_t len, entry_view *ev);
/* A malloc'ed entry in *out; 0 or -ENOMEM. */
int br_rc_entry_build(const uint8_t *rs, size_t rs_len, int64_t fetched_at, int64_t expires_at,
                      const void *etag, size_t etag_len, const void *lm, size_t lm_len, uint8_t **out,
                      size_t *out_len);
/* The same with a decoy list (decoys: n prefixes of 3 bytes, as an
 * entry_view holds them; NULL: the flag off). */
int br_rc_entry_build_decoys(const uint8_t *rs, size_t rs_len, int64_t fetched_at,
                             int64_t expires_at, const void *etag, size_t etag_len, const void *lm,
                             size_t lm_len, const uint8_t *decoys, size_t n, uint8_t **out,
                             size_t *out_len);

/* ---- the partition share (range_cache_quota.c) ----------------------------- */

/* In txn, before the pending batch is applied: each partition the batch
 * writes to loses its own oldest entries until it fits in partition_quota
 * with the batch (*done counts them). An LMDB code, or ENOMEM. */
int br_rc_quota_apply(br_range_cache *c, MDB_txn *txn, size_t *done);
/* Forget the measures (after a transaction that applied them was aborted). */
void br_rc_quota_forget(br_range_cache *c);

pend *br_rc_pend_find(br_range_cache *c, rkey_t rkey);
void br_rc_pend_clear(br_range_cache *c);
/* Take ownership of val (freed on failure too). */
int br_rc_pend_put(br_range_cache *c, rkey_t rkey, uint8_t *val, size_t len);
