/* SPDX-License-Identifier: MIT */
/* The range cache's storage, over LMDB (design and layouts in
 * range_cache.h): the entries' encoding and the table of entries pending a
 * flush; the files' owners and modes, checked before LMDB opens them; the
 * mappings guarded against truncation in place; errors and transactions;
 * open and close, lookup, put and touch; a whole stored range for serving
 * it. Committing the pending table, eviction, the partition share, purge
 * and the space figures are range_cache_evict.c; the two share
 * range_cache_int.h. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#include "range_cache_int.h"
#include "core/br_assert.h"
#include "core/map_guard.h"
#include "core/random.h"
#include "core/util.h"

/* FRESH, STALE or EXPIRED at now for an entry expiring at expires_at. */
static br_range_cache_state state_at(int64_t now, int64_t expires_at, int64_t max_stale)
{
    int64_t past;
    if (now < expires_at)
        return BR_RANGE_CACHE_FRESH;
    if (!__builtin_sub_overflow(now, expires_at, &past) && past <= BR_MAX(max_stale, 0))
        return BR_RANGE_CACHE_STALE;
    return BR_RANGE_CACHE_EXPIRED;
}

#define ENTRY_MAGIC_0 'B'
#define ENTRY_MAGIC_1 'R'
#define ENTRY_MAGIC_2 'C'
#define ENTRY_VERSION 1
#define ENTRY_HEADER 24
#define ENTRY_DECOYS 0x0001 /* flags: a decoy list follows Last-Modified */

/* ---- entries ------------------------------------------------------------- */

int br_rc_entry_parse(const uint8_t *v, size_t len, entry_view *ev)
{
    if (!v || len < ENTRY_HEADER || v[0] != ENTRY_MAGIC_0 || v[1] != ENTRY_MAGIC_1 ||
        v[2] != ENTRY_MAGIC_2 || v[3] != ENTRY_VERSION)
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
        return br_trace(-ENOMEM);
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
            return br_trace(-ENOMEM);
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

/* ---- files and owners ----------------------------------------------------- */

/* The range cache's files on disk (range_cache.h, "Files and owners"): the
 * directory and LMDB's data.mdb and lock.mdb must belong to the process's
 * effective uid, must not be group- or world-writable, and must not be
 * symbolic links, so that no other user can read, plant or redirect what the
 * cache holds (docs/privacy.md). Checked before LMDB opens them, in the
 * manner of sshd's StrictModes; every refusal names the path and the fix. */

static int check_one(const char *path, bool dir, br_error *err)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        int e = errno;
        if (e == ENOENT && !dir)
            return 0; /* LMDB creates it, mode 0600 */
        return br_error_set(err, -e, "range cache: %s: %s", path, strerror(e));
    }
    if (S_ISLNK(st.st_mode))
        return br_error_set(
            err, -ELOOP,
            "range cache: %s is a symbolic link; the cache is never opened through one "
            "(set [cache] path to the real directory, or remove the link)",
            path);
    if (dir && !S_ISDIR(st.st_mode))
        return br_error_set(err, -ENOTDIR, "range cache: %s is not a directory", path);
    if (!dir && !S_ISREG(st.st_mode))
        return br_error_set(err, -EINVAL, "range cache: %s is not a regular file; remove it", path);
    uid_t me = geteuid();
    if (st.st_uid != me)
        return br_error_set(err, -EPERM,
                            "range cache: %s belongs to uid %u, not to this process's uid %u; "
                            "fix: chown %u %s (or remove it)",
                            path, (unsigned)st.st_uid, (unsigned)me, (unsigned)me, path);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return br_error_set(
            err, -EPERM,
            "range cache: %s is group- or world-writable (mode %04o); fix: chmod go-w %s", path,
            (unsigned)(st.st_mode & 07777), path);
    return 0;
}

/* The directory, data.mdb and lock.mdb: ours, not group- or world-writable,
 * not symbolic links. 0 or a negative errno with the
 * path and the fix in err. */
