/* SPDX-License-Identifier: MIT */
/* The range cache: range sets (range.h) stored in one LMDB environment, keyed
 * by kind and 5-hex prefix, with the HTTP validators needed to revalidate them.
 * LMDB is an implementation detail: no other file includes lmdb.h, and every
 * LMDB error comes out of this module as a negative errno.
 *
 * Environment: the directory `path` (created with mode 0700 if missing; its
 * parent must exist) holding data.mdb and lock.mdb (mode 0600).
 * Files and owners: the directory and both files (when they exist) must
 * belong to the effective uid, must not be group- or world-writable and must
 * not be symbolic links; br_range_cache_open() refuses them otherwise
 * (-EPERM, -ELOOP), naming the path and the fix. Named
 * databases:
 *   "ranges": key = 8 bytes [partition u32 big-endian][kind][prefix20 as
 *             3 bytes big-endian], value = cache entry (below);
 *   "age":    key = 16 bytes [fetched_at + 2^63 as u64 big-endian][ranges key],
 *             empty value: the eviction order, oldest first;
 *   "meta":   "format" -> u32 LE cache format version (2);
 *             "secret" -> 32 random bytes made when the cache is created
 *             (br_range_cache_secret).
 * A cache of another format version is emptied at open (it is only a cache).
 *
 * Partitions: every entry belongs to a partition, an opaque 32-bit number
 * chosen by the caller (the daemon uses the peer's uid, see breachd.conf(5)
 * [cache] partition). Lookups, puts and touches name the partition and never
 * see another partition's entry. The size bound is global; with a
 * partition share (br_range_cache_set_partition_share) each partition's
 * entries take at most that share of max_size, and a flush that would put
 * a partition past it deletes that partition's own oldest entries first
 * (range_cache_evict.c), so that one partition's writes do not evict
 * another's while the partitions together fit (the global eviction below
 * still runs when they do not).
 *
 * Cache entry layout, version 1 (little-endian, no alignment assumed):
 *   off     size  field
 *   0       4     magic 'B' 'R' 'C' 0x01
 *   4       1     E, ETag length (0 = none)
 *   5       1     L, Last-Modified length (0 = none)
 *   6       2     flags: bit 0, a decoy list follows Last-Modified; the
 *                 other bits 0
 *   8       8     fetched_at, i64 seconds since the epoch
 *   16      8     expires_at, i64 seconds since the epoch
 *   24      E     ETag bytes (as received, quotes included)
 *   24+E    L     Last-Modified bytes
 *   with flag 0:  1 byte N (<= BR_RANGE_CACHE_MAX_DECOYS), then N decoy
 *                 prefixes of 3 bytes (20 bits, big-endian): the decoys
 *                 the range was last fetched with (br_range_cache_set_decoys)
 *   then    ...   the range set, to the end of the value
 * Lookups binary-search the range set in place in the mapped page: the value
 * is never copied.
 *
 * Write batching: puts and touches go into an in-memory pending table (one
 * slot per key, the latest wins) that lookups consult first, so a put is
 * visible at once in this process; br_range_cache_flush() commits the whole
 * table in ONE write transaction. The daemon flushes once per event-loop turn.
 * When the table reaches BR_RANGE_CACHE_PENDING_MAX entries or an eighth of
 * max_size bytes, the put flushes by itself. Pending writes are lost if the
 * process dies before a flush (harmless: they are refetched).
 *
 * Readers: lookups run in one read-only transaction kept by the handle and
 * recycled with mdb_txn_reset/renew (no snapshot is held between lookups);
 * LMDB readers never wait for a writer.
 *
 * Durability: MDB_NOMETASYNC, i.e. one fdatasync per commit (the data pages),
 * the meta page reaching disk with the next commit. LMDB documents that this
 * keeps atomicity and consistency through a system crash (the last commit may
 * be undone) where MDB_NOSYNC / MDB_MAPASYNC could corrupt the file. Killing
 * the process at any moment is always safe: a commit is atomic, pending
 * writes are simply lost. Reader slots of dead processes are cleared at open
 * (mdb_reader_check) and the robust write mutex of a dead writer is recovered
 * by LMDB.
 *
 * Size bound and eviction: the LMDB map size is max_size (rounded up to the
 * page size; never below what the file already holds), so the file never
 * grows past it. LMDB is copy-on-write and reuses the pages freed by commit T
 * only from commit T + 2 on, and an eviction needs free pages to run in, so
 * waiting for MDB_MAP_FULL is not enough. Before each flush the free room
 * (unused map + reusable free-list pages) is compared with a generous
 * estimate of what the batch will dirty plus a reserve of max(32 pages,
 * max_size / 16); when short, the oldest entries by fetched_at (the "age"
 * database: eviction reads only what it deletes) are deleted, at least a
 * tenth of the entries per round so that eviction does not run at every
 * flush, in commits small enough for the reserve, followed by one tiny
 * commit that makes the freed pages reusable. If a commit still hits
 * MDB_MAP_FULL (the estimate was wrong) another round is evicted and the
 * batch retried, so a full cache never fails a put. If even a one-entry
 * eviction finds no free page, the map grows for that one commit by a
 * headroom of max(64 KiB, max_size / 32) and shrinks back: the only case
 * where the file can pass max_size, by at most that headroom. An entry
 * larger than half the map is dropped (-EFBIG from the flush; the other
 * entries are kept). The file never shrinks: lowering max_size below the
 * current file size takes effect once the directory is removed.
 *
 * TTL policy is the caller's: expires_at is stored as given; max_stale is a
 * lookup and purge parameter.
 *
 * Truncation while mapped: LMDB reads data.mdb and lock.mdb through shared
 * mappings; a read past the end of a file truncated or rewritten in place
 * under the running process (a copy over the live file, say) raises SIGBUS.
 * As for filter files (filter_file.h), the program's SIGBUS handler
 * (SA_SIGINFO) calls br_map_guard_fault(si_addr) (map_guard.h, the guard
 * table that filter files and the cache share): when the address lies in
 * a mapping of an open cache, that mapping becomes zero pages, the cache is
 * marked damaged and the call returns true (the read resumes on zeros, which
 * LMDB and the entry checks see as corrupt); otherwise it returns false and
 * the handler lets the default action happen. From then on every call of
 * the damaged cache fails with -EIO without reaching LMDB (pending writes
 * are dropped); only br_range_cache_free() is left to do. An open that
 * faults so is refused (-EBADMSG, naming the fix: remove data.mdb and
 * lock.mdb). The mappings are found in /proc/self/maps (by the files' device
 * and inode); one that is not found is not guarded.
 *
 * A handle is used by one thread at a time and must not cross a fork(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "range.h"
#include "core/util.h"

#define BR_RANGE_CACHE_VALIDATOR_MAX 255 /* longer ETag / Last-Modified values are not stored */
#define BR_RANGE_CACHE_PENDING_MAX 1024
#define BR_RANGE_CACHE_MIN_SIZE ((uint64_t)256 << 10)
#define BR_RANGE_CACHE_SECRET_LEN 32
#define BR_RANGE_CACHE_MAX_DECOYS 16

