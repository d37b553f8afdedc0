/* SPDX-License-Identifier: MIT */
/* br_fetch_file (lib/download/fetch_file.h) over file:// URLs: a check of
 * the first bytes stops a long body at once, the size it allows bounds the
 * rest, the output is never written through a symbolic link, and a filter
 * fetched with drop_cache leaves none of its pages in the page cache. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cmocka.h>

#include "download/fetch_file.h"
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

/* Pages of path in the page cache (mincore(2) of a mapping that reads
 * nothing), or -1 on tmpfs, whose pages are the file and stay. */
static long cached_pages(const char *path)
{
    struct statfs fs;
    assert_int_equal(statfs(path, &fs), 0);
    if (fs.f_type == TMPFS_MAGIC)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    size_t len = (size_t)size_of(path), pages = (len + 4095) / 4096;
    void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    assert_true(map != MAP_FAILED);
    unsigned char *vec = tu_xmalloc(pages);
    assert_int_equal(mincore(map, len, vec), 0);
    long n = 0;
    for (size_t i = 0; i < pages; i++)
        n += vec[i] & 1;
    free(vec);
    munmap(map, len);
    close(fd);
    return n;
}

/* drop_cache (a filter, docs/filter-format.md "Huge pages"): the whole new
 * body fsynced and none of it left in the page cache, so its first reader
 * reads it back in large folios; without it the body stays cached. */
static void test_drop_cache(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *src = make_source(dir), *out = tu_path("%s/out", dir);
    char *url = tu_path("file://%s", src);
    for (int drop = 0; drop < 2; drop++) {
        br_fetch_opts o = {.url = url, .drop_cache = drop};
        br_fetch_result res;
        br_error err = {{0}};
        assert_int_equal(br_fetch_file(out, &o, &res, &err), 0);
        assert_int_equal(size_of(out), SOURCE_SIZE);
        long n = cached_pages(out);
        if (n >= 0 && drop)
            assert_int_equal(n, 0);
        else if (n >= 0)
            assert_true(n > 0);
    }
    free(url);
    free(out);
    free(src);
    tu_rmrf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_head_stops),
        cmocka_unit_test(test_limit_stops),
        cmocka_unit_test(test_link_not_followed),
        cmocka_unit_test(test_drop_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
