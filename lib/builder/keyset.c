/* SPDX-License-Identifier: MIT */
/* The keys of a filter build in bounded memory (keyset.h): kept in memory up
 * to a budget, then spilled to bucket files; back per shard, sorted, once. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "keyset.h"

#define SPILL_BITS 9
#define SPILL_BUCKETS (1u << SPILL_BITS)
#define SPILL_BUF_KEYS 4096
#define DEFAULT_MEM_KEYS ((size_t)16 << 20) /* 128 MiB of keys */

struct br_keyset {
    uint64_t count;
    size_t mem_budget; /* in words */
    /* Words per entry: 1 (a key), or 2 (a key and its count, counted mode:
     * br_keyset_add_counted). Every length below is in words. */
    unsigned words;
    /* In-memory mode. */
    uint64_t *mem;
    size_t mem_len, mem_cap;
    /* Spill mode: one buffer per bucket, appended to bucket files on flush. */
    char *tmpdir;
    char *spill_dir;
    uint64_t *spill_buf; /* SPILL_BUCKETS * SPILL_BUF_KEYS */
    uint32_t spill_fill[SPILL_BUCKETS];
    uint64_t spill_len[SPILL_BUCKETS];
    /* After finish. */
    bool finished;
    unsigned shard_bits;
    size_t *shard_start; /* in-memory mode: shard i is mem[start[i] .. start[i+1]) */
};

static void bucket_path(const br_keyset *ks, unsigned b, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%03x.keys", ks->spill_dir, b);
}

void br_keyset_free(br_keyset *ks)
{
    if (!ks)
        return;
    if (ks->spill_dir) {
        char p[4096];
        for (unsigned b = 0; b < SPILL_BUCKETS; b++) {
            bucket_path(ks, b, p, sizeof(p));
            unlink(p);
        }
        rmdir(ks->spill_dir);
    }
    free(ks->mem);
    free(ks->spill_buf);
    free(ks->spill_dir);
    free(ks->tmpdir);
    free(ks->shard_start);
    free(ks);
}

int br_keyset_new(const char *tmpdir, size_t mem_keys, br_keyset **out, br_error *err)
{
    (void)err;
    _cleanup_(br_keyset_freep) br_keyset *ks = calloc(1, sizeof(*ks));
    if (!ks)
        return -ENOMEM;
    if (!tmpdir || !*tmpdir)
        tmpdir = getenv("TMPDIR");
    if (!tmpdir || !*tmpdir)
        tmpdir = "/var/tmp";
    ks->tmpdir = strdup(tmpdir);
    if (!ks->tmpdir)
        return -ENOMEM;
    ks->mem_budget = mem_keys ? mem_keys : DEFAULT_MEM_KEYS;
    ks->words = 1;
    *out = BR_TAKE_PTR(ks);
    return 0;
}

uint64_t br_keyset_count(const br_keyset *ks)
{
    return ks->count;
}

bool br_keyset_spilled(const br_keyset *ks)
{
    return ks->spill_dir != NULL;
}

static int spill_flush_bucket(br_keyset *ks, unsigned b, br_error *err)
{
    uint32_t fill = ks->spill_fill[b];
    if (fill == 0)
        return 0;
    char p[4096];
    bucket_path(ks, b, p, sizeof(p));
    _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return br_error_set(err, -errno, "%s: %s", p, strerror(errno));
    int r = br_write_all(fd, ks->spill_buf + (size_t)b * SPILL_BUF_KEYS, fill * sizeof(uint64_t));
    if (r < 0)
        return br_error_set(err, r, "%s: write: %s", p, strerror(-r));
    ks->spill_len[b] += fill;
    ks->spill_fill[b] = 0;
    return 0;
}

/* One entry: its key, then (counted mode) its count. */
static int spill_put(br_keyset *ks, const uint64_t *e, br_error *err)
{
    unsigned b = (unsigned)(e[0] >> (64 - SPILL_BITS));
    for (unsigned w = 0; w < ks->words; w++)
        ks->spill_buf[(size_t)b * SPILL_BUF_KEYS + ks->spill_fill[b]++] = e[w];
    return ks->spill_fill[b] == SPILL_BUF_KEYS ? spill_flush_bucket(ks, b, err) : 0;
}

