/* SPDX-License-Identifier: MIT */
/* The range cache's flush and eviction (the size bound and the eviction
 * policy are described in range_cache.h): committing the pending table,
 * making room for it first, the partition share, purging what is past the
 * stale horizon, and the space accounting that STATS reports too. The
 * storage it works on is range_cache.c (range_cache_int.h). */
#include <errno.h>
#include <stdlib.h>

#include "range_cache_int.h"
#include "core/br_assert.h"

/* ---- the partition share ---- */

/* The partition share (range_cache.h "Partitions"). Before a
 * batch is written, every partition it writes to is measured (the stored
 * bytes of its entries, one cursor walk over its keys, which are contiguous:
 * the partition leads the ranges key) and, when the batch would take it past
 * its quota, its own oldest entries are deleted in the batch's transaction
 * until it fits. Entries the batch rewrites are not deleted (their new value
 * counts instead). So a partition's writes never evict another partition's
 * entries here; only the global eviction (below) does, when
 * the partitions together do not fit in max_size. */

/* Forget the measures (after a transaction that applied them was aborted). */
static void quota_forget(br_range_cache *c)
{
    for (size_t i = 0; i < BR_ARRAY_SIZE(c->share_memo); i++)
        c->share_memo[i].used = false;
}

int br_range_cache_set_partition_share(br_range_cache *c, unsigned pct)
{
    if (!c || pct < 1 || pct > 100)
        return -EINVAL;
    c->partition_quota = pct == 100 ? 0 : c->max_size / 100 * pct;
    quota_forget(c);
    return 0;
}

typedef struct aged {
    int64_t fetched_at; /* INT64_MIN: an unreadable entry, first to go */
    rkey_t rkey;
    uint64_t len;
} aged;

static int cmp_aged(const void *a, const void *b)
{
    const aged *x = a, *y = b;
    if (x->fetched_at != y->fetched_at)
        return x->fetched_at < y->fetched_at ? -1 : 1;
    return (x->rkey > y->rkey) - (x->rkey < y->rkey);
}

/* The entries of partition in txn (*v, malloc'ed, *n of them) and their
 * bytes. An LMDB code, or ENOMEM. */
static int partition_entries(br_range_cache *c, MDB_txn *txn, uint32_t partition, aged **v,
                             size_t *n, uint64_t *bytes)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, c->dbi_ranges, &cur);
    if (rc)
        return rc;
    uint8_t kb[RKEY_LEN];
    rkey_store(kb, rkey_of(partition, 0, 0));
    MDB_val k = {.mv_size = RKEY_LEN, .mv_data = kb}, val;
    size_t cap = 0;
    for (rc = mdb_cursor_get(cur, &k, &val, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &val, MDB_NEXT)) {
        if (k.mv_size != RKEY_LEN)
            continue;
        rkey_t rk = rkey_load(k.mv_data);
        if (rkey_partition(rk) != partition)
            break;
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            aged *nv = realloc(*v, cap * sizeof(**v));
            if (!nv) {
                rc = ENOMEM;
                break;
            }
            *v = nv;
        }
        entry_view ev;
        bool ok = br_rc_entry_parse(val.mv_data, val.mv_size, &ev) == 0;
        (*v)[(*n)++] = (aged){ok ? ev.fetched_at : INT64_MIN, rk, val.mv_size};
        *bytes += val.mv_size;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Delete one entry and its age key. */