static int check_files(const char *path, br_error *err)
{
    int rc = check_one(path, true, err);
    if (rc < 0)
        return rc;
    static const char *const names[] = {"data.mdb", "lock.mdb"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char file[4096];
        int n = snprintf(file, sizeof(file), "%s/%s", path, names[i]);
        if (n < 0 || (size_t)n >= sizeof(file))
            return br_error_set(err, -ENAMETOOLONG, "range cache: %s: path too long", path);
        rc = check_one(file, false, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ---- mappings guarded against truncation ----------------------------------- */

/* The range cache's mappings guarded against truncation in place
 * (range_cache.h, "Truncation while mapped"): LMDB reads data.mdb and
 * lock.mdb through shared mappings, and a page past the end of a file that
 * was truncated under it (`cp backup/data.mdb` over the live file, a stray
 * `truncate`) raises SIGBUS. The program's SIGBUS handler calls
 * br_map_guard_fault(), which swaps the mapping for zero pages and marks
 * the cache damaged: the faulting read resumes on zeros (LMDB and the entry
 * checks see a corrupt page and fail), and every later call of the cache
 * fails with -EIO without reaching LMDB. The same guard table as the filter
 * files (map_guard.h). */

/* The shared mapping from offset 0 of the file (dev, ino), as
 * /proc/self/maps lists it; failing that (an overlay file system may list
 * the backing file's device), of the file whose path is path (NULL: none).
 * 0 or -ENOENT. */
static int find_map(dev_t dev, ino_t ino, const char *path, uintptr_t *start, size_t *len)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return -errno;
    char line[4096 + 256];
    int rc = -ENOENT;
    bool line_start = true, by_path = false;
    while (fgets(line, sizeof(line), f)) {
        bool was_start = line_start;
        line_start = strchr(line, '\n') != NULL; /* a longer line is read in pieces */
        unsigned long lo, hi, off, inode;
        unsigned maj, min;
        char perms[8];
        int end = 0;
        if (!was_start || sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &lo, &hi, perms, &off, &maj,
                                 &min, &inode, &end) != 7)
            continue;
        if (off != 0 || perms[3] != 's' || hi <= lo)
            continue;
        line[strcspn(line, "\n")] = '\0';
        bool same_file = inode == (unsigned long)ino && makedev(maj, min) == dev;
        if (same_file || (path && !by_path && strcmp(line + end, path) == 0)) {
            *start = (uintptr_t)lo;
            *len = (size_t)(hi - lo);
            rc = 0;
            by_path = !same_file;
            if (same_file)
                break;
        }
    }
    fclose(f);
    return rc;
}

/* (Re)register the data file's mapping, and the lock file's with with_lock
 * (at open: it never moves). Unguarded when not found. */
static void guard_update(br_range_cache *c, bool with_lock)
{
    static const char *const names[2] = {"data.mdb", "lock.mdb"};
    int fd;
    struct stat st;
    for (int i = 0; i < (with_lock ? 2 : 1); i++) {
        char path[4096];
        bool have_path =
            c->dir && snprintf(path, sizeof(path), "%s/%s", c->dir, names[i]) < (int)sizeof(path);
        bool have_st = i == 0 ? mdb_env_get_fd(c->env, &fd) == 0 && fstat(fd, &st) == 0
                              : have_path && stat(path, &st) == 0;
        uintptr_t start = 0;
        size_t len = 0;
        int *slot = i == 0 ? &c->guard_data : &c->guard_lock;
        if (have_st && find_map(st.st_dev, st.st_ino, have_path ? path : NULL, &start, &len) == 0) {
            /* writable zero pages: LMDB writes its lock file's mapping */
            *slot = br_map_guard_set(*slot, &c->damaged, start, len, PROT_READ | PROT_WRITE);
        } else {
            br_map_guard_clear(*slot);
            *slot = -1;
        }
    }
}

static void guard_remove(br_range_cache *c)
{
    br_map_guard_clear(c->guard_data);
    br_map_guard_clear(c->guard_lock);
    c->guard_data = c->guard_lock = -1;
}

bool br_range_cache_damaged(const br_range_cache *c)
{
    return c && atomic_load(&((br_range_cache *)c)->damaged) != 0;
}

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
        return br_trace(-ENOMEM);
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
    guard_update(c, false);
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

/* rkey's value as the cache has it: the pending batch's, else the stored
 * one, read in c->rtxn (renewed; *in_txn: the caller resets it once done
 * with *val). 1 with *val and *len, 0 when there is none, or a negative
 * errno. */
static int value_of(br_range_cache *c, rkey_t rkey, const uint8_t **val, size_t *len, bool *in_txn)
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
    if (br_random_bytes(c->secret, BR_RANGE_CACHE_SECRET_LEN) < 0)
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
                            (unsigned long long)max_size,
                            (unsigned long long)BR_RANGE_CACHE_MIN_SIZE);
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
        return br_error_set(err, -errno, "range cache: creating %s: %s", path, strerror(errno));
    int frc = check_files(path, err);
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
    if ((rc = mdb_env_set_maxdbs(c->env, 4)) ||
        (rc = mdb_env_set_mapsize(c->env, (size_t)max_size)))
        return mdb_fail(err, rc, "configuring");
    rc = mdb_env_open(c->env, path, MDB_NOTLS | MDB_NOMETASYNC, 0600);
    if (rc == EACCES || rc == EROFS)
        return br_error_set(
            err, -rc,
            "range cache: opening %s: %s; fix: the directory, data.mdb and lock.mdb must "
            "be readable and writable by this process's user, on a file system mounted "
            "read-write",
            path, mdb_strerror(rc));
    if (rc)
        return br_error_set(err, br_rc_errno(rc), "range cache: opening %s: %s", path,
                            mdb_strerror(rc));
    c->dir = realpath(path, NULL);
    guard_update(c, true);
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
        return br_error_set(
            err, -EBADMSG,
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
        guard_remove(c);
        mdb_env_close(c->env);
    }
    br_rc_pend_clear(c);
    free(c->slots);
    free(c->dir);
    br_wipe(c->secret, sizeof(c->secret));
    free(c);
}

