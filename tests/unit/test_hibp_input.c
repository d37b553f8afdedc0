/* SPDX-License-Identifier: MIT */
/* Tests of the password-input readers (lib/filter/hibp_input.c) on real files in a
 * temporary directory: every accepted input shape of a single file (counted
 * HASH:COUNT lines, plain hash lists, plaintext passwords), CRLF, case, zero
 * and minimum counts, the plaintext line limits, and big files cut by the read
 * buffer. Malformed lines: test_hibp_input_malformed.c; per-prefix
 * directories: test_hibp_input_prefix_dir.c; errors, stdin, callbacks and
 * progress: test_hibp_input_behaviour.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>

#include <cmocka.h>

#include "core/hash.h"
#include "filter/hibp_input.h"
#include "hibp_input_helpers.h"
#include "core/util.h"

/* ---- accepted inputs ---- */

static void test_counted_lf(void **state)
{
    (void)state;
    char p[256];
    write_text(p, sizeof(p), "lf.txt",
               H_ZEROS ":3\n" H_PASSWORD ":52256179\n" H_123456 ":37359195\n");
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, NULL, &c, &st, &err), 0);
    const char *want[] = {H_ZEROS, H_PASSWORD, H_123456};
    assert_keys(&c, want, 3);
    assert_int_equal(st.files, 1);
    assert_int_equal(st.lines, 3);
    assert_int_equal(st.keys, 3);
    assert_int_equal(st.skipped_zero, 0);
    assert_int_equal(st.skipped_min, 0);
    assert_int_equal(st.ignored_files, 0);
    assert_int_equal(st.bytes, file_size(p));
    collected_free(&c);
}

static void test_counted_crlf_no_final_newline(void **state)
{
    (void)state;
    char p[256];
    write_text(p, sizeof(p), "crlf.txt", H_PASSWORD ":1\r\n" H_123456 ":2\r\n" H_ONES ":3");
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, NULL, &c, &st, &err), 0);
    const char *want[] = {H_PASSWORD, H_123456, H_ONES};
    assert_keys(&c, want, 3);
    assert_int_equal(st.lines, 3);
    assert_int_equal(st.keys, 3);
    collected_free(&c);

    /* a last line ending in CR without LF */
    write_text(p, sizeof(p), "crlf2.txt", H_PASSWORD ":1\r\n" H_ONES ":3\r");
    memset(&st, 0, sizeof(st));
    assert_int_equal(run(p, NULL, &c, &st, &err), 0);
    const char *want2[] = {H_PASSWORD, H_ONES};
    assert_keys(&c, want2, 2);
    collected_free(&c);
}

static void test_case_mixed_unsorted(void **state)
{
    (void)state;
    char p[256];
    write_text(p, sizeof(p), "case.txt",
               "ffffffffffffffffffffffffffffffffffffffff:9\n"
               "5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8:8\n"
               "0123456789abcdefABCDEF0123456789abcdef01:7\n"
               "000000005Ad76bD555c1D6d771dE417a4B87e4b4:6\n");
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, NULL, &c, &st, &err), 0);
    const char *want[] = {H_ONES, H_PASSWORD, "0123456789ABCDEFABCDEF0123456789ABCDEF01", H_ZEROS};
    assert_keys(&c, want, 4);
    /* file order is kept */
    assert_string_equal(c.hex[0], H_ONES);
    assert_string_equal(c.hex[3], H_ZEROS);
    collected_free(&c);
}

static void test_zero_counts_and_blank_lines(void **state)
{
    (void)state;
    char p[256];
    write_text(p, sizeof(p), "zero.txt",
               "\n" H_PASSWORD ":10\r\n\r\n" H_ONES ":0\n" H_123456 ":1\n" H_ZEROS ":000\n"
               "\n" H_SEQ ":007\n\n");
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, NULL, &c, &st, &err), 0);
    const char *want[] = {H_PASSWORD, H_123456, H_SEQ};
    assert_keys(&c, want, 3);
    assert_int_equal(st.lines, 9);
    assert_int_equal(st.keys, 3);
    assert_int_equal(st.skipped_zero, 2);
    assert_int_equal(st.skipped_min, 0);
    collected_free(&c);
}

