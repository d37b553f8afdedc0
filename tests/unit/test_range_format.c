/* SPDX-License-Identifier: MIT */
/* Range sets written back out as bodies (lib/range/range_format.c): parse a
 * body in any accepted spelling, format it, get HIBP's spelling (sorted,
 * uppercase, CRLF between lines, no line end after the last, padding
 * dropped); padding lines; what is refused. */
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

#include "range/range.h"
#include "range/range_format.h"
#include "core/util.h"

static uint8_t *parse(br_range_kind kind, const char *body, size_t *len)
{
    uint8_t *v = NULL;
    br_error err = {{0}};
    int rc = br_range_parse(kind, body, strlen(body), 0, &v, len, &err);
    if (rc < 0)
        fail_msg("parse: %s", err.text);
    return v;
}

static char *format(br_range_kind kind, const uint8_t *v, size_t len, size_t *out_len)
{
    size_t max;
    uint32_t n;
    assert_int_equal(br_range_format_size(kind, v, len, &n, &max), 0);
    char *out = malloc(max + 1);
    assert_int_equal(br_range_format(kind, v, len, out, max, out_len), 0);
    out[*out_len] = '\0';
    return out;
}

static void test_spelling(void **s)
{
    (void)s;
    /* lowercase, LF, unsorted, leading zeros, a final line end, padding,
     * a BOM: all come back in one spelling */
    const char *in = "\xEF\xBB\xBF"
                     "ffffffffffffffffffffffffffffffffffe:0012\n"
                     "0000000000000000000000000000000000A:4294967295\n"
                     "1234567890ABCDEF1234567890ABCDEF123:0\n"
                     "00d4f6e8fa6eecad2a3aa415eec418d38ec:2\n";
    const char *want = "0000000000000000000000000000000000A:4294967295\r\n"
                       "00D4F6E8FA6EECAD2A3AA415EEC418D38EC:2\r\n"
                       "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFE:12";
    size_t len, out_len;
    uint8_t *v = parse(BR_RANGE_PASSWORD_SHA1, in, &len);
    char *out = format(BR_RANGE_PASSWORD_SHA1, v, len, &out_len);
    assert_string_equal(out, want);
    assert_int_equal(out_len, strlen(want));
    uint32_t n;
    assert_int_equal(br_range_format_size(BR_RANGE_PASSWORD_SHA1, v, len, &n, NULL), 0);
    assert_int_equal(n, 3);
    free(out);
    free(v);
}

/* A body already in HIBP's spelling is written back byte for byte. */
static void test_round_trip(void **s)
{
    (void)s;
    uint64_t rng = 42;
    char *body = malloc(2000 * 50);
    size_t off = 0;
    uint8_t prev[18] = {0};
    for (int i = 0; i < 2000; i++) {
        uint8_t suf[18];
        /* ascending suffixes: add a random step to the previous one */
        memcpy(suf, prev, sizeof(suf));
        uint64_t step = (br_splitmix64(&rng) >> 20) + 1;
        for (int b = 17; b >= 1 && step; b--) {
            uint64_t t = (uint64_t)suf[b] + (step & 0xFF);
            suf[b] = (uint8_t)t;
            step = (step >> 8) + (t >> 8);
        }
        memcpy(prev, suf, sizeof(suf));
        if (i)
            off += (size_t)sprintf(body + off, "\r\n");
        static const char hx[] = "0123456789ABCDEF";
        body[off++] = hx[suf[0] & 0xF];
        for (int b = 1; b < 18; b++) {
            body[off++] = hx[suf[b] >> 4];
            body[off++] = hx[suf[b] & 0xF];
        }
        off += (size_t)sprintf(body + off, ":%u", (unsigned)(br_splitmix64(&rng) % 100000) + 1);
    }
    body[off] = '\0';
    size_t len, out_len;
    uint8_t *v = parse(BR_RANGE_PASSWORD_SHA1, body, &len);
    char *out = format(BR_RANGE_PASSWORD_SHA1, v, len, &out_len);
    assert_int_equal(out_len, off);
    assert_memory_equal(out, body, off);
    free(out);
    free(v);
    free(body);
}

/* Every count's width: 1, 9, 10, 99, 100, ... 4294967295, one per line. */
static void test_counts(void **s)
{
    (void)s;
    uint32_t counts[40];
    size_t n = 0;
    counts[n++] = 1;
    for (uint64_t p = 10; p <= 1000000000; p *= 10) {
        counts[n++] = (uint32_t)p - 1;
        counts[n++] = (uint32_t)p;
        counts[n++] = (uint32_t)p + 1;
    }
    counts[n++] = 4294967295u;
    char in[40 * 64], want[40 * 64];
    size_t il = 0, wl = 0;
    for (size_t i = 0; i < n; i++) {
        /* ascending suffixes 000...0i */
        il += (size_t)sprintf(in + il, "%035zX:%u\n", i + 1, counts[i]);
        wl += (size_t)sprintf(want + wl, "%s%035zX:%u", i ? "\r\n" : "", i + 1, counts[i]);
    }
    size_t len, out_len;
    uint8_t *v = parse(BR_RANGE_PASSWORD_SHA1, in, &len);
    char *out = format(BR_RANGE_PASSWORD_SHA1, v, len, &out_len);
    assert_int_equal(out_len, wl);
    assert_string_equal(out, want);
    free(out);
    free(v);
}

