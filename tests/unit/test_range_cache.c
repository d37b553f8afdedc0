/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hash.h"
#include "range.h"
#include "range_cache.h"
#include "util.h"

typedef struct fixture {
    char dir[64];   /* mkdtemp directory */
    char cache[96]; /* the cache directory inside it (created by open) */
} fixture;

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    strcpy(f->dir, "/tmp/breachd-range-cache-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->cache, sizeof(f->cache), "%s/cache", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    int rc = nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return rc;
}

/* ---- derivable values: the content of (kind, prefix, seed) ---------------- */

typedef struct gen {
    size_t n;
    uint8_t hash[256][BR_SHA256_LEN];
    uint32_t count[256];
    char cat[256][16];
} gen;

static void gen_make(gen *g, br_range_kind kind, uint32_t prefix, uint64_t seed, size_t min_n, size_t max_n)
{
    uint64_t rng = seed * UINT64_C(0x100000001B3) ^ ((uint64_t)prefix << 8) ^ (uint64_t)kind;
    size_t hl = br_range_hash_len(kind);
    g->n = min_n + (size_t)(br_splitmix64(&rng) % (max_n - min_n + 1));
    for (size_t i = 0; i < g->n; i++) {
        for (size_t k = 0; k < hl; k++)
            g->hash[i][k] = (uint8_t)br_splitmix64(&rng);
        g->hash[i][0] = (uint8_t)(prefix >> 12);
        g->hash[i][1] = (uint8_t)(prefix >> 4);
        g->hash[i][2] = (uint8_t)((prefix & 0xF) << 4 | (g->hash[i][2] & 0xF));
        g->count[i] = (uint32_t)(br_splitmix64(&rng) % 1000000) + 1;
        snprintf(g->cat[i], sizeof(g->cat[i]), "cat%u", (unsigned)(br_splitmix64(&rng) % 5));
    }
}

static void gen_value(const gen *g, br_range_kind kind, uint8_t **v, size_t *len)
{
    size_t hl = br_range_hash_len(kind);
    size_t cap = g->n * 100 + 1;
    char *body = malloc(cap);
    assert_non_null(body);
    size_t off = 0;
    for (size_t i = 0; i < g->n; i++) {
        char hex[2 * BR_SHA256_LEN + 1];
        br_hex_encode_upper(g->hash[i], hl, hex);
        if (kind == BR_RANGE_PASSWORD_SHA1)
            off += (size_t)snprintf(body + off, cap - off, "%s:%u\r\n", hex + 5, g->count[i]);
        else
            off += (size_t)snprintf(body + off, cap - off, "%s:%s\n", hex + 5, g->cat[i]);
    }
    br_error err = {{0}};
    int rc = br_range_parse(kind, body, off, 0, v, len, &err);
    if (rc)
        fail_msg("parse: %s", err.text);
    free(body);
}

static void put_gen(br_range_cache *c, br_range_kind kind, uint32_t prefix, uint64_t seed, size_t min_n, size_t max_n,
                    int64_t fetched, int64_t expires, const char *etag, const char *lm)
{
    gen *g = malloc(sizeof(*g));
    assert_non_null(g);
    gen_make(g, kind, prefix, seed, min_n, max_n);
    uint8_t *v;
    size_t len;
    gen_value(g, kind, &v, &len);
    assert_int_equal(br_range_cache_put(c, 0, kind, prefix, v, len, fetched, expires, etag, lm), 0);
    free(v);
    free(g);
}

