/* SPDX-License-Identifier: MIT */
/* Internal to the range cache (design and layouts in range_cache.h): what
 * its storage (range_cache.c: the entries, the pending table, the files,
 * the guarded mappings, the transactions, open, lookup, put and touch) and
 * its flush and eviction (range_cache_evict.c: the flush, eviction, the
 * partition share, purge and space accounting) share. These two are the
 * only files of lib/ that include this header, and so lmdb.h; the tests
 * that read the entries' encoding and the walk over every entry do too. */
#pragma once

#include <lmdb.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "range.h"
#include "range_cache.h"
#include "core/util.h"

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
     * (the partition share, range_cache_evict.c): a partition whose bound
     * fits is not measured. */
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
    atomic_int damaged;                        /* set by br_map_guard_fault() */
    int guard_data, guard_lock; /* slots of the guard table (map_guard.h), -1 when none */
    char *dir;                  /* the directory's real path, for the guard; may be NULL */
};

/* ---- errors and transactions ----------------------------------------------- */

/* An LMDB return code as 0 or a negative errno. */
int br_rc_errno(int rc);
/* Renew (or begin) c->rtxn, adopting a map grown by another process. */
int br_rc_rtxn_renew(br_range_cache *c);
/* Begin a write transaction, adopting a map grown by another process. */
int br_rc_wtxn_begin(br_range_cache *c, MDB_txn **txn);

/* mdb_env_set_mapsize, then the guard moved to the new mapping. */
int br_rc_set_mapsize(br_range_cache *c, uint64_t size);

static inline void rtxn_reset(br_range_cache *c)
{
    if (c->rtxn)
        mdb_txn_reset(c->rtxn);
}

/* ---- mappings guarded against truncation ----------------------------------- */

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

/* ---- entries and the pending table ------------------------------------------ */

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
/* A malloc'ed entry in *out, with a decoy list (decoys: n prefixes of 3
 * bytes, as an entry_view holds them; NULL: the flag off); 0 or -ENOMEM. */
int br_rc_entry_build_decoys(const uint8_t *rs, size_t rs_len, int64_t fetched_at,
                             int64_t expires_at, const void *etag, size_t etag_len, const void *lm,
                             size_t lm_len, const uint8_t *decoys, size_t n, uint8_t **out,
                             size_t *out_len);

/* The pending table: an entry by its key, emptied, one put. */
pend *br_rc_pend_find(br_range_cache *c, rkey_t rkey);
void br_rc_pend_clear(br_range_cache *c);
/* Take ownership of val (freed on failure too). */
int br_rc_pend_put(br_range_cache *c, rkey_t rkey, uint8_t *val, size_t len);