/* The in-memory budget is used up: move everything to bucket files. */
static int start_spill(br_keyset *ks, br_error *err)
{
    if (asprintf(&ks->spill_dir, "%s/breachctl-keys.XXXXXX", ks->tmpdir) < 0) {
        ks->spill_dir = NULL;
        return -ENOMEM;
    }
    if (!mkdtemp(ks->spill_dir)) {
        int r = -errno;
        br_error_set(err, r, "--tmpdir %s: cannot create a spill directory: %s", ks->tmpdir,
                     strerror(errno));
        free(ks->spill_dir);
        ks->spill_dir = NULL;
        return r;
    }
    ks->spill_buf = malloc((size_t)SPILL_BUCKETS * SPILL_BUF_KEYS * sizeof(uint64_t));
    if (!ks->spill_buf)
        return -ENOMEM;
    for (size_t i = 0; i < ks->mem_len; i += ks->words) {
        int r = spill_put(ks, ks->mem + i, err);
        if (r < 0)
            return r;
    }
    free(ks->mem);
    ks->mem = NULL;
    ks->mem_len = ks->mem_cap = 0;
    return 0;
}

static int add_entry(br_keyset *ks, const uint64_t *e, br_error *err)
{
    if (ks->finished)
        return -EBUSY;
    ks->count++;
    if (ks->spill_dir)
        return spill_put(ks, e, err);
    if (ks->mem_len == ks->mem_cap) {
        if (ks->mem_cap >= ks->mem_budget) {
            int r = start_spill(ks, err);
            if (r < 0)
                return r;
            return spill_put(ks, e, err);
        }
        size_t cap = ks->mem_cap ? ks->mem_cap * 2 : 4096;
        if (cap > ks->mem_budget)
            cap = ks->mem_budget;
        uint64_t *m = realloc(ks->mem, cap * sizeof(uint64_t));
        if (!m)
            return -ENOMEM;
        ks->mem = m;
        ks->mem_cap = cap;
    }
    for (unsigned w = 0; w < ks->words; w++)
        ks->mem[ks->mem_len++] = e[w];
    return 0;
}

int br_keyset_add(br_keyset *ks, uint64_t key, br_error *err)
{
    if (ks->words != 1)
        return -EINVAL;
    return add_entry(ks, &key, err);
}

int br_keyset_add_counted(br_keyset *ks, uint64_t key, uint64_t count, br_error *err)
{
    if (ks->words == 1 && ks->count == 0) {
        ks->words = 2;
        ks->mem_budget &= ~(size_t)1; /* whole entries */
    }
    if (ks->words != 2)
        return -EINVAL;
    const uint64_t e[2] = {key, count};
    return add_entry(ks, e, err);
}

bool br_keyset_counted(const br_keyset *ks)
{
    return ks->words == 2;
}

static inline uint32_t shard_of(uint64_t key, unsigned bits)
{
    return bits ? (uint32_t)(key >> (64 - bits)) : 0;
}

/* In-place partition of the in-memory keys by shard (one American-flag pass). */
static int partition_memory(br_keyset *ks)
{
    uint32_t shards = UINT32_C(1) << ks->shard_bits;
    size_t *start = calloc((size_t)shards + 1, sizeof(size_t));
    size_t *next = calloc(shards, sizeof(size_t));
    if (!start || !next) {
        free(start);
        free(next);
        return -ENOMEM;
    }
    const unsigned wd = ks->words;
    for (size_t i = 0; i < ks->mem_len; i += wd)
        start[shard_of(ks->mem[i], ks->shard_bits) + 1] += wd;
    for (uint32_t s = 0; s < shards; s++)
        start[s + 1] += start[s];
    memcpy(next, start, shards * sizeof(size_t));
    for (uint32_t s = 0; s < shards; s++) {
        while (next[s] < start[s + 1]) {
            uint64_t *e = ks->mem + next[s];
            uint32_t d = shard_of(e[0], ks->shard_bits);
            if (d == s) {
                next[s] += wd;
                continue;
            }
            /* Swap the entry into its own shard; what comes back is examined next. */
            uint64_t *o = ks->mem + next[d];
            for (unsigned w = 0; w < wd; w++) {
                uint64_t t = e[w];
                e[w] = o[w];
                o[w] = t;
            }
            next[d] += wd;
        }
    }
    free(next);
    ks->shard_start = start;
    return 0;
}

