/* SPDX-License-Identifier: MIT */
/* Tests of the password-input readers (lib/filter/hibp_input.c) on per-prefix
 * directories (XXXXX.txt files of 35-digit suffixes, as the downloader writes
 * them): order, ignored files, min_count, errors naming the prefix file, empty
 * directories. */
#include <errno.h>
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

#include "core/hash.h"
#include "filter/hibp_input.h"
#include "hibp_input_helpers.h"
#include "core/util.h"

#define NO_PREFIX_FILES                                                                            \
    ": no prefix files (XXXXX.txt, XXXXX.txt.gz, XXXXX.gz, XXXXX.txt.bz2, XXXXX.bz2 or XXXXX, "    \
    "also "                                                                                        \
    "in subdirectories)"

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
    /* ignored: the downloader's index, a partial download; an empty
     * directory is searched */
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
    assert_int_equal(st.ignored_files, 2);
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
    assert_err(&err, d, NO_PREFIX_FILES);
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
    assert_err(&err, d, NO_PREFIX_FILES);
    assert_int_equal(st.ignored_files, 4);
    assert_int_equal(br_input_size(d), 0);
    collected_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_dir),
        cmocka_unit_test(test_prefix_dir_empty),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