void br_range_cache_secret(const br_range_cache *c, uint8_t out[BR_RANGE_CACHE_SECRET_LEN])
{
    memcpy(out, c->secret, BR_RANGE_CACHE_SECRET_LEN);
}

/* ---- lookup ----------------------------------------------------------------- */

static int answer(br_range_kind kind, const uint8_t *v, size_t len, const uint8_t *full_hash,
                  int64_t now, int64_t max_stale, br_range_cache_result *res)
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

    res->state = state_at(now, ev.expires_at, max_stale);

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

int br_range_cache_lookup(br_range_cache *c, uint32_t partition, br_range_kind kind,
                          const uint8_t *full_hash, int64_t now, int64_t max_stale,
                          br_range_cache_result *res)
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
    int rc = value_of(c, rkey, &val, &len, &in_txn);
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
    if (value_of(c, rkey, &old, &old_len, &in_txn) > 0 &&
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
    if (!c || !br_range_hash_len(kind) || prefix20 > 0xFFFFF ||
        br_range_validate(kind, value, len, NULL) < 0)
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

int br_range_cache_touch(br_range_cache *c, uint32_t partition, br_range_kind kind,
                         uint32_t prefix20, int64_t fetched_at, int64_t expires_at,
                         const char *etag, const char *last_modified)
{
    if (!c || !br_range_hash_len(kind) || prefix20 > 0xFFFFF)
        return -EINVAL;
    if (br_rc_damaged(c))
        return -EIO;
    rkey_t rkey = rkey_of(partition, kind, prefix20);
    const uint8_t *old;
    size_t old_len;
    bool from_txn;
    int rc = value_of(c, rkey, &old, &old_len, &from_txn);
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
    int rc = value_of(c, rkey, &old, &old_len, &from_txn);
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

/* ---- a whole stored range for serving it (br_range_cache_lookup_range) ---- */

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
        .state = state_at(now, ev.expires_at, max_stale),
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
    int rc = value_of(c, rkey, &val, &len, &in_txn);
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
