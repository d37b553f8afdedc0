/* SPDX-License-Identifier: MIT */
/* Range cache entries: the value encoding (layout in range_cache.h), and the
 * table of encoded entries pending a flush. */
#include <errno.h>

#include "range_cache_int.h"

#define ENTRY_MAGIC_0 'B'
#define ENTRY_MAGIC_1 'R'
#define ENTRY_MAGIC_2 'C'
#define ENTRY_VERSION 1
#define ENTRY_HEADER 24
#define ENTRY_DECOYS 0x0001 /* flags: a decoy list follows Last-Modified */

/* ---- entries ------------------------------------------------------------- */

int br_rc_entry_parse(const uint8_t *v, size_t len, entry_view *ev)
{
    if (!v || len < ENTRY_HEADER || v[0] != ENTRY_MAGIC_0 || v[1] != ENTRY_MAGIC_1 || v[2] != ENTRY_MAGIC_2 ||
        v[3] != ENTRY_VERSION)
        return -EINVAL;
    ev->etag_len = v[4];
    ev->lm_len = v[5];
    if (ev->etag_len + ev->lm_len > len - ENTRY_HEADER)
        return -EINVAL;
    ev->fetched_at = (int64_t)br_load_le64(v + 8);
    ev->expires_at = (int64_t)br_load_le64(v + 16);
    ev->etag = v + ENTRY_HEADER;
    ev->lm = ev->etag + ev->etag_len;
    ev->rs = ev->lm + ev->lm_len;
    ev->rs_len = len - ENTRY_HEADER - ev->etag_len - ev->lm_len;
    ev->decoys = NULL;
    ev->n_decoys = 0;
    if (br_load_le16(v + 6) & ENTRY_DECOYS) {
        if (ev->rs_len < 1 || ev->rs[0] > BR_RANGE_CACHE_MAX_DECOYS ||
            1 + 3 * (size_t)ev->rs[0] > ev->rs_len)
            return -EINVAL;
        ev->n_decoys = ev->rs[0];
        ev->decoys = ev->rs + 1;
        ev->rs += 1 + 3 * ev->n_decoys;
        ev->rs_len -= 1 + 3 * ev->n_decoys;
    }
    return 0;
}

int br_rc_entry_build(const uint8_t *rs, size_t rs_len, int64_t fetched_at, int64_t expires_at,
                      const void *etag, size_t etag_len, const void *lm, size_t lm_len, uint8_t **out,
                      size_t *out_len)
{
    return br_rc_entry_build_decoys(rs, rs_len, fetched_at, expires_at, etag, etag_len, lm, lm_len,
                                    NULL, 0, out, out_len);
}

int br_rc_entry_build_decoys(const uint8_t *rs, size_t rs_len, int64_t fetched_at,
                             int64_t expires_at, const void *etag, size_t etag_len, const void *lm,
                             size_t lm_len, const uint8_t *decoys, size_t n, uint8_t **out,
                             size_t *out_len)
{
    if (n > BR_RANGE_CACHE_MAX_DECOYS)
        return -EINVAL;
    size_t list = decoys ? 1 + 3 * n : 0;
    size_t total = ENTRY_HEADER + etag_len + lm_len + list + rs_len;
    uint8_t *v = malloc(total);
    if (!v)
        return -ENOMEM;
    v[0] = ENTRY_MAGIC_0;
    v[1] = ENTRY_MAGIC_1;
    v[2] = ENTRY_MAGIC_2;
    v[3] = ENTRY_VERSION;
    v[4] = (uint8_t)etag_len;
    v[5] = (uint8_t)lm_len;
    br_store_le16(v + 6, decoys ? ENTRY_DECOYS : 0);
    br_store_le64(v + 8, (uint64_t)fetched_at);
    br_store_le64(v + 16, (uint64_t)expires_at);
    if (etag_len)
        memcpy(v + ENTRY_HEADER, etag, etag_len);
    if (lm_len)
        memcpy(v + ENTRY_HEADER + etag_len, lm, lm_len);
    uint8_t *p = v + ENTRY_HEADER + etag_len + lm_len;
    if (decoys) {
        *p++ = (uint8_t)n;
        if (n)
            memcpy(p, decoys, 3 * n);
        p += 3 * n;
    }
    memcpy(p, rs, rs_len);
    *out = v;
    *out_len = total;
    return 0;
}

/* ---- pending table (open addressing, cleared wholesale on flush) -------- */

static size_t pend_hash(rkey_t rkey, size_t cap)
{
    return (size_t)((rkey * UINT64_C(0x9E3779B97F4A7C15)) >> 40) & (cap - 1);
}

pend *br_rc_pend_find(br_range_cache *c, rkey_t rkey)
{
    if (c->n_slots == 0)
        return NULL;
    for (size_t i = pend_hash(rkey, c->cap);; i = (i + 1) & (c->cap - 1)) {
        if (c->slots[i].rkey == rkey)
            return &c->slots[i];
        if (c->slots[i].rkey == 0)
            return NULL;
    }
}

void br_rc_pend_clear(br_range_cache *c)
{
    for (size_t i = 0; i < c->cap; i++) {
        free(c->slots[i].val);
        c->slots[i] = (pend){0};
    }
    c->n_slots = c->n_live = 0;
    c->pending_bytes = 0;
}

/* Take ownership of val (freed on failure too). */
int br_rc_pend_put(br_range_cache *c, rkey_t rkey, uint8_t *val, size_t len)
{
    pend *p = br_rc_pend_find(c, rkey);
    if (p) {
        if (p->val) {
            c->pending_bytes -= p->len;
            free(p->val);
        } else {
            c->n_live++;
        }
        p->val = val;
        p->len = len;
        c->pending_bytes += len;
        return 0;
    }
    if (2 * (c->n_slots + 1) > c->cap) {
        size_t ncap = c->cap ? 2 * c->cap : 64;
        pend *ns = calloc(ncap, sizeof(pend));
        if (!ns) {
            free(val);
            return -ENOMEM;
        }
        for (size_t i = 0; i < c->cap; i++) {
            if (!c->slots[i].rkey)
                continue;
            size_t j = pend_hash(c->slots[i].rkey, ncap);
            while (ns[j].rkey)
                j = (j + 1) & (ncap - 1);
            ns[j] = c->slots[i];
        }
        free(c->slots);
        c->slots = ns;
        c->cap = ncap;
    }
    size_t i = pend_hash(rkey, c->cap);
    while (c->slots[i].rkey)
        i = (i + 1) & (c->cap - 1);
    c->slots[i] = (pend){.rkey = rkey, .val = val, .len = len};
    c->n_slots++;
    c->n_live++;
    c->pending_bytes += len;
    return 0;
}