static int delete_entry(br_range_cache *c, MDB_txn *txn, const aged *e)
{
    uint8_t kb[RKEY_LEN], ak[AGEKEY_LEN];
    rkey_store(kb, e->rkey);
    MDB_val k = {.mv_size = RKEY_LEN, .mv_data = kb};
    int rc = mdb_del(txn, c->dbi_ranges, &k, NULL);
    if (rc || e->fetched_at == INT64_MIN)
        return rc;
    agekey_store(ak, e->fetched_at, e->rkey);
    MDB_val a = {.mv_size = AGEKEY_LEN, .mv_data = ak};
    rc = mdb_del(txn, c->dbi_age, &a, NULL);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* partition's memo slot (a free one when it has none), NULL when full. */
static uint64_t *memo_of(br_range_cache *c, uint32_t partition)
{
    for (size_t i = 0; i < BR_ARRAY_SIZE(c->share_memo); i++)
        if (c->share_memo[i].used && c->share_memo[i].partition == partition)
            return &c->share_memo[i].bytes;
    for (size_t i = 0; i < BR_ARRAY_SIZE(c->share_memo); i++) {
        if (!c->share_memo[i].used) {
            c->share_memo[i].used = true;
            c->share_memo[i].partition = partition;
            c->share_memo[i].bytes = UINT64_MAX; /* not measured yet */
            return &c->share_memo[i].bytes;
        }
    }
    return NULL;
}

/* Fit partition in its quota, with what the batch adds: its oldest entries
 * deleted (*done counts them). The bound it leaves in the memo stays an
 * upper bound (entries only go by deletes; a rewrite counts twice). */
static int fit_partition(br_range_cache *c, MDB_txn *txn, uint32_t partition, size_t *done)
{
    uint64_t adding = 0, bytes = 0, *memo = memo_of(c, partition);
    for (size_t i = 0; i < c->cap; i++)
        if (c->slots[i].val && rkey_partition(c->slots[i].rkey) == partition)
            adding += c->slots[i].len;
    if (memo && *memo != UINT64_MAX && *memo + adding <= c->partition_quota) {
        *memo += adding;
        return 0;
    }
    aged *v = NULL;
    size_t n = 0;
    int rc = partition_entries(c, txn, partition, &v, &n, &bytes);
    if (rc == 0 && bytes + adding > c->partition_quota) {
        qsort(v, n, sizeof(*v), cmp_aged);
        for (size_t i = 0; i < n && bytes + adding > c->partition_quota; i++) {
            pend *p = br_rc_pend_find(c, v[i].rkey);
            bytes -= v[i].len; /* deleted, or replaced by the batch */
            if (p && p->val)
                continue;
            if ((rc = delete_entry(c, txn, &v[i])))
                break;
            (*done)++;
        }
    }
    free(v);
    if (memo)
        *memo = rc ? UINT64_MAX : bytes + adding;
    return rc;
}

/* In txn, before the pending batch is applied: each partition the batch
 * writes to loses its own oldest entries until it fits in partition_quota
 * with the batch (*done counts them). An LMDB code, or ENOMEM. */

static int quota_apply(br_range_cache *c, MDB_txn *txn, size_t *done)
{
    *done = 0;
    if (!c->partition_quota)
        return 0;
    /* The whole store and the batch within one quota: no partition is past it. */
    MDB_stat ms;
    int rc = mdb_stat(txn, c->dbi_ranges, &ms);
    if (rc)
        return rc;
    uint64_t pages = (uint64_t)ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages;
    if (pages * ms.ms_psize + c->pending_bytes <= c->partition_quota)
        return 0;
    for (size_t i = 0; i < c->cap; i++) {
        if (!c->slots[i].val)
            continue;
        uint32_t part = rkey_partition(c->slots[i].rkey);
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = c->slots[j].val && rkey_partition(c->slots[j].rkey) == part;
        if (seen)
            continue;
        rc = fit_partition(c, txn, part, done);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- flush and eviction ------------------------------------------------------ */

/* Apply every live pending write in txn. */
static int apply_pending(br_range_cache *c, MDB_txn *txn)
{
    for (size_t i = 0; i < c->cap; i++) {
        pend *p = &c->slots[i];
        if (!p->val)
            continue;
        uint8_t kb[RKEY_LEN], ak[AGEKEY_LEN];
        rkey_store(kb, p->rkey);
        MDB_val k = {.mv_size = RKEY_LEN, .mv_data = kb}, v;
        int rc = mdb_get(txn, c->dbi_ranges, &k, &v);
        if (rc == MDB_SUCCESS) {
            entry_view old;
            if (br_rc_entry_parse(v.mv_data, v.mv_size, &old) == 0) {
                agekey_store(ak, old.fetched_at, p->rkey);
                MDB_val a = {.mv_size = AGEKEY_LEN, .mv_data = ak};
                rc = mdb_del(txn, c->dbi_age, &a, NULL);
                if (rc && rc != MDB_NOTFOUND)
                    return rc;
            }
        } else if (rc != MDB_NOTFOUND) {
            return rc;
        }
        v = (MDB_val){.mv_size = p->len, .mv_data = p->val};
        rc = mdb_put(txn, c->dbi_ranges, &k, &v, 0);
        if (rc)
            return rc;
        agekey_store(ak, (int64_t)br_load_le64(p->val + 8), p->rkey);
        MDB_val a = {.mv_size = AGEKEY_LEN, .mv_data = ak}, empty = {.mv_size = 0, .mv_data = NULL};
        rc = mdb_put(txn, c->dbi_age, &a, &empty, 0);
        if (rc)
            return rc;
    }
    return 0;
}

/* End a write transaction: abort it after an error (rc, returned), else
 * commit it (and count the commit). */
static int end_txn(br_range_cache *c, MDB_txn *txn, int rc)
{
    if (rc) {
        mdb_txn_abort(txn);
        return rc;
    }
    rc = mdb_txn_commit(txn);
    if (rc == 0)
        c->commits++;
    return rc;
}

static int write_pending(br_range_cache *c)
{
    MDB_txn *txn;
    size_t quota_done = 0;
    int rc = br_rc_wtxn_begin(c, &txn);
    if (rc)
        return rc;
    rc = quota_apply(c, txn, &quota_done);
    rc = end_txn(c, txn, rc ? rc : apply_pending(c, txn));
    if (rc == 0)
        c->evicted += quota_done;
    else
        quota_forget(c); /* its deletes were undone */
    return rc;
}

/* A tiny commit: advances the transaction id so that the pages freed by the
 * previous commit become reusable by the next one (LMDB keeps the pages freed
 * by transaction T until T + 2). */
static int bump(br_range_cache *c)
{
    MDB_txn *txn;
    int rc = br_rc_wtxn_begin(c, &txn);
    if (rc)
        return rc;
    MDB_val k = {.mv_size = 9, .mv_data = (void *)"evictions"}, v;
    uint8_t n[8];
    uint64_t count = 0;
    if (mdb_get(txn, c->dbi_meta, &k, &v) == MDB_SUCCESS && v.mv_size == 8)
        count = br_load_le64(v.mv_data);
    br_store_le64(n, count + 1);
    v = (MDB_val){.mv_size = 8, .mv_data = n};
    return end_txn(c, txn, mdb_put(txn, c->dbi_meta, &k, &v, 0));
}

/* The entry an age key (a) names, deleted if the key is really its own (an
 * orphan age key must not kill a younger entry); *done counts it. */
static int evict_entry_of(br_range_cache *c, MDB_txn *txn, const MDB_val *a, size_t *done)
{
    if (a->mv_size != AGEKEY_LEN)
        return 0;
    uint8_t ak[AGEKEY_LEN];
    memcpy(ak, a->mv_data, AGEKEY_LEN);
    MDB_val k = {.mv_size = RKEY_LEN, .mv_data = ak + 8}, v;
    int rc = mdb_get(txn, c->dbi_ranges, &k, &v);
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return rc;
    entry_view ev;
    uint8_t mine[AGEKEY_LEN];
    bool own = br_rc_entry_parse(v.mv_data, v.mv_size, &ev) < 0;
    if (!own) {
        agekey_store(mine, ev.fetched_at, rkey_load(ak + 8));
        own = memcmp(mine, ak, AGEKEY_LEN) == 0;
    }
    if (!own)
        return 0;
    rc = mdb_del(txn, c->dbi_ranges, &k, NULL);
    if (rc == 0)
        (*done)++;
    return rc;
}

/* Delete the first entries of dbi (up to max_k keys in all, *keys so far),
 * oldest first in the age table: each age key with its entry; in the range
 * table: each entry. *done counts the entries deleted. */
static int evict_first(br_range_cache *c, MDB_txn *txn, MDB_dbi dbi, size_t max_k, size_t *keys,
                       size_t *done)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc)
        return rc;
    while (*keys < max_k) {
        MDB_val k, v;
        rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
        if (rc == MDB_NOTFOUND) {
            rc = 0;
            break;
        }
        if (rc)
            break;
        if (dbi == c->dbi_age)
            rc = evict_entry_of(c, txn, &k, done);
        else
            (*done)++;
        if (rc || (rc = mdb_cursor_del(cur, 0)))
            break;
        (*keys)++;
    }
    mdb_cursor_close(cur);
    return rc;
}

/* Delete up to max_k of the oldest entries in one commit. *evicted counts
 * the age keys removed (entries, and orphans that had lost theirs); 0 only
 * when the cache is empty. */
static int evict_txn(br_range_cache *c, size_t max_k, size_t *evicted)
{
    MDB_txn *txn;
    size_t done = 0, keys = 0;
    *evicted = 0;
    int rc = br_rc_wtxn_begin(c, &txn);
    if (rc)
        return rc;
    rc = evict_first(c, txn, c->dbi_age, max_k, &keys, &done);
    /* No age keys at all: never get stuck on entries without one; take
     * them in key order. */
    if (rc == 0 && br_fails_assert(keys > 0))
        rc = evict_first(c, txn, c->dbi_ranges, max_k, &keys, &done);
    if (rc || keys == 0) {
        mdb_txn_abort(txn);
        return rc;
    }
    rc = mdb_txn_commit(txn);
    if (rc)
        return rc;
    c->commits++;
    c->evicted += done;
    *evicted = keys;
    return 0;
}

static int set_mapsize(br_range_cache *c, uint64_t size)
{
    if (c->rtxn) {
        mdb_txn_abort(c->rtxn);
        c->rtxn = NULL;
    }
    return br_rc_set_mapsize(c, size);
}

/* One eviction commit of up to k entries, smaller if the map is too full
 * even for that; as a last resort with the map grown by the headroom for the
 * time of one single-entry eviction. */
static int evict_some(br_range_cache *c, size_t k, size_t *evicted)
{
    int rc;
    for (;;) {
        rc = evict_txn(c, k, evicted);
        if (rc != MDB_MAP_FULL)
            break;
        if (k > 1) {
            k /= 2;
            continue;
        }
        rc = set_mapsize(c, c->max_size + c->headroom);
        if (rc == 0)
            rc = evict_txn(c, 1, evicted);
        if (rc == 0 && *evicted)
            (void)bump(c); /* while the room is there */
        int rc2 = set_mapsize(c, c->max_size);
        return rc ? rc : rc2;
    }
    return rc;
}

typedef struct space {
    uint64_t map_pages;   /* map size */
    uint64_t avail_pages; /* pages the next write transaction can use */
    uint64_t avail_later; /* ... and after two more commits */
    uint64_t free_pages;  /* pages on the free list, reusable yet or not */
    uint64_t last_pages;  /* high-water mark */
    uint64_t entries;
    uint64_t psize;
} space;

static int space_get(br_range_cache *c, space *sp)
{
    int rc = br_rc_rtxn_renew(c);
    if (rc)
        return rc;
    MDB_stat ms, es;
    MDB_envinfo info;
    MDB_cursor *cur = NULL;
    uint64_t reusable = 0;
    memset(sp, 0, sizeof(*sp));
    if ((rc = mdb_stat(c->rtxn, c->dbi_ranges, &ms)) || (rc = mdb_env_stat(c->env, &es)) ||
        (rc = mdb_env_info(c->env, &info)) ||
        (rc = mdb_cursor_open(c->rtxn, 0 /* FREE_DBI */, &cur)))
        goto out;
    /* Free-list records are keyed by the id of the transaction that freed
     * the pages; the next writer (id last + 1) may reuse those below last. */
    MDB_val k, v;
    while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == MDB_SUCCESS) {
        size_t n = 0, id = 0;
        if (v.mv_size >= sizeof(n))
            memcpy(&n, v.mv_data, sizeof(n));
        if (k.mv_size == sizeof(id))
            memcpy(&id, k.mv_data, sizeof(id));
        sp->free_pages += n;
        if (id < info.me_last_txnid)
            reusable += n;
    }
    if (rc == MDB_NOTFOUND)
        rc = 0;
    sp->psize = es.ms_psize;
    sp->entries = ms.ms_entries;
    sp->map_pages = info.me_mapsize / es.ms_psize;
    sp->last_pages = (uint64_t)info.me_last_pgno + 1;
    sp->free_pages = BR_MIN(sp->free_pages, sp->last_pages);
    sp->avail_pages = sp->map_pages > sp->last_pages ? sp->map_pages - sp->last_pages : 0;
    sp->avail_later = sp->avail_pages + sp->free_pages;
    sp->avail_pages += BR_MIN(reusable, sp->last_pages);
out:
    if (cur)
        mdb_cursor_close(cur);
    rtxn_reset(c);
    return rc;
}