static void test_min_count(void **state)
{
    (void)state;
    char p[256];
    write_text(p, sizeof(p), "min.txt",
               H_PASSWORD ":10\n" H_123456 ":9\n" H_ONES ":0\n" H_ZEROS ":11\n" H_SEQ ":1\n");
    br_input_opts o = {.min_count = 10};
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, &o, &c, &st, &err), 0);
    const char *want[] = {H_PASSWORD, H_ZEROS};
    assert_keys(&c, want, 2);
    assert_int_equal(st.keys, 2);
    assert_int_equal(st.skipped_min, 2);
    assert_int_equal(st.skipped_zero, 1);
    collected_free(&c);

    /* 0 and 1 keep every counted line */
    for (uint64_t m = 0; m <= 1; m++) {
        o.min_count = m;
        memset(&st, 0, sizeof(st));
        assert_int_equal(run(p, &o, &c, &st, &err), 0);
        const char *all[] = {H_PASSWORD, H_123456, H_ZEROS, H_SEQ};
        assert_keys(&c, all, 4);
        assert_int_equal(st.skipped_min, 0);
        assert_int_equal(st.skipped_zero, 1);
        collected_free(&c);
    }

    /* the largest count and a min_count of 2^64-1 */
    write_text(p, sizeof(p), "max.txt",
               H_PASSWORD ":18446744073709551615\n" H_123456 ":18446744073709551614\n" H_ONES
                          ":00000000000000000000000000000018446744073709551615\n");
    o.min_count = UINT64_MAX;
    memset(&st, 0, sizeof(st));
    assert_int_equal(run(p, &o, &c, &st, &err), 0);
    const char *want2[] = {H_PASSWORD, H_ONES};
    assert_keys(&c, want2, 2);
    assert_int_equal(st.skipped_min, 1);
    collected_free(&c);
}

static void test_plain_list(void **state)
{
    (void)state;
    char p[256];
    write_text(p, sizeof(p), "plain.txt",
               "\r\n" H_PASSWORD "\r\n"
               "7c4a8d09ca3762af61e59520943dc26494f8941b\r\n\r\n" H_ONES "\r\n" H_PASSWORD);
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, NULL, &c, &st, &err), 0);
    const char *want[] = {H_PASSWORD, H_123456, H_ONES, H_PASSWORD};
    assert_keys(&c, want, 4);
    assert_int_equal(st.lines, 6);
    assert_int_equal(st.keys, 4);
    assert_int_equal(st.skipped_zero, 0);
    collected_free(&c);

    /* min_count 1 is fine with a plain list, 2 is an error naming the file
     * and the first non-blank line */
    br_input_opts o = {.min_count = 1};
    assert_int_equal(run(p, &o, &c, &st, &err), 0);
    collected_free(&c);
    o.min_count = 2;
    assert_int_equal(run(p, &o, &c, &st, &err), -EINVAL);
    assert_err(&err, p,
               ":2: a plain hash list has no counts, so the minimum count 2 cannot be applied");
    assert_int_equal(c.n, 0);
    collected_free(&c);
}

