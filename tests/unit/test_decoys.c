/* SPDX-License-Identifier: MIT */
/* lib/range/decoys.c: the decoys of a prefix are a keyed, deterministic,
 * repetition-free draw from the population, without the real prefix. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "range/decoys.h"

static const uint8_t key1[BR_DECOY_KEY_LEN] = {1, 2, 3};
static const uint8_t key2[BR_DECOY_KEY_LEN] = {9, 9, 9};

static void set_bit(uint8_t *bm, uint32_t p)
{
    bm[p >> 3] |= (uint8_t)(1u << (p & 7));
}

static void test_deterministic_and_keyed(void **s)
{
    (void)s;
    uint32_t a[16], b[16], c[16];
    assert_int_equal(br_decoy_pick(key1, BR_RANGE_PASSWORD_SHA1, 0x12345, NULL, 0, 16, a), 16);
    assert_int_equal(br_decoy_pick(key1, BR_RANGE_PASSWORD_SHA1, 0x12345, NULL, 0, 16, b), 16);
    assert_memory_equal(a, b, sizeof(a));
    /* the first n of a longer draw: asking for fewer keeps the same ones */
    assert_int_equal(br_decoy_pick(key1, BR_RANGE_PASSWORD_SHA1, 0x12345, NULL, 0, 3, c), 3);
    assert_memory_equal(a, c, 3 * sizeof(a[0]));
    /* another key, kind or real prefix: other decoys */
    assert_int_equal(br_decoy_pick(key2, BR_RANGE_PASSWORD_SHA1, 0x12345, NULL, 0, 16, b), 16);
    assert_memory_not_equal(a, b, sizeof(a));
    assert_int_equal(br_decoy_pick(key1, BR_RANGE_URL_SHA256, 0x12345, NULL, 0, 16, b), 16);
    assert_memory_not_equal(a, b, sizeof(a));
    assert_int_equal(br_decoy_pick(key1, BR_RANGE_PASSWORD_SHA1, 0x12346, NULL, 0, 16, b), 16);
    assert_memory_not_equal(a, b, sizeof(a));
    for (int i = 0; i < 16; i++) {
        assert_true(a[i] < BR_DECOY_PREFIXES);
        assert_int_not_equal(a[i], 0x12345);
        for (int j = 0; j < i; j++)
            assert_int_not_equal(a[i], a[j]);
    }
}

static void test_population(void **s)
{
    (void)s;
    uint8_t *bm = calloc(1, BR_DECOY_BITMAP_BYTES);
    assert_non_null(bm);
    uint32_t out[16];
    /* empty population, or only the real prefix: no decoys */
    assert_int_equal(br_decoy_pick(key1, BR_RANGE_URL_SHA256, 7, bm, 0, 3, out), 0);
    set_bit(bm, 7);
    assert_int_equal(
        br_decoy_pick(key1, BR_RANGE_URL_SHA256, 7, bm, br_decoy_population(bm), 3, out), 0);
    /* three others: all of them, whatever is asked for */
    set_bit(bm, 100);
    set_bit(bm, 0xFFFFF);
    set_bit(bm, 0x80000);
    assert_int_equal(br_decoy_population(bm), 4);
    assert_int_equal(br_decoy_pick(key1, BR_RANGE_URL_SHA256, 7, bm, 4, 16, out), 3);
    uint32_t seen = 0;
    for (int i = 0; i < 3; i++)
        seen |= out[i] == 100 ? 1u : out[i] == 0xFFFFF ? 2u : out[i] == 0x80000 ? 4u : 8u;
    assert_int_equal(seen, 7);
    /* a dense population: every decoy in it; adding a prefix changes no decoy
     * that stays in the population */
    for (uint32_t p = 0; p < BR_DECOY_PREFIXES; p += 5)
        set_bit(bm, p);
    uint32_t pop = br_decoy_population(bm), before[8], after[8];
    assert_int_equal(br_decoy_pick(key1, BR_RANGE_URL_SHA256, 10, bm, pop, 8, before), 8);
    for (int i = 0; i < 8; i++)
        assert_true((bm[before[i] >> 3] >> (before[i] & 7)) & 1);
    set_bit(bm, 3);
    assert_int_equal(br_decoy_pick(key1, BR_RANGE_URL_SHA256, 10, bm, pop + 1, 8, after), 8);
    int same = 0;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++)
            same += before[i] == after[j];
    assert_true(same >= 7);
    free(bm);
}

static void test_bad_arguments(void **s)
{
    (void)s;
    uint32_t out[4];
    assert_int_equal(br_decoy_pick(NULL, BR_RANGE_PASSWORD_SHA1, 1, NULL, 0, 1, out), -EINVAL);
    assert_int_equal(br_decoy_pick(key1, (br_range_kind)9, 1, NULL, 0, 1, out), -EINVAL);
    assert_int_equal(br_decoy_pick(key1, BR_RANGE_PASSWORD_SHA1, 1u << 20, NULL, 0, 1, out),
                     -EINVAL);
    assert_int_equal(br_decoy_pick(key1, BR_RANGE_PASSWORD_SHA1, 1, NULL, 0, 0, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic_and_keyed),
        cmocka_unit_test(test_population),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