/* Pages kept free for an eviction to run in, at all times. */
static uint64_t reserve_pages(const space *sp)
{
    return BR_MAX((uint64_t)32, sp->map_pages / 16);
}

/* A generous estimate of the pages one entry of len bytes dirties when
 * written: its own pages, a leaf and an age leaf copied, a share of branches. */
static uint64_t entry_pages(uint64_t len, uint64_t psize)
{
    return (len + 64 + psize - 1) / psize + 2;
}

static uint64_t pending_pages(const br_range_cache *c, uint64_t psize)
{
    uint64_t n = 8;
    for (size_t i = 0; i < c->cap; i++)
        if (c->slots[i].val)
            n += entry_pages(c->slots[i].len, psize);
    return n;
}

/* Evict the oldest entries until the pending batch fits with the reserve to
 * spare: a tenth of the entries at least once eviction starts (so that it
 * does not run again at every flush), each commit small enough to fit in the
 * reserve. With force, evict one round even if the estimate says it fits (the
 * estimate was wrong: the commit hit the map limit). *progress is false when
 * there was nothing to evict. */
static int ensure_room(br_range_cache *c, bool force, bool *progress)
{
    space sp;
    int rc = space_get(c, &sp);
    if (rc)
        return rc;
    uint64_t need = pending_pages(c, sp.psize), reserve = reserve_pages(&sp);
    *progress = false;
    if (!force && sp.avail_pages >= need + reserve)
        return 0;
    uint64_t target = BR_MAX((uint64_t)1, sp.entries / 10), done = 0;
    size_t per_commit = (size_t)BR_MAX((uint64_t)4, reserve / 4);
    for (;;) {
        size_t ev;
        rc = evict_some(
            c, (size_t)BR_MIN((uint64_t)per_commit, BR_MAX(target - BR_MIN(done, target), 1)), &ev);
        if (rc)
            return rc;
        if (ev == 0)
            break;
        *progress = true;
        done += ev;
        rc = space_get(c, &sp);
        if (rc)
            return rc;
        if (done >= target && sp.avail_later >= need + reserve)
            break;
    }
    /* Pages freed by commit T are reusable from commit T + 2 on (LMDB keeps
     * the previous snapshot whole): one tiny commit makes what the evictions
     * freed available to the batch. With nothing evicted, two, for the pages
     * freed by the last commits. */
    (void)bump(c);
    if (!*progress)
        (void)bump(c);
    return 0;
}

