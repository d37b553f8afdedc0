/* SPDX-License-Identifier: MIT */
/* Tests of the password-input readers (lib/hibp_input.c) on real files in a
 * temporary directory: every accepted input shape, every malformed line. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "hash.h"
#include "hibp_input.h"
#include "util.h"

#define H_PASSWORD "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8" /* SHA-1("password") */
#define H_123456 "7C4A8D09CA3762AF61E59520943DC26494F8941B"   /* SHA-1("123456") */
#define H_ZEROS "000000005AD76BD555C1D6D771DE417A4B87E4B4"
#define H_ONES "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
#define H_SEQ "0123456789ABCDEF0123456789ABCDEF01234567"

static char tmpdir[64];

/* ---- helpers ---- */

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    return p;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_hibp_input.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    return nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* path = tmpdir/name */
static void tpath(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", tmpdir, name);
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(br_write_all(fd, data, len), 0);
    assert_int_equal(close(fd), 0);
}

static void write_str(const char *path, const char *text)
{
    write_bytes(path, text, strlen(text));
}

/* Write a NUL-terminated text to tmpdir/name; the full path goes to out. */
static void write_text(char *out, size_t size, const char *name, const char *text)
{
    tpath(out, size, name);
    write_bytes(out, text, strlen(text));
}

static void make_dir(char *out, size_t size, const char *name)
{
    tpath(out, size, name);
    assert_int_equal(mkdir(out, 0755), 0);
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

typedef struct collected {
    char (*hex)[2 * BR_SHA1_LEN + 1];
    size_t n, cap;
    size_t stop_after; /* 0: never stop */
    /* summary of every key, for big inputs */
    uint64_t sum, xr;
} collected;

static int collect(void *ctx, const uint8_t sha1[BR_SHA1_LEN])
{
    collected *c = ctx;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->hex = realloc(c->hex, c->cap * sizeof(*c->hex));
        assert_non_null(c->hex);
    }
    br_hex_encode_upper(sha1, BR_SHA1_LEN, c->hex[c->n++]);
    c->sum += br_hash_key64(sha1);
    c->xr ^= br_load_be64(sha1 + 12);
    if (c->stop_after && c->n == c->stop_after)
        return -ECANCELED;
    return 0;
}

static void collected_free(collected *c)
{
    free(c->hex);
    memset(c, 0, sizeof(*c));
}

static int cmp_hex(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The keys delivered are exactly the expected set (with multiplicity). */
static void assert_keys(collected *c, const char *const *want, size_t n)
{
    assert_int_equal(c->n, n);
    char(*w)[2 * BR_SHA1_LEN + 1] = calloc(n + 1, sizeof(*w));
    assert_non_null(w);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(strlen(want[i]), 2 * BR_SHA1_LEN);
        memcpy(w[i], want[i], 2 * BR_SHA1_LEN + 1);
    }
    char(*got)[2 * BR_SHA1_LEN + 1] = calloc(n + 1, sizeof(*got));
    assert_non_null(got);
    memcpy(got, c->hex, n * sizeof(*got));
    qsort(w, n, sizeof(*w), cmp_hex);
    qsort(got, n, sizeof(*got), cmp_hex);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(got[i], w[i]);
    free(w);
    free(got);
}

static int run(const char *path, const br_input_opts *o, collected *c, br_input_stats *st,
               br_error *err)
{
    memset(err, 0, sizeof(*err));
    return br_input_read(path, o, collect, c, st, err);
}

/* err is exactly "<path><suffix>". */
static void assert_err(const br_error *err, const char *path, const char *suffix)
{
    char want[1024];
    snprintf(want, sizeof(want), "%s%s", path, suffix);
    assert_string_equal(err->text, want);
}

static void sha1_hex(const char *s, size_t len, char out[2 * BR_SHA1_LEN + 1])
{
    uint8_t d[BR_SHA1_LEN];
    assert_int_equal(br_sha1(s, len, d), 0);
    br_hex_encode_upper(d, sizeof(d), out);
}

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
    /* byte order mark */
    {"\xef\xbb\xbf" G1, 0, 0, ":1: the file starts with a UTF-8 byte order mark"},
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
    size_t len = (size_t)sprintf(buf, "%s%s", G1, G2);
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