/* Check that (kind, prefix) answers exactly like generation seed. */
static void check_gen(br_range_cache *c, br_range_kind kind, uint32_t prefix, uint64_t seed, size_t min_n, size_t max_n,
                      int64_t now, br_range_cache_state want_state)
{
    gen *g = malloc(sizeof(*g));
    assert_non_null(g);
    gen_make(g, kind, prefix, seed, min_n, max_n);
    for (size_t i = 0; i < g->n; i++) {
        br_range_cache_result r;
        assert_int_equal(br_range_cache_lookup(c, 0, kind, g->hash[i], now, 1000, &r), 0);
        assert_int_equal(r.state, want_state);
        assert_true(r.found);
        if (kind == BR_RANGE_PASSWORD_SHA1)
            assert_int_equal(r.count, g->count[i]);
        else
            assert_string_equal(r.category, g->cat[i]);
        g->hash[i][br_range_hash_len(kind) - 1] ^= 0x5A;
        assert_int_equal(br_range_cache_lookup(c, 0, kind, g->hash[i], now, 1000, &r), 0);
        assert_int_equal(r.state, want_state);
        assert_false(r.found);
    }
    free(g);
}

static br_range_cache *open_cache(const fixture *f, uint64_t max_size)
{
    br_range_cache *c = NULL;
    br_error err = {{0}};
    int rc = br_range_cache_open(f->cache, max_size, &c, &err);
    if (rc)
        fail_msg("open: %d %s", rc, err.text);
    return c;
}

static void hash_for(uint32_t prefix, uint8_t *h, size_t hl)
{
    memset(h, 0x77, hl);
    h[0] = (uint8_t)(prefix >> 12);
    h[1] = (uint8_t)(prefix >> 4);
    h[2] = (uint8_t)((prefix & 0xF) << 4 | 7);
}

/* ---- tests -------------------------------------------------------------------- */

static void test_open_errors(void **state)
{
    fixture *f = *state;
    br_range_cache *c = NULL;
    br_error err = {{0}};
    assert_int_equal(br_range_cache_open(f->cache, 1000, &c, &err), -EINVAL);
    char file[128];
    snprintf(file, sizeof(file), "%s/file", f->dir);
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(br_range_cache_open(file, 1 << 20, &c, &err), -ENOTDIR);
    snprintf(file, sizeof(file), "%s/missing/cache", f->dir);
    assert_int_equal(br_range_cache_open(file, 1 << 20, &c, &err), -ENOENT);
    assert_null(c);
    /* Not an LMDB file. */
    snprintf(file, sizeof(file), "%s/bad", f->dir);
    assert_int_equal(mkdir(file, 0700), 0);
    char data[160];
    snprintf(data, sizeof(data), "%s/data.mdb", file);
    fp = fopen(data, "w");
    assert_non_null(fp);
    for (int i = 0; i < 4096; i++)
        fputc('x', fp);
    fclose(fp);
    int rc = br_range_cache_open(file, 1 << 20, &c, &err);
    assert_true(rc < 0);
    assert_null(c);
    assert_non_null(strstr(err.text, file));
}

