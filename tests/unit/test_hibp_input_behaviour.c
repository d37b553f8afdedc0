/* SPDX-License-Identifier: MIT */
/* Tests of the password-input readers (lib/filter/hibp_input.c): missing and empty
 * files, a callback that stops the read, NULL callback and stats summed over
 * files, progress reports and input sizes (FIFO too), "-" reading stdin. */
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
        cmocka_unit_test(test_io_errors),
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_callback_stops),
        cmocka_unit_test(test_null_callback_and_stats_sum),
        cmocka_unit_test(test_progress_and_size),
        cmocka_unit_test(test_stdin_pipe),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
