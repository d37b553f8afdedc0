/* SPDX-License-Identifier: MIT */
/* LMDB range cache; design and layouts in range_cache.h. */
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "range.h"
#include "range_cache.h"

#define ENTRY_MAGIC_0 'B'
#define ENTRY_MAGIC_1 'R'
#define ENTRY_MAGIC_2 'C'
#define ENTRY_VERSION 1
#define ENTRY_HEADER 24
#define RKEY_LEN 4
#define AGEKEY_LEN (8 + RKEY_LEN)
#define CACHE_FORMAT 1
#define PENDING_BYTES_CAP ((uint64_t)64 << 20)

/* A pending write: the complete encoded entry. rkey 0 is an empty slot (kinds
 * start at 1); val NULL with rkey set is a dropped write. */
typedef struct pend {
    uint32_t rkey; /* kind << 24 | prefix20 */
    uint8_t *val;
    size_t len;
} pend;

struct br_range_cache {
    MDB_env *env;
    MDB_dbi dbi_ranges, dbi_age, dbi_meta;
    MDB_txn *rtxn; /* read txn, reset between uses; NULL while the map is resized */
    uint64_t max_size;
    uint64_t headroom;
    uint64_t psize;
    pend *slots;
    size_t cap, n_slots, n_live;
    uint64_t pending_bytes, pending_bytes_max;
    uint64_t evicted, commits;
};

/* ---- errors ---------------------------------------------------------- */

static int mdb_to_errno(int rc)
{
    switch (rc) {
    case MDB_SUCCESS:
        return 0;
    case MDB_NOTFOUND:
        return -ENOENT;
    case MDB_KEYEXIST:
        return -EEXIST;
    case MDB_MAP_FULL:
    case MDB_DBS_FULL:
        return -ENOSPC;
    case MDB_READERS_FULL:
        return -EBUSY;
    case MDB_MAP_RESIZED:
        return -EAGAIN;
    case MDB_TXN_FULL:
    case MDB_CURSOR_FULL:
    case MDB_PAGE_FULL:
        return -E2BIG;
    case MDB_PAGE_NOTFOUND:
    case MDB_CORRUPTED:
    case MDB_INVALID:
        return -EBADMSG;
    case MDB_VERSION_MISMATCH:
        return -EPROTO;
    case MDB_PANIC:
        return -EIO;
    case MDB_TLS_FULL:
        return -ENOMEM;
    case MDB_INCOMPATIBLE:
    case MDB_BAD_RSLOT:
    case MDB_BAD_TXN:
    case MDB_BAD_VALSIZE:
    case MDB_BAD_DBI:
        return -EINVAL;
    default:
        return rc > 0 ? -rc : -EIO;
    }
}

static int mdb_fail(br_error *err, int rc, const char *what)
{
    return br_error_set(err, mdb_to_errno(rc), "range cache: %s: %s", what, mdb_strerror(rc));
}

/* ---- keys and entries -------------------------------------------------- */

static inline uint32_t rkey_of(br_range_kind kind, uint32_t prefix20)
{
    return ((uint32_t)kind << 24) | (prefix20 & 0xFFFFF);
}

static void rkey_store(uint8_t out[RKEY_LEN], uint32_t rkey)
{
    out[0] = (uint8_t)(rkey >> 24);
    out[1] = (uint8_t)(rkey >> 16);
    out[2] = (uint8_t)(rkey >> 8);
    out[3] = (uint8_t)rkey;
}

static uint32_t rkey_load(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void agekey_store(uint8_t out[AGEKEY_LEN], int64_t fetched_at, uint32_t rkey)
{
    uint64_t t = (uint64_t)fetched_at ^ (UINT64_C(1) << 63);
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(t >> (56 - 8 * i));
    rkey_store(out + 8, rkey);
}

typedef struct entry_view {
    int64_t fetched_at, expires_at;
    const uint8_t *etag, *lm;
    size_t etag_len, lm_len;
    const uint8_t *rs;
    size_t rs_len;
} entry_view;

static int entry_parse(const uint8_t *v, size_t len, entry_view *ev)
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
    return 0;
}

static size_t validator_len(const char *s)
{
    if (!s)
        return 0;
    size_t n = strlen(s);
    return n > BR_RANGE_CACHE_VALIDATOR_MAX ? 0 : n;
}