static void test_persistence(void **state)
{
    fixture *f = *state;
    br_range_cache *c = open_cache(f, 8 << 20);
    struct stat st;
    assert_int_equal(stat(f->cache, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);

    for (uint32_t p = 0; p < 50; p++)
        put_gen(c, BR_RANGE_PASSWORD_SHA1, p * 997, p, 1, 200, 1000, 2000, "\"etag-1\"",
                "Wed, 21 Oct 2015 07:28:00 GMT");
    put_gen(c, BR_RANGE_URL_SHA256, 0xABCDE, 9, 1, 50, 1000, 2000, NULL, NULL);
    assert_int_equal(br_range_cache_flush(c), 0);
    br_range_cache_free(c);

    c = open_cache(f, 8 << 20);
    for (uint32_t p = 0; p < 50; p++)
        check_gen(c, BR_RANGE_PASSWORD_SHA1, p * 997, p, 1, 200, 1500, BR_RANGE_CACHE_FRESH);
    check_gen(c, BR_RANGE_URL_SHA256, 0xABCDE, 9, 1, 50, 1500, BR_RANGE_CACHE_FRESH);

    uint8_t h[BR_SHA256_LEN];
    br_range_cache_result r;
    hash_for(0, h, BR_SHA1_LEN);
    assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, 1500, 0, &r), 0);
    assert_int_equal(r.state, BR_RANGE_CACHE_FRESH);
    assert_int_equal(r.fetched_at, 1000);
    assert_int_equal(r.expires_at, 2000);
    assert_string_equal(r.etag, "\"etag-1\"");
    assert_string_equal(r.last_modified, "Wed, 21 Oct 2015 07:28:00 GMT");
    /* Other prefix, other kind: misses. */
    hash_for(1, h, BR_SHA1_LEN);
    assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, 1500, 0, &r), 0);
    assert_int_equal(r.state, BR_RANGE_CACHE_MISS);
    hash_for(0xABCDE, h, BR_SHA256_LEN);
    assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, 1500, 0, &r), 0);
    assert_int_equal(r.state, BR_RANGE_CACHE_MISS);
    assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_URL_SHA256, h, 1500, 0, &r), 0);
    assert_int_equal(r.state, BR_RANGE_CACHE_FRESH);
    assert_string_equal(r.etag, "");

    br_range_cache_usage u;
    assert_int_equal(br_range_cache_stats(c, &u), 0);
    assert_int_equal(u.entries, 51);
    assert_int_equal(u.pending, 0);
    assert_true(u.used_bytes > 0 && u.used_bytes <= u.file_bytes && u.file_bytes <= u.max_bytes);
    br_range_cache_free(c);
}

static void test_expiry_and_stale(void **state)
{
    fixture *f = *state;
    br_range_cache *c = open_cache(f, 4 << 20);
    put_gen(c, BR_RANGE_PASSWORD_SHA1, 0x12345, 1, 10, 10, 100, 200, "W/\"x\"", NULL);
    assert_int_equal(br_range_cache_flush(c), 0);
    gen *g = malloc(sizeof(*g));
    gen_make(g, BR_RANGE_PASSWORD_SHA1, 0x12345, 1, 10, 10);

    const struct {
        int64_t now, max_stale;
        br_range_cache_state state;
    } cases[] = {
        {100, 0, BR_RANGE_CACHE_FRESH},   {199, 0, BR_RANGE_CACHE_FRESH},   {200, 0, BR_RANGE_CACHE_STALE},
        {201, 0, BR_RANGE_CACHE_EXPIRED}, {250, 50, BR_RANGE_CACHE_STALE},  {251, 50, BR_RANGE_CACHE_EXPIRED},
        {-5, 0, BR_RANGE_CACHE_FRESH},    {INT64_MAX, INT64_MAX, BR_RANGE_CACHE_STALE},
        {INT64_MAX, 10, BR_RANGE_CACHE_EXPIRED}, {300, -7, BR_RANGE_CACHE_EXPIRED},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(cases); i++) {
        br_range_cache_result r;
        assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, g->hash[3], cases[i].now,
                                               cases[i].max_stale, &r),
                         0);
        assert_int_equal(r.state, cases[i].state);
        assert_string_equal(r.etag, "W/\"x\"");
        assert_int_equal(r.expires_at, 200);
        if (r.state == BR_RANGE_CACHE_EXPIRED) {
            assert_false(r.found);
        } else {
            assert_true(r.found);
            assert_int_equal(r.count, g->count[3]);
        }
    }
    free(g);
    br_range_cache_free(c);
}

