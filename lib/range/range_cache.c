/* SPDX-License-Identifier: MIT */
/* LMDB range cache; design and layouts in range_cache.h, what the files of
 * the module share in range_cache_int.h. This file: errors, transactions,
 * open / close, lookup, put, touch and the walk. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <openssl/crypto.h>

#include "range_cache_int.h"

#define CACHE_FORMAT 2
#define PENDING_BYTES_CAP ((uint64_t)64 << 20)

/* ---- errors ---------------------------------------------------------- */

int br_rc_errno(int rc)
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
    return br_error_set(err, br_rc_errno(rc), "range cache: %s: %s", what, mdb_strerror(rc));
}

/* ---- read transaction ---------------------------------------------------- */

int br_rc_set_mapsize(br_range_cache *c, uint64_t size)
{
    int rc = mdb_env_set_mapsize(c->env, (size_t)size);
    br_rc_guard_update(c, false);
    return rc;
}

int br_rc_rtxn_renew(br_range_cache *c)
{
    int rc;
    if (br_rc_damaged(c))
        return EIO;
    if (!c->rtxn) {
        rc = mdb_txn_begin(c->env, NULL, MDB_RDONLY, &c->rtxn);
        if (rc == MDB_MAP_RESIZED) {
            br_rc_set_mapsize(c, 0);
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
        br_rc_set_mapsize(c, 0);
        rc = mdb_txn_begin(c->env, NULL, MDB_RDONLY, &c->rtxn);
        if (rc != MDB_SUCCESS)
            c->rtxn = NULL;
    }
    return rc;
}

int br_rc_value_of(br_range_cache *c, rkey_t rkey, const uint8_t **val, size_t *len, bool *in_txn)
{
    *in_txn = false;
    pend *p = br_rc_pend_find(c, rkey);
    if (p && p->val) {
        *val = p->val;
        *len = p->len;
        return 1;
    }
    int rc = br_rc_rtxn_renew(c);
    if (rc)
        return br_rc_errno(rc);
    uint8_t kb[RKEY_LEN];
    rkey_store(kb, rkey);
    MDB_val k = {.mv_size = RKEY_LEN, .mv_data = kb}, v;
    rc = mdb_get(c->rtxn, c->dbi_ranges, &k, &v);
    if (rc) {
        rtxn_reset(c);
        return rc == MDB_NOTFOUND ? 0 : br_rc_errno(rc);
    }
    *val = v.mv_data;
    *len = v.mv_size;
    *in_txn = true;
    return 1;
}

int br_rc_wtxn_begin(br_range_cache *c, MDB_txn **txn)
{
    if (br_rc_damaged(c))
        return EIO;
    int rc = mdb_txn_begin(c->env, NULL, 0, txn);
    if (rc == MDB_MAP_RESIZED) {
        if (c->rtxn) {
            mdb_txn_abort(c->rtxn);
            c->rtxn = NULL;
        }
        br_rc_set_mapsize(c, 0);
        rc = mdb_txn_begin(c->env, NULL, 0, txn);
    }
    return rc;
}

/* ---- open / close ------------------------------------------------------- */

/* The cache's secret (range_cache.h): read it, or make and store a new one
 * when missing or when the cache was just emptied. An LMDB code, or -EIO
 * when getrandom fails. */
static int secret_get(br_range_cache *c, MDB_txn *txn, bool renew)
{
    MDB_val k = {.mv_size = 6, .mv_data = (void *)"secret"}, v;
    int rc = renew ? MDB_NOTFOUND : mdb_get(txn, c->dbi_meta, &k, &v);
    if (rc == MDB_SUCCESS && v.mv_size == BR_RANGE_CACHE_SECRET_LEN) {
        memcpy(c->secret, v.mv_data, BR_RANGE_CACHE_SECRET_LEN);
        return 0;
    }
    if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND)
        return rc;
    if (getrandom(c->secret, BR_RANGE_CACHE_SECRET_LEN, 0) != BR_RANGE_CACHE_SECRET_LEN)
        return -EIO;
    v = (MDB_val){.mv_size = BR_RANGE_CACHE_SECRET_LEN, .mv_data = c->secret};
    return mdb_put(txn, c->dbi_meta, &k, &v, 0);
}