/* Drop pending entries that could never fit: more than half the map. */
static int drop_oversized(br_range_cache *c)
{
    int result = 0;
    for (size_t i = 0; i < c->cap; i++) {
        pend *p = &c->slots[i];
        if (p->val && entry_pages(p->len, c->psize) > c->max_size / c->psize / 2) {
            c->pending_bytes -= p->len;
            free(p->val);
            p->val = NULL;
            p->len = 0;
            c->n_live--;
            result = -EFBIG;
        }
    }
    return result;
}

static void drop_largest_pending(br_range_cache *c)
{
    pend *big = NULL;
    for (size_t i = 0; i < c->cap; i++)
        if (c->slots[i].val && (!big || c->slots[i].len > big->len))
            big = &c->slots[i];
    if (!big)
        return;
    c->pending_bytes -= big->len;
    free(big->val);
    big->val = NULL;
    big->len = 0;
    c->n_live--;
}

int br_range_cache_flush(br_range_cache *c)
{
    if (!c)
        return -EINVAL;
    if (br_rc_damaged(c)) {
        br_rc_pend_clear(c);
        return -EIO;
    }
    if (c->n_live == 0) {
        br_rc_pend_clear(c);
        return 0;
    }
    int result = drop_oversized(c);
    bool progress;
    int rc = ensure_room(c, false, &progress);
    if (rc)
        goto fail_mdb;
    int stuck = 0;
    while (c->n_live > 0) {
        rc = write_pending(c);
        if (rc == MDB_SUCCESS)
            break;
        if (rc != MDB_MAP_FULL)
            goto fail_mdb;
        rc = ensure_room(c, true, &progress);
        if (rc)
            goto fail_mdb;
        if (progress) {
            stuck = 0;
            continue;
        }
        if (++stuck < 2)
            continue;
        /* Nothing left to evict and the batch still does not fit. */
        drop_largest_pending(c);
        result = -EFBIG;
        stuck = 0;
    }
    br_rc_pend_clear(c);
    return result;
fail_mdb:
    br_rc_pend_clear(c);
    return br_rc_errno(rc);
}