static void test_touch(void **state)
{
    fixture *f = *state;
    br_range_cache *c = open_cache(f, 4 << 20);
    assert_int_equal(br_range_cache_touch(c, 0, BR_RANGE_PASSWORD_SHA1, 7, 10, 20, NULL, NULL), -ENOENT);
    put_gen(c, BR_RANGE_PASSWORD_SHA1, 7, 3, 5, 50, 100, 200, "\"a\"", "lm-a");
    put_gen(c, BR_RANGE_PASSWORD_SHA1, 8, 4, 5, 50, 100, 200, "\"b\"", "lm-b");
    assert_int_equal(br_range_cache_flush(c), 0);
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 7, 3, 5, 50, 300, BR_RANGE_CACHE_STALE);

    /* Committed entry: touch, visible at once, and after flush and reopen. */
    assert_int_equal(br_range_cache_touch(c, 0, BR_RANGE_PASSWORD_SHA1, 7, 300, 400, NULL, NULL), 0);
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 7, 3, 5, 50, 300, BR_RANGE_CACHE_FRESH);
    assert_int_equal(br_range_cache_flush(c), 0);
    br_range_cache_free(c);
    c = open_cache(f, 4 << 20);
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 7, 3, 5, 50, 399, BR_RANGE_CACHE_FRESH);
    uint8_t h[BR_SHA1_LEN];
    hash_for(7, h, sizeof(h));
    br_range_cache_result r;
    assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, 399, 0, &r), 0);
    assert_int_equal(r.fetched_at, 300);
    assert_int_equal(r.expires_at, 400);
    assert_string_equal(r.etag, "\"a\"");
    assert_string_equal(r.last_modified, "lm-a");

    /* Pending entry: touch replaces validators when given. */
    put_gen(c, BR_RANGE_PASSWORD_SHA1, 9, 5, 5, 50, 100, 200, "\"c\"", "lm-c");
    assert_int_equal(br_range_cache_touch(c, 0, BR_RANGE_PASSWORD_SHA1, 9, 500, 600, "\"d\"", ""), 0);
    hash_for(9, h, sizeof(h));
    assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, 550, 0, &r), 0);
    assert_int_equal(r.state, BR_RANGE_CACHE_FRESH);
    assert_string_equal(r.etag, "\"d\"");
    assert_string_equal(r.last_modified, "");
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 9, 5, 5, 50, 550, BR_RANGE_CACHE_FRESH);
    assert_int_equal(br_range_cache_flush(c), 0);
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 9, 5, 5, 50, 550, BR_RANGE_CACHE_FRESH);
    /* The other entry is untouched. */
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 8, 4, 5, 50, 150, BR_RANGE_CACHE_FRESH);
    assert_int_equal(br_range_cache_touch(c, 0, BR_RANGE_URL_SHA256, 7, 10, 20, NULL, NULL), -ENOENT);
    br_range_cache_free(c);
}

