/* SPDX-License-Identifier: MIT */
/* The range cache's retention and files (range_cache.h): the purge of entries
 * past ttl + max_stale, the refusal of cache files that another user
 * owns or may write, or that are symbolic links, and files truncated in place
 * while mapped. Real LMDB in temp dirs. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/hash.h"
#include "core/map_guard.h"
#include "range/range.h"
#include "range/range_cache.h"
#include "range_cache_walk.h"
#include "testutil.h"

typedef struct fixture {
    char *dir;
    char *cache;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    f->dir = tu_mkdtemp();
    f->cache = tu_path("%s/cache", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    tu_rmrf(f->dir);
    free(f->dir);
    free(f->cache);
    free(f);
    return 0;
}

static br_range_cache *open_ok(const char *path)
{
    br_range_cache *c = NULL;
    br_error err = {{0}};
    int rc = br_range_cache_open(path, 4 << 20, &c, &err);
    if (rc)
        fail_msg("open: %d %s", rc, err.text);
    return c;
}

/* A one-line password range for prefix: the hash PREFIX + 35 x '7'. */
static void hash_of(uint32_t prefix, uint8_t h[BR_SHA1_LEN])
{
    memset(h, 0x77, BR_SHA1_LEN);
    h[0] = (uint8_t)(prefix >> 12);
    h[1] = (uint8_t)(prefix >> 4);
    h[2] = (uint8_t)((prefix & 0xF) << 4 | 7);
}

static void put_one(br_range_cache *c, uint32_t prefix, int64_t fetched, int64_t expires)
{
    static const char body[] = "77777777777777777777777777777777777:12\r\n";
    uint8_t *v;
    size_t len;
    br_error err = {{0}};
    assert_int_equal(
        br_range_parse(BR_RANGE_PASSWORD_SHA1, body, sizeof(body) - 1, 0, &v, &len, &err), 0);
    assert_int_equal(br_range_cache_put(c, 0, BR_RANGE_PASSWORD_SHA1, prefix, v, len, fetched,
                                        expires, "\"e\"", NULL),
                     0);
    free(v);
}

static br_range_cache_state state_of(br_range_cache *c, uint32_t prefix, int64_t now,
                                     int64_t max_stale)
{
    uint8_t h[BR_SHA1_LEN];
    hash_of(prefix, h);
    br_range_cache_result r;
    assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, now, max_stale, &r), 0);
    return r.state;
}

static int count_cb(void *ctx, uint32_t partition, br_range_kind kind, uint32_t prefix,
                    int64_t fetched_at, int64_t expires_at, const uint8_t *value, size_t len)
{
    (void)partition, (void)kind, (void)prefix, (void)fetched_at, (void)expires_at, (void)value,
        (void)len;
    (*(size_t *)ctx)++;
    return 0;
}

static size_t entries(br_range_cache *c)
{
    size_t n = 0;
    assert_int_equal(rc_walk(c, count_cb, &n), 0);
    return n;
}

/* ---- purge ---------------------------------------------------------------- */

/* Exactly the entries a lookup finds EXPIRED go; the horizon is inclusive
 * like the lookup's. */
static void test_purge_horizon(void **state)
{
    fixture *f = *state;
    br_range_cache *c = open_ok(f->cache);
    put_one(c, 0xA0000, 100, 200);   /* 1300 s past expiry: purged */
    put_one(c, 0xB0000, 150, 1000);  /* exactly max_stale past: kept */
    put_one(c, 0xC0000, 300, 400);   /* purged */
    put_one(c, 0xD0000, 1000, 2000); /* fresh: kept */
    assert_int_equal(br_range_cache_flush(c), 0);
    assert_int_equal(state_of(c, 0xA0000, 1500, 500), BR_RANGE_CACHE_EXPIRED);
    assert_int_equal(state_of(c, 0xB0000, 1500, 500), BR_RANGE_CACHE_STALE);
    uint64_t purged = 99;
    assert_int_equal(br_range_cache_purge(c, 1500, 500, &purged), 0);
    assert_int_equal(purged, 2);
    assert_int_equal(entries(c), 2);
    assert_int_equal(state_of(c, 0xA0000, 1500, 500), BR_RANGE_CACHE_MISS);
    assert_int_equal(state_of(c, 0xC0000, 1500, 500), BR_RANGE_CACHE_MISS);
    assert_int_equal(state_of(c, 0xB0000, 1500, 500), BR_RANGE_CACHE_STALE);
    assert_int_equal(state_of(c, 0xD0000, 1500, 500), BR_RANGE_CACHE_FRESH);
    /* Nothing left to do: a second purge deletes nothing. */
    assert_int_equal(br_range_cache_purge(c, 1500, 500, &purged), 0);
    assert_int_equal(purged, 0);
    /* Later, everything goes; a negative max_stale counts as 0. */
    assert_int_equal(br_range_cache_purge(c, 2001, -5, &purged), 0);
    assert_int_equal(purged, 2);
    assert_int_equal(entries(c), 0);
    br_range_cache_usage u;
    assert_int_equal(br_range_cache_stats(c, &u), 0);
    assert_int_equal(u.entries, 0);
    br_range_cache_free(c);
    /* And it stays gone across a reopen. */
    c = open_ok(f->cache);
    assert_int_equal(entries(c), 0);
    br_range_cache_free(c);
}