/* ---- per-prefix directories ---- */

static void test_prefix_dir(void **state)
{
    (void)state;
    char d[256], p[512], tmp[512];
    make_dir(d, sizeof(d), "range");
    snprintf(p, sizeof(p), "%s/FFFFF.txt", d);
    write_str(p, "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:2\r\n"
                 "0123456789ABCDEF0123456789ABCDEF012:1\r\n"
                 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA:0\r\n" /* padding, unsorted */
                 "00000000000000000000000000000000000:0\r\n"
                 "77777777777777777777777777777777777:0");
    snprintf(p, sizeof(p), "%s/0000a.txt", d); /* a lower-case name */
    write_str(p, "bcdef0123456789abcdef0123456789abcd:7\n");
    snprintf(p, sizeof(p), "%s/00000.txt", d);
    write_str(p,
              "0005AD76BD555C1D6D771DE417A4B87E4B4:10\n\n11111111111111111111111111111111111:3\n");
    snprintf(p, sizeof(p), "%s/5BAA6.txt", d);
    write_str(p, "1E4C9B93F3F0682250B6CF8331B7EE68FD8:52256179\r\n");
    /* ignored: the downloader's index, a partial download, a directory */
    snprintf(p, sizeof(p), "%s/index.json", d);
    write_str(p, "{}");
    snprintf(p, sizeof(p), "%s/ABCDE.txt.part", d);
    write_str(p, "junk");
    snprintf(tmp, sizeof(tmp), "%s/sub", d);
    assert_int_equal(mkdir(tmp, 0755), 0);

    uint64_t prefix_bytes = 0;
    for (size_t i = 0; i < 4; i++) {
        static const char *const names[] = {"FFFFF.txt", "0000a.txt", "00000.txt", "5BAA6.txt"};
        snprintf(p, sizeof(p), "%s/%s", d, names[i]);
        prefix_bytes += file_size(p);
    }
    assert_int_equal(br_input_size(d), prefix_bytes);

    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(d, NULL, &c, &st, &err), 0);
    const char *want[] = {
        "000000005AD76BD555C1D6D771DE417A4B87E4B4",
        "0000011111111111111111111111111111111111",
        "0000ABCDEF0123456789ABCDEF0123456789ABCD",
        H_PASSWORD,
        H_ONES,
        "FFFFF0123456789ABCDEF0123456789ABCDEF012",
    };
    assert_keys(&c, want, 6);
    /* files are read in ascending prefix order */
    for (size_t i = 1; i < c.n; i++)
        assert_true(strncmp(c.hex[i - 1], c.hex[i], 5) <= 0);
    assert_string_equal(c.hex[2], "0000ABCDEF0123456789ABCDEF0123456789ABCD");
    assert_int_equal(st.files, 4);
    assert_int_equal(st.ignored_files, 3);
    assert_int_equal(st.lines, 5 + 1 + 3 + 1);
    assert_int_equal(st.keys, 6);
    assert_int_equal(st.skipped_zero, 3);
    assert_int_equal(st.bytes, prefix_bytes);
    collected_free(&c);

    /* min_count works the same; a trailing slash on the path too */
    br_input_opts o = {.min_count = 3};
    memset(&st, 0, sizeof(st));
    snprintf(tmp, sizeof(tmp), "%s/", d);
    assert_int_equal(run(tmp, &o, &c, &st, &err), 0);
    const char *want3[] = {"000000005AD76BD555C1D6D771DE417A4B87E4B4",
                           "0000011111111111111111111111111111111111",
                           "0000ABCDEF0123456789ABCDEF0123456789ABCD", H_PASSWORD};
    assert_keys(&c, want3, 4);
    assert_int_equal(st.skipped_min, 2);
    collected_free(&c);

    /* a malformed line names the prefix file and its line; no "//" */
    snprintf(p, sizeof(p), "%s/0000a.txt", d);
    write_str(p, "bcdef0123456789abcdef0123456789abcd:7\n" H_ONES ":1\n");
    assert_int_equal(run(tmp, NULL, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ":2: the hash has 40 hex digits, expected 35");
    collected_free(&c);
    write_str(p, "bcdef0123456789abcdef0123456789abcd\n");
    assert_int_equal(run(d, NULL, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ":1: the count is missing (expected SUFFIX:COUNT)");
    collected_free(&c);
    write_str(p, "bcdef0123456789abcdef0123456789abcd:7\n");

    /* plaintext cannot read a directory */
    br_input_opts po = {.plaintext = true};
    assert_int_equal(run(d, &po, &c, &st, &err), -EINVAL);
    assert_err(&err, d, ": is a directory; plaintext input must be a file");
    collected_free(&c);

    /* two names for one prefix */
    snprintf(p, sizeof(p), "%s/0000A.txt", d);
    write_str(p, "bcdef0123456789abcdef0123456789abcd:7\n");
    assert_int_equal(run(d, NULL, &c, &st, &err), -EINVAL);
    assert_non_null(strstr(err.text, ": prefix 0000A is there twice ("));
    assert_int_equal(c.n, 0);
    assert_int_equal(unlink(p), 0);
    collected_free(&c);

    /* a prefix name that is not a regular file */
    snprintf(p, sizeof(p), "%s/12345.txt", d);
    assert_int_equal(mkdir(p, 0755), 0);
    assert_int_equal(run(d, NULL, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ": not a regular file");
    assert_int_equal(rmdir(p), 0);
    collected_free(&c);
}

static void test_prefix_dir_empty(void **state)
{
    (void)state;
    char d[256], p[512];
    make_dir(d, sizeof(d), "empty-range");
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(d, NULL, &c, &st, &err), -ENOENT);
    assert_err(&err, d, ": no XXXXX.txt prefix files");
    snprintf(p, sizeof(p), "%s/index.txt", d);
    write_str(p, "x");
    snprintf(p, sizeof(p), "%s/ABCD.txt", d);
    write_str(p, "x");
    snprintf(p, sizeof(p), "%s/ABCDEF.txt", d);
    write_str(p, "x");
    snprintf(p, sizeof(p), "%s/ABCDG.txt", d);
    write_str(p, "x");
    memset(&st, 0, sizeof(st));
    assert_int_equal(run(d, NULL, &c, &st, &err), -ENOENT);
    assert_err(&err, d, ": no XXXXX.txt prefix files");
    assert_int_equal(st.ignored_files, 4);
    assert_int_equal(br_input_size(d), 0);
    collected_free(&c);
}

/* ---- other behaviour ---- */

static void test_io_errors(void **state)
{
    (void)state;
    char p[256];
    tpath(p, sizeof(p), "does-not-exist.txt");
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, NULL, &c, &st, &err), -ENOENT);
    assert_err(&err, p, ": No such file or directory");
    assert_int_equal(br_input_size(p), 0);
    assert_int_equal(st.files, 0);
}

