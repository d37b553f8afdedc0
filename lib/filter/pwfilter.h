/* SPDX-License-Identifier: MIT */
/* The password filter: binary fuse filters sharded by the leading bits of
 * the hash, in one filter file (kind password-sha1, algorithm binary-fuse).
 *
 * Sharding bounds a build's memory by the shard size (the HIBP corpus has
 * about 2 billion hashes), lets shards build in parallel, and keeps the
 * whole-filter false-positive rate that of one shard: every key is looked
 * up in exactly one shard. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "bfuse.h"
#include "core/error.h"
#include "filter_file.h"
#include "core/hash.h"
#include "offline_codes.h"

/* Arity when the caller gives none: 4-wise. Above ~600k keys a shard then
 * costs 1.075 slots per key (17.2 bits at 16-bit fingerprints) against
 * 3-wise's 1.125 (18.0); docs/filter-format.md, "Size per key". */
#define BR_PWFILTER_ARITY_DEFAULT 4

/* Shards hold at most this many keys on average (the last bit of sizing). */
#define BR_PWFILTER_SHARD_TARGET (UINT64_C(1) << 22)

/* Default memory budget of a build: each thread holds one shard (its keys
 * and the construction's working arrays), so threads are capped by it. */
#define BR_PWFILTER_MEM_BUDGET (UINT64_C(384) << 20)
/* Bytes a thread holds per key of its shard (measured: key copy 8, build
 * arrays ~22, fingerprints ~2.3, rounded up). */
#define BR_PWFILTER_BYTES_PER_KEY 34
/* An offline build: the (key, count) pair 16, codes and their slot XORs 2,
 * build arrays ~22, 32-bit slots ~4.3, rounded up. */
#define BR_PWFILTER_BYTES_PER_KEY_OFFLINE 46

typedef void (*br_shard_progress_cb)(void *ctx, uint32_t shards_done, uint32_t shards_total);

typedef struct br_pwfilter_build_opts {
    uint32_t kind;    /* BR_KIND_PASSWORD_SHA1 (the default when 0) */
    unsigned arity;   /* 3 or 4; 0: BR_PWFILTER_ARITY_DEFAULT */
    unsigned fp_bits; /* 8, 16 (default when 0) or 32 */
    unsigned threads; /* 0: every online CPU */
    uint64_t generation;
    const char *source;
    int64_t build_time; /* < 0: now (SOURCE_DATE_EPOCH when set) */
    br_shard_progress_cb progress;
    void *progress_ctx;
    uint64_t shard_target; /* 0: BR_PWFILTER_SHARD_TARGET; tests set it low to get many shards */
    uint64_t mem_budget; /* bytes the build threads may hold together; 0: BR_PWFILTER_MEM_BUDGET */
    /* A delta (filter_delta.h): the body SHA-256 of the filter it extends;
     * the caller leaves out of ks the keys that filter answers maybe for.
     * NULL: a full filter. */
    const uint8_t *base_body_sha256;
    /* An offline filter (algorithm binary-fuse-offline, docs/filter-format.md):
     * ks is counted (builder/keyset.h) and each key gets a code. Passwords: counts
     * set, the pairs hold counts. URLs (kind url-sha256): categories set,
     * the pairs hold category codes (1..255). fp_bits is then 32. */
    const br_count_codes *counts;
    const br_category_table *categories;
    uint64_t min_count;         /* informative: what --min-count kept */
    unsigned max_domain_labels; /* URLs: as in blocked-bloom's params */
    /* URLs: the exact table (docs/filter-format.md, "The exact table"):
     * full SHA-256 keys, each list sorted ascending and distinct. allow:
     * the allow-list's expressions (never put in ks: a fingerprint cannot
     * say allow); removed: a delta's removals from the set before it. */
    const uint8_t (*allow)[32];
    size_t n_allow;
    const uint8_t (*removed)[32];
    size_t n_removed;
    /* URLs: write no check filters (docs/filter-format.md, "The check
     * filter"), the layout of key encodings v2 and v3 that every earlier
     * reader reads; its false blocks are 2^16 times as frequent. */
    bool no_check;
    /* URLs with check filters: the quick filter's keys (docs/filter-format.md,
     * "The quick filter"), br_xxh3_64 of expressions (repeats allowed). Key
     * encoding v5: of every expression the file holds, its fingerprints'
     * and its allow entries'. NULL: no quick filter (v4). */
    const uint64_t *quick;
    size_t n_quick;
    /* Key encoding v6 (with check filters): ks's keys are the expressions'
     * XXH3-64 (not their SHA-256's first 8 bytes), and quick holds the
     * XXH3 of the allow entries only (a removal needs none: it is checked
     * only for what an earlier member lists). */
    bool xxh3_keys;
} br_pwfilter_build_opts;