static int entry_build(const uint8_t *rs, size_t rs_len, int64_t fetched_at, int64_t expires_at, const void *etag,
                       size_t etag_len, const void *lm, size_t lm_len, uint8_t **out, size_t *out_len)
{
    size_t total = ENTRY_HEADER + etag_len + lm_len + rs_len;
    uint8_t *v = malloc(total);
    if (!v)
        return -ENOMEM;
    v[0] = ENTRY_MAGIC_0;
    v[1] = ENTRY_MAGIC_1;
    v[2] = ENTRY_MAGIC_2;
    v[3] = ENTRY_VERSION;
    v[4] = (uint8_t)etag_len;
    v[5] = (uint8_t)lm_len;
    br_store_le16(v + 6, 0);
    br_store_le64(v + 8, (uint64_t)fetched_at);
    br_store_le64(v + 16, (uint64_t)expires_at);
    if (etag_len)
        memcpy(v + ENTRY_HEADER, etag, etag_len);
    if (lm_len)
        memcpy(v + ENTRY_HEADER + etag_len, lm, lm_len);
    memcpy(v + ENTRY_HEADER + etag_len + lm_len, rs, rs_len);
    *out = v;
    *out_len = total;
    return 0;
}

/* ---- pending table (open addressing, cleared wholesale on flush) -------- */

static size_t pend_hash(uint32_t rkey, size_t cap)
{
    return (size_t)((rkey * UINT32_C(0x9E3779B1)) >> 7) & (cap - 1);
}

static pend *pend_find(br_range_cache *c, uint32_t rkey)
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

static void pend_clear(br_range_cache *c)
{
    for (size_t i = 0; i < c->cap; i++) {
        free(c->slots[i].val);
        c->slots[i] = (pend){0};
    }
    c->n_slots = c->n_live = 0;
    c->pending_bytes = 0;
}