static void test_batching(void **state)
{
    fixture *f = *state;
    br_range_cache *c = open_cache(f, 16 << 20);
    br_range_cache_usage u0, u;
    assert_int_equal(br_range_cache_stats(c, &u0), 0);
    for (uint32_t p = 0; p < 200; p++)
        put_gen(c, BR_RANGE_PASSWORD_SHA1, p, 100 + p, 1, 100, 10, 20, NULL, NULL);
    /* Pending: visible to lookups, not committed. */
    assert_int_equal(br_range_cache_stats(c, &u), 0);
    assert_int_equal(u.pending, 200);
    assert_int_equal(u.entries, 0);
    for (uint32_t p = 0; p < 200; p += 17)
        check_gen(c, BR_RANGE_PASSWORD_SHA1, p, 100 + p, 1, 100, 15, BR_RANGE_CACHE_FRESH);
    /* Replacing a pending put: the latest wins. */
    put_gen(c, BR_RANGE_PASSWORD_SHA1, 5, 999, 1, 100, 10, 20, NULL, NULL);
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 5, 999, 1, 100, 15, BR_RANGE_CACHE_FRESH);

    assert_int_equal(br_range_cache_flush(c), 0);
    assert_int_equal(br_range_cache_stats(c, &u), 0);
    assert_int_equal(u.pending, 0);
    assert_int_equal(u.entries, 200);
    assert_int_equal(u.commits - u0.commits, 1); /* one write transaction */
    for (uint32_t p = 0; p < 200; p += 13)
        check_gen(c, BR_RANGE_PASSWORD_SHA1, p, p == 5 ? 999 : 100 + p, 1, 100, 15, BR_RANGE_CACHE_FRESH);
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 5, 999, 1, 100, 15, BR_RANGE_CACHE_FRESH);
    assert_int_equal(br_range_cache_flush(c), 0); /* nothing pending: no-op */
    assert_int_equal(br_range_cache_stats(c, &u), 0);
    assert_int_equal(u.commits - u0.commits, 1);

    /* Replacing a committed entry with an older one keeps the age index tidy. */
    put_gen(c, BR_RANGE_PASSWORD_SHA1, 6, 7, 1, 100, 5, 30, NULL, NULL);
    assert_int_equal(br_range_cache_flush(c), 0);
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 6, 7, 1, 100, 15, BR_RANGE_CACHE_FRESH);

    /* The automatic flush at BR_RANGE_CACHE_PENDING_MAX. */
    for (uint32_t p = 0; p < BR_RANGE_CACHE_PENDING_MAX + 10; p++)
        put_gen(c, BR_RANGE_URL_SHA256, p, p, 1, 3, 10, 20, NULL, NULL);
    assert_int_equal(br_range_cache_stats(c, &u), 0);
    assert_int_equal(u.pending, 10);
    assert_int_equal(u.entries, 200 + BR_RANGE_CACHE_PENDING_MAX);

    /* Bad puts. */
    uint8_t junk[40] = {0};
    assert_int_equal(br_range_cache_put(c, 0, BR_RANGE_PASSWORD_SHA1, 1, junk, sizeof(junk), 1, 2, NULL, NULL), -EINVAL);
    gen *g = malloc(sizeof(*g));
    gen_make(g, BR_RANGE_URL_SHA256, 1, 1, 1, 3);
    uint8_t *v;
    size_t len;
    gen_value(g, BR_RANGE_URL_SHA256, &v, &len);
    assert_int_equal(br_range_cache_put(c, 0, BR_RANGE_PASSWORD_SHA1, 1, v, len, 1, 2, NULL, NULL), -EINVAL);
    assert_int_equal(br_range_cache_put(c, 0, BR_RANGE_URL_SHA256, 1 << 20, v, len, 1, 2, NULL, NULL), -EINVAL);
    /* An over-long ETag is not stored; the entry is. */
    char longtag[400];
    memset(longtag, 'e', sizeof(longtag) - 1);
    longtag[sizeof(longtag) - 1] = '\0';
    assert_int_equal(br_range_cache_put(c, 0, BR_RANGE_URL_SHA256, 1, v, len, 1, 2, longtag, "lm"), 0);
    br_range_cache_result r;
    assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_URL_SHA256, g->hash[0], 1, 0, &r), 0);
    assert_int_equal(r.state, BR_RANGE_CACHE_FRESH);
    assert_true(r.found);
    assert_string_equal(r.etag, "");
    assert_string_equal(r.last_modified, "lm");
    free(v);
    free(g);
    br_range_cache_free(c); /* flushes the 10 + 1 pending */

    c = open_cache(f, 16 << 20);
    assert_int_equal(br_range_cache_stats(c, &u), 0);
    assert_int_equal(u.entries, 200 + BR_RANGE_CACHE_PENDING_MAX + 10);
    br_range_cache_free(c);
}

