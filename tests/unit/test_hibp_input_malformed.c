/* SPDX-License-Identifier: MIT */
/* Tests of the password-input readers (lib/filter/hibp_input.c): every malformed
 * line of a counted or plain hash list is refused with its exact FILE:LINE
 * reason, including over-long lines cut by the read buffer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/hash.h"
#include "filter/hibp_input.h"
#include "hibp_input_helpers.h"
#include "core/util.h"

/* ---- malformed lines ---- */

typedef struct bad_case {
    const char *text;
    size_t len; /* 0: strlen(text) */
    uint64_t min_count;
    const char *want; /* the error after the path */
} bad_case;

#define G1 H_PASSWORD ":10\n"
#define G2 H_123456 ":5\r\n"

static const bad_case bad_cases[] = {
    {G1 G2 "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD:3\n", 0, 0,
     ":3: the hash has 39 hex digits, expected 40"},
    {G1 G2 "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8A:3\n", 0, 0,
     ":3: the hash has 41 hex digits, expected 40"},
    {G1 G2 "5BAA61E4C9B93F3FX682250B6CF8331B7EE68FD8:3\n", 0, 0,
     ":3: character 17 is not a hex digit"},
    {G1 G2 H_ONES "\n", 0, 0, ":3: the count is missing (the first line of the file has one)"},
    {G1 G2 H_ONES ":\n", 0, 0, ":3: the count after ':' is empty"},
    {G1 G2 H_ONES ":\r\n" G1, 0, 0, ":3: the count after ':' is empty"},
    {G1 G2 H_ONES ":12a\n", 0, 0, ":3: character 44 is not a decimal digit"},
    {G1 G2 H_ONES ":-1\n", 0, 0, ":3: character 42 is not a decimal digit"},
    {G1 G2 H_ONES ":+1\n", 0, 0, ":3: character 42 is not a decimal digit"},
    {G1 G2 H_ONES ":1.5\n", 0, 0, ":3: character 43 is not a decimal digit"},
    {G1 G2 H_ONES ":18446744073709551616\n", 0, 0,
     ":3: the count is larger than 18446744073709551615"},
    {G1 G2 H_ONES ":99999999999999999999999999\n", 0, 0,
     ":3: the count is larger than 18446744073709551615"},
    {G1 G2 H_ONES ":12:3\n", 0, 0,
     ":3: character 44 is a second ':' (extra field), expected a decimal digit"},
    {G1 G2 H_ONES "::3\n", 0, 0,
     ":3: character 42 is a second ':' (extra field), expected a decimal digit"},
    {G1 G2 " " H_ONES ":1\n", 0, 0, ":3: character 1 is a space, expected a hex digit"},
    {G1 G2 H_ONES ":1 \n", 0, 0, ":3: character 43 is a space, expected a decimal digit"},
    {G1 G2 H_ONES ": 1\n", 0, 0, ":3: character 42 is a space, expected a decimal digit"},
    {G1 G2 H_ONES " :1\n", 0, 0, ":3: character 41 is a space, expected ':'"},
    {G1 G2 H_ONES "\t1\n", 0, 0, ":3: character 41 is a tab, expected ':'"},
    {G1 G2 "   \n", 0, 0, ":3: character 1 is a space, expected a hex digit"},
    {G1 G2 H_ONES ":1\r\r\n", 0, 0,
     ":3: character 43 is a carriage return, expected a decimal digit"},
    {G1 G2 "FFFF\0FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:1\n",
     sizeof(G1 G2 "FFFF\0FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:1\n") - 1, 0,
     ":3: character 5 is a NUL byte, expected a hex digit"},
    {G1 G2 H_ONES ":1\0\n", sizeof(G1 G2 H_ONES ":1\0\n") - 1, 0,
     ":3: character 43 is a NUL byte, expected a decimal digit"},
    {G1 G2 ":5\n", 0, 0, ":3: the hash has 0 hex digits, expected 40"},
    {G1 G2 "x\n", 0, 0, ":3: character 1 is not a hex digit"},
    {"\n\n" H_ONES ":1:\n", 0, 0,
     ":3: character 43 is a second ':' (extra field), expected a decimal digit"},
    {"\r\n\r\n"
     "Z\r\n",
     0, 0, ":3: character 1 is not a hex digit"},
    /* no final newline on the bad line */
    {G1 G2 H_ONES ":x", 0, 0, ":3: character 42 is not a decimal digit"},
    /* plain list: the other form, trailing blanks */
    {H_ONES "\n" H_PASSWORD "\n" H_123456 ":5\n", 0, 0,
     ":3: the line has a count, but the first line of the file has none"},
    {H_ONES "\n" H_PASSWORD "\n" H_123456 "\t\n", 0, 0,
     ":3: character 41 is a tab, expected the end of the line"},
    {H_ONES "\n" H_PASSWORD "\n" H_123456 " \n", 0, 0,
     ":3: character 41 is a space, expected the end of the line"},
    {H_ONES "\n" H_PASSWORD "\n"
            "7C4A8D09CA3762AF61E59520943DC26494F894\n",
     0, 0, ":3: the hash has 38 hex digits, expected 40"},
    /* plain list with a minimum count: error at the first non-blank line */
    {"\n\n" H_ONES "\n", 0, 2,
     ":3: a plain hash list has no counts, so the minimum count 2 cannot be applied"},
    /* a byte order mark is ignored at the start of a line only */
    {G1 "FFFFF\xef\xbb\xbf"
        "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:1\n",
     0, 0, ":2: character 6 is not a hex digit"},
    {"\xef\xbb\xbf\xef\xbb\xbf" G1, 0, 0, ":1: character 1 is not a hex digit"},
    /* NTLM: 32-hex hashes */
    {G1 "8846F7EAEE8FB117AD06BDD830B7586C:5\n", 0, 0,
     ":2: the hash has 32 hex digits: this is an NTLM corpus; use --kind password-ntlm"},
    /* a 35-digit suffix line in a single file */
    {G1 G2 "0005AD76BD555C1D6D771DE417A4B87E4B4:3\n", 0, 0,
     ":3: the hash has 35 hex digits, expected 40"},
};

