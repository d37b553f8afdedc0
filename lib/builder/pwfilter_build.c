/* SPDX-License-Identifier: MIT */
/* The password filter's sharded build (docs/filter-format.md, algorithms 3
 * and 4): shards of the key set built by a pool of threads, written in
 * order with the shard table, an offline filter's code and exact tables
 * first. Only breachctl and the tests link it; breachd reads filters. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter/pwfilter_int.h"
#include "filter/pwfilter_layout.h"
#include "filter_writer.h"
#include "pwfilter_build.h"

/* The exact table, right after the code table: the allow entries, then
 * the removals (docs/filter-format.md, "The exact table"). */
static int write_exact(const br_pwfilter_build_opts *o, br_filter_writer *w, br_error *err)
{
    if (o->counts ? o->n_allow || o->n_removed
                  : o->n_allow > UINT32_MAX || o->n_removed > UINT32_MAX)
        return br_error_set(err, -EINVAL,
                            "an exact table is for url-sha256, of at most 2^32-1 keys");
    if (!br_pwo_keys_sorted(o->allow, o->n_allow) || !br_pwo_keys_sorted(o->removed, o->n_removed))
        return br_error_set(err, -EINVAL, "the exact table's keys are not sorted and distinct");
    int r = br_filter_writer_write(w, o->allow, o->n_allow * 32, err);
    if (r >= 0)
        r = br_filter_writer_write(w, o->removed, o->n_removed * 32, err);
    return r;
}

/* The code table of o, written at the writer's offset, and after it the
 * exact table of a url-sha256 build; *offset the code table's start. */
static int write_codes(const br_pwfilter_build_opts *o, br_filter_writer *w, uint64_t *offset,
                       br_error *err)
{
    uint8_t raw[BR_CATEGORY_MAX * BR_CATEGORY_ENTRY_BYTES > BR_COUNT_TABLE_BYTES
                    ? BR_CATEGORY_MAX * BR_CATEGORY_ENTRY_BYTES
                    : BR_COUNT_TABLE_BYTES];
    if (!o->counts && (!o->categories || o->categories->count == 0))
        return br_error_set(err, -EINVAL, "an offline URL filter needs at least one category");
    if (o->counts)
        br_count_codes_encode(o->counts, raw);
    else
        br_category_table_encode(o->categories, raw);
    *offset = br_filter_writer_offset(w);
    int r = br_filter_writer_write(w, raw, br_pwo_codes_bytes(o), err);
    return r < 0 ? r : write_exact(o, w, err);
}

typedef struct shard_result {
    br_bfuse f, check; /* check: url-sha256 key encoding v4 only */
    void *fp, *check_fp;
    uint64_t keys;
    bool done;
} shard_result;

typedef struct build_ctx {
    br_keyset *ks;
    const br_pwfilter_build_opts *o;
    unsigned arity, fp_bits;
    bool checked; /* check filters too (br_pwo_checked) */
    uint32_t shards;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t next;    /* next shard to claim */
    uint32_t written; /* shards already written out */
    uint32_t window;  /* how far claiming may run ahead of writing */
    shard_result *res;
    int error;
    br_error err;
} build_ctx;

/* Shard i's check filter (docs/filter-format.md, "The check filter"): a
 * 16-bit filter of the check keys of its n keys (rewritten in place). */
static int build_check(build_ctx *c, uint32_t i, uint64_t *keys, size_t n, br_error *err)
{
    shard_result *s = &c->res[i];
    for (size_t j = 0; j < n; j++)
        keys[j] = br_pwo_check_key(keys[j]);
    int r = br_bfuse_layout(&s->check, c->arity, BR_PWO_CHECK_BITS, n);
    if (r < 0)
        return br_error_set(err, r, "shard %u: %zu keys do not fit one filter", i, n);
    s->check_fp = malloc(BR_MAX(br_bfuse_bytes(&s->check), (size_t)1));
    if (!s->check_fp)
        return br_error_set(err, -ENOMEM, "shard %u: out of memory", i);
    r = br_bfuse_build(&s->check, keys, n, BR_PWO_CHECK_SEED_BASE ^ i, s->check_fp);
    if (r < 0)
        return br_error_set(err, r, "shard %u: check filter construction failed: %s", i,
                            strerror(-r));
    return 0;
}