typedef struct br_pwfilter_build_stats {
    uint64_t keys; /* distinct keys in the filter */
    uint32_t shards;
    uint64_t file_bytes;
    uint64_t fingerprint_bytes;       /* the shards' arrays and their check filters' */
    uint64_t quick_keys, quick_bytes; /* the quick filter's distinct keys and array */
} br_pwfilter_build_stats;

/* Shard bits for about n keys: the fewest that keep shards at or under target. */
unsigned br_pwfilter_shard_bits(uint64_t n, uint64_t target);

typedef struct br_pwfilter br_pwfilter;

/* An offline member's code table (NULL members: not offline). */
typedef struct br_pwo {
    uint8_t code_kind; /* BR_CODES_COUNTS or BR_CODES_CATEGORIES */
    unsigned max_domain_labels;
    uint64_t min_count;
    uint32_t ratio_ppm;
    uint64_t codes_end; /* file offset where the code table ends */
    /* url-sha256: the exact table (in the mapping), sorted SHA-256 keys */
    const uint8_t *allow, *removed;
    uint32_t n_allow, n_removed;
    unsigned check_bits; /* url-sha256 key encoding v4: its check filters' (16); else 0 */
    uint32_t quick_keys; /* url-sha256 key encoding v5, v6: its quick filter's keys; else 0 */
    bool xxh3_keys;      /* url-sha256 key encoding v6: fingerprints keyed by XXH3-64 */
    uint8_t allow_code;  /* url-sha256: the code BR_URL_ALLOW_CATEGORY has in cats, else 0 */
    br_count_codes counts;
    br_category_table cats;
} br_pwo;

/* Open and fully verify a filter file of algorithm binary-fuse: the container
 * checks, then every parameter and shard-table entry. A layered file
 * (filter_delta.h) opens as the set of its layers. */
int br_pwfilter_open(const char *path, br_pwfilter **out, br_error *err);
/* The same checks on an already opened container (takes ownership of file). */
int br_pwfilter_from_file(br_filter_file *file, br_pwfilter **out, br_error *err);
void br_pwfilter_free(br_pwfilter *pf);
BR_DEFINE_FREEP(br_pwfilter, br_pwfilter_free)

/* The header of the filter, or of the set it heads (br_pwfilter_attach):
 * the first file's, with the newest generation and build time of the set and
 * the sum of its key counts. */
const br_filter_header *br_pwfilter_header(const br_pwfilter *pf);
/* The header of the first file itself (what a delta of it names). */
const br_filter_header *br_pwfilter_file_header(const br_pwfilter *pf);

/* ---- sets: a base and its deltas (filter_delta.h) ----
 * Add delta to the set headed by pf, taking it over (also on failure): it
 * must be a delta of pf's kind naming pf's body or an earlier delta's
 * (br_filter_delta_check says why not). From then on a key is maybe when
 * any member says so, and the set is damaged when any file is. */
int br_pwfilter_attach(br_pwfilter *pf, br_pwfilter *delta, br_error *err);
/* Open paths[0..n) as one set: a full filter, then deltas each naming a
 * file before it, attached in order. last_body (may be NULL): the body
 * SHA-256 of paths[n-1], what a new delta of the set names. Errors name
 * the file. */