/* ---- purge: entries past ttl + max_stale ------------------------------------ */

#define PURGE_PER_COMMIT 256

/* One commit deleting up to PURGE_PER_COMMIT entries whose expires_at is more
 * than max_stale before now, oldest fetched_at first. The walk stops at the
 * first age key fetched no more than max_stale ago: its entry, and every
 * younger one, expires no earlier than it was fetched. *more is true when
 * the commit was full and the walk should go on. */
static int purge_txn(br_range_cache *c, int64_t now, int64_t max_stale, size_t *done, bool *more)
{
    MDB_txn *txn;
    MDB_cursor *cur = NULL;
    size_t keys = 0;
    *done = 0;
    *more = false;
    int rc = br_rc_wtxn_begin(c, &txn);
    if (rc)
        return rc;
    rc = mdb_cursor_open(txn, c->dbi_age, &cur);
    if (rc)
        goto fail;
    MDB_val a, v;
    rc = mdb_cursor_get(cur, &a, &v, MDB_FIRST);
    while (rc == MDB_SUCCESS) {
        if (keys == PURGE_PER_COMMIT) {
            *more = true;
            break;
        }
        bool drop_age = a.mv_size != AGEKEY_LEN; /* not ours: drop */
        uint8_t ak[AGEKEY_LEN] = {0};
        if (!drop_age) {
            memcpy(ak, a.mv_data, AGEKEY_LEN);
            int64_t fetched = (int64_t)(br_load_be64(ak) ^ (UINT64_C(1) << 63)), age;
            if (!__builtin_sub_overflow(now, fetched, &age) && age <= max_stale)
                break; /* this one and every younger one are within the horizon */
            MDB_val k = {.mv_size = RKEY_LEN, .mv_data = ak + 8};
            rc = mdb_get(txn, c->dbi_ranges, &k, &v);
            if (rc == MDB_NOTFOUND) {
                drop_age = true; /* an orphan age key */
            } else if (rc) {
                goto fail;
            } else {
                entry_view ev;
                uint8_t mine[AGEKEY_LEN];
                int64_t past;
                bool corrupt = br_rc_entry_parse(v.mv_data, v.mv_size, &ev) < 0;
                if (!corrupt)
                    agekey_store(mine, ev.fetched_at, rkey_load(ak + 8));
                if (!corrupt && memcmp(mine, ak, AGEKEY_LEN) != 0) {
                    drop_age = true; /* the entry was re-stamped: an orphan */
                } else if (corrupt || (!__builtin_sub_overflow(now, ev.expires_at, &past) &&
                                       past > max_stale)) {
                    if ((rc = mdb_del(txn, c->dbi_ranges, &k, NULL)))
                        goto fail;
                    (*done)++;
                    drop_age = true;
                }
            }
        }
        if (drop_age) {
            if ((rc = mdb_cursor_del(cur, 0)))
                goto fail;
            keys++;
        }
        /* After a delete, LMDB's MDB_NEXT gives the key that followed. */
        rc = mdb_cursor_get(cur, &a, &v, MDB_NEXT);
    }
    if (rc && rc != MDB_NOTFOUND)
        goto fail;
    mdb_cursor_close(cur);
    if (keys == 0) {
        mdb_txn_abort(txn);
        return 0;
    }
    rc = mdb_txn_commit(txn);
    if (rc)
        return rc;
    c->commits++;
    return 0;
fail:
    if (cur)
        mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return rc;
}

int br_range_cache_purge(br_range_cache *c, int64_t now, int64_t max_stale, uint64_t *purged)
{
    if (purged)
        *purged = 0;
    if (!c)
        return -EINVAL;
    max_stale = BR_MAX(max_stale, 0);
    bool more = true;
    while (more) {
        size_t done;
        int rc = purge_txn(c, now, max_stale, &done, &more);
        if (rc)
            return br_rc_errno(rc);
        if (purged)
            *purged += done;
    }
    return 0;
}

/* ---- stats ---------------------------------------------------------------------- */

int br_range_cache_stats(br_range_cache *c, br_range_cache_usage *st)
{
    if (!c || !st)
        return -EINVAL;
    memset(st, 0, sizeof(*st));
    st->pending = c->n_live;
    st->evicted = c->evicted;
    st->commits = c->commits;
    space sp;
    int rc = space_get(c, &sp);
    if (rc)
        return br_rc_errno(rc);
    st->entries = sp.entries;
    st->file_bytes = sp.last_pages * sp.psize;
    st->used_bytes = (sp.last_pages - sp.free_pages) * sp.psize;
    st->max_bytes = sp.map_pages * sp.psize;
    return 0;
}