/* More entries than one commit takes, consecutive in the age order, with
 * young ones interleaved by prefix: every old one goes, every young one stays. */
static void test_purge_many(void **state)
{
    fixture *f = *state;
    br_range_cache *c = open_ok(f->cache);
    for (uint32_t i = 0; i < 1000; i++) {
        bool young = i % 7 == 0;
        put_one(c, i * 1000, young ? 5000 + i : 10 + i, young ? 6000 + i : 20 + i);
    }
    assert_int_equal(br_range_cache_flush(c), 0);
    uint64_t purged = 0;
    assert_int_equal(br_range_cache_purge(c, 5500, 60, &purged), 0);
    assert_int_equal(purged, 1000 - 143);
    assert_int_equal(entries(c), 143);
    for (uint32_t i = 0; i < 1000; i++)
        assert_int_equal(state_of(c, i * 1000, 5500, 60) == BR_RANGE_CACHE_MISS, i % 7 != 0);
    br_range_cache_free(c);
}

/* A touch re-stamps an entry: its old age key is an orphan, which the purge
 * drops without deleting the (now young) entry. */
static void test_purge_after_touch(void **state)
{
    fixture *f = *state;
    br_range_cache *c = open_ok(f->cache);
    put_one(c, 0x12345, 100, 200);
    assert_int_equal(br_range_cache_flush(c), 0);
    assert_int_equal(
        br_range_cache_touch(c, 0, BR_RANGE_PASSWORD_SHA1, 0x12345, 5000, 6000, NULL, NULL), 0);
    assert_int_equal(br_range_cache_flush(c), 0);
    uint64_t purged = 9;
    assert_int_equal(br_range_cache_purge(c, 5100, 10, &purged), 0);
    assert_int_equal(purged, 0);
    assert_int_equal(state_of(c, 0x12345, 5100, 10), BR_RANGE_CACHE_FRESH);
    assert_int_equal(br_range_cache_purge(c, 6011, 10, &purged), 0);
    assert_int_equal(purged, 1);
    assert_int_equal(entries(c), 0);
    br_range_cache_free(c);
}

/* ---- files and owners -------------------------------------------------------- */

static void expect_refused(const char *path, int want, const char *fix, const char *named)
{
    br_range_cache *c = NULL;
    br_error err = {{0}};
    assert_int_equal(br_range_cache_open(path, 4 << 20, &c, &err), want);
    assert_null(c);
    if (!strstr(err.text, named) || !strstr(err.text, fix))
        fail_msg("error text '%s' should name '%s' and say '%s'", err.text, named, fix);
}

static void test_refuses_symlinks(void **state)
{
    fixture *f = *state;
    br_range_cache_free(open_ok(f->cache));
    /* The directory as a link. */
    char *link = tu_path("%s/link", f->dir);
    assert_int_equal(symlink(f->cache, link), 0);
    expect_refused(link, -ELOOP, "symbolic link", link);
    /* data.mdb as a link to a file elsewhere (LMDB would follow it). */
    char *data = tu_path("%s/data.mdb", f->cache), *elsewhere = tu_path("%s/elsewhere.mdb", f->dir);
    assert_int_equal(rename(data, elsewhere), 0);
    assert_int_equal(symlink(elsewhere, data), 0);
    expect_refused(f->cache, -ELOOP, "symbolic link", data);
    assert_int_equal(unlink(data), 0);
    assert_int_equal(rename(elsewhere, data), 0);
    /* lock.mdb too. */
    char *lock = tu_path("%s/lock.mdb", f->cache);
    assert_int_equal(unlink(lock), 0);
    assert_int_equal(symlink("/dev/null", lock), 0);
    expect_refused(f->cache, -ELOOP, "symbolic link", lock);
    assert_int_equal(unlink(lock), 0);
    br_range_cache_free(open_ok(f->cache)); /* good again */
    free(link);
    free(data);
    free(elsewhere);
    free(lock);
}

static void test_refuses_writable_by_others(void **state)
{
    fixture *f = *state;
    br_range_cache *c = open_ok(f->cache);
    put_one(c, 0x54321, 100, 200);
    br_range_cache_free(c);
    assert_int_equal(chmod(f->cache, 0770), 0);
    expect_refused(f->cache, -EPERM, "chmod go-w", f->cache);
    assert_int_equal(chmod(f->cache, 0702), 0);
    expect_refused(f->cache, -EPERM, "chmod go-w", f->cache);
    assert_int_equal(chmod(f->cache, 0755), 0); /* readable is the operator's choice */
    char *data = tu_path("%s/data.mdb", f->cache);
    assert_int_equal(chmod(data, 0660), 0);
    expect_refused(f->cache, -EPERM, "chmod go-w", data);
    assert_int_equal(chmod(data, 0600), 0);
    c = open_ok(f->cache);
    assert_int_equal(entries(c), 1); /* a refusal touched nothing */
    br_range_cache_free(c);
    free(data);
}

