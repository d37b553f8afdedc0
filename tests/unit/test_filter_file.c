/* SPDX-License-Identifier: MIT */
/* The filter-file container: round trip, atomic write, and refusal of
 * damaged or foreign files with a reason, and what a refused header says
 * (br_filter_header_peek). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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
#include "core/hash.h"
#include "testutil.h"

/* Write a container with a small payload; returns its path. */
static char *write_sample(const char *dir, const char *name, size_t payload_len)
{
    char *path = tu_path("%s/%s", dir, name);
    br_filter_writer *w = NULL;
    br_error err = {{0}};
    assert_int_equal(br_filter_writer_new(path, &w, &err), 0);
    uint8_t buf[256];
    for (size_t i = 0; i < payload_len; i += sizeof(buf)) {
        size_t n = payload_len - i < sizeof(buf) ? payload_len - i : sizeof(buf);
        for (size_t j = 0; j < n; j++)
            buf[j] = (uint8_t)(i + j);
        assert_int_equal(br_filter_writer_write(w, buf, n, &err), 0);
    }
    br_filter_header h = {
        .kind = BR_KIND_PASSWORD_SHA1,
        .algorithm = BR_ALGO_BINARY_FUSE,
        .key_encoding = BR_KEYENC_HASH_PREFIX64,
        .key_encoding_version = 1,
        .generation = 42,
        .build_time = 1764460800,
        .key_count = 7,
    };
    h.params[0] = 3;
    snprintf(h.source, sizeof(h.source), "unit test");
    assert_int_equal(br_filter_writer_commit(w, &h, &err), 0);
    br_filter_writer_free(w);
    return path;
}