int br_keyset_finish(br_keyset *ks, unsigned shard_bits, br_error *err)
{
    if (ks->finished || shard_bits > 24)
        return -EINVAL;
    ks->shard_bits = shard_bits;
    ks->finished = true;
    if (ks->spill_dir) {
        for (unsigned b = 0; b < SPILL_BUCKETS; b++) {
            int r = spill_flush_bucket(ks, b, err);
            if (r < 0)
                return r;
        }
        free(ks->spill_buf);
        ks->spill_buf = NULL;
        return 0;
    }
    return partition_memory(ks);
}

uint64_t br_keyset_max_shard_keys(const br_keyset *ks)
{
    uint64_t shards = UINT64_C(1) << ks->shard_bits, max = 0;
    for (uint64_t i = 0; i < shards; i++) {
        uint64_t n;
        if (!ks->spill_dir) {
            n = ks->shard_start[i + 1] - ks->shard_start[i];
        } else if (ks->shard_bits <= SPILL_BITS) {
            unsigned per = 1u << (SPILL_BITS - ks->shard_bits);
            n = 0;
            for (unsigned b = (unsigned)i * per; b < (unsigned)(i + 1) * per; b++)
                n += ks->spill_len[b];
        } else {
            /* A bucket holds several shards: assume the worst, the whole bucket. */
            n = ks->spill_len[i >> (ks->shard_bits - SPILL_BITS)];
        }
        max = BR_MAX(max, n / ks->words);
    }
    return max;
}

/* Append the keys of bucket b that belong to shard (all of them when keep_all). */
static int read_bucket(br_keyset *ks, unsigned b, uint32_t shard, bool keep_all, uint64_t *dst,
                       size_t *n, br_error *err)
{
    if (ks->spill_len[b] == 0)
        return 0;
    char p[4096];
    bucket_path(ks, b, p, sizeof(p));
    _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return br_error_set(err, -errno, "%s: %s", p, strerror(errno));
    uint64_t buf[8192];
    for (;;) {
        ssize_t got = read(fd, buf, sizeof(buf));
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return br_error_set(err, -errno, "%s: read: %s", p, strerror(errno));
        }
        if (got == 0)
            break;
        if (got % (ssize_t)(sizeof(uint64_t) * ks->words))
            return br_error_set(err, -EIO, "%s: short read", p);
        size_t cnt = (size_t)got / sizeof(uint64_t);
        for (size_t i = 0; i < cnt; i += ks->words)
            if (keep_all || shard_of(buf[i], ks->shard_bits) == shard)
                for (unsigned w = 0; w < ks->words; w++)
                    dst[(*n)++] = buf[i + w];
    }
    return 0;
}

