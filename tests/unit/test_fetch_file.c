/* SPDX-License-Identifier: MIT */
/* br_fetch_file (lib/download/fetch_file.h) over file:// URLs: a check of
 * the first bytes stops a long body at once, the size it allows bounds the
 * rest, and the output is never written through a symbolic link. */
#include <errno.h>
#include <fcntl.h>
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

#include "fetch_file.h"
#include "testutil.h"

#define SOURCE_SIZE (8u << 20)

/* A file of SOURCE_SIZE zeros but for "HEAD" at its start. */
static char *make_source(const char *dir)
{
    char *path = tu_path("%s/source", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "HEAD", 4), 4);
    assert_int_equal(ftruncate(fd, SOURCE_SIZE), 0);
    close(fd);
    return path;
}

typedef struct head_ctx {
    int calls;
    int verdict;    /* what the check answers */
    uint64_t limit; /* the size it allows */
} head_ctx;

static int check(void *ctx, const uint8_t *head, size_t len, uint64_t *limit, char *reason,
                 size_t reason_len)
{
    head_ctx *h = ctx;
    h->calls++;
    assert_int_equal(len, 512);
    assert_memory_equal(head, "HEAD", 4);
    *limit = h->limit;
    if (h->verdict < 0)
        snprintf(reason, reason_len, "refused by the test");
    return h->verdict;
}

static off_t size_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_size;
}

static void fetch(const char *dir, const char *out, head_ctx *h, int want)
{
    char *src = make_source(dir);
    char *url = tu_path("file://%s", src);
    br_fetch_opts o = {.url = url, .check_head = check, .check_ctx = h, .head_len = 512};
    br_fetch_result res;
    br_error err = {{0}};
    assert_int_equal(br_fetch_file(out, &o, &res, &err), want);
    assert_int_equal(h->calls, 1);
    free(url);
    free(src);
}

static void test_refused_head_stops(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *out = tu_path("%s/out", dir);
    head_ctx h = {.verdict = -EINVAL};
    fetch(dir, out, &h, -EINVAL);
    assert_true(size_of(out) < 1 << 20); /* one read's worth, not 8 MiB */
    free(out);
    tu_rmrf(dir);
    free(dir);
}

static void test_limit_stops(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *out = tu_path("%s/out", dir);
    head_ctx h = {.verdict = 0, .limit = 1000};
    fetch(dir, out, &h, -EFBIG);
    assert_true(size_of(out) < 1 << 20);
    h = (head_ctx){.verdict = 0, .limit = SOURCE_SIZE};
    fetch(dir, out, &h, 0);
    assert_int_equal(size_of(out), SOURCE_SIZE);
    free(out);
    tu_rmrf(dir);
    free(dir);
}

static void test_link_not_followed(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *out = tu_path("%s/out", dir);
    char *victim = tu_path("%s/victim", dir);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("keep", f);
    fclose(f);
    assert_int_equal(symlink(victim, out), 0);
    head_ctx h = {.verdict = 0, .limit = SOURCE_SIZE};
    fetch(dir, out, &h, 0);
    assert_int_equal(size_of(victim), 4);
    struct stat st;
    assert_int_equal(lstat(out, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0644);
    free(victim);
    free(out);
    tu_rmrf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_head_stops),
        cmocka_unit_test(test_limit_stops),
        cmocka_unit_test(test_link_not_followed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