static void test_empty_file(void **state)
{
    (void)state;
    char p[256];
    write_text(p, sizeof(p), "empty.txt", "");
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, NULL, &c, &st, &err), 0);
    assert_int_equal(c.n, 0);
    assert_int_equal(st.files, 1);
    assert_int_equal(st.lines, 0);
    write_text(p, sizeof(p), "blank.txt", "\n\r\n\n");
    assert_int_equal(run(p, NULL, &c, &st, &err), 0);
    assert_int_equal(c.n, 0);
    assert_int_equal(st.files, 2);
    assert_int_equal(st.lines, 3);
}

static void test_callback_stops(void **state)
{
    (void)state;
    char p[256];
    write_text(p, sizeof(p), "stop.txt",
               H_ONES ":1\n" H_ZEROS ":0\n" H_PASSWORD ":2\n" H_SEQ ":3\n");
    collected c = {.stop_after = 2};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, NULL, &c, &st, &err), -ECANCELED);
    assert_err(&err, p, ":3: Operation canceled");
    assert_int_equal(c.n, 2);
    assert_int_equal(st.keys, 2);
    collected_free(&c);
}

static void test_null_callback_and_stats_sum(void **state)
{
    (void)state;
    char a[256], b[256];
    write_text(a, sizeof(a), "sum-a.txt", H_ONES ":1\n" H_ZEROS ":0\n");
    write_text(b, sizeof(b), "sum-b.txt", H_PASSWORD "\n" H_SEQ "\n" H_123456 "\n");
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(br_input_read(a, NULL, NULL, NULL, &st, &err), 0);
    assert_int_equal(br_input_read(b, NULL, NULL, NULL, &st, &err), 0);
    assert_int_equal(st.files, 2);
    assert_int_equal(st.lines, 5);
    assert_int_equal(st.keys, 4);
    assert_int_equal(st.skipped_zero, 1);
    assert_int_equal(st.bytes, file_size(a) + file_size(b));
    /* no stats, no err: fine too */
    assert_int_equal(br_input_read(a, NULL, NULL, NULL, NULL, NULL), 0);
    assert_int_equal(br_input_read("/nonexistent/x", NULL, NULL, NULL, NULL, NULL), -ENOENT);
}

