/* SPDX-License-Identifier: MIT */
/* Range cache: the partition share (range_cache.h "Partitions"). Before a
 * batch is written, every partition it writes to is measured (the stored
 * bytes of its entries, one cursor walk over its keys, which are contiguous:
 * the partition leads the ranges key) and, when the batch would take it past
 * its quota, its own oldest entries are deleted in the batch's transaction
 * until it fits. Entries the batch rewrites are not deleted (their new value
 * counts instead). So a partition's writes never evict another partition's
 * entries here; only the global eviction (range_cache_evict.c) does, when
 * the partitions together do not fit in max_size. */
#include <errno.h>
#include <stdlib.h>

#include "range_cache_int.h"

int br_range_cache_set_partition_share(br_range_cache *c, unsigned pct)
{
    if (!c || pct < 1 || pct > 100)
        return -EINVAL;
    c->partition_quota = pct == 100 ? 0 : c->max_size / 100 * pct;
    br_rc_quota_forget(c);
    return 0;
}

void br_rc_quota_forget(br_range_cache *c)
{
    for (size_t i = 0; i < BR_ARRAY_SIZE(c->share_memo); i++)
        c->share_memo[i].used = false;
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

int br_rc_quota_apply(br_range_cache *c, MDB_txn *txn, size_t *done)
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
