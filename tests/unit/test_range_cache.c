/* SPDX-License-Identifier: MIT */
/* lib/range/range_cache*.c: opening, persistence, partitions, expiry,
 * touch, batching (size limits and crashes: test_range_cache_limits.c). */
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

#include "core/hash.h"
#include "range/range.h"
#include "range/range_cache.h"
#include "range_cache_helpers.h"
#include "core/util.h"

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
        {100, 0, BR_RANGE_CACHE_FRESH},          {199, 0, BR_RANGE_CACHE_FRESH},
        {200, 0, BR_RANGE_CACHE_STALE},          {201, 0, BR_RANGE_CACHE_EXPIRED},
        {250, 50, BR_RANGE_CACHE_STALE},         {251, 50, BR_RANGE_CACHE_EXPIRED},
        {-5, 0, BR_RANGE_CACHE_FRESH},           {INT64_MAX, INT64_MAX, BR_RANGE_CACHE_STALE},
        {INT64_MAX, 10, BR_RANGE_CACHE_EXPIRED}, {300, -7, BR_RANGE_CACHE_EXPIRED},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(cases); i++) {
        br_range_cache_result r;
        assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, g->hash[3],
                                               cases[i].now, cases[i].max_stale, &r),
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

/* A decoy list kept with a range: set, read back by lookups, kept by a put
 * and a touch of the range, through a flush and a reopen. */
static void test_decoy_list(void **state)
{
    fixture *f = *state;
    br_range_cache *c = open_cache(f, 4 << 20);
    const uint32_t list[3] = {0xFFFFF, 0x00001, 0x12345};
    assert_int_equal(br_range_cache_set_decoys(c, 0, BR_RANGE_PASSWORD_SHA1, 7, list, 3), -ENOENT);
    put_gen(c, BR_RANGE_PASSWORD_SHA1, 7, 3, 5, 50, 100, 200, "\"a\"", "lm-a");
    uint8_t h[BR_SHA1_LEN];
    hash_for(7, h, sizeof(h));
    br_range_cache_result r;
    assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, 150, 0, &r), 0);
    assert_int_equal(r.n_decoys, 0);
    assert_int_equal(br_range_cache_set_decoys(c, 0, BR_RANGE_PASSWORD_SHA1, 7, list, 3), 0);
    assert_int_equal(br_range_cache_flush(c), 0);
    put_gen(c, BR_RANGE_PASSWORD_SHA1, 7, 4, 5, 50, 300, 400, "\"b\"", NULL); /* a new range */
    assert_int_equal(br_range_cache_touch(c, 0, BR_RANGE_PASSWORD_SHA1, 7, 350, 450, NULL, NULL),
                     0);
    assert_int_equal(br_range_cache_flush(c), 0);
    br_range_cache_free(c);
    c = open_cache(f, 4 << 20);
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 7, 4, 5, 50, 400, BR_RANGE_CACHE_FRESH);
    assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, 400, 0, &r), 0);
    assert_string_equal(r.etag, "\"b\"");
    assert_int_equal(r.n_decoys, 3);
    assert_memory_equal(r.decoys, list, sizeof(list));
    assert_int_equal(br_range_cache_set_decoys(c, 0, BR_RANGE_PASSWORD_SHA1, 7, NULL, 0), 0);
    assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, 400, 0, &r), 0);
    assert_int_equal(r.n_decoys, 0);
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 7, 4, 5, 50, 400, BR_RANGE_CACHE_FRESH);
    assert_int_equal(br_range_cache_set_decoys(c, 0, BR_RANGE_PASSWORD_SHA1, 7, list, 17), -EINVAL);
    br_range_cache_free(c);
}

