/* SPDX-License-Identifier: MIT */
/* lib/range/range_cache*.c at its limits: eviction, an entry larger than
 * the map, a crash at any point (the rest: test_range_cache.c). */
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
#include "range_cache_walk.h"
#include "range_cache_helpers.h"
#include "core/util.h"

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
    assert_int_equal(
        br_range_cache_put(c, 0, BR_RANGE_PASSWORD_SHA1, 2, v, len, 30, 40, NULL, NULL), -EFBIG);
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

/* The content of an entry is a function of (prefix, fetched_at), its expiry
 * is fetched_at + 77: the checker can verify every entry on its own. */
/* ---- crash test ----------------------------------------------------------------- */

#define CRASH_PREFIXES 400
#define CRASH_MIN 20
#define CRASH_MAX 150

typedef struct crash_check {
    size_t entries;
    gen g;
} crash_check;

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
            br_range_kind kind =
                br_splitmix64(&rng) % 4 ? BR_RANGE_PASSWORD_SHA1 : BR_RANGE_URL_SHA256;
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

static int crash_verify(void *ctx, uint32_t partition, br_range_kind kind, uint32_t prefix,
                        int64_t fetched_at, int64_t expires_at, const uint8_t *value, size_t len)
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
        assert_int_equal(rc_walk(c, crash_verify, cc), 0);
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
            check_gen(c, BR_RANGE_PASSWORD_SHA1, 0, (uint64_t)r.fetched_at, CRASH_MIN, CRASH_MAX,
                      r.fetched_at, BR_RANGE_CACHE_FRESH);
        }
        br_range_cache_free(c);
    }
    assert_true(total_seen > 0);
    print_message("crash: 20 kills, %zu entries verified\n", total_seen);
    free(cc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_eviction, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_entry_larger_than_map, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test_setup_teardown(test_crash, fixture_setup, fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