typedef struct br_range_cache br_range_cache;

typedef enum br_range_cache_state {
    BR_RANGE_CACHE_MISS = 0, /* nothing stored for this prefix */
    BR_RANGE_CACHE_FRESH,    /* now < expires_at: the answer is good */
    BR_RANGE_CACHE_STALE,    /* expires_at <= now <= expires_at + max_stale: answer filled, caller
                                decides */
    BR_RANGE_CACHE_EXPIRED,  /* older than that: no answer, only the validators for a conditional
                                fetch */
} br_range_cache_state;

typedef struct br_range_cache_result {
    br_range_cache_state state;
    bool found;                                  /* FRESH/STALE: the hash is in the range set */
    uint32_t count;                              /* passwords, when found */
    char category[BR_RANGE_CATEGORY_MAX + 1];    /* URLs, when found */
    int64_t fetched_at, expires_at;              /* not MISS */
    char etag[BR_RANGE_CACHE_VALIDATOR_MAX + 1]; /* "" when none */
    char last_modified[BR_RANGE_CACHE_VALIDATOR_MAX + 1]; /* "" when none */
    uint32_t decoys[BR_RANGE_CACHE_MAX_DECOYS];           /* not MISS: the stored decoy list */
    unsigned n_decoys;                                    /* 0 when none is stored */
} br_range_cache_result;

