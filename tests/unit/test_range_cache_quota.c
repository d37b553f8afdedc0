/* SPDX-License-Identifier: MIT */
/* Adversary test of the range cache's partition share
 * (lib/range/range_cache_evict.c): can one partition (a uid) count another's
 * fetches by watching its own entries get evicted
 * (docs/privacy.md "Other local users")? With a partition share, a
 * partition's puts evict only its own oldest entries, so while the
 * partitions together fit, another partition's entries never go. Real LMDB
 * in a temp dir. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/hash.h"
#include "range/range.h"
#include "range/range_cache.h"
#include "range_cache_helpers.h"

#define A_PART 1000
#define B_PART 1001
#define KIND BR_RANGE_PASSWORD_SHA1
#define NOW 1700000000

static uint8_t *big_value(size_t *len)
{
    gen g;
    gen_make(&g, KIND, 0x12345, 7, 256, 256);
    uint8_t *v;
    gen_value(&g, KIND, &v, len);
    return v;
}

static void put_in(br_range_cache *c, uint32_t part, uint32_t prefix, const uint8_t *v, size_t len,
                   int64_t at)
{
    assert_int_equal(
        br_range_cache_put(c, part, KIND, prefix, v, len, at, at + 86400, "\"e\"", NULL), 0);
    int rc = br_range_cache_flush(c);
    assert_true(rc == 0);
}

static size_t present(br_range_cache *c, uint32_t part, uint32_t from, uint32_t n)
{
    size_t have = 0;
    for (uint32_t p = from; p < from + n; p++) {
        uint8_t h[20];
        hash_for(p, h, sizeof(h));
        br_range_cache_result cr;
        assert_int_equal(br_range_cache_lookup(c, part, KIND, h, NOW, 0, &cr), 0);
        have += cr.state != BR_RANGE_CACHE_MISS;
    }
    return have;
}

/* A (the watcher) stores 100 ranges, then B fetches 600: with the share,
 * not one of A's entries goes; B's own oldest make room for B. Without it
 * (share 100%) B's fetches evict A's, which A counts. */
static void run(const fixture *f, unsigned share, bool want_isolated)
{
    br_range_cache *c = open_cache(f, 4 << 20);
    if (share < 100)
        assert_int_equal(br_range_cache_set_partition_share(c, share), 0);
    size_t len;
    uint8_t *v = big_value(&len);
    int64_t at = NOW - 1000;
    for (uint32_t p = 0; p < 40; p++)
        put_in(c, A_PART, p, v, len, at++);
    size_t a0 = present(c, A_PART, 0, 40);
    assert_true(a0 > 0);
    for (uint32_t p = 0; p < 600; p++)
        put_in(c, B_PART, 0x80000 + p, v, len, at++);
    size_t a1 = present(c, A_PART, 0, 40), b = present(c, B_PART, 0x80000, 600);
    printf("share %u%%: A kept %zu of %zu entries while B stored 600 (B holds %zu)\n", share, a1,
           a0, b);
    if (want_isolated) {
        if (a1 != a0)
            fail_msg("B's fetches evicted %zu of A's %zu entries", a0 - a1, a0);
        assert_true(b > 0 && b < 600); /* B evicted its own */
    } else {
        assert_true(a1 < a0); /* the signal the share removes */
    }
    free(v);
    br_range_cache_free(c);
}

static void test_share_isolates(void **state)
{
    run(*state, 25, true);
}

static void test_no_share_leaks(void **state)
{
    run(*state, 100, false);
}

static void test_share_range(void **state)
{
    br_range_cache *c = open_cache(*state, 4 << 20);
    assert_int_equal(br_range_cache_set_partition_share(c, 0), -EINVAL);
    assert_int_equal(br_range_cache_set_partition_share(c, 101), -EINVAL);
    assert_int_equal(br_range_cache_set_partition_share(c, 100), 0);
    assert_int_equal(br_range_cache_set_partition_share(c, 1), 0);
    br_range_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_share_isolates, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_no_share_leaks, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_share_range, fixture_setup, fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