static void test_eviction(void **state)
{
    fixture *f = *state;
    const uint64_t max = 1 << 20;
    const uint32_t n = 3000;
    br_range_cache *c = open_cache(f, max);
    for (uint32_t i = 0; i < n; i++) {
        /* 40..120 entries: 0.9 to 2.7 KB each, ~5 MB in all. */
        put_gen(c, BR_RANGE_PASSWORD_SHA1, i, i, 40, 120, 1000 + i, 5000 + i, "\"e\"", NULL);
        if (i % 16 == 15)
            assert_int_equal(br_range_cache_flush(c), 0);
    }
    assert_int_equal(br_range_cache_flush(c), 0);
    br_range_cache_usage u;
    assert_int_equal(br_range_cache_stats(c, &u), 0);
    print_message("eviction: %llu entries kept, %llu evicted, %llu KiB used of a %llu KiB file\n",
                  (unsigned long long)u.entries, (unsigned long long)u.evicted,
                  (unsigned long long)u.used_bytes >> 10, (unsigned long long)u.file_bytes >> 10);
    assert_true(u.evicted > 0);
    assert_true(u.entries < n);
    assert_true(u.entries > 100);
    assert_true(u.file_bytes <= max + (64 << 10));
    assert_true(u.max_bytes <= max + (64 << 10));
    /* The newest are there, the oldest gone. */
    for (uint32_t i = n - 40; i < n; i++)
        check_gen(c, BR_RANGE_PASSWORD_SHA1, i, i, 40, 120, 1500, BR_RANGE_CACHE_FRESH);
    for (uint32_t i = 0; i < 200; i++) {
        uint8_t h[BR_SHA1_LEN];
        br_range_cache_result r;
        hash_for(i, h, sizeof(h));
        assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, 1500, 0, &r), 0);
        assert_int_equal(r.state, BR_RANGE_CACHE_MISS);
    }
    /* What is there is the newest run, complete. */
    uint32_t first = n - (uint32_t)u.entries;
    for (uint32_t i = first; i < n; i += 7)
        check_gen(c, BR_RANGE_PASSWORD_SHA1, i, i, 40, 120, 1500, BR_RANGE_CACHE_FRESH);
    br_range_cache_free(c);

    /* Reopen: still bounded, still taking puts. */
    c = open_cache(f, max);
    for (uint32_t i = n; i < n + 300; i++)
        put_gen(c, BR_RANGE_PASSWORD_SHA1, i, i, 40, 120, 1000 + i, 5000 + i, NULL, NULL);
    assert_int_equal(br_range_cache_flush(c), 0);
    check_gen(c, BR_RANGE_PASSWORD_SHA1, n + 299, n + 299, 40, 120, 1500, BR_RANGE_CACHE_FRESH);
    assert_int_equal(br_range_cache_stats(c, &u), 0);
    assert_true(u.file_bytes <= max + (64 << 10));
    br_range_cache_free(c);
}

static void test_entry_larger_than_map(void **state)
{
    fixture *f = *state;
    br_range_cache *c = open_cache(f, 256 << 10);
    put_gen(c, BR_RANGE_PASSWORD_SHA1, 1, 1, 10, 20, 10, 20, NULL, NULL);
    assert_int_equal(br_range_cache_flush(c), 0);
    /* ~20000 entries: 440 KB, more than the whole map. */
    size_t cap = 20000 * 45;
    char *body = malloc(cap);
    size_t off = 0;
    uint64_t rng = 1;
    for (int i = 0; i < 20000; i++) {
        uint8_t h[BR_SHA1_LEN];
        char hex[41];
        for (int k = 0; k < BR_SHA1_LEN; k++)
            h[k] = (uint8_t)br_splitmix64(&rng);
        br_hex_encode_upper(h, sizeof(h), hex);
        off += (size_t)snprintf(body + off, cap - off, "%s:1\n", hex + 5);
    }
    uint8_t *v;
    size_t len;
    assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, body, off, 0, &v, &len, NULL), 0);
    /* Past the pending byte bound: the put flushes by itself, and that flush
     * drops the entry that can never fit. */
    put_gen(c, BR_RANGE_PASSWORD_SHA1, 3, 3, 10, 20, 30, 40, NULL, NULL);
    assert_int_equal(br_range_cache_put(c, 0, BR_RANGE_PASSWORD_SHA1, 2, v, len, 30, 40, NULL, NULL), -EFBIG);
    br_range_cache_usage u;
    assert_int_equal(br_range_cache_stats(c, &u), 0);
    assert_int_equal(u.pending, 0);
    /* The small one made it. */
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 3, 3, 10, 20, 35, BR_RANGE_CACHE_FRESH);
    uint8_t h[BR_SHA1_LEN];
    br_range_cache_result r;
    hash_for(2, h, sizeof(h));
    assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, 35, 0, &r), 0);
    assert_int_equal(r.state, BR_RANGE_CACHE_MISS);
    /* And the cache still works. */
    put_gen(c, BR_RANGE_PASSWORD_SHA1, 4, 4, 10, 20, 30, 40, NULL, NULL);
    assert_int_equal(br_range_cache_flush(c), 0);
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 4, 4, 10, 20, 35, BR_RANGE_CACHE_FRESH);
    free(v);
    free(body);
    br_range_cache_free(c);
}