int br_keyset_shard(br_keyset *ks, uint32_t shard, uint64_t **keys, size_t *n, br_error *err)
{
    if (!ks->finished || (uint64_t)shard >= (UINT64_C(1) << ks->shard_bits))
        return -EINVAL;
    *keys = NULL;
    *n = 0;
    if (!ks->spill_dir) {
        size_t lo = ks->shard_start[shard], hi = ks->shard_start[shard + 1];
        uint64_t *k = malloc(BR_MAX(hi - lo, (size_t)1) * sizeof(uint64_t));
        if (!k)
            return -ENOMEM;
        if (hi > lo)
            memcpy(k, ks->mem + lo, (hi - lo) * sizeof(uint64_t));
        *keys = k;
        *n = ks->words == 2 ? br_pairs_sort_unique(k, (hi - lo) / 2)
                            : br_keys_sort_unique(k, hi - lo);
        return 0;
    }
    /* Which bucket files hold this shard, and how many keys could they give. */
    unsigned b_lo, b_hi;
    bool keep_all = ks->shard_bits <= SPILL_BITS;
    if (keep_all) {
        b_lo = shard << (SPILL_BITS - ks->shard_bits);
        b_hi = (shard + 1) << (SPILL_BITS - ks->shard_bits);
    } else {
        b_lo = shard >> (ks->shard_bits - SPILL_BITS);
        b_hi = b_lo + 1;
    }
    size_t cap = 0;
    for (unsigned b = b_lo; b < b_hi; b++)
        cap += ks->spill_len[b];
    _cleanup_free_ uint64_t *k = malloc(BR_MAX(cap, (size_t)1) * sizeof(uint64_t));
    if (!k)
        return -ENOMEM;
    size_t got = 0;
    for (unsigned b = b_lo; b < b_hi; b++) {
        int r = read_bucket(ks, b, shard, keep_all, k, &got, err);
        if (r < 0)
            return r;
    }
    *n = ks->words == 2 ? br_pairs_sort_unique(k, got / 2) : br_keys_sort_unique(k, got);
    *keys = BR_TAKE_PTR(k);
    return 0;
}

static int key_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* LSD radix sort, 8 bits a pass; passes where every key has the same digit
 * (common: a shard shares its top bits) are skipped. false: out of memory. */
static bool radix_sort(uint64_t *keys, size_t n)
{
    uint64_t *tmp = malloc(n * sizeof(uint64_t));
    size_t(*hist)[256] = calloc(8, sizeof(*hist));
    if (!tmp || !hist) {
        free(tmp);
        free(hist);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        for (unsigned d = 0; d < 8; d++)
            hist[d][(keys[i] >> (8 * d)) & 0xff]++;
    uint64_t *src = keys, *dst = tmp;
    for (unsigned d = 0; d < 8; d++) {
        if (hist[d][(src[0] >> (8 * d)) & 0xff] == n)
            continue;
        size_t pos = 0;
        for (unsigned v = 0; v < 256; v++) {
            size_t c = hist[d][v];
            hist[d][v] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[hist[d][(src[i] >> (8 * d)) & 0xff]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != keys)
        memcpy(keys, src, n * sizeof(uint64_t));
    free(hist);
    free(tmp);
    return true;
}

size_t br_keys_sort_unique(uint64_t *keys, size_t n)
{
    if (n < 2)
        return n;
    /* Keys read from a corpus sorted by hash (HIBP's files are) arrive in
     * order: one pass finds that and saves the sort. */
    size_t inv = 1;
    while (inv < n && keys[inv - 1] <= keys[inv])
        inv++;
    if (inv < n && !radix_sort(keys, n))
        qsort(keys, n, sizeof(uint64_t), key_cmp); /* slower, but needs no memory */
    size_t w = 1;
    for (size_t i = 1; i < n; i++)
        if (keys[i] != keys[w - 1])
            keys[w++] = keys[i];
    return w;
}

static int pair_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0])
        return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}

size_t br_pairs_sort_unique(uint64_t *pairs, size_t n)
{
    if (n < 2)
        return n;
    size_t inv = 1; /* a corpus sorted by hash arrives in order */
    while (inv < n && pairs[2 * (inv - 1)] <= pairs[2 * inv])
        inv++;
    if (inv < n)
        qsort(pairs, n, 2 * sizeof(uint64_t), pair_cmp);
    size_t w = 1;
    for (size_t i = 1; i < n; i++) {
        if (pairs[2 * i] == pairs[2 * (w - 1)]) {
            pairs[2 * w - 1] = BR_MAX(pairs[2 * w - 1], pairs[2 * i + 1]);
            continue;
        }
        pairs[2 * w] = pairs[2 * i];
        pairs[2 * w + 1] = pairs[2 * i + 1];
        w++;
    }
    return w;
}