static void test_roundtrip(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = write_sample(dir, "a.filter", 1000);
    br_filter_file *f = NULL;
    br_error err = {{0}};
    assert_int_equal(br_filter_file_open(path, &f, &err), 0);
    const br_filter_header *h = br_filter_file_header(f);
    assert_int_equal(h->version, 1);
    assert_int_equal(h->kind, BR_KIND_PASSWORD_SHA1);
    assert_int_equal(h->generation, 42);
    assert_int_equal(h->build_time, 1764460800);
    assert_int_equal(h->key_count, 7);
    assert_int_equal(h->payload_offset, BR_FILTER_PAYLOAD_ALIGN);
    assert_int_equal(h->payload_size, 1000);
    assert_int_equal(h->params[0], 3);
    assert_string_equal(h->source, "unit test");
    const uint8_t *payload = br_filter_file_data(f) + h->payload_offset;
    for (size_t i = 0; i < 1000; i++)
        assert_int_equal(payload[i], (uint8_t)i);
    br_filter_file_free(f);

    /* No temporary file is left beside it. */
    char *tmp_glob = tu_path("ls %s | grep -c tmp", dir);
    FILE *p = popen(tmp_glob, "r");
    int count = -1;
    assert_int_equal(fscanf(p, "%d", &count), 1);
    pclose(p);
    assert_int_equal(count, 0);
    free(tmp_glob);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

static void test_abandoned_writer_leaves_nothing(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/never", dir);
    br_filter_writer *w = NULL;
    assert_int_equal(br_filter_writer_new(path, &w, NULL), 0);
    assert_int_equal(br_filter_writer_write(w, "abc", 3, NULL), 0);
    br_filter_writer_free(w);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(rmdir(dir), 0); /* empty: the temporary file is gone too */
    free(path);
    free(dir);
}

/* Re-sign a header after editing it, so that the field checks (not the
 * checksum) are what refuses it. */
static void resign(uint8_t *raw)
{
    assert_int_equal(br_sha256(raw, 480, raw + 480), 0);
}

static void expect_refused(const char *path, const uint8_t *data, size_t len, const char *reason)
{
    assert_int_equal(tu_write_file(path, data, len), 0);
    br_filter_file *f = NULL;
    br_error err = {{0}};
    int r = br_filter_file_open(path, &f, &err);
    if (r >= 0)
        fail_msg("accepted, expected '%s'", reason);
    assert_null(f);
    if (!strstr(err.text, reason))
        fail_msg("expected '%s' in '%s'", reason, err.text);
}

static void test_field_checks(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = write_sample(dir, "good", 100);
    size_t len;
    uint8_t *good = tu_read_file(path, &len);
    /* A fixed buffer: GCC's -Warray-bounds under ASan cannot follow a
     * length checked at run time into the edits below. */
    static uint8_t bad[8192];
    if (!good || len < BR_FILTER_PAYLOAD_ALIGN || len > sizeof(bad))
        abort();
    char *out = tu_path("%s/bad", dir);

    memcpy(bad, good, len);
    bad[0] = 'X';
    expect_refused(out, bad, len, "bad magic");

    memcpy(bad, good, len);
    bad[8] = 3;
    resign(bad);
    expect_refused(out, bad, len, "unsupported format version 3 (this build reads versions 1..2)");

    memcpy(bad, good, len);
    bad[16] = 99;
    resign(bad);
    expect_refused(out, bad, len, "field kind: unknown kind 99");

    memcpy(bad, good, len);
    bad[20] = 77;
    resign(bad);
    expect_refused(out, bad, len, "field algorithm");

    memcpy(bad, good, len);
    bad[28] = 9;
    resign(bad);
    expect_refused(out, bad, len, "field key_encoding_version: 9");

    memcpy(bad, good, len);
    bad[13] = 1;
    resign(bad);
    expect_refused(out, bad, len, "field header_size");

    memcpy(bad, good, len);
    bad[56] = 0x01; /* payload_offset 4097: not a multiple of 64 */
    resign(bad);
    expect_refused(out, bad, len, "field payload_offset");

    memcpy(bad, good, len);
    bad[65] = 1; /* payload_size + 256 */
    resign(bad);
    expect_refused(out, bad, len, "truncated");

    memcpy(bad, good, len);
    bad[400] = 1; /* reserved */
    resign(bad);
    expect_refused(out, bad, len, "reserved header bytes");

    memcpy(bad, good, len);
    memset(bad + 136, 'a', 256); /* source without a NUL */
    resign(bad);
    expect_refused(out, bad, len, "field source");

    memcpy(bad, good, len);
    bad[100] ^= 1; /* any header byte without re-signing */
    expect_refused(out, bad, len, "header checksum mismatch");

    memcpy(bad, good, len);
    bad[len - 1] ^= 0x80;
    expect_refused(out, bad, len, "body checksum mismatch");

    expect_refused(out, good, len - 1, "truncated");
    expect_refused(out, good, 100, "not a breachd filter file (100 bytes, shorter than");
    uint8_t *longer = calloc(1, len + 1);
    memcpy(longer, good, len);
    expect_refused(out, longer, len + 1, "trailing data");
    free(longer);

    br_filter_file *f = NULL;
    br_error err = {{0}};
    assert_true(br_filter_file_open(dir, &f, &err) < 0);
    assert_non_null(strstr(err.text, "not a regular file"));
    char *missing = tu_path("%s/missing", dir);
    assert_int_equal(br_filter_file_open(missing, &f, &err), -ENOENT);

    free(missing);
    free(out);
    free(good);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

/* br_filter_header_peek: every field within the bytes given, as stored,
 * without a check; the rest absent. */
static void test_peek(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = write_sample(dir, "peek", 100);
    size_t len;
    uint8_t *raw = tu_read_file(path, &len);
    br_filter_peek p;
    br_filter_header_peek(raw, len, &p);
    assert_int_equal(p.present, (1u << BR_FILTER_FIELDS) - 1);
    assert_true(p.magic_ok);
    assert_true(p.header_sum_ok);
    assert_int_equal(p.h.generation, 42);
    assert_int_equal(p.h.key_count, 7);
    assert_string_equal(p.h.source, "unit test");

    /* A damaged header is read as it is, and said not to match. */
    raw[32] ^= 1; /* generation */
    raw[16] = 99; /* kind: unknown */
    br_filter_header_peek(raw, len, &p);
    assert_false(p.header_sum_ok);
    assert_int_equal(p.h.generation, 43);
    assert_int_equal(p.h.kind, 99);

    /* 20 bytes: magic, version, header_size and kind only. */
    br_filter_header_peek(raw, 20, &p);
    assert_int_equal(p.present, (1u << BR_FIELD_ALGORITHM) - 1);
    assert_int_equal(p.h.kind, 99);
    assert_int_equal(p.h.algorithm, 0);
    assert_false(p.header_sum_ok);

    /* Nothing, and something else entirely. */
    br_filter_header_peek(raw, 0, &p);
    assert_int_equal(p.present, 0);
    assert_false(p.magic_ok);
    br_filter_header_peek((const uint8_t *)"#!/bin/sh\n", 10, &p);
    assert_int_equal(p.present, 1u << BR_FIELD_MAGIC);
    assert_false(p.magic_ok);
    assert_memory_equal(p.magic, "#!/bin/s", 8);
    free(raw);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

/* A byte rewritten in place (same inode, same size, as `dd conv=notrunc`)
 * is noticed before the next answer: the file reads as damaged. */
static void test_rewritten_in_place(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = write_sample(dir, "a.filter", 5000);
    br_filter_file *f = NULL;
    br_error err = {{0}};
    assert_int_equal(br_filter_file_open(path, &f, &err), 0);
    assert_false(br_filter_file_changed(f));
    assert_false(br_filter_file_damaged(f));
    tu_rewrite_in_place(path, 4096 + 10, 0x55);
    assert_true(br_filter_file_changed(f));
    assert_true(br_filter_file_damaged(f));
    br_filter_file_free(f);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

/* The VmFlags of the mapping at p (proc_pid_smaps(5)), "" if none. */
static void vm_flags_of(const void *p, char *flags, size_t size)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    assert_non_null(f);
    char line[512];
    bool in = false;
    flags[0] = '\0';
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            size_t n = BR_MIN(strlen(line + 8), size - 1);
            memcpy(flags, line + 8, n);
            flags[n] = '\0';
        }
    }
    fclose(f);
}

/* A filter's mapping asks for huge pages (hg: docs/filter-format.md,
 * "Huge pages") and no readahead around its random probes (rr). */
static void test_mapping_advice(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp(), *path = write_sample(dir, "a.filter", 5000), flags[256];
    br_filter_file *f = NULL;
    br_error err = {{0}};
    if (br_filter_file_open(path, &f, &err) < 0)
        fail_msg("%s", err.text);
    vm_flags_of(br_filter_file_data(f), flags, sizeof(flags));
    if (!strstr(flags, " hg") || !strstr(flags, " rr"))
        fail_msg("the filter's mapping has VmFlags:%s", flags);
    br_filter_file_free(f);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

/* Owner and mode: root's (or also_uid's), writable by no one else. */
static void test_owner_check(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = write_sample(dir, "a.filter", 100);
    br_error err = {{0}};
    long me = (long)geteuid();
    for (int pass = 0; pass < 2; pass++) {
        mode_t mode = pass ? 0664 : 0644;
        assert_int_equal(chmod(path, mode), 0);
        br_filter_file *f = NULL;
        assert_int_equal(br_filter_file_open(path, &f, &err), 0);
        int want = pass ? -EPERM : 0;
        assert_int_equal(br_filter_file_check_owner(f, path, me, &err), want);
        if (pass)
            assert_non_null(strstr(err.text, "mode 0664"));
        if (me != 0) /* not root's: refused unless also_uid names the owner */
            assert_int_equal(br_filter_file_check_owner(f, path, -1, &err), -EPERM);
        br_filter_file_free(f);
    }
    free(path);
    tu_rmrf(dir);
    free(dir);
}

static void test_kind_names(void **state)
{
    (void)state;
    br_filter_kind k;
    assert_int_equal(br_filter_kind_from_name("password-sha1", &k), 0);
    assert_int_equal(k, BR_KIND_PASSWORD_SHA1);
    assert_int_equal(br_filter_kind_from_name("url-sha256", &k), 0);
    assert_int_equal(k, BR_KIND_URL_SHA256);
    assert_int_equal(br_filter_kind_from_name("password-ntlm", &k), 0);
    assert_int_equal(br_filter_kind_from_name("email", &k), -EINVAL);
    assert_null(br_filter_kind_name(0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),    cmocka_unit_test(test_abandoned_writer_leaves_nothing),
        cmocka_unit_test(test_field_checks), cmocka_unit_test(test_peek),
        cmocka_unit_test(test_kind_names),   cmocka_unit_test(test_rewritten_in_place),
        cmocka_unit_test(test_owner_check),  cmocka_unit_test(test_mapping_advice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
