/* SPDX-License-Identifier: MIT */
/* LMDB range cache: a whole stored range for serving it
 * (br_range_cache_lookup_range, range_cache.h). */
#include <errno.h>

#include "range_cache_int.h"

/* Hand entry v (len bytes) of kind to cb. */
static int give(br_range_kind kind, const uint8_t *v, size_t len, int64_t now, int64_t max_stale,
                br_range_cache_range_cb cb, void *ctx)
{
    entry_view ev;
    if (br_rc_entry_parse(v, len, &ev) < 0)
        return -EINVAL;
    /* Header and sizes (and a search that reads within bounds): corrupt is
     * corrupt whatever the state. */
    static const uint8_t probe[32];
    if (br_range_lookup(kind, ev.rs, ev.rs_len, probe, NULL, NULL) < 0)
        return -EINVAL;
    char etag[BR_RANGE_CACHE_VALIDATOR_MAX + 1], lm[BR_RANGE_CACHE_VALIDATOR_MAX + 1];
    size_t el = BR_MIN(ev.etag_len, (size_t)BR_RANGE_CACHE_VALIDATOR_MAX);
    size_t ll = BR_MIN(ev.lm_len, (size_t)BR_RANGE_CACHE_VALIDATOR_MAX);
    memcpy(etag, ev.etag, el);
    etag[el] = '\0';
    memcpy(lm, ev.lm, ll);
    lm[ll] = '\0';
    br_range_cache_range rg = {
        .state = br_rc_state_at(now, ev.expires_at, max_stale),
        .fetched_at = ev.fetched_at,
        .expires_at = ev.expires_at,
        .etag = etag,
        .last_modified = lm,
    };
    if (rg.state != BR_RANGE_CACHE_EXPIRED) {
        rg.value = ev.rs;
        rg.len = ev.rs_len;
    }
    return cb(ctx, &rg);
}

int br_range_cache_lookup_range(br_range_cache *c, uint32_t partition, br_range_kind kind,
                                uint32_t prefix20, int64_t now, int64_t max_stale,
                                br_range_cache_range_cb cb, void *ctx)
{
    if (!c || !cb || !br_range_hash_len(kind) || br_range_hash_len(kind) > 32 || prefix20 > 0xFFFFF)
        return -EINVAL;
    rkey_t rkey = rkey_of(partition, kind, prefix20);
    const uint8_t *val;
    size_t len;
    bool in_txn;
    int rc = br_rc_value_of(c, rkey, &val, &len, &in_txn);
    if (rc < 0)
        return rc;
    if (rc == 0) {
        br_range_cache_range miss = {.state = BR_RANGE_CACHE_MISS};
        return cb(ctx, &miss);
    }
    rc = give(kind, val, len, now, max_stale, cb, ctx);
    if (in_txn)
        rtxn_reset(c);
    return rc;
}