static void test_plaintext(void **state)
{
    (void)state;
    char p[256];
    static const char text[] = "password\n"
                               "Password\r\n"
                               "\n"
                               "\r\n"
                               " pass word \n" /* spaces are part of the password */
                               "a\r\r\n"       /* only one CR is removed */
                               "\xc3\xa9t\xc3\xa9\n"
                               "123456";
    write_text(p, sizeof(p), "plain-pw.txt", text);
    br_input_opts o = {.plaintext = true};
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, &o, &c, &st, &err), 0);
    char h[6][2 * BR_SHA1_LEN + 1];
    sha1_hex("Password", 8, h[0]);
    sha1_hex(" pass word ", 11, h[1]);
    sha1_hex("a\r", 2, h[2]);
    sha1_hex("\xc3\xa9t\xc3\xa9", 5, h[3]);
    const char *want[] = {H_PASSWORD, h[0], h[1], h[2], h[3], H_123456};
    assert_keys(&c, want, 6);
    assert_string_equal(c.hex[0], "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8");
    assert_int_equal(st.lines, 8);
    assert_int_equal(st.keys, 6);
    assert_int_equal(st.bytes, strlen(text));
    collected_free(&c);

    /* a hash-looking line is just a password in plaintext mode */
    write_text(p, sizeof(p), "plain-pw2.txt", H_PASSWORD ":1\n");
    assert_int_equal(run(p, &o, &c, &st, &err), 0);
    sha1_hex(H_PASSWORD ":1", 42, h[0]);
    const char *want2[] = {h[0]};
    assert_keys(&c, want2, 1);
    collected_free(&c);
}