static int build_one(build_ctx *c, uint32_t i, br_error *err)
{
    uint64_t *keys = NULL;
    size_t n = 0;
    int r = br_keyset_shard(c->ks, i, &keys, &n, err);
    if (r < 0)
        return r;
    _cleanup_free_ uint8_t *codes = NULL;
    if (c->o->counts || c->o->categories) {
        /* pairs (key, count) into keys (in place, first half) and codes */
        codes = malloc(BR_MAX(n, (size_t)1));
        r = codes ? br_pwo_split(c->o, keys, n, keys, codes) : -ENOMEM;
        if (r < 0) {
            free(keys);
            return br_error_set(err, r, "shard %u: %s", i,
                                r == -ENOMEM ? "out of memory" : "a key's code is out of range");
        }
    }
    shard_result *s = &c->res[i];
    r = br_bfuse_layout(&s->f, c->arity, c->fp_bits, n);
    if (r < 0) {
        free(keys);
        return br_error_set(err, r, "shard %u: %zu keys do not fit one filter", i, n);
    }
    size_t bytes = br_bfuse_bytes(&s->f);
    s->fp = malloc(BR_MAX(bytes, (size_t)1));
    if (!s->fp) {
        free(keys);
        return br_error_set(err, -ENOMEM, "shard %u: out of memory", i);
    }
    r = codes ? br_bfuse_build_coded(&s->f, keys, codes, n, SEED_BASE ^ i, s->fp)
              : br_bfuse_build(&s->f, keys, n, SEED_BASE ^ i, s->fp);
    if (r < 0) {
        free(keys);
        return br_error_set(err, r, "shard %u: filter construction failed: %s", i, strerror(-r));
    }
    r = c->checked ? build_check(c, i, keys, n, err) : 0;
    free(keys);
    s->keys = n;
    return r;
}

static void *build_worker(void *arg)
{
    build_ctx *c = arg;
    br_error err = {{0}};
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->error && c->next < c->shards && c->next >= c->written + c->window)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->error || c->next >= c->shards)
            break;
        uint32_t i = c->next++;
        pthread_mutex_unlock(&c->mu);
        int r = build_one(c, i, &err);
        pthread_mutex_lock(&c->mu);
        if (r < 0 && !c->error) {
            c->error = r;
            c->err = err;
        }
        c->res[i].done = true;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static unsigned online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

/* Write shard fingerprint arrays in order as workers finish them. */
static int write_shards(build_ctx *c, br_filter_writer *w, uint64_t *offsets,
                        const br_pwfilter_build_opts *o, br_error *err)
{
    for (uint32_t i = 0; i < c->shards; i++) {
        pthread_mutex_lock(&c->mu);
        while (!c->error && !c->res[i].done)
            pthread_cond_wait(&c->cv, &c->mu);
        int e = c->error;
        pthread_mutex_unlock(&c->mu);
        if (e)
            return e;
        shard_result *s = &c->res[i];
        int r = br_filter_writer_align(w, 64, err);
        if (r < 0)
            return r;
        offsets[i] = br_filter_writer_offset(w);
        r = br_filter_writer_write(w, s->fp, br_bfuse_bytes(&s->f), err);
        if (r >= 0 && c->checked && (r = br_filter_writer_align(w, 64, err)) >= 0) {
            offsets[c->shards + i] = br_filter_writer_offset(w);
            r = br_filter_writer_write(w, s->check_fp, br_bfuse_bytes(&s->check), err);
        }
        free(s->fp);
        free(s->check_fp);
        s->fp = s->check_fp = NULL;
        s->f.fingerprints = s->check.fingerprints = NULL;
        if (r < 0)
            return r;
        pthread_mutex_lock(&c->mu);
        c->written++;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        if (o->progress)
            o->progress(o->progress_ctx, i + 1, c->shards);
    }
    return 0;
}