typedef struct br_range_cache_usage {
    uint64_t entries;    /* committed prefixes */
    uint64_t pending;    /* puts waiting for a flush */
    uint64_t used_bytes; /* pages in use (file pages minus free pages) */
    uint64_t file_bytes; /* high-water mark of the data file */
    uint64_t max_bytes;  /* current map size */
    uint64_t evicted;    /* entries evicted through this handle */
    uint64_t commits;    /* write transactions committed through this handle */
} br_range_cache_usage;

/* Open (creating if needed) the cache in directory path with a size bound of
 * max_size bytes (at least BR_RANGE_CACHE_MIN_SIZE). 0 or a negative errno
 * (-EINVAL, -ENOTDIR, -EACCES, -ENOMEM, -EBADMSG for a corrupt or foreign
 * file, -EPROTO for an LMDB version mismatch, -EPERM for a file of another
 * owner or writable by others, -ELOOP for a symbolic link, ...) with a
 * reason in err. */
int br_range_cache_open(const char *path, uint64_t max_size, br_range_cache **out, br_error *err);
/* Flush what is pending (errors ignored), then close. NULL is fine. */
void br_range_cache_free(br_range_cache *c);
/* The most of max_size one partition's entries (their stored bytes) may
 * take, in percent: 1 .. 100 (100, the default: no bound but max_size).
 * 0, or -EINVAL. */
int br_range_cache_set_partition_share(br_range_cache *c, unsigned pct);
BR_DEFINE_FREEP(br_range_cache, br_range_cache_free)

/* Look full_hash (br_range_hash_len(kind) bytes) up in a partition: its
 * prefix selects the entry. Fills *res (state MISS when nothing is stored). 0, or -EINVAL when
 * the stored entry is corrupt (treat as a miss: the next put replaces it), or
 * another negative errno from LMDB. */
int br_range_cache_lookup(br_range_cache *c, uint32_t partition, br_range_kind kind,
                          const uint8_t *full_hash, int64_t now, int64_t max_stale,
                          br_range_cache_result *res);

/* A whole stored range, as br_range_cache_lookup_range() hands it over. */
typedef struct br_range_cache_range {
    br_range_cache_state state; /* MISS: nothing else is set */
    const uint8_t *value;       /* FRESH / STALE: the range set; NULL otherwise */
    size_t len;
    int64_t fetched_at, expires_at;   /* not MISS */
    const char *etag, *last_modified; /* not MISS: NUL-terminated, "" when none */
} br_range_cache_range;

typedef int (*br_range_cache_range_cb)(void *ctx, const br_range_cache_range *rg);

/* The whole range (partition, kind, prefix20), for serving it rather than
 * looking one hash up: cb is called once with what is stored (a MISS too),
 * inside the read transaction, without copying the range set: rg and what it
 * points to are valid during the call only, and cb must not call this cache.
 * The range set's header and sizes are checked (br_range_lookup's O(1)
 * check), not its order. Returns cb's return value; or -EINVAL (bad
 * arguments, or a stored entry that is corrupt: cb is not called, treat it as
 * a miss) or another negative errno from LMDB (cb is not called). */
int br_range_cache_lookup_range(br_range_cache *c, uint32_t partition, br_range_kind kind,
                                uint32_t prefix20, int64_t now, int64_t max_stale,
                                br_range_cache_range_cb cb, void *ctx);