int br_pwfilter_open_set(const char *const *paths, size_t n, br_pwfilter **out,
                         uint8_t last_body[32], br_error *err);
/* Files in the set (a layered file counts its layers). */
size_t br_pwfilter_members(const br_pwfilter *pf);
unsigned br_pwfilter_arity(const br_pwfilter *pf);
unsigned br_pwfilter_fp_bits(const br_pwfilter *pf);
uint32_t br_pwfilter_shard_count(const br_pwfilter *pf);
/* The first file's size (a layered file's whole size). */
uint64_t br_pwfilter_file_size(const br_pwfilter *pf);
/* Bytes of all the shards' fingerprint arrays, and of their check filters,
 * over the set (what bits/key is made of). */
uint64_t br_pwfilter_fingerprint_bytes(const br_pwfilter *pf);

/* false: definitely not in the set; true: maybe (resolve exactly elsewhere).
 * A filter whose file was truncated under it (filter_file.h) answers maybe
 * to every key, here and in the batch. */
bool br_pwfilter_contains_key(const br_pwfilter *pf, uint64_t key);
/* The same for a hash of the filter's kind (a SHA-1, or an NT hash for
 * password-ntlm): its first 8 bytes are the key (hash-prefix64). */
static inline bool br_pwfilter_maybe(const br_pwfilter *pf, const uint8_t *hash)
{
    return br_pwfilter_contains_key(pf, br_hash_key64(hash));
}
/* Throughput mode: out[i] for keys[i], with memory accesses issued ahead. */
void br_pwfilter_contains_batch(const br_pwfilter *pf, const uint64_t *keys, size_t n, bool *out);
/* ---- offline filters (algorithm binary-fuse-offline) ----
 * Every member of an offline set is offline (br_pwfilter_attach refuses a
 * mix). A hit is answered from the file itself: nothing needs to leave the
 * host. */
bool br_pwfilter_offline(const br_pwfilter *pf);
/* Look a hash of the set's kind (a SHA-1, an NT hash) up in an offline
 * set: 1 and *count (exact up to 100, never above the true count, less
 * than 10% below it beyond), 0 when not in the set (false positives: at
 * most 2^-24 per clean query and member). -ENOTSUP for a set that is not
 * offline, -EIO for a damaged one (filter_file.h): never a wrong "no".
 * Any thread; the set's mapping is read only. */
int br_pwfilter_lookup_count(const br_pwfilter *pf, const uint8_t *hash, uint64_t *count);
/* Throughput mode for many keys (hash-prefix64 keys, br_hash_key64): counts[i]
 * the count of keys[i], 0 when not in the set; slots are prefetched ahead,
 * so that the cache misses of many lookups overlap. 0, -ENOTSUP or -EIO
 * (damaged: no count may be trusted) as above. */
int br_pwfilter_count_batch(const br_pwfilter *pf, const uint64_t *keys, size_t n,
                            uint64_t *counts);
/* ---- looking an expression up in a url-sha256 offline set ----
 * An expression as the set's members key it (docs/filter-format.md, "Key
 * encodings"): key encodings v1..v5 by its SHA-256, v6 by its XXH3-64,
 * their exact tables (allow entries, removals) by the SHA-256 always. A
 * lookup computes the SHA-256 only when a member needs it, and keeps it
 * in the probe for the next member or lookup. */
typedef struct br_url_probe {
    const char *expr; /* the expression's exact bytes; NULL: only the hashes below */
    size_t len;
    uint64_t xxh3; /* br_xxh3_64(expr, len), when has_xxh3 */
    bool has_xxh3; /* false: a key encoding v6 member cannot be asked (-ENOTSUP) */
    bool hashed;   /* sha256 holds the expression's SHA-256 */
    uint8_t sha256[BR_SHA256_LEN];
} br_url_probe;
/* A probe of expr[0..len): its XXH3, the SHA-256 not yet computed. */
void br_url_probe_init(br_url_probe *p, const char *expr, size_t len);
/* A probe of an expression known only by its hashes (a feed entry): sha256
 * (never NULL), xxh3 when has_xxh3. */