/* Take ownership of val (freed on failure too). */
static int pend_put(br_range_cache *c, uint32_t rkey, uint8_t *val, size_t len)
{
    pend *p = pend_find(c, rkey);
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

/* ---- read transaction ---------------------------------------------------- */

static int rtxn_renew(br_range_cache *c)
{
    int rc;
    if (!c->rtxn) {
        rc = mdb_txn_begin(c->env, NULL, MDB_RDONLY, &c->rtxn);
        if (rc == MDB_MAP_RESIZED) {
            mdb_env_set_mapsize(c->env, 0);
            rc = mdb_txn_begin(c->env, NULL, MDB_RDONLY, &c->rtxn);
        }
        if (rc != MDB_SUCCESS)
            c->rtxn = NULL;
        return rc;
    }
    rc = mdb_txn_renew(c->rtxn);
    if (rc == MDB_MAP_RESIZED) {
        /* Another process grew the map: adopt its size. */
        mdb_txn_abort(c->rtxn);
        c->rtxn = NULL;
        mdb_env_set_mapsize(c->env, 0);
        rc = mdb_txn_begin(c->env, NULL, MDB_RDONLY, &c->rtxn);
        if (rc != MDB_SUCCESS)
            c->rtxn = NULL;
    }
    return rc;
}

static void rtxn_reset(br_range_cache *c)
{
    if (c->rtxn)
        mdb_txn_reset(c->rtxn);
}

static int wtxn_begin(br_range_cache *c, MDB_txn **txn)
{
    int rc = mdb_txn_begin(c->env, NULL, 0, txn);
    if (rc == MDB_MAP_RESIZED) {
        if (c->rtxn) {
            mdb_txn_abort(c->rtxn);
            c->rtxn = NULL;
        }
        mdb_env_set_mapsize(c->env, 0);
        rc = mdb_txn_begin(c->env, NULL, 0, txn);
    }
    return rc;
}

/* ---- open / close ------------------------------------------------------- */

static int setup_dbs(br_range_cache *c, br_error *err)
{
    MDB_txn *txn;
    int rc = wtxn_begin(c, &txn);
    if (rc)
        return mdb_fail(err, rc, "begin");
    if ((rc = mdb_dbi_open(txn, "ranges", MDB_CREATE, &c->dbi_ranges)) ||
        (rc = mdb_dbi_open(txn, "age", MDB_CREATE, &c->dbi_age)) ||
        (rc = mdb_dbi_open(txn, "meta", MDB_CREATE, &c->dbi_meta))) {
        mdb_txn_abort(txn);
        return mdb_fail(err, rc, "opening databases");
    }
    MDB_val k = {.mv_size = 6, .mv_data = (void *)"format"}, v;
    rc = mdb_get(txn, c->dbi_meta, &k, &v);
    bool ok = rc == MDB_SUCCESS && v.mv_size == 4 && br_load_le32(v.mv_data) == CACHE_FORMAT;
    if (!ok) {
        uint8_t fmt[4];
        br_store_le32(fmt, CACHE_FORMAT);
        v = (MDB_val){.mv_size = 4, .mv_data = fmt};
        if ((rc = mdb_drop(txn, c->dbi_ranges, 0)) || (rc = mdb_drop(txn, c->dbi_age, 0)) ||
            (rc = mdb_put(txn, c->dbi_meta, &k, &v, 0))) {
            mdb_txn_abort(txn);
            return mdb_fail(err, rc, "initializing");
        }
    }
    rc = mdb_txn_commit(txn);
    if (rc)
        return mdb_fail(err, rc, "commit");
    return 0;
}

int br_range_cache_open(const char *path, uint64_t max_size, br_range_cache **out, br_error *err)
{
    if (!out || !path || !*path)
        return br_error_set(err, -EINVAL, "range cache: bad arguments");
    *out = NULL;
    if (max_size < BR_RANGE_CACHE_MIN_SIZE || max_size > (uint64_t)SIZE_MAX / 2)
        return br_error_set(err, -EINVAL, "range cache: max_size %llu out of range (minimum %llu)",
                            (unsigned long long)max_size, (unsigned long long)BR_RANGE_CACHE_MIN_SIZE);
    if (mkdir(path, 0700) < 0) {
        int e = errno;
        struct stat st;
        if (e != EEXIST)
            return br_error_set(err, -e, "range cache: creating %s: %s", path, strerror(e));
        if (stat(path, &st) < 0)
            return br_error_set(err, -errno, "range cache: %s: %s", path, strerror(errno));
        if (!S_ISDIR(st.st_mode))
            return br_error_set(err, -ENOTDIR, "range cache: %s is not a directory", path);
    }

    long ps = sysconf(_SC_PAGESIZE);
    uint64_t psize = ps > 0 ? (uint64_t)ps : 4096;
    max_size = (max_size + psize - 1) / psize * psize;

    _cleanup_(br_range_cache_freep) br_range_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return br_error_set(err, -ENOMEM, "range cache: out of memory");
    c->max_size = max_size;
    c->headroom = BR_MAX((uint64_t)64 << 10, max_size / 32 / psize * psize);
    c->pending_bytes_max = BR_MIN(max_size / 8, PENDING_BYTES_CAP);

    int rc = mdb_env_create(&c->env);
    if (rc) {
        c->env = NULL;
        return mdb_fail(err, rc, "creating the environment");
    }
    if ((rc = mdb_env_set_maxdbs(c->env, 4)) || (rc = mdb_env_set_mapsize(c->env, (size_t)max_size)))
        return mdb_fail(err, rc, "configuring");
    rc = mdb_env_open(c->env, path, MDB_NOTLS | MDB_NOMETASYNC, 0600);
    if (rc)
        return br_error_set(err, mdb_to_errno(rc), "range cache: opening %s: %s", path, mdb_strerror(rc));
    int dead = 0;
    rc = mdb_reader_check(c->env, &dead);
    if (rc)
        return mdb_fail(err, rc, "checking reader slots");
    MDB_stat es;
    rc = mdb_env_stat(c->env, &es);
    if (rc)
        return mdb_fail(err, rc, "stat");
    c->psize = es.ms_psize;
    rc = setup_dbs(c, err);
    if (rc < 0)
        return br_error_prefix(err, rc, "%s", path);
    rc = rtxn_renew(c);
    if (rc)
        return mdb_fail(err, rc, "read transaction");
    rtxn_reset(c);

    *out = BR_TAKE_PTR(c);
    return 0;
}

void br_range_cache_free(br_range_cache *c)
{
    if (!c)
        return;
    if (c->env) {
        if (c->n_live)
            (void)br_range_cache_flush(c);
        if (c->rtxn)
            mdb_txn_abort(c->rtxn);
        mdb_env_close(c->env);
    }
    pend_clear(c);
    free(c->slots);
    free(c);
}

/* ---- lookup ----------------------------------------------------------------- */

static int answer(br_range_kind kind, const uint8_t *v, size_t len, const uint8_t *full_hash, int64_t now,
                  int64_t max_stale, br_range_cache_result *res)
{
    entry_view ev;
    if (entry_parse(v, len, &ev) < 0)
        return -EINVAL;
    res->fetched_at = ev.fetched_at;
    res->expires_at = ev.expires_at;
    memcpy(res->etag, ev.etag, ev.etag_len);
    res->etag[ev.etag_len] = '\0';
    memcpy(res->last_modified, ev.lm, ev.lm_len);
    res->last_modified[ev.lm_len] = '\0';

    int64_t age_past_expiry;
    if (now < ev.expires_at)
        res->state = BR_RANGE_CACHE_FRESH;
    else if (!__builtin_sub_overflow(now, ev.expires_at, &age_past_expiry) &&
             age_past_expiry <= BR_MAX(max_stale, 0))
        res->state = BR_RANGE_CACHE_STALE;
    else
        res->state = BR_RANGE_CACHE_EXPIRED;

    /* The range set is checked even for an expired entry: corrupt is corrupt. */
    int rc = br_range_lookup(kind, ev.rs, ev.rs_len, full_hash, &res->count, res->category);
    if (rc < 0)
        return rc;
    if (res->state == BR_RANGE_CACHE_EXPIRED) {
        res->count = 0;
        res->category[0] = '\0';
        return 0;
    }
    res->found = rc == 1;
    return 0;
}

int br_range_cache_lookup(br_range_cache *c, br_range_kind kind, const uint8_t *full_hash, int64_t now,
                          int64_t max_stale, br_range_cache_result *res)
{
    if (!c || !full_hash || !res || !br_range_hash_len(kind))
        return -EINVAL;
    res->state = BR_RANGE_CACHE_MISS;
    res->found = false;
    res->count = 0;
    res->category[0] = '\0';
    res->fetched_at = res->expires_at = 0;
    res->etag[0] = res->last_modified[0] = '\0';

    uint32_t rkey = rkey_of(kind, br_range_prefix20(full_hash));
    pend *p = pend_find(c, rkey);
    if (p && p->val) {
        int rc = answer(kind, p->val, p->len, full_hash, now, max_stale, res);
        if (rc < 0)
            res->state = BR_RANGE_CACHE_MISS;
        return rc;
    }

    int rc = rtxn_renew(c);
    if (rc)
        return mdb_to_errno(rc);
    uint8_t kb[RKEY_LEN];
    rkey_store(kb, rkey);
    MDB_val k = {.mv_size = RKEY_LEN, .mv_data = kb}, v;
    rc = mdb_get(c->rtxn, c->dbi_ranges, &k, &v);
    if (rc == MDB_SUCCESS) {
        rc = answer(kind, v.mv_data, v.mv_size, full_hash, now, max_stale, res);
        if (rc < 0)
            res->state = BR_RANGE_CACHE_MISS;
    } else if (rc == MDB_NOTFOUND) {
        rc = 0;
    } else {
        rc = mdb_to_errno(rc);
    }
    rtxn_reset(c);
    return rc;
}

/* ---- writes ------------------------------------------------------------------ */

static int maybe_autoflush(br_range_cache *c)
{
    if (c->n_live >= BR_RANGE_CACHE_PENDING_MAX || c->pending_bytes >= c->pending_bytes_max)
        return br_range_cache_flush(c);
    return 0;
}

int br_range_cache_put(br_range_cache *c, br_range_kind kind, uint32_t prefix20, const uint8_t *value,
                       size_t len, int64_t fetched_at, int64_t expires_at, const char *etag,
                       const char *last_modified)
{
    if (!c || !br_range_hash_len(kind) || prefix20 > 0xFFFFF || br_range_validate(kind, value, len, NULL) < 0)
        return -EINVAL;
    size_t el = validator_len(etag), ll = validator_len(last_modified);
    uint8_t *v;
    size_t vlen;
    int rc = entry_build(value, len, fetched_at, expires_at, etag, el, last_modified, ll, &v, &vlen);
    if (rc < 0)
        return rc;
    rc = pend_put(c, rkey_of(kind, prefix20), v, vlen);
    if (rc < 0)
        return rc;
    return maybe_autoflush(c);
}

int br_range_cache_touch(br_range_cache *c, br_range_kind kind, uint32_t prefix20, int64_t fetched_at,
                         int64_t expires_at, const char *etag, const char *last_modified)
{
    if (!c || !br_range_hash_len(kind) || prefix20 > 0xFFFFF)
        return -EINVAL;
    uint32_t rkey = rkey_of(kind, prefix20);
    const uint8_t *old;
    size_t old_len;
    bool from_txn = false;
    pend *p = pend_find(c, rkey);
    if (p && p->val) {
        old = p->val;
        old_len = p->len;
    } else {
        int rc = rtxn_renew(c);
        if (rc)
            return mdb_to_errno(rc);
        uint8_t kb[RKEY_LEN];
        rkey_store(kb, rkey);
        MDB_val k = {.mv_size = RKEY_LEN, .mv_data = kb}, v;
        rc = mdb_get(c->rtxn, c->dbi_ranges, &k, &v);
        if (rc) {
            rtxn_reset(c);
            return mdb_to_errno(rc);
        }
        old = v.mv_data;
        old_len = v.mv_size;
        from_txn = true;
    }

    entry_view ev;
    int rc = entry_parse(old, old_len, &ev);
    if (rc == 0 && br_range_validate(kind, ev.rs, ev.rs_len, NULL) < 0)
        rc = -EINVAL;
    uint8_t *nv = NULL;
    size_t nlen = 0;
    if (rc == 0) {
        const void *et = ev.etag, *lm = ev.lm;
        size_t el = ev.etag_len, ll = ev.lm_len;
        if (etag) {
            et = etag;
            el = validator_len(etag);
        }
        if (last_modified) {
            lm = last_modified;
            ll = validator_len(last_modified);
        }
        rc = entry_build(ev.rs, ev.rs_len, fetched_at, expires_at, et, el, lm, ll, &nv, &nlen);
    }
    if (from_txn)
        rtxn_reset(c);
    if (rc < 0)
        return rc;
    rc = pend_put(c, rkey, nv, nlen);
    if (rc < 0)
        return rc;
    return maybe_autoflush(c);
}

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
            if (entry_parse(v.mv_data, v.mv_size, &old) == 0) {
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

static int write_pending(br_range_cache *c)
{
    MDB_txn *txn;
    int rc = wtxn_begin(c, &txn);
    if (rc)
        return rc;
    rc = apply_pending(c, txn);
    if (rc) {
        mdb_txn_abort(txn);
        return rc;
    }
    rc = mdb_txn_commit(txn);
    if (rc == 0)
        c->commits++;
    return rc;
}

/* A tiny commit: advances the transaction id so that the pages freed by the
 * previous commit become reusable by the next one (LMDB keeps the pages freed
 * by transaction T until T + 2). */
static int bump(br_range_cache *c)
{
    MDB_txn *txn;
    int rc = wtxn_begin(c, &txn);
    if (rc)
        return rc;
    MDB_val k = {.mv_size = 9, .mv_data = (void *)"evictions"}, v;
    uint8_t n[8];
    uint64_t count = 0;
    if (mdb_get(txn, c->dbi_meta, &k, &v) == MDB_SUCCESS && v.mv_size == 8)
        count = br_load_le64(v.mv_data);
    br_store_le64(n, count + 1);
    v = (MDB_val){.mv_size = 8, .mv_data = n};
    rc = mdb_put(txn, c->dbi_meta, &k, &v, 0);
    if (rc) {
        mdb_txn_abort(txn);
        return rc;
    }
    rc = mdb_txn_commit(txn);
    if (rc == 0)
        c->commits++;
    return rc;
}

/* Delete up to max_k of the oldest entries in one commit. *evicted counts
 * the age keys removed (entries, and orphans that had lost theirs); 0 only
 * when the cache is empty. */
static int evict_txn(br_range_cache *c, size_t max_k, size_t *evicted)
{
    MDB_txn *txn;
    MDB_cursor *cur = NULL;
    size_t done = 0, keys = 0;
    *evicted = 0;
    int rc = wtxn_begin(c, &txn);
    if (rc)
        return rc;
    rc = mdb_cursor_open(txn, c->dbi_age, &cur);
    if (rc)
        goto fail;
    while (keys < max_k) {
        MDB_val a, v;
        rc = mdb_cursor_get(cur, &a, &v, MDB_FIRST);
        if (rc == MDB_NOTFOUND)
            break;
        if (rc)
            goto fail;
        if (a.mv_size == AGEKEY_LEN) {
            uint8_t ak[AGEKEY_LEN];
            memcpy(ak, a.mv_data, AGEKEY_LEN);
            MDB_val k = {.mv_size = RKEY_LEN, .mv_data = ak + 8};
            rc = mdb_get(txn, c->dbi_ranges, &k, &v);
            if (rc == MDB_SUCCESS) {
                /* Delete the entry only if this age key is really its own
                 * (an orphan age key must not kill a younger entry). */
                entry_view ev;
                uint8_t mine[AGEKEY_LEN];
                bool own = entry_parse(v.mv_data, v.mv_size, &ev) < 0;
                if (!own) {
                    agekey_store(mine, ev.fetched_at, rkey_load(ak + 8));
                    own = memcmp(mine, ak, AGEKEY_LEN) == 0;
                }
                if (own) {
                    rc = mdb_del(txn, c->dbi_ranges, &k, NULL);
                    if (rc)
                        goto fail;
                    done++;
                }
            } else if (rc != MDB_NOTFOUND) {
                goto fail;
            }
        }
        rc = mdb_cursor_del(cur, 0);
        if (rc)
            goto fail;
        keys++;
    }
    mdb_cursor_close(cur);
    cur = NULL;
    if (keys == 0) {
        /* No age keys at all: should not happen, but never get stuck on
         * entries without one; take them in key order. */
        rc = mdb_cursor_open(txn, c->dbi_ranges, &cur);
        if (rc)
            goto fail;
        while (keys < max_k) {
            MDB_val k, v;
            rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
            if (rc == MDB_NOTFOUND)
                break;
            if (rc || (rc = mdb_cursor_del(cur, 0)))
                goto fail;
            done++;
            keys++;
        }
        mdb_cursor_close(cur);
        cur = NULL;
    }
    if (keys == 0) {
        mdb_txn_abort(txn);
        return 0;
    }
    rc = mdb_txn_commit(txn);
    if (rc)
        return rc;
    c->commits++;
    c->evicted += done;
    *evicted = keys;
    return 0;
fail:
    if (cur)
        mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return rc;
}

static int set_mapsize(br_range_cache *c, uint64_t size)
{
    if (c->rtxn) {
        mdb_txn_abort(c->rtxn);
        c->rtxn = NULL;
    }
    return mdb_env_set_mapsize(c->env, (size_t)size);
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
    int rc = rtxn_renew(c);
    if (rc)
        return rc;
    MDB_stat ms, es;
    MDB_envinfo info;
    MDB_cursor *cur = NULL;
    uint64_t reusable = 0;
    memset(sp, 0, sizeof(*sp));
    if ((rc = mdb_stat(c->rtxn, c->dbi_ranges, &ms)) || (rc = mdb_env_stat(c->env, &es)) ||
        (rc = mdb_env_info(c->env, &info)) || (rc = mdb_cursor_open(c->rtxn, 0 /* FREE_DBI */, &cur)))
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
        rc = evict_some(c, (size_t)BR_MIN((uint64_t)per_commit, BR_MAX(target - BR_MIN(done, target), 1)), &ev);
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
    if (c->n_live == 0) {
        pend_clear(c);
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
    pend_clear(c);
    return result;
fail_mdb:
    pend_clear(c);
    return mdb_to_errno(rc);
}

/* ---- stats and walk --------------------------------------------------------------- */

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
        return mdb_to_errno(rc);
    st->entries = sp.entries;
    st->file_bytes = sp.last_pages * sp.psize;
    st->used_bytes = (sp.last_pages - sp.free_pages) * sp.psize;
    st->max_bytes = sp.map_pages * sp.psize;
    return 0;
}

int br_range_cache_foreach(br_range_cache *c, br_range_cache_entry_cb cb, void *ctx)
{
    if (!c || !cb)
        return -EINVAL;
    MDB_txn *txn;
    MDB_cursor *cur;
    int rc = mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn);
    if (rc)
        return mdb_to_errno(rc);
    rc = mdb_cursor_open(txn, c->dbi_ranges, &cur);
    if (rc) {
        mdb_txn_abort(txn);
        return mdb_to_errno(rc);
    }
    MDB_val k, v;
    int ret = 0;
    while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == MDB_SUCCESS) {
        if (k.mv_size != RKEY_LEN)
            continue;
        uint32_t rkey = rkey_load(k.mv_data);
        entry_view ev;
        if (entry_parse(v.mv_data, v.mv_size, &ev) < 0)
            ret = cb(ctx, (br_range_kind)(rkey >> 24), rkey & 0xFFFFF, 0, 0, NULL, 0);
        else
            ret = cb(ctx, (br_range_kind)(rkey >> 24), rkey & 0xFFFFF, ev.fetched_at, ev.expires_at, ev.rs,
                     ev.rs_len);
        if (ret)
            break;
    }
    if (rc == MDB_NOTFOUND)
        rc = 0;
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return ret ? ret : mdb_to_errno(rc);
}