static void stop_workers(build_ctx *c, int r)
{
    pthread_mutex_lock(&c->mu);
    if (!c->error)
        c->error = r;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Memory, not cores, is what bounds a big build: cap the threads so that
 * the shards they hold at once fit the budget (the output is the same
 * whatever the thread count). */
static unsigned build_threads(const br_pwfilter_build_opts *o, const br_keyset *ks, uint32_t shards)
{
    unsigned threads = o->threads ? o->threads : online_cpus();
    threads = BR_MIN(threads, shards);
    uint64_t budget = o->mem_budget ? o->mem_budget : BR_PWFILTER_MEM_BUDGET;
    uint64_t per_key =
        o->counts || o->categories ? BR_PWFILTER_BYTES_PER_KEY_OFFLINE : BR_PWFILTER_BYTES_PER_KEY;
    uint64_t per_thread = per_key * BR_MAX(br_keyset_max_shard_keys(ks), 1);
    return (unsigned)BR_MAX(1, BR_MIN((uint64_t)threads, budget / per_thread));
}

/* Build every shard on c->window threads and write the fingerprints. */
static int run_workers(build_ctx *c, br_filter_writer *w, uint64_t *offsets,
                       const br_pwfilter_build_opts *o, br_error *err)
{
    _cleanup_free_ pthread_t *tids = calloc(c->window, sizeof(pthread_t));
    if (!tids)
        return -ENOMEM;
    unsigned started = 0;
    for (; started < c->window; started++)
        if (pthread_create(&tids[started], NULL, build_worker, c) != 0)
            break;
    int r;
    if (started == 0)
        r = br_error_set(err, -EAGAIN, "cannot start build threads");
    else
        r = write_shards(c, w, offsets, o, err);
    if (r < 0)
        stop_workers(c, r);
    for (unsigned t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    if (r < 0 && c->error && c->err.text[0] && err)
        *err = c->err;
    return r;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The quick filter (docs/filter-format.md, "The quick filter"): 8-bit, of
 * the distinct XXH3 keys of o->quick, written 64-byte aligned after the
 * shards' arrays; q->fingerprints is left NULL, *offset where it went. */
static int write_quick(const br_pwfilter_build_opts *o, unsigned arity, br_filter_writer *w,
                       br_bfuse *q, uint64_t *keys_out, uint64_t *offset, br_error *err)
{
    _cleanup_free_ uint64_t *keys = malloc(BR_MAX(o->n_quick, (size_t)1) * sizeof(uint64_t));
    if (!keys)
        return br_error_set(err, -ENOMEM, "quick filter: out of memory");
    if (o->n_quick) /* v6 without an exact table: none */
        memcpy(keys, o->quick, o->n_quick * sizeof(uint64_t));
    qsort(keys, o->n_quick, sizeof(uint64_t), cmp_u64);
    size_t n = 0;
    for (size_t i = 0; i < o->n_quick; i++)
        if (n == 0 || keys[n - 1] != keys[i])
            keys[n++] = keys[i];
    int r = br_bfuse_layout(q, arity, BR_PWO_QUICK_BITS, n);
    if (r < 0)
        return br_error_set(err, r, "quick filter: %zu keys do not fit one filter", n);
    _cleanup_free_ void *fp = malloc(BR_MAX(br_bfuse_bytes(q), (size_t)1));
    if (!fp)
        return br_error_set(err, -ENOMEM, "quick filter: out of memory");
    r = br_bfuse_build(q, keys, n, BR_PWO_QUICK_SEED_BASE, fp);
    if (r < 0)
        return br_error_set(err, r, "quick filter: construction failed: %s", strerror(-r));
    q->fingerprints = NULL;
    *keys_out = n;
    if ((r = br_filter_writer_align(w, 64, err)) < 0)
        return r;
    *offset = br_filter_writer_offset(w);
    return br_filter_writer_write(w, fp, br_bfuse_bytes(q), err);
}

static int write_entry(br_filter_writer *w, const br_bfuse *f, uint64_t offset, uint64_t keys,
                       br_error *err)
{
    uint8_t e[ENTRY_SIZE];
    br_store_le64(e + E_SEED, f->seed);
    br_store_le64(e + E_FP_OFFSET, offset);
    br_store_le32(e + E_KEY_COUNT, (uint32_t)keys);
    br_store_le32(e + E_SEGMENT_LENGTH, f->segment_length);
    br_store_le32(e + E_SEGMENT_COUNT_LENGTH, f->segment_count_length);
    br_store_le32(e + E_ARRAY_LENGTH, f->array_length);
    return br_filter_writer_write(w, e, sizeof(e), err);
}

/* The shard table, after the fingerprints, 64-byte aligned; then the check
 * filters' table, which ends the file. */
static int write_table(const build_ctx *c, br_filter_writer *w, const uint64_t *offsets,
                       uint64_t *table_offset, br_pwfilter_build_stats *st, br_error *err)
{
    int r = br_filter_writer_align(w, 64, err);
    *table_offset = br_filter_writer_offset(w);
    for (uint32_t i = 0; r >= 0 && i < c->shards; i++) {
        const shard_result *s = &c->res[i];
        r = write_entry(w, &s->f, offsets[i], s->keys, err);
        st->keys += s->keys;
        st->fingerprint_bytes += br_bfuse_bytes(&s->f);
    }
    for (uint32_t i = 0; r >= 0 && c->checked && i < c->shards; i++) {
        const shard_result *s = &c->res[i];
        r = write_entry(w, &s->check, offsets[c->shards + i], s->keys, err);
        st->fingerprint_bytes += br_bfuse_bytes(&s->check);
    }
    return r;
}

static void fill_header(br_filter_header *hdr, const br_pwfilter_build_opts *o, const build_ctx *c,
                        unsigned shard_bits, uint64_t table_offset, uint64_t keys,
                        uint64_t codes_offset)
{
    hdr->kind = o->kind ? o->kind : BR_KIND_PASSWORD_SHA1;
    hdr->algorithm = BR_ALGO_BINARY_FUSE;
    hdr->key_encoding = BR_KEYENC_HASH_PREFIX64;
    hdr->key_encoding_version = 1;
    if (o->counts || o->categories) {
        hdr->algorithm = BR_ALGO_FUSE_OFFLINE;
        br_pwo_header(o, hdr->params, codes_offset);
        if (hdr->kind == BR_KIND_URL_SHA256) {
            hdr->key_encoding = BR_KEYENC_URL_EXPR_SHA256;
            hdr->key_encoding_version = br_pwo_quick(o) && o->xxh3_keys ? 6
                                        : br_pwo_quick(o)               ? 5
                                        : br_pwo_checked(o)             ? 4
                                        : br_pwo_exact(o)               ? 3
                                                                        : 2;
        }
    }
    hdr->generation = o->generation;
    hdr->build_time = o->build_time >= 0 ? o->build_time : br_build_time_now();
    hdr->key_count = keys;
    hdr->role = o->base_body_sha256 ? BR_ROLE_DELTA : BR_ROLE_FULL;
    if (o->base_body_sha256)
        memcpy(hdr->base_body_sha256, o->base_body_sha256, 32);
    hdr->params[P_ARITY] = (uint8_t)c->arity;
    hdr->params[P_FP_BITS] = (uint8_t)c->fp_bits;
    hdr->params[P_SHARD_BITS] = (uint8_t)shard_bits;
    br_store_le32(hdr->params + P_SHARD_COUNT, c->shards);
    br_store_le64(hdr->params + P_TABLE_OFFSET, table_offset);
    br_store_le32(hdr->params + P_ENTRY_SIZE, ENTRY_SIZE);
    if (o->source)
        snprintf(hdr->source, sizeof(hdr->source), "%s", o->source);
}

int br_pwfilter_build(br_keyset *ks, const br_pwfilter_build_opts *o, const char *path,
                      br_pwfilter_build_stats *stats, br_error *err)
{
    unsigned arity = o->arity ? o->arity : BR_PWFILTER_ARITY_DEFAULT;
    bool offline = o->counts || o->categories;
    unsigned fp_bits = offline ? 32 : o->fp_bits ? o->fp_bits : 16;
    if ((o->quick || o->xxh3_keys) && (!offline || o->counts || o->no_check))
        return br_error_set(err, -EINVAL,
                            "a quick filter is for an offline url-sha256 file with check filters");
    if (offline != br_keyset_counted(ks) && br_keyset_count(ks) > 0)
        return br_error_set(err, -EINVAL, "an offline build needs a counted key set, and only it");
    if ((arity != 3 && arity != 4) || (fp_bits != 8 && fp_bits != 16 && fp_bits != 32))
        return br_error_set(err, -EINVAL, "unsupported arity %u or fingerprint bits %u", arity,
                            fp_bits);
    unsigned shard_bits = br_pwfilter_shard_bits(
        br_keyset_count(ks), o->shard_target ? o->shard_target : BR_PWFILTER_SHARD_TARGET);
    int r = br_keyset_finish(ks, shard_bits, err);
    if (r < 0)
        return r;

    _cleanup_(br_filter_writer_freep) br_filter_writer *w = NULL;
    r = br_filter_writer_new(path, &w, err);
    if (r < 0)
        return r;

    uint64_t codes_offset = 0;
    if (offline && (r = write_codes(o, w, &codes_offset, err)) < 0)
        return r;
    build_ctx c = {
        .ks = ks,
        .o = o,
        .arity = arity,
        .fp_bits = fp_bits,
        .checked = offline && br_pwo_checked(o),
        .shards = UINT32_C(1) << shard_bits,
    };
    c.window = build_threads(o, ks, c.shards);
    c.res = calloc(c.shards, sizeof(*c.res));
    _cleanup_free_ uint64_t *offsets = calloc((size_t)c.shards * 2, sizeof(uint64_t));
    if (!c.res || !offsets) {
        free(c.res);
        return -ENOMEM;
    }
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    r = run_workers(&c, w, offsets, o, err);
    br_pwfilter_build_stats st = {.shards = c.shards};
    uint64_t table_offset = 0, quick_offset = 0;
    br_bfuse quick = {0};
    if (r >= 0 && offline && br_pwo_quick(o))
        r = write_quick(o, arity, w, &quick, &st.quick_keys, &quick_offset, err);
    if (r >= 0)
        r = write_table(&c, w, offsets, &table_offset, &st, err);
    if (r >= 0 && offline && br_pwo_quick(o)) { /* its entry ends the file */
        r = write_entry(w, &quick, quick_offset, st.quick_keys, err);
        st.quick_bytes = br_bfuse_bytes(&quick);
    }
    for (uint32_t i = 0; i < c.shards; i++) {
        free(c.res[i].fp);
        free(c.res[i].check_fp);
    }
    free(c.res);
    pthread_mutex_destroy(&c.mu);
    pthread_cond_destroy(&c.cv);
    if (r < 0)
        return r;

    br_filter_header hdr = {0};
    fill_header(&hdr, o, &c, shard_bits, table_offset, st.keys, codes_offset);
    st.file_bytes = br_filter_writer_offset(w);
    r = br_filter_writer_commit(w, &hdr, err);
    if (r < 0)
        return r;
    if (stats)
        *stats = st;
    return 0;
}