void br_url_probe_hashed(br_url_probe *p, const uint8_t sha256[BR_SHA256_LEN], uint64_t xxh3,
                         bool has_xxh3);
/* The expression in a url-sha256 offline set: 1 and *category (a name in
 * the file, valid while pf is), 0 when not in it. Members are read base
 * first, a later one overriding: its removal (exact) makes it 0, its allow
 * entry (exact) BR_URL_ALLOW_CATEGORY, its fingerprint hit that category.
 * Only the exact table answers "allow": a fingerprint code naming it (a
 * false positive, or a file written before the exact table) is no hit, so
 * a false positive never releases a URL (docs/filter-format.md, "The
 * exact table"). -ENOTSUP: not such a set, or a v6 member and no XXH3;
 * -EIO: damaged (filter_file.h); another -errno: the SHA-256 failed. */
int br_pwfilter_lookup_category(const br_pwfilter *pf, br_url_probe *p, const char **category);
/* The same answer as a code: 1 and *code, the category's code (a code
 * names the same category in every member: br_pwfilter_categories), or 0
 * for an allow entry (exact); 0 when not in the set. For a caller that
 * keeps something per category (an action, a counter) in a table by code,
 * without comparing names. */
int br_pwfilter_lookup_code(const br_pwfilter *pf, br_url_probe *p, uint8_t *code);
/* br_pwfilter_lookup_code of p[0..n) (a name's suffixes, a URL's
 * expressions): found[i] its answer (1 or 0), code[i] its code when 1;
 * the damaged check once for all, the members' probes inlined. 0, or the
 * first error as above. */
int br_pwfilter_lookup_codes(const br_pwfilter *pf, br_url_probe *p, size_t n, bool *found,
                             uint8_t *code);
/* A url-sha256 offline set: the largest max_domain_labels of its members
 * (lookups take host suffixes of up to max(5, this) labels). */
unsigned br_pwfilter_max_domain_labels(const br_pwfilter *pf);
/* A url-sha256 offline set's categories: the longest table of its members,
 * which starts with every other member's (br_pwfilter_attach checks it):
 * what a delta of the set starts its own table with. NULL when the set
 * holds no categories. */
const br_category_table *br_pwfilter_categories(const br_pwfilter *pf);
/* The raw fingerprint code of a key in the set: the newest member whose
 * fingerprints hold it (a delta's count of a key replaces the base's:
 * docs/filter-format.md, "Deltas and layered files"); 0: none (no exact
 * table, no removal: the count lookups' primitive, and for tests). */
uint8_t br_pwfilter_code(const br_pwfilter *pf, uint64_t key, const br_pwfilter **member);
/* A password offline set (counts): true when the set already answers key
 * with the code count would get in the member answering it (nothing for
 * a delta to carry); false when it answers no, or a lower bucket. */
bool br_pwfilter_count_same(const br_pwfilter *pf, uint64_t key, uint64_t count);
/* A url-sha256 offline set: true when a member's fingerprints may hold
 * allow entries that are now ignored (a file of key encoding v2 whose
 * category table names BR_URL_ALLOW_CATEGORY: rebuild it). */
bool br_pwfilter_url_fuse_allow(const br_pwfilter *pf);
/* An offline member's description for `filter info`: the code kind, the
 * count ratio (ppm), --min-count, categories. NULL when not offline. */
const br_pwo *br_pwfilter_offline_info(const br_pwfilter *pf);
/* True once the file was found truncated under its mapping (filter_file.h):
 * reload a good file. Any thread. */
bool br_pwfilter_damaged(const br_pwfilter *pf);
/* br_filter_file_changed() of every file of the set: true when one was
 * rewritten in place since it was opened; the set is damaged from then on. */
bool br_pwfilter_changed(const br_pwfilter *pf);