static int setup_dbs(br_range_cache *c, br_error *err)
{
    MDB_txn *txn;
    int rc = br_rc_wtxn_begin(c, &txn);
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
    rc = secret_get(c, txn, !ok);
    if (rc) {
        mdb_txn_abort(txn);
        return rc < 0 ? br_error_set(err, rc, "range cache: no random bytes for the secret")
                      : mdb_fail(err, rc, "storing the secret");
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
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return br_error_set(err, -errno, "range cache: creating %s: %s", path, strerror(errno));
    int frc = br_rc_check_files(path, err);
    if (frc < 0)
        return frc;

    long ps = sysconf(_SC_PAGESIZE);
    uint64_t psize = ps > 0 ? (uint64_t)ps : 4096;
    max_size = (max_size + psize - 1) / psize * psize;

    _cleanup_(br_range_cache_freep) br_range_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return br_error_set(err, -ENOMEM, "range cache: out of memory");
    c->guard_data = c->guard_lock = -1;
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
    if (rc == EACCES || rc == EROFS)
        return br_error_set(err, -rc,
                            "range cache: opening %s: %s; fix: the directory, data.mdb and lock.mdb must "
                            "be readable and writable by this process's user, on a file system mounted "
                            "read-write",
                            path, mdb_strerror(rc));
    if (rc)
        return br_error_set(err, br_rc_errno(rc), "range cache: opening %s: %s", path, mdb_strerror(rc));
    c->dir = realpath(path, NULL);
    br_rc_guard_update(c, true);
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
    if (rc == 0 && (rc = br_rc_rtxn_renew(c)) != 0)
        rc = mdb_fail(err, rc, "read transaction");
    rtxn_reset(c);
    if (br_rc_damaged(c))
        return br_error_set(err, -EBADMSG,
                            "range cache: %s: data.mdb is shorter than what it holds (truncated or "
                            "rewritten in place?); fix: remove data.mdb and lock.mdb (it is only a cache)",
                            path);
    if (rc < 0)
        return br_error_prefix(err, rc, "%s", path);

    *out = BR_TAKE_PTR(c);
    return 0;
}

void br_range_cache_free(br_range_cache *c)
{
    if (!c)
        return;
    if (c->env) {
        if (c->n_live && !br_rc_damaged(c))
            (void)br_range_cache_flush(c);
        if (c->rtxn)
            mdb_txn_abort(c->rtxn);
        br_rc_guard_remove(c);
        mdb_env_close(c->env);
    }
    br_rc_pend_clear(c);
    free(c->slots);
    free(c->dir);
    OPENSSL_cleanse(c->secret, sizeof(c->secret));
    free(c);
}

void br_range_cache_secret(const br_range_cache *c, uint8_t out[BR_RANGE_CACHE_SECRET_LEN])
{
    memcpy(out, c->secret, BR_RANGE_CACHE_SECRET_LEN);
}

/* ---- lookup ----------------------------------------------------------------- */

static int answer(br_range_kind kind, const uint8_t *v, size_t len, const uint8_t *full_hash, int64_t now,
                  int64_t max_stale, br_range_cache_result *res)
{
    entry_view ev;
    if (br_rc_entry_parse(v, len, &ev) < 0)
        return -EINVAL;
    res->fetched_at = ev.fetched_at;
    res->expires_at = ev.expires_at;
    memcpy(res->etag, ev.etag, ev.etag_len);
    res->etag[ev.etag_len] = '\0';
    memcpy(res->last_modified, ev.lm, ev.lm_len);
    res->last_modified[ev.lm_len] = '\0';
    res->n_decoys = (unsigned)ev.n_decoys;
    for (size_t i = 0; i < ev.n_decoys; i++) {
        const uint8_t *d = ev.decoys + 3 * i;
        res->decoys[i] = ((uint32_t)d[0] << 16 | (uint32_t)d[1] << 8 | d[2]) & 0xFFFFF;
    }

    res->state = br_rc_state_at(now, ev.expires_at, max_stale);

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

int br_range_cache_lookup(br_range_cache *c, uint32_t partition, br_range_kind kind, const uint8_t *full_hash,
                          int64_t now, int64_t max_stale, br_range_cache_result *res)
{
    if (!c || !full_hash || !res || !br_range_hash_len(kind))
        return -EINVAL;
    res->state = BR_RANGE_CACHE_MISS;
    if (br_rc_damaged(c))
        return -EIO;
    res->found = false;
    res->count = 0;
    res->category[0] = '\0';
    res->fetched_at = res->expires_at = 0;
    res->etag[0] = res->last_modified[0] = '\0';
    res->n_decoys = 0;

    rkey_t rkey = rkey_of(partition, kind, br_range_prefix20(full_hash));
    const uint8_t *val;
    size_t len;
    bool in_txn;
    int rc = br_rc_value_of(c, rkey, &val, &len, &in_txn);
    if (rc <= 0)
        return rc;
    rc = answer(kind, val, len, full_hash, now, max_stale, res);
    if (rc < 0)
        res->state = BR_RANGE_CACHE_MISS;
    if (in_txn)
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

static size_t validator_len(const char *s)
{
    if (!s)
        return 0;
    size_t n = strlen(s);
    return n > BR_RANGE_CACHE_VALIDATOR_MAX ? 0 : n;
}

/* The decoy list stored for rkey (pending or committed), copied to out (3
 * bytes each, *n of them); false when none is. */
static bool stored_decoys(br_range_cache *c, rkey_t rkey, uint8_t *out, size_t *n)
{
    const uint8_t *old;
    size_t old_len;
    bool in_txn = false, got = false;
    entry_view ev;
    *n = 0;
    if (br_rc_value_of(c, rkey, &old, &old_len, &in_txn) > 0 &&
        br_rc_entry_parse(old, old_len, &ev) == 0 && ev.decoys) {
        *n = ev.n_decoys;
        memcpy(out, ev.decoys, 3 * ev.n_decoys);
        got = true;
    }
    if (in_txn)
        rtxn_reset(c);
    return got;
}

int br_range_cache_put(br_range_cache *c, uint32_t partition, br_range_kind kind, uint32_t prefix20,
                       const uint8_t *value, size_t len, int64_t fetched_at, int64_t expires_at,
                       const char *etag, const char *last_modified)
{
    if (!c || !br_range_hash_len(kind) || prefix20 > 0xFFFFF || br_range_validate(kind, value, len, NULL) < 0)
        return -EINVAL;
    if (br_rc_damaged(c))
        return -EIO;
    size_t el = validator_len(etag), ll = validator_len(last_modified);
    uint8_t *v, kept[1 + 3 * BR_RANGE_CACHE_MAX_DECOYS];
    size_t vlen, n_kept = 0;
    bool has_kept = stored_decoys(c, rkey_of(partition, kind, prefix20), kept, &n_kept);
    int rc = br_rc_entry_build_decoys(value, len, fetched_at, expires_at, etag, el, last_modified,
                                      ll, has_kept ? kept : NULL, n_kept, &v, &vlen);
    if (rc < 0)
        return rc;
    rc = br_rc_pend_put(c, rkey_of(partition, kind, prefix20), v, vlen);
    if (rc < 0)
        return rc;
    return maybe_autoflush(c);
}

int br_range_cache_touch(br_range_cache *c, uint32_t partition, br_range_kind kind, uint32_t prefix20,
                         int64_t fetched_at, int64_t expires_at, const char *etag, const char *last_modified)
{
    if (!c || !br_range_hash_len(kind) || prefix20 > 0xFFFFF)
        return -EINVAL;
    if (br_rc_damaged(c))
        return -EIO;
    rkey_t rkey = rkey_of(partition, kind, prefix20);
    const uint8_t *old;
    size_t old_len;
    bool from_txn;
    int rc = br_rc_value_of(c, rkey, &old, &old_len, &from_txn);
    if (rc <= 0)
        return rc == 0 ? -ENOENT : rc;

    entry_view ev;
    rc = br_rc_entry_parse(old, old_len, &ev);
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
        rc = br_rc_entry_build_decoys(ev.rs, ev.rs_len, fetched_at, expires_at, et, el, lm, ll,
                                      ev.decoys, ev.n_decoys, &nv, &nlen);
    }
    if (from_txn)
        rtxn_reset(c);
    if (rc < 0)
        return rc;
    rc = br_rc_pend_put(c, rkey, nv, nlen);
    if (rc < 0)
        return rc;
    return maybe_autoflush(c);
}

int br_range_cache_set_decoys(br_range_cache *c, uint32_t partition, br_range_kind kind,
                              uint32_t prefix20, const uint32_t *decoys, unsigned n)
{
    if (!c || !br_range_hash_len(kind) || prefix20 > 0xFFFFF || n > BR_RANGE_CACHE_MAX_DECOYS ||
        (n && !decoys))
        return -EINVAL;
    if (br_rc_damaged(c))
        return -EIO;
    uint8_t list[3 * BR_RANGE_CACHE_MAX_DECOYS];
    for (unsigned i = 0; i < n; i++) {
        list[3 * i] = (uint8_t)(decoys[i] >> 16 & 0x0F);
        list[3 * i + 1] = (uint8_t)(decoys[i] >> 8);
        list[3 * i + 2] = (uint8_t)decoys[i];
    }
    rkey_t rkey = rkey_of(partition, kind, prefix20);
    const uint8_t *old;
    size_t old_len;
    bool from_txn;
    int rc = br_rc_value_of(c, rkey, &old, &old_len, &from_txn);
    if (rc <= 0)
        return rc == 0 ? -ENOENT : rc;
    entry_view ev;
    uint8_t *nv = NULL;
    size_t nlen = 0;
    rc = br_rc_entry_parse(old, old_len, &ev);
    if (rc == 0)
        rc = br_rc_entry_build_decoys(ev.rs, ev.rs_len, ev.fetched_at, ev.expires_at, ev.etag,
                                      ev.etag_len, ev.lm, ev.lm_len, list, n, &nv, &nlen);
    if (from_txn)
        rtxn_reset(c);
    if (rc < 0)
        return rc;
    rc = br_rc_pend_put(c, rkey, nv, nlen);
    return rc < 0 ? rc : maybe_autoflush(c);
}

size_t br_range_cache_pending(const br_range_cache *c)
{
    return c ? c->n_live : 0;
}

/* ---- walk --------------------------------------------------------------------- */

int br_range_cache_foreach(br_range_cache *c, br_range_cache_entry_cb cb, void *ctx)
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
            ret = cb(ctx, part, rkey_kind(rkey), prefix20, ev.fetched_at, ev.expires_at, ev.rs, ev.rs_len);
        if (ret)
            break;
    }
    if (rc == MDB_NOTFOUND)
        rc = 0;
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return ret ? ret : br_rc_errno(rc);
}
