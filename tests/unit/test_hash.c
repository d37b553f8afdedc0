/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/hash.h"

static void test_sha1_known(void **state)
{
    (void)state;
    uint8_t d[BR_SHA1_LEN];
    char hex[2 * BR_SHA1_LEN + 1];
    assert_int_equal(br_sha1("password", 8, d), 0);
    br_hex_encode_upper(d, sizeof(d), hex);
    assert_string_equal(hex, "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8");
    assert_int_equal(br_sha1("", 0, d), 0);
    br_hex_encode_upper(d, sizeof(d), hex);
    assert_string_equal(hex, "DA39A3EE5E6B4B0D3255BFEF95601890AFD80709");
}

static void test_sha256_known(void **state)
{
    (void)state;
    uint8_t d[BR_SHA256_LEN];
    char hex[2 * BR_SHA256_LEN + 1];
    assert_int_equal(br_sha256("abc", 3, d), 0);
    br_hex_encode_upper(d, sizeof(d), hex);
    assert_string_equal(hex, "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD");
}

static void test_hasher_reuse(void **state)
{
    (void)state;
    br_hasher *h = br_hasher_new_sha1();
    assert_non_null(h);
    uint8_t a[BR_SHA1_LEN], b[BR_SHA1_LEN];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(br_hasher_digest(h, "password", 8, a), 0);
        assert_int_equal(br_sha1("password", 8, b), 0);
        assert_memory_equal(a, b, sizeof(a));
    }
    br_hasher_free(h);
}

/* One context for many strings gives each its own digest. */
static void test_sha256_strings(void **state)
{
    (void)state;
    const char *const s[] = {"abc", "", "example.com/", "abc",
                             "a longer expression/with/a/path?q=1"};
    uint8_t got[5][BR_SHA256_LEN], want[BR_SHA256_LEN];
    assert_int_equal(br_sha256_many((const void *const *)s, NULL, 5, got), 0);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(br_sha256(s[i], strlen(s[i]), want), 0);
        assert_memory_equal(got[i], want, BR_SHA256_LEN);
    }
    assert_int_equal(br_sha256_many((const void *const *)s, NULL, 0, got), 0);
}

/* The SHA extensions' path (and OpenSSL's where the CPU has none) against
 * OpenSSL's EVP: every length across the one- and two-block boundaries and
 * past the long-message cut, paired with every other length. */
static void test_sha256_many_lengths(void **state)
{
    (void)state;
    enum { MAXLEN = 1100, N = 7 };
    static uint8_t data[MAXLEN];
    uint32_t x = 0x12345678;
    for (size_t i = 0; i < MAXLEN; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = (uint8_t)(x >> 24);
    }
    br_hasher *evp = br_hasher_new_sha256();
    assert_non_null(evp);
    uint8_t want[N][BR_SHA256_LEN], got[N][BR_SHA256_LEN], one[BR_SHA256_LEN];
    for (size_t len = 0; len < MAXLEN; len += len < 300 ? 1 : 37) {
        const void *msg[N];
        size_t lens[N];
        for (size_t k = 0; k < N; k++) {
            /* lengths around len, and a short and a long neighbour */
            lens[k] = k < 3 ? len : k == 3 ? (len * 7 + 3) % 130 : (len + 64 * k) % MAXLEN;
            msg[k] = data + (k * 13) % 50;
            if (lens[k] + (k * 13) % 50 > MAXLEN)
                lens[k] = MAXLEN - (k * 13) % 50;
            assert_int_equal(br_hasher_digest(evp, msg[k], lens[k], want[k]), 0);
        }
        for (size_t n = 0; n <= N; n++) {
            memset(got, 0, sizeof(got));
            assert_int_equal(br_sha256_many(msg, lens, n, got), 0);
            for (size_t k = 0; k < n; k++)
                assert_memory_equal(got[k], want[k], BR_SHA256_LEN);
        }
        assert_int_equal(br_sha256(msg[0], lens[0], one), 0);
        assert_memory_equal(one, want[0], BR_SHA256_LEN);
    }
    assert_int_equal(br_sha256(NULL, 0, one), 0);
    assert_int_equal(br_hasher_digest(evp, "", 0, want[0]), 0);
    assert_memory_equal(one, want[0], BR_SHA256_LEN);
    br_hasher_free(evp);
}

static void test_hex(void **state)
{
    (void)state;
    uint8_t out[4];
    assert_true(br_hex_decode("deADbeEF", 4, out));
    assert_int_equal(out[0], 0xde);
    assert_int_equal(out[3], 0xef);
    assert_false(br_hex_decode("deADbeEG", 4, out));
    assert_false(br_hex_decode("de AD be", 4, out));
    uint8_t h[8] = {0x5B, 0xAA, 0x61, 0xE4, 0xC9, 0xB9, 0x3F, 0x3F};
    assert_true(br_hash_key64(h) == UINT64_C(0x5BAA61E4C9B93F3F));
}

/* Every byte value at every place of a SHA-1 (SSE2's blocks where built
 * with it, the last one overlapping) and of a short run (one at a time),
 * against br_hexval. */
static void hex_every_byte(size_t len)
{
    const char *base = "0123456789abcdefABCDEF0123456789abcdefAB";
    for (size_t pos = 0; pos < 2 * len; pos++) {
        for (int b = 0; b < 256; b++) {
            char s[40];
            memcpy(s, base, 2 * len);
            s[pos] = (char)b;
            uint8_t out[20];
            bool ok = br_hex_decode(s, len, out);
            int v = br_hexval((unsigned char)b);
            assert_int_equal(ok, v >= 0);
            if (v < 0)
                continue;
            int other = br_hexval((unsigned char)s[pos ^ 1]);
            int want = pos % 2 ? other << 4 | v : v << 4 | other;
            assert_int_equal(out[pos / 2], want);
            for (size_t k = 0; k < len; k++)
                if (k != pos / 2)
                    assert_int_equal(out[k], br_hexval((unsigned char)base[2 * k]) << 4 |
                                                 br_hexval((unsigned char)base[2 * k + 1]));
        }
    }
}

static void test_hex_every_byte(void **state)
{
    (void)state;
    hex_every_byte(20); /* PW */
    hex_every_byte(16); /* NT */
    hex_every_byte(8);
    hex_every_byte(5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha1_known),   cmocka_unit_test(test_hex_every_byte),
        cmocka_unit_test(test_sha256_known), cmocka_unit_test(test_sha256_many_lengths),
        cmocka_unit_test(test_hasher_reuse), cmocka_unit_test(test_sha256_strings),
        cmocka_unit_test(test_hex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