typedef struct prog {
    unsigned calls;
    uint64_t last_done, total;
    bool monotonic;
} prog;

static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
    prog *g = ctx;
    if (done < g->last_done)
        g->monotonic = false;
    g->calls++;
    g->last_done = done;
    g->total = total;
}

static void test_progress_and_size(void **state)
{
    (void)state;
    char p[256];
    tpath(p, sizeof(p), "progress.txt");
    size_t n = 60000, len = 0;
    char *buf = xmalloc(n * 48);
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(buf + len, "%s:%zu\n", H_SEQ, i + 1);
    write_bytes(p, buf, len);
    free(buf);
    assert_int_equal(br_input_size(p), len);
    assert_int_equal(br_input_size("-"), 0);

    prog g = {.monotonic = true};
    br_input_opts o = {.progress = on_progress, .progress_ctx = &g};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(br_input_read(p, &o, NULL, NULL, &st, &err), 0);
    assert_true(g.calls >= 2);
    assert_true(g.monotonic);
    assert_int_equal(g.last_done, len);
    assert_int_equal(g.total, len);
    assert_int_equal(st.keys, n);

    /* a FIFO has no known size */
    tpath(p, sizeof(p), "fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(br_input_size(p), 0);
}

/* "-" reads stdin, here a pipe. */
static void test_stdin_pipe(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    static const char data[] = H_ONES ":1\r\n" H_PASSWORD ":0\r\n" H_SEQ ":3";
    assert_int_equal(br_write_all(fds[1], data, sizeof(data) - 1), 0);
    close(fds[1]);
    int saved = dup(STDIN_FILENO);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fds[0], STDIN_FILENO), STDIN_FILENO);
    close(fds[0]);

    prog g = {.monotonic = true};
    br_input_opts o = {.progress = on_progress, .progress_ctx = &g};
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    int rc = run("-", &o, &c, &st, &err);
    assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
    close(saved);
    assert_int_equal(rc, 0);
    const char *want[] = {H_ONES, H_SEQ};
    assert_keys(&c, want, 2);
    assert_int_equal(g.total, 0);
    assert_int_equal(g.last_done, sizeof(data) - 1);
    collected_free(&c);

    /* an error on stdin is reported as <stdin> */
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(br_write_all(fds[1], "xyz\n", 4), 0);
    close(fds[1]);
    saved = dup(STDIN_FILENO);
    assert_int_equal(dup2(fds[0], STDIN_FILENO), STDIN_FILENO);
    close(fds[0]);
    rc = run("-", NULL, &c, &st, &err);
    assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
    close(saved);
    assert_int_equal(rc, -EINVAL);
    assert_string_equal(err.text, "<stdin>:1: character 1 is not a hex digit");
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
        cmocka_unit_test(test_malformed_matrix),
        cmocka_unit_test(test_long_hash_lines),
        cmocka_unit_test(test_prefix_dir),
        cmocka_unit_test(test_prefix_dir_empty),
        cmocka_unit_test(test_io_errors),
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_callback_stops),
        cmocka_unit_test(test_null_callback_and_stats_sum),
        cmocka_unit_test(test_progress_and_size),
        cmocka_unit_test(test_stdin_pipe),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
