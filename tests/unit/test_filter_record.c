/* SPDX-License-Identifier: MIT */
/* Verification records (filter_record.h): a body is left unhashed only
 * while PATH.verified matches the file in every field and is root's; a
 * byte changed through the file system makes the open hash the body again,
 * and so refuse it. */
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

#include "builder/filter_writer.h"
#include "filter/filter_file.h"
#include "filter/filter_record.h"
#include "testutil.h"

static char *write_sample(const char *dir, const char *name)
{
    char *path = tu_path("%s/%s", dir, name);
    br_filter_writer *w = NULL;
    br_error err = {{0}};
    assert_int_equal(br_filter_writer_new(path, &w, &err), 0);
    uint8_t buf[4096];
    for (size_t j = 0; j < sizeof(buf); j++)
        buf[j] = (uint8_t)(j * 7);
    assert_int_equal(br_filter_writer_write(w, buf, sizeof(buf), &err), 0);
    br_filter_header h = {
        .kind = BR_KIND_PASSWORD_SHA1,
        .algorithm = BR_ALGO_BINARY_FUSE,
        .key_encoding = BR_KEYENC_HASH_PREFIX64,
        .key_encoding_version = 1,
        .generation = 1,
        .build_time = 1764460800,
    };
    h.params[0] = 3;
    assert_int_equal(br_filter_writer_commit(w, &h, &err), 0);
    br_filter_writer_free(w);
    return path;
}

/* Hash path whole and write its record. */
static void record(const char *path)
{
    br_filter_file *f = NULL;
    br_error err = {{0}};
    assert_int_equal(br_filter_file_open(path, &f, &err), 0);
    assert_int_equal(br_filter_record_write(f, path, &err), 0);
    br_filter_file_free(f);
}

/* The open that trusts records: returns its result, *at the record's time. */
static int open_trusting(const char *path, int64_t *at, br_error *err)
{
    br_filter_file *f = NULL;
    int r = br_filter_file_open_trusting(path, (long)geteuid(), &f, err);
    *at = r == 0 ? br_filter_file_record_time(f) : -2;
    br_filter_file_free(f);
    return r;
}

/* Rewrite one body byte in place until the mtime shows it (timestamps are
 * coarse: a clock tick). */
static void flip_byte(const char *path, long off)
{
    struct stat st0, st1;
    assert_int_equal(stat(path, &st0), 0);
    FILE *w = fopen(path, "r+b");
    assert_non_null(w);
    int c;
    do {
        assert_int_equal(fseek(w, off, SEEK_SET), 0);
        c = fgetc(w);
        assert_int_equal(fseek(w, off, SEEK_SET), 0);
        assert_int_equal(fputc(c ^ 0x01, w), c ^ 0x01);
        assert_int_equal(fflush(w), 0);
        assert_int_equal(stat(path, &st1), 0);
    } while (st1.st_mtim.tv_sec == st0.st_mtim.tv_sec &&
             st1.st_mtim.tv_nsec == st0.st_mtim.tv_nsec);
    fclose(w);
}

static void test_record_skips_hash(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = write_sample(dir, "a.bfuse");
    int64_t at;
    br_error err = {{0}};
    assert_int_equal(open_trusting(path, &at, &err), 0);
    assert_int_equal(at, -1); /* no record: hashed */
    record(path);
    assert_int_equal(open_trusting(path, &at, &err), 0);
    assert_true(at > 0);
    /* The plain open never trusts a record. */
    br_filter_file *f = NULL;
    assert_int_equal(br_filter_file_open(path, &f, &err), 0);
    assert_int_equal(br_filter_file_record_time(f), -1);
    br_filter_file_free(f);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

/* The attack: a bit flipped in the body of a file that has a record. The
 * record no longer matches, the body is hashed, the file is refused. Even
 * with the mtime set back (only the owner, root, can): the ctime moved. */
static void test_flipped_bit_refused(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = write_sample(dir, "a.bfuse");
    record(path);
    struct stat st0;
    assert_int_equal(stat(path, &st0), 0);
    flip_byte(path, 4096 + 100);
    int64_t at;
    br_error err = {{0}};
    assert_int_equal(open_trusting(path, &at, &err), -EINVAL);
    assert_non_null(strstr(err.text, "body checksum mismatch"));
    struct timespec times[2] = {st0.st_atim, st0.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
    assert_int_equal(open_trusting(path, &at, &err), -EINVAL);
    struct stat now;
    assert_int_equal(stat(path, &now), 0);
    assert_int_equal(
        br_filter_record_check(path, &now, &(br_filter_header){0}, (long)geteuid(), NULL, &err),
        -ESTALE);
    assert_non_null(strstr(err.text, "ctime"));
    free(path);
    tu_rmrf(dir);
    free(dir);
}

/* A record that is not root's (nor the trusted uid's), or that others may
 * write, is not trusted; nor one that is not a record. */
static void test_untrusted_records(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = write_sample(dir, "a.bfuse");
    char *rec = tu_path("%s.verified", path);
    record(path);
    struct stat st;
    br_filter_file *f = NULL;
    br_error err = {{0}};
    assert_int_equal(br_filter_file_open(path, &f, &err), 0);
    st = *br_filter_file_stat(f);
    const br_filter_header *h = br_filter_file_header(f);
    assert_int_equal(br_filter_record_check(path, &st, h, (long)geteuid(), NULL, &err), 0);
    if (geteuid() != 0)
        assert_int_equal(br_filter_record_check(path, &st, h, -1, NULL, &err), -EPERM);
    assert_int_equal(chmod(rec, 0664), 0);
    assert_int_equal(br_filter_record_check(path, &st, h, (long)geteuid(), NULL, &err), -EPERM);
    assert_int_equal(chmod(rec, 0644), 0);
    if (geteuid() == 0) {
        assert_int_equal(chown(rec, 1, 1), 0);
        assert_int_equal(br_filter_record_check(path, &st, h, -1, NULL, &err), -EPERM);
        assert_int_equal(chown(rec, 0, 0), 0);
    }
    assert_int_equal(tu_write_file(rec, "hello\n", 6), 0);
    assert_int_equal(br_filter_record_check(path, &st, h, (long)geteuid(), NULL, &err), -EINVAL);
    assert_int_equal(unlink(rec), 0);
    assert_int_equal(br_filter_record_check(path, &st, h, (long)geteuid(), NULL, &err), -ENOENT);
    br_filter_file_free(f);
    free(rec);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

/* A record names one inode: a file renamed over the path is hashed. And a
 * file that changed after it was hashed gets no record. */
static void test_stale_and_changed(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = write_sample(dir, "a.bfuse");
    char *other = write_sample(dir, "b.bfuse");
    record(path);
    assert_int_equal(rename(other, path), 0);
    int64_t at;
    br_error err = {{0}};
    assert_int_equal(open_trusting(path, &at, &err), 0);
    assert_int_equal(at, -1);
    br_filter_file *f = NULL;
    assert_int_equal(br_filter_file_open(path, &f, &err), 0);
    flip_byte(path, 4096 + 5);
    assert_int_equal(br_filter_record_write(f, path, &err), -ESTALE);
    br_filter_file_free(f);
    free(other);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_skips_hash),
        cmocka_unit_test(test_flipped_bit_refused),
        cmocka_unit_test(test_untrusted_records),
        cmocka_unit_test(test_stale_and_changed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