static void test_plaintext_limits(void **state)
{
    (void)state;
    char p[256];
    br_input_opts o = {.plaintext = true};
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    size_t n = BR_INPUT_MAX_PLAIN_LINE;
    char *buf = xmalloc(3 * n + 64);

    /* exactly the limit, with CRLF: fine */
    memset(buf, 'Q', n);
    memcpy(buf + n, "\r\nok\n", 5);
    tpath(p, sizeof(p), "pw-limit.txt");
    write_bytes(p, buf, n + 5);
    assert_int_equal(run(p, &o, &c, &st, &err), 0);
    assert_int_equal(c.n, 2);
    char h[2 * BR_SHA1_LEN + 1];
    sha1_hex(buf, n, h);
    assert_string_equal(c.hex[0], h);
    collected_free(&c);

    /* one more: error at line 3, and the message holds no password bytes */
    memcpy(buf, "ok\nfine\n", 8);
    memset(buf + 8, 'Q', n + 1);
    memcpy(buf + 8 + n + 1, "\nafter\n", 7);
    tpath(p, sizeof(p), "pw-long.txt");
    write_bytes(p, buf, 8 + n + 1 + 7);
    assert_int_equal(run(p, &o, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ":3: line is longer than 8192 bytes");
    assert_null(strstr(err.text, "QQ"));
    assert_int_equal(c.n, 2);
    collected_free(&c);

    /* too long as the last line, without LF */
    tpath(p, sizeof(p), "pw-long2.txt");
    write_bytes(p, buf, 8 + n + 1);
    assert_int_equal(run(p, &o, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ":3: line is longer than 8192 bytes");
    collected_free(&c);

    /* a very long line without LF, longer than the limit plus a CR */
    memset(buf, 'Q', 3 * n);
    tpath(p, sizeof(p), "pw-long3.txt");
    write_bytes(p, buf, 3 * n);
    assert_int_equal(run(p, &o, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ":1: line is longer than 8192 bytes");
    collected_free(&c);
    free(buf);

    /* NUL byte */
    static const char nul[] = "first\nZq9s\0ecret\n";
    tpath(p, sizeof(p), "pw-nul.txt");
    write_bytes(p, nul, sizeof(nul) - 1);
    assert_int_equal(run(p, &o, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ":2: character 5 is a NUL byte (binary or UTF-16 input?)");
    assert_null(strstr(err.text, "Zq9"));
    collected_free(&c);

    /* UTF-16 input shows up as NUL bytes */
    static const char u16[] = "\xff\xfep\0w\0\n\0";
    tpath(p, sizeof(p), "pw-utf16.txt");
    write_bytes(p, u16, sizeof(u16) - 1);
    assert_int_equal(run(p, &o, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ":1: character 4 is a NUL byte (binary or UTF-16 input?)");
    collected_free(&c);

    /* UTF-8 byte order mark */
    write_text(p, sizeof(p), "pw-bom.txt", "\xef\xbb\xbfpassword\n");
    assert_int_equal(run(p, &o, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ":1: the file starts with a UTF-8 byte order mark");
    collected_free(&c);

    /* no counts: min_count > 1 is an error naming the file */
    write_text(p, sizeof(p), "pw-min.txt", "password\n");
    o.min_count = 5;
    assert_int_equal(run(p, &o, &c, &st, &err), -EINVAL);
    assert_err(&err, p,
               ": plaintext input has no counts, so the minimum count 5 cannot be applied");
    assert_int_equal(c.n, 0);
    collected_free(&c);
}

/* A file of several MiB: lines cut by the read buffer are joined right. */
static void test_big_file(void **state)
{
    (void)state;
    char p[256];
    tpath(p, sizeof(p), "big.txt");
    const size_t nlines = 80000;
    char *buf = xmalloc(nlines * 64);
    size_t len = 0, nzero = 0, nkeys = 0;
    uint64_t seed = 42, sum = 0, xr = 0;
    for (size_t i = 0; i < nlines; i++) {
        uint8_t h[BR_SHA1_LEN];
        for (size_t j = 0; j < BR_SHA1_LEN; j += 4)
            br_store_le32(h + j, (uint32_t)br_splitmix64(&seed));
        char hex[2 * BR_SHA1_LEN + 1];
        br_hex_encode_upper(h, sizeof(h), hex);
        uint64_t count = i % 7 == 3 ? 0 : br_splitmix64(&seed) >> (i % 64);
        if (count == 0)
            nzero++;
        else {
            nkeys++;
            sum += br_hash_key64(h);
            xr ^= br_load_be64(h + 12);
        }
        len += (size_t)sprintf(buf + len, "%s:%" PRIu64 "%s", hex, count, i % 3 ? "\r\n" : "\n");
    }
    write_bytes(p, buf, len);
    free(buf);
    assert_true(len > 3 * 1024 * 1024);

    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, NULL, &c, &st, &err), 0);
    assert_int_equal(c.n, nkeys);
    assert_true(c.sum == sum);
    assert_true(c.xr == xr);
    assert_int_equal(st.lines, nlines);
    assert_int_equal(st.keys, nkeys);
    assert_int_equal(st.skipped_zero, nzero);
    assert_int_equal(st.bytes, len);
    collected_free(&c);
}

/* A big plaintext file: every password hashed once, the right one. */
static void test_big_plaintext(void **state)
{
    (void)state;
    char p[256];
    tpath(p, sizeof(p), "big-pw.txt");
    const size_t nlines = 150000;
    char *buf = xmalloc(nlines * 16);
    size_t len = 0;
    uint64_t sum = 0, xr = 0;
    for (size_t i = 0; i < nlines; i++) {
        char pw[32];
        int n = snprintf(pw, sizeof(pw), "pw%zu", i * 7919);
        uint8_t d[BR_SHA1_LEN];
        assert_int_equal(br_sha1(pw, (size_t)n, d), 0);
        sum += br_hash_key64(d);
        xr ^= br_load_be64(d + 12);
        len += (size_t)sprintf(buf + len, "%s\n", pw);
    }
    write_bytes(p, buf, len);
    free(buf);
    assert_true(len > 1024 * 1024);
    br_input_opts o = {.plaintext = true};
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, &o, &c, &st, &err), 0);
    assert_int_equal(c.n, nlines);
    assert_true(c.sum == sum);
    assert_true(c.xr == xr);
    collected_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counted_lf),
        cmocka_unit_test(test_counted_crlf_no_final_newline),
        cmocka_unit_test(test_case_mixed_unsorted),
        cmocka_unit_test(test_zero_counts_and_blank_lines),
        cmocka_unit_test(test_min_count),
        cmocka_unit_test(test_plain_list),
        cmocka_unit_test(test_plaintext),
        cmocka_unit_test(test_plaintext_limits),
        cmocka_unit_test(test_big_file),
        cmocka_unit_test(test_big_plaintext),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