/* Store a range set (from br_range_parse, checked with br_range_validate; it
 * is copied) for (partition, kind, prefix20). etag / last_modified may be NULL or "";
 * values longer than BR_RANGE_CACHE_VALIDATOR_MAX are not stored. Visible to
 * lookups at once, durable after the next flush. 0, -EINVAL (bad value or
 * arguments), -ENOMEM, or an error of the automatic flush. */
int br_range_cache_put(br_range_cache *c, uint32_t partition, br_range_kind kind, uint32_t prefix20,
                       const uint8_t *value, size_t len, int64_t fetched_at, int64_t expires_at,
                       const char *etag, const char *last_modified);

/* After a 304 Not Modified: the stored entry was validated at fetched_at and
 * stays good until expires_at. etag / last_modified replace the stored ones
 * when not NULL ("" clears). Re-stamping fetched_at also makes the entry young
 * for eviction. 0, -ENOENT when nothing is stored, or an error as for put. */
int br_range_cache_touch(br_range_cache *c, uint32_t partition, br_range_kind kind,
                         uint32_t prefix20, int64_t fetched_at, int64_t expires_at,
                         const char *etag, const char *last_modified);

/* The decoys (prefixes, n <= BR_RANGE_CACHE_MAX_DECOYS) the stored range
 * of (partition, kind, prefix20) was fetched with, kept with it so that its
 * next burst can send the same ones (docs/upstream.md "Decoys"). A put or a
 * touch keeps the stored list. 0, -ENOENT when nothing is stored, or an
 * error as for put. */
int br_range_cache_set_decoys(br_range_cache *c, uint32_t partition, br_range_kind kind,
                              uint32_t prefix20, const uint32_t *decoys, unsigned n);

/* Commit every pending put in one write transaction (no-op when none);
 * evicting first, when room is short, takes a few more small commits.
 * 0, -EFBIG if an entry that can never fit (over half the map) was dropped
 * (the others are committed), or another negative errno (the pending writes
 * are then dropped). */
int br_range_cache_flush(br_range_cache *c);

/* The number of puts and touches waiting for a flush: a flush that returns 0
 * with some pending has committed them. */
size_t br_range_cache_pending(const br_range_cache *c);

/* Purge: delete every committed entry whose expires_at lies more than
 * max_stale (< 0 counts as 0) before now, i.e. every entry a lookup would
 * find EXPIRED, with its validators. The daemon calls it periodically, so
 * that nothing older than ttl + max_stale stays on disk (docs/privacy.md);
 * eviction for size is separate (see above). Oldest first, through the
 * "age" database: the walk stops at the first entry fetched within
 * max_stale, so a purge with nothing to delete reads one key. Deletes in
 * commits of a few hundred entries (the pages they free hold the old bytes
 * until LMDB reuses them). Pending writes are not touched. *purged (may be
 * NULL) counts the entries deleted. 0 or a negative errno from LMDB. */
int br_range_cache_purge(br_range_cache *c, int64_t now, int64_t max_stale, uint64_t *purged);

/* Sizes and counters for STATS. entries and the byte counts are about
 * committed data only. 0 or a negative errno. */
int br_range_cache_stats(br_range_cache *c, br_range_cache_usage *st);

/* True once a fault was handled in one of the cache's mappings. Any thread. */
bool br_range_cache_damaged(const br_range_cache *c);

/* The cache's secret: BR_RANGE_CACHE_SECRET_LEN random bytes stored in the
 * cache ("meta"), made when the cache is created and kept as long as its
 * entries. The resolver keys its choice of decoy prefixes with it, so that
 * the decoys that went out with a range are the ones cached with it, in this
 * process and the next. Never logged. */
void br_range_cache_secret(const br_range_cache *c, uint8_t out[BR_RANGE_CACHE_SECRET_LEN]);