/* ---- crash test ----------------------------------------------------------------- */

#define CRASH_PREFIXES 400
#define CRASH_MIN 20
#define CRASH_MAX 150

/* The content of an entry is a function of (prefix, fetched_at), its expiry
 * is fetched_at + 77: the checker can verify every entry on its own. */
static void crash_child(const char *path, uint64_t seed)
{
    br_range_cache *c = NULL;
    if (br_range_cache_open(path, 1 << 20, &c, NULL) < 0)
        _exit(3);
    uint64_t rng = seed;
    int64_t t = (int64_t)(seed << 32);
    for (;;) {
        int n = 1 + (int)(br_splitmix64(&rng) % 24);
        for (int i = 0; i < n; i++) {
            uint32_t prefix = (uint32_t)(br_splitmix64(&rng) % CRASH_PREFIXES) * 2593;
            br_range_kind kind = br_splitmix64(&rng) % 4 ? BR_RANGE_PASSWORD_SHA1 : BR_RANGE_URL_SHA256;
            t++;
            gen g;
            gen_make(&g, kind, prefix, (uint64_t)t, CRASH_MIN, CRASH_MAX);
            uint8_t *v;
            size_t len;
            gen_value(&g, kind, &v, &len);
            int rc = br_range_cache_put(c, 0, kind, prefix, v, len, t, t + 77, NULL, NULL);
            if (rc < 0) {
                fprintf(stderr, "crash child: put: %s\n", strerror(-rc));
                _exit(4);
            }
            free(v);
        }
        int rc = br_range_cache_flush(c);
        if (rc < 0) {
            fprintf(stderr, "crash child: flush: %s\n", strerror(-rc));
            _exit(5);
        }
    }
}

typedef struct crash_check {
    size_t entries;
    gen g;
} crash_check;

static int crash_verify(void *ctx, uint32_t partition, br_range_kind kind, uint32_t prefix, int64_t fetched_at,
                        int64_t expires_at, const uint8_t *value, size_t len)
{
    crash_check *cc = ctx;
    assert_int_equal(partition, 0);
    assert_true(kind == BR_RANGE_PASSWORD_SHA1 || kind == BR_RANGE_URL_SHA256);
    assert_true(prefix % 2593 == 0 && prefix / 2593 < CRASH_PREFIXES);
    assert_non_null(value);
    assert_int_equal(expires_at, fetched_at + 77);
    gen_make(&cc->g, kind, prefix, (uint64_t)fetched_at, CRASH_MIN, CRASH_MAX);
    uint8_t *want;
    size_t want_len;
    gen_value(&cc->g, kind, &want, &want_len);
    assert_int_equal(len, want_len);
    assert_memory_equal(value, want, len);
    free(want);
    cc->entries++;
    return 0;
}

