/* SPDX-License-Identifier: MIT */
/* bzip2-compressed corpora (lib/filter/hibp_input_decomp.c, docs/corpus.md
 * "Corpus formats"): golden tests of a single file (one stream, and two
 * concatenated as pbzip2 writes them) and of the pwned-pw-download tree
 * (i/j/k/ijkxy, each file compressed to ijkxy.bz2, curl.out files beside
 * them); corrupt, cut and trailing data name the file and the last good
 * line; a malformed line inside keeps its FILE:LINE. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bzlib.h>
#include <cmocka.h>

#include "hibp_input.h"
#include "hibp_input_helpers.h"
#include "util.h"

/* text bzip2-compressed into path; with two, as two streams. */
static void write_bz2(const char *path, const char *text, bool two)
{
    size_t len = strlen(text), half = two ? len / 2 : len, out_len = 0;
    char *out = xmalloc(2 * len + 1200);
    for (int part = 0; part < (two ? 2 : 1); part++) {
        const char *src = part ? text + half : text;
        unsigned n = (unsigned)(part ? len - half : half), dn = (unsigned)(2 * len + 600);
        assert_int_equal(BZ2_bzBuffToBuffCompress(out + out_len, &dn, (char *)src, n, 9, 0, 0),
                         BZ_OK);
        out_len += dn;
    }
    write_bytes(path, out, out_len);
    free(out);
}

static const char *const golden_keys[] = {H_PASSWORD, H_123456, H_SEQ};
#define GOLDEN_TEXT H_PASSWORD ":10437277\r\n" H_123456 ":37359195\r\n" H_ZEROS ":0\r\n" H_SEQ ":1"

static void test_single_file(void **state)
{
    (void)state;
    char p[512];
    for (int two = 0; two < 2; two++) {
        tpath(p, sizeof(p), two ? "two.txt.bz2" : "pwned.txt.bz2");
        write_bz2(p, GOLDEN_TEXT, two);
        collected c = {0};
        br_input_stats st = {0};
        br_error err;
        if (run(p, NULL, &c, &st, &err) != 0)
            fail_msg("%s", err.text);
        assert_keys(&c, golden_keys, BR_ARRAY_SIZE(golden_keys));
        assert_int_equal(st.lines, 4);
        assert_int_equal(st.skipped_zero, 1);
        assert_int_equal(st.bytes, strlen(GOLDEN_TEXT));
        collected_free(&c);
    }
}

/* pwned-pw-download's tree, bzip2-compressed: 5/B/A/5BAA6.bz2, ... */
static void test_tree(void **state)
{
    (void)state;
    char d[256], p[512];
    make_dir(d, sizeof(d), "pwned.pw.tree");
    static const char *const dirs[] = {"5",     "5/B", "5/B/A", "7",    "7/C",
                                       "7/C/4", "0",   "0/1",   "0/1/2"};
    for (size_t i = 0; i < BR_ARRAY_SIZE(dirs); i++) {
        snprintf(p, sizeof(p), "pwned.pw.tree/%s", dirs[i]);
        char ignored[512];
        make_dir(ignored, sizeof(ignored), p);
    }
    snprintf(p, sizeof(p), "%s/5/B/A/5BAA6.bz2", d);
    write_bz2(p, "1E4C9B93F3F0682250B6CF8331B7EE68FD8:10437277\n", false);
    snprintf(p, sizeof(p), "%s/5/B/A/curl.out", d);
    write_str(p, "200\n");
    snprintf(p, sizeof(p), "%s/7/C/4/7C4A8.bz2", d);
    write_bz2(p, "D09CA3762AF61E59520943DC26494F8941B:37359195\n", true);
    snprintf(p, sizeof(p), "%s/0/1/2/01234", d); /* not compressed: the tool's own name */
    write_str(p, "56789ABCDEF0123456789ABCDEF01234567:2\n");
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    if (run(d, NULL, &c, &st, &err) != 0)
        fail_msg("%s", err.text);
    assert_keys(&c, golden_keys, BR_ARRAY_SIZE(golden_keys));
    assert_int_equal(st.files, 3);
    assert_int_equal(st.ignored_files, 1);
    collected_free(&c);
}

static void expect_error(const char *p, const char *want)
{
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, NULL, &c, &st, &err), -EINVAL);
    assert_err(&err, p, want);
    collected_free(&c);
}

static void test_bad_bzip2(void **state)
{
    (void)state;
    char p[512];
    /* cut short: the end of the stream is missing */
    tpath(p, sizeof(p), "cut.txt.bz2");
    write_bz2(p, GOLDEN_TEXT, false);
    assert_int_equal(truncate(p, (off_t)(file_size(p) - 8)), 0);
    expect_error(p, ": not valid bzip2 data after line 3 (unexpected end of file)");
    /* bytes after the last stream */
    tpath(p, sizeof(p), "trailing.bz2");
    write_bz2(p, GOLDEN_TEXT, false);
    FILE *f = fopen(p, "ab");
    assert_non_null(f);
    fputs("garbage", f);
    fclose(f);
    expect_error(p, ": not valid bzip2 data after line 3 (no bzip2 stream header: data after the "
                    "end?)");
    /* a damaged block */
    tpath(p, sizeof(p), "damaged.bz2");
    write_bz2(p, GOLDEN_TEXT, false);
    f = fopen(p, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 20, SEEK_SET), 0);
    fputc(0x55, f);
    fputc(0xAA, f);
    fclose(f);
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, NULL, &c, &st, &err), -EINVAL);
    assert_non_null(strstr(err.text, ": not valid bzip2 data after line "));
    assert_int_equal(strncmp(err.text, p, strlen(p)), 0);
    collected_free(&c);
    /* a malformed line inside keeps its FILE:LINE, never quoting the line */
    tpath(p, sizeof(p), "badline.bz2");
    write_bz2(p, H_PASSWORD ":1\nnot a hash\n", false);
    expect_error(p, ":2: character 1 is not a hex digit");
}

/* bzip2 data on a pipe (standard input) cannot be told before zlib reads
 * it: it is refused as such, not as a malformed first line. */
static void test_pipe(void **state)
{
    (void)state;
    char p[512];
    tpath(p, sizeof(p), "pipe.bz2");
    write_bz2(p, GOLDEN_TEXT, false);
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    char data[4096];
    size_t len = fread(data, 1, sizeof(data), f);
    fclose(f);
    assert_true(len > 0 && len < sizeof(data));
    int fds[2], saved = dup(STDIN_FILENO);
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], data, len), (ssize_t)len); /* fits the pipe's buffer */
    close(fds[1]);
    assert_int_equal(dup2(fds[0], STDIN_FILENO), STDIN_FILENO);
    close(fds[0]);
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    int rc = run("-", NULL, &c, &st, &err);
    assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
    close(saved);
    assert_int_equal(rc, -EINVAL);
    assert_string_equal(err.text, "<stdin>: bzip2 data cannot be read from a pipe: give its file "
                                  "name, or decompress it with bzcat");
    assert_int_equal(c.n, 0);
    collected_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_file),
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_bad_bzip2),
        cmocka_unit_test(test_pipe),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