/* NT hash ranges (?mode=ntlm): 27-digit suffixes, padding lines too. */
static void test_ntlm(void **s)
{
    (void)s;
    const br_range_kind nt = BR_RANGE_PASSWORD_NTLM;
    const char *in = "ffffffffffffffffffffffffffe:7\n"
                     "0123456789abcdef0123456789a:0\n"
                     "0000000000000000000000000A1:123456\n";
    const char *want = "0000000000000000000000000A1:123456\r\n"
                       "FFFFFFFFFFFFFFFFFFFFFFFFFFE:7";
    size_t len, out_len;
    uint8_t *v = parse(nt, in, &len);
    char *out = format(nt, v, len, &out_len);
    assert_string_equal(out, want);
    free(out);
    free(v);
    assert_int_equal(br_range_pad_line_len(nt), 29);
    assert_int_equal(br_range_pad_random_len(nt), 14);
    uint8_t rnd[2 * 14] = {0xAB, 0xCD};
    char pad[2 * 31 + 1];
    assert_int_equal(br_range_format_padding(nt, rnd, 2, pad, sizeof(pad) - 1), 62);
    pad[62] = '\0';
    assert_memory_equal(pad, "\r\nBADC", 6); /* low nibble first in each byte */
    assert_memory_equal(pad + 29, ":0\r\n", 4);
}

/* Only padding: a range with no entries, an empty body. */
static void test_empty(void **s)
{
    (void)s;
    size_t len, out_len;
    uint8_t *v = parse(BR_RANGE_PASSWORD_SHA1, "1234567890ABCDEF1234567890ABCDEF123:0\r\n", &len);
    char *out = format(BR_RANGE_PASSWORD_SHA1, v, len, &out_len);
    assert_int_equal(out_len, 0);
    free(out);
    free(v);
}

static void test_refused(void **s)
{
    (void)s;
    size_t len, out_len;
    char buf[256];
    uint8_t *v = parse(BR_RANGE_PASSWORD_SHA1, "00D4F6E8FA6EECAD2A3AA415EEC418D38EC:2\r\n", &len);
    /* cap too small */
    assert_int_equal(br_range_format(BR_RANGE_PASSWORD_SHA1, v, len, buf, 10, &out_len), -ENOBUFS);
    /* truncated, wrong kind, bad magic */
    assert_int_equal(
        br_range_format(BR_RANGE_PASSWORD_SHA1, v, len - 1, buf, sizeof(buf), &out_len), -EINVAL);
    assert_int_equal(br_range_format(BR_RANGE_URL_SHA256, v, len, buf, sizeof(buf), &out_len),
                     -EINVAL);
    v[0] ^= 1;
    assert_int_equal(br_range_format_size(BR_RANGE_PASSWORD_SHA1, v, len, NULL, NULL), -EINVAL);
    free(v);
    /* a URL range set: categories, not counts */
    const char *url = "0000000000000000000000000000000000000000000000000000000000A:phishing\n";
    v = parse(BR_RANGE_URL_SHA256, url, &len);
    assert_int_equal(br_range_format(BR_RANGE_URL_SHA256, v, len, buf, sizeof(buf), &out_len),
                     -EINVAL);
    free(v);
    assert_int_equal(br_range_format_size(BR_RANGE_PASSWORD_SHA1, NULL, 0, NULL, NULL), -EINVAL);
}

/* Padding lines: CRLF first, 35 uppercase hex digits, ":0"; the body plus
 * padding parses back to the same range set. */
static void test_padding(void **s)
{
    (void)s;
    const br_range_kind pw = BR_RANGE_PASSWORD_SHA1;
    assert_int_equal(br_range_pad_line_len(pw), 37);
    assert_int_equal(br_range_pad_random_len(pw), 18);
    enum { N = 300 };
    uint8_t rnd[N * 18];
    uint64_t rng = 7;
    for (size_t i = 0; i < sizeof(rnd); i++)
        rnd[i] = (uint8_t)br_splitmix64(&rng);
    size_t cap = N * 39;
    char *pad = malloc(cap + 1);
    assert_int_equal(br_range_format_padding(pw, rnd, N, pad, cap - 1), 0); /* too small */
    size_t n = br_range_format_padding(pw, rnd, N, pad, cap);
    assert_int_equal(n, cap);
    pad[n] = '\0';
    for (size_t i = 0; i < N; i++) {
        const char *l = pad + i * 39;
        assert_memory_equal(l, "\r\n", 2);
        for (int d = 0; d < 35; d++)
            assert_non_null(strchr("0123456789ABCDEF", l[2 + d]));
        assert_memory_equal(l + 37, ":0", 2);
    }
    /* not all the same digit: the random bytes are used */
    assert_memory_not_equal(pad + 2, pad + 41, 35);

    const char *real = "00D4F6E8FA6EECAD2A3AA415EEC418D38EC:2";
    size_t blen = strlen(real) + n;
    char *body = malloc(blen + 1);
    memcpy(body, real, strlen(real));
    memcpy(body + strlen(real), pad, n + 1);
    size_t len, out_len;
    uint8_t *v = parse(pw, body, &len);
    char *out = format(pw, v, len, &out_len);
    assert_string_equal(out, real);
    free(out);
    free(v);
    free(body);
    free(pad);
    assert_int_equal(br_range_format_padding(BR_RANGE_URL_SHA256 + 40, rnd, 1, (char[64]){0}, 64),
                     0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spelling), cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_counts),   cmocka_unit_test(test_ntlm),
        cmocka_unit_test(test_empty),    cmocka_unit_test(test_refused),
        cmocka_unit_test(test_padding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