static void test_refuses_other_owner(void **state)
{
    fixture *f = *state;
    if (geteuid() != 0)
        skip(); /* only root can give a file away */
    br_range_cache_free(open_ok(f->cache));
    assert_int_equal(chown(f->cache, 65534, 65534), 0);
    expect_refused(f->cache, -EPERM, "chown 0 ", f->cache);
    assert_int_equal(chown(f->cache, 0, 0), 0);
    char *lock = tu_path("%s/lock.mdb", f->cache);
    assert_int_equal(chown(lock, 65534, 0), 0);
    expect_refused(f->cache, -EPERM, "belongs to uid 65534", lock);
    assert_int_equal(chown(lock, 0, 0), 0);
    br_range_cache_free(open_ok(f->cache));
    free(lock);
}

/* ---- truncation while mapped ----------------------------------------------- */

static void on_sigbus(int sig, siginfo_t *si, void *uctx)
{
    (void)uctx;
    if (si->si_code > 0 && br_map_guard_fault(si->si_addr))
        return;
    signal(sig, SIG_DFL);
}

static void sigbus_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGBUS, &sa, NULL), 0);
}

/* A cache of 300 entries whose file is then truncated to what (data.mdb to
 * its two meta pages, or lock.mdb to nothing): lookups do not crash, the
 * cache is damaged and every call fails with -EIO; a new open of the
 * truncated data.mdb is refused naming the fix, and works once the files
 * are removed. */
static void truncated_case(fixture *f, const char *name, off_t size)
{
    br_range_cache *c = open_ok(f->cache);
    for (uint32_t p = 0; p < 300; p++)
        put_one(c, p * 3001, 1000, 2000);
    assert_int_equal(br_range_cache_flush(c), 0);
    char *file = tu_path("%s/%s", f->cache, name);
    assert_int_equal(truncate(file, size), 0);
    for (uint32_t p = 0; p < 300; p++) {
        uint8_t h[BR_SHA1_LEN];
        hash_of(p * 3001, h);
        br_range_cache_result r;
        int rc = br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, 1500, 0, &r);
        assert_true(rc < 0 || (r.state == BR_RANGE_CACHE_FRESH && r.found && r.count == 12) ||
                    r.state == BR_RANGE_CACHE_MISS);
    }
    assert_true(br_range_cache_damaged(c));
    uint8_t h[BR_SHA1_LEN];
    hash_of(3001, h);
    br_range_cache_result r;
    assert_int_equal(br_range_cache_lookup(c, 0, BR_RANGE_PASSWORD_SHA1, h, 1500, 0, &r), -EIO);
    assert_int_equal(r.state, BR_RANGE_CACHE_MISS);
    static const uint8_t empty_rs[16] = {'B', 'R', 'S', 1, BR_RANGE_PASSWORD_SHA1, 18, 4, 0};
    assert_int_equal(br_range_cache_put(c, 0, BR_RANGE_PASSWORD_SHA1, 1, empty_rs, sizeof(empty_rs),
                                        1, 2, NULL, NULL),
                     -EIO);
    assert_int_equal(br_range_cache_flush(c), -EIO);
    br_range_cache_usage u;
    assert_int_equal(br_range_cache_stats(c, &u), -EIO);
    assert_int_equal(br_range_cache_purge(c, 5000, 0, NULL), -EIO);
    br_range_cache_free(c);
    if (size > 0) {
        br_range_cache *c2 = NULL;
        br_error err = {{0}};
        assert_int_equal(br_range_cache_open(f->cache, 4 << 20, &c2, &err), -EBADMSG);
        assert_null(c2);
        assert_non_null(strstr(err.text, "remove data.mdb and lock.mdb"));
    }
    assert_int_equal(unlink(file), 0);
    char *other =
        tu_path("%s/%s", f->cache, strcmp(name, "data.mdb") == 0 ? "lock.mdb" : "data.mdb");
    assert_int_equal(unlink(other), 0);
    c = open_ok(f->cache);
    assert_false(br_range_cache_damaged(c));
    assert_int_equal(entries(c), 0);
    br_range_cache_free(c);
    free(other);
    free(file);
}

static void test_truncated_while_mapped(void **state)
{
    fixture *f = *state;
    sigbus_handler();
    truncated_case(f, "data.mdb", 8192);
    truncated_case(f, "lock.mdb", 0);
    signal(SIGBUS, SIG_DFL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_purge_horizon, setup, teardown),
        cmocka_unit_test_setup_teardown(test_purge_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_purge_after_touch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_symlinks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_writable_by_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_other_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_while_mapped, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
