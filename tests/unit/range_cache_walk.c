/* SPDX-License-Identifier: MIT */
/* The walk over every committed entry of a range cache
 * (range_cache_walk.h). */
#include <errno.h>

#include "range/range_cache_int.h"
#include "range_cache_walk.h"

int rc_walk(br_range_cache *c, rc_walk_cb cb, void *ctx)
{
    if (!c || !cb)
        return -EINVAL;
    if (br_rc_damaged(c))
        return -EIO;
    MDB_txn *txn;
    MDB_cursor *cur;
    int rc = mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn);
    if (rc)
        return br_rc_errno(rc);
    rc = mdb_cursor_open(txn, c->dbi_ranges, &cur);
    if (rc) {
        mdb_txn_abort(txn);
        return br_rc_errno(rc);
    }
    MDB_val k, v;
    int ret = 0;
    while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == MDB_SUCCESS) {
        if (k.mv_size != RKEY_LEN)
            continue;
        rkey_t rkey = rkey_load(k.mv_data);
        uint32_t part = rkey_partition(rkey), prefix20 = (uint32_t)rkey & 0xFFFFF;
        entry_view ev;
        if (br_rc_entry_parse(v.mv_data, v.mv_size, &ev) < 0)
            ret = cb(ctx, part, rkey_kind(rkey), prefix20, 0, 0, NULL, 0);
        else
            ret = cb(ctx, part, rkey_kind(rkey), prefix20, ev.fetched_at, ev.expires_at, ev.rs,
                     ev.rs_len);
        if (ret)
            break;
    }
    if (rc == MDB_NOTFOUND)
        rc = 0;
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return ret ? ret : br_rc_errno(rc);
}