static void test_touch(void **state)
{
    fixture *f = *state;
    br_range_cache *c = open_cache(f, 4 << 20);
    assert_int_equal(br_range_cache_touch(c, 0, BR_RANGE_PASSWORD_SHA1, 7, 10, 20, NULL, NULL),
                     -ENOENT);
    put_gen(c, BR_RANGE_PASSWORD_SHA1, 7, 3, 5, 50, 100, 200, "\"a\"", "lm-a");
    put_gen(c, BR_RANGE_PASSWORD_SHA1, 8, 4, 5, 50, 100, 200, "\"b\"", "lm-b");
    assert_int_equal(br_range_cache_flush(c), 0);
    check_gen(c, BR_RANGE_PASSWORD_SHA1, 7, 3, 5, 50, 300, BR_RANGE_CACHE_STALE);

    /* Committed entry: touch, visible at once, and after flush and reopen. */
    assert_int_equal(br_range_cache_touch(c, 0, BR_RANGE_PASSWORD_SHA1, 7, 300, 400, NULL, NULL),
                     0);
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
    assert_int_equal(br_range_cache_touch(c, 0, BR_RANGE_PASSWORD_SHA1, 9, 500, 600, "\"d\"", ""),
                     0);
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
    assert_int_equal(br_range_cache_touch(c, 0, BR_RANGE_URL_SHA256, 7, 10, 20, NULL, NULL),
                     -ENOENT);
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
        check_gen(c, BR_RANGE_PASSWORD_SHA1, p, p == 5 ? 999 : 100 + p, 1, 100, 15,
                  BR_RANGE_CACHE_FRESH);
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
    assert_int_equal(
        br_range_cache_put(c, 0, BR_RANGE_PASSWORD_SHA1, 1, junk, sizeof(junk), 1, 2, NULL, NULL),
        -EINVAL);
    gen *g = malloc(sizeof(*g));
    gen_make(g, BR_RANGE_URL_SHA256, 1, 1, 1, 3);
    uint8_t *v;
    size_t len;
    gen_value(g, BR_RANGE_URL_SHA256, &v, &len);
    assert_int_equal(br_range_cache_put(c, 0, BR_RANGE_PASSWORD_SHA1, 1, v, len, 1, 2, NULL, NULL),
                     -EINVAL);
    assert_int_equal(
        br_range_cache_put(c, 0, BR_RANGE_URL_SHA256, 1 << 20, v, len, 1, 2, NULL, NULL), -EINVAL);
    /* An over-long ETag is not stored; the entry is. */
    char longtag[400];
    memset(longtag, 'e', sizeof(longtag) - 1);
    longtag[sizeof(longtag) - 1] = '\0';
    assert_int_equal(br_range_cache_put(c, 0, BR_RANGE_URL_SHA256, 1, v, len, 1, 2, longtag, "lm"),
                     0);
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

/* Partitions never see each other's entries; the secret stays with the cache. */
static void test_partitions_and_secret(void **state)
{
    fixture *f = *state;
    br_range_cache *c = open_cache(f, 8 << 20);
    uint8_t s1[BR_RANGE_CACHE_SECRET_LEN], s2[BR_RANGE_CACHE_SECRET_LEN],
        zero[BR_RANGE_CACHE_SECRET_LEN] = {0};
    br_range_cache_secret(c, s1);
    assert_memory_not_equal(s1, zero, sizeof(zero));
    uint8_t *v;
    size_t len;
    const char *body = "00000000000000000000000000000000001:5";
    assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, body, strlen(body), 0, &v, &len, NULL),
                     0);
    assert_int_equal(
        br_range_cache_put(c, 1000, BR_RANGE_PASSWORD_SHA1, 0x12345, v, len, 10, 20, "\"e\"", NULL),
        0);
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
            assert_int_equal(
                br_range_cache_lookup(c, others[i], BR_RANGE_PASSWORD_SHA1, h, 15, 0, &r), 0);
            assert_int_equal(r.state, BR_RANGE_CACHE_MISS);
        }
        assert_int_equal(
            br_range_cache_touch(c, 1001, BR_RANGE_PASSWORD_SHA1, 0x12345, 10, 30, NULL, NULL),
            -ENOENT);
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
        cmocka_unit_test_setup_teardown(test_open_errors, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_persistence, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_partitions_and_secret, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test_setup_teardown(test_expiry_and_stale, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_touch, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_decoy_list, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_batching, fixture_setup, fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