static void test_crash(void **state)
{
    fixture *f = *state;
    uint64_t rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    size_t total_seen = 0;
    crash_check *cc = malloc(sizeof(*cc));
    assert_non_null(cc);
    for (int round = 0; round < 20; round++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            crash_child(f->cache, (uint64_t)round + 1);
        /* Mostly mid-storm; now and then right at the start. */
        unsigned delay_us = round % 5 == 0 ? (unsigned)(br_splitmix64(&rng) % 3000)
                                           : 20000 + (unsigned)(br_splitmix64(&rng) % 200000);
        usleep(delay_us);
        assert_int_equal(kill(pid, SIGKILL), 0);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFSIGNALED(status))
            fail_msg("round %d: child exited by itself with status %d", round, WEXITSTATUS(status));

        br_range_cache *c = open_cache(f, 1 << 20);
        cc->entries = 0;
        assert_int_equal(br_range_cache_foreach(c, crash_verify, cc), 0);
        br_range_cache_usage u;
        assert_int_equal(br_range_cache_stats(c, &u), 0);
        assert_int_equal(u.entries, cc->entries);
        total_seen += cc->entries;
        /* Lookups agree with the walk for one prefix. */
        uint8_t h[BR_SHA1_LEN];
        br_range_cache_result r;
        hash_for(0, h, sizeof(h));
        assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, 0, 0, &r), 0);
        if (r.state != BR_RANGE_CACHE_MISS) {
            check_gen(c, BR_RANGE_PASSWORD_SHA1, 0, (uint64_t)r.fetched_at, CRASH_MIN, CRASH_MAX, r.fetched_at,
                      BR_RANGE_CACHE_FRESH);
        }
        br_range_cache_free(c);
    }
    assert_true(total_seen > 0);
    print_message("crash: 20 kills, %zu entries verified\n", total_seen);
    free(cc);
}

/* Partitions never see each other's entries; the secret stays with the cache. */
static void test_partitions_and_secret(void **state)
{
    fixture *f = *state;
    br_range_cache *c = open_cache(f, 8 << 20);
    uint8_t s1[BR_RANGE_CACHE_SECRET_LEN], s2[BR_RANGE_CACHE_SECRET_LEN], zero[BR_RANGE_CACHE_SECRET_LEN] = {0};
    br_range_cache_secret(c, s1);
    assert_memory_not_equal(s1, zero, sizeof(zero));
    uint8_t *v;
    size_t len;
    const char *body = "00000000000000000000000000000000001:5";
    assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, body, strlen(body), 0, &v, &len, NULL), 0);
    assert_int_equal(br_range_cache_put(c, 1000, BR_RANGE_PASSWORD_SHA1, 0x12345, v, len, 10, 20, "\"e\"", NULL), 0);
    free(v);
    uint8_t h[BR_SHA1_LEN] = {0x12, 0x34, 0x50};
    h[19] = 1;
    br_range_cache_result r;
    for (int flushed = 0; flushed < 2; flushed++) {
        assert_int_equal(br_range_cache_lookup(c, 1000, BR_RANGE_PASSWORD_SHA1, h, 15, 0, &r), 0);
        assert_int_equal(r.state, BR_RANGE_CACHE_FRESH);
        assert_true(r.found);
        assert_int_equal(r.count, 5);
        const uint32_t others[] = {0, 1001, UINT32_MAX, 1000u << 8};
        for (size_t i = 0; i < BR_ARRAY_SIZE(others); i++) {
            assert_int_equal(br_range_cache_lookup(c, others[i], BR_RANGE_PASSWORD_SHA1, h, 15, 0, &r), 0);
            assert_int_equal(r.state, BR_RANGE_CACHE_MISS);
        }
        assert_int_equal(br_range_cache_touch(c, 1001, BR_RANGE_PASSWORD_SHA1, 0x12345, 10, 30, NULL, NULL), -ENOENT);
        assert_int_equal(br_range_cache_flush(c), 0);
    }
    br_range_cache_free(c);
    c = open_cache(f, 8 << 20);
    br_range_cache_secret(c, s2);
    assert_memory_equal(s1, s2, sizeof(s1));
    assert_int_equal(br_range_cache_lookup(c, 1000, BR_RANGE_PASSWORD_SHA1, h, 15, 0, &r), 0);
    assert_int_equal(r.state, BR_RANGE_CACHE_FRESH);
    br_range_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_persistence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partitions_and_secret, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expiry_and_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_touch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batching, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eviction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entry_larger_than_map, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