static void test_malformed_matrix(void **state)
{
    (void)state;
    char p[256];
    for (size_t i = 0; i < BR_ARRAY_SIZE(bad_cases); i++) {
        const bad_case *b = &bad_cases[i];
        char name[32];
        snprintf(name, sizeof(name), "bad%02zu.txt", i);
        tpath(p, sizeof(p), name);
        write_bytes(p, b->text, b->len ? b->len : strlen(b->text));
        br_input_opts o = {.min_count = b->min_count};
        collected c = {0};
        br_input_stats st = {0};
        br_error err;
        int rc = run(p, &o, &c, &st, &err);
        if (rc != -EINVAL || strstr(err.text, b->want) == NULL)
            print_error("case %zu: rc %d, err '%s', want '%s'\n", i, rc, err.text, b->want);
        assert_int_equal(rc, -EINVAL);
        assert_err(&err, p, b->want);
        collected_free(&c);
    }
}

/* Every byte value at digit positions on both sides of each 16-digit block
 * of the decoder: accepted with the right key exactly when it is a hex
 * digit (any case), refused otherwise. */
static void test_every_byte_in_a_hash(void **state)
{
    (void)state;
    static const size_t pos[] = {0, 8, 15, 16, 31, 32, 39};
    char p[256], line[128];
    tpath(p, sizeof(p), "bytes.txt");
    for (size_t i = 0; i < BR_ARRAY_SIZE(pos); i++) {
        for (unsigned b = 0; b < 256; b++) {
            char hash[2 * BR_SHA1_LEN + 1];
            memcpy(hash, H_SEQ, sizeof(hash));
            hash[pos[i]] = (char)b;
            int len = snprintf(line, sizeof(line), "%s", G1);
            memcpy(line + len, hash, 2 * BR_SHA1_LEN);
            len += 2 * BR_SHA1_LEN;
            len += snprintf(line + len, sizeof(line) - (size_t)len, ":3\n");
            write_bytes(p, line, (size_t)len);
            br_input_opts o = {0};
            collected c = {0};
            br_input_stats st = {0};
            br_error err;
            int rc = run(p, &o, &c, &st, &err);
            bool hex = (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
            if (hex != (rc == 0))
                print_error("position %zu, byte 0x%02x: rc %d\n", pos[i], b, rc);
            assert_int_equal(rc, hex ? 0 : -EINVAL);
            if (hex) {
                assert_int_equal(c.n, 2);
                hash[pos[i]] = (char)(b >= 'a' ? b - 'a' + 'A' : b);
                assert_string_equal(c.hex[1], hash);
            }
            collected_free(&c);
        }
    }
}

static void test_long_hash_lines(void **state)
{
    (void)state;
    char p[256];
    const size_t big = 3u << 20; /* several read buffers */
    char *buf = xmalloc(big + 256);
    br_error err;
    collected c = {0};
    br_input_stats st = {0};

    /* 2000 hex digits on line 3 */
    size_t len = sizeof(G1 G2) - 1;
    memcpy(buf, G1 G2, len);
    memset(buf + len, 'A', 2000);
    len += 2000;
    memcpy(buf + len, ":1\n", 3);
    len += 3;
    tpath(p, sizeof(p), "long1.txt");
    write_bytes(p, buf, len);
    assert_int_equal(run(p, NULL, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ":3: line is longer than 1024 bytes");
    collected_free(&c);

    /* the same without LF at the end of the file */
    write_bytes(p, buf, len - 1);
    assert_int_equal(run(p, NULL, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ":3: line is longer than 1024 bytes");
    collected_free(&c);

    /* good lines up to near the end of the first read buffer, then a long
     * line that the buffer cuts */
    len = 0;
    size_t nl = 0;
    while (len < (1u << 20) - 100) {
        len += (size_t)sprintf(buf + len, "%s", G1);
        nl++;
    }
    memset(buf + len, 'b', 5000);
    len += 5000;
    buf[len++] = '\n';
    tpath(p, sizeof(p), "long2.txt");
    write_bytes(p, buf, len);
    memset(&st, 0, sizeof(st));
    assert_int_equal(run(p, NULL, &c, &st, &err), -EINVAL);
    char want[64];
    snprintf(want, sizeof(want), ":%zu: line is longer than 1024 bytes", nl + 1);
    assert_err(&err, p, want);
    assert_int_equal(c.n, nl);
    collected_free(&c);

    /* a bad line straddling the 1 MiB boundary is found with its number */
    len = 0;
    nl = 0;
    while (len < (1u << 20) - 20) {
        len += (size_t)sprintf(buf + len, "%s", G2);
        nl++;
    }
    len += (size_t)sprintf(buf + len, "%s", H_ONES ":12G4\r\n" G1);
    tpath(p, sizeof(p), "long3.txt");
    write_bytes(p, buf, len);
    assert_int_equal(run(p, NULL, &c, &st, &err), -EINVAL);
    snprintf(want, sizeof(want), ":%zu: character 44 is not a decimal digit", nl + 1);
    assert_err(&err, p, want);
    collected_free(&c);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malformed_matrix),
        cmocka_unit_test(test_every_byte_in_a_hash),
        cmocka_unit_test(test_long_hash_lines),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
