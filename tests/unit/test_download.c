/* SPDX-License-Identifier: MIT */
/* The corpus downloader in process (lib/download*.c): range parsing, the index
 * and session files (round trip, torn and corrupt lines, another upstream),
 * the single-file writer, and whole runs against a file:// mirror (no
 * network): complete, missing and malformed prefixes, unchanged re-runs,
 * a replaced file, --force. The HTTP side is tests/integration/test_download.c. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "download/download_int.h"
#include "testutil.h"

static const char *body_of(uint32_t p, char *buf, size_t cap, int variant)
{
    /* two lines, HIBP style: uppercase, CRLF between, none at the end */
    snprintf(buf, cap, "%035X:%u\r\n%035X:%u", p * 7 + (unsigned)variant, p + 1,
             p * 7 + 3 + (unsigned)variant, p + 2);
    return buf;
}

static void write_mirror(const char *dir, uint32_t first, uint32_t last, int variant)
{
    for (uint32_t p = first; p <= last; p++) {
        char buf[128];
        char *path = tu_path("%s/%05X.txt", dir, p);
        body_of(p, buf, sizeof(buf), variant);
        assert_int_equal(tu_write_file(path, buf, strlen(buf)), 0);
        free(path);
    }
}

static size_t count_dir(const char *dir, uint32_t first, uint32_t last, const char *mirror)
{
    size_t same = 0;
    for (uint32_t p = first; p <= last; p++) {
        char *a = tu_path("%s/%05X.txt", dir, p), *b = tu_path("%s/%05X.txt", mirror, p);
        size_t la, lb;
        uint8_t *da = tu_read_file(a, &la), *db = tu_read_file(b, &lb);
        if (da && db && la == lb && memcmp(da, db, la) == 0)
            same++;
        free(da);
        free(db);
        free(a);
        free(b);
    }
    return same;
}

static void test_parse_range(void **state)
{
    (void)state;
    uint32_t a, b;
    assert_int_equal(br_download_parse_range("00000-00FFF", &a, &b), 0);
    assert_int_equal(a, 0);
    assert_int_equal(b, 0xFFF);
    assert_int_equal(br_download_parse_range("0-fffff", &a, &b), 0);
    assert_int_equal(b, 0xFFFFF);
    assert_int_equal(br_download_parse_range("ABCDE", &a, &b), 0);
    assert_true(a == 0xABCDE && b == 0xABCDE);
    const char *bad[] = {"",         "-",        "1-",  "-1",   "10-1",
                         "123456-1", "0-123456", "G-1", "1 -2", "1--2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(br_download_parse_range(bad[i], &a, &b), -EINVAL);
}

static void test_index_roundtrip(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    dl_index ix;
    assert_int_equal(dl_index_load(&ix, dirfd, "http://a/{prefix}", NULL), 0);
    for (uint32_t p = 0x100; p < 0x110; p++) {
        ix.e[p].state = DL_E_OK;
        ix.e[p].size = p;
        ix.e[p].mtime_ns = -(int64_t)p * 1000; /* any value, negative ones too */
        memset(ix.e[p].hash, (int)p, DL_HASH_LEN);
        ix.e[p].val =
            dl_val_make(p & 1 ? "W/\"abc def\"" : "", p & 2 ? "Mon, 01 Jan 2024 00:00:00 GMT" : "");
    }
    assert_int_equal(dl_index_compact(&ix, NULL), 0);
    /* a journal record after the index overrides it; a torn one is ignored */
    assert_int_equal(dl_index_journal_open(&ix, NULL), 0);
    dl_entry e = {.size = 999, .mtime_ns = 5, .state = DL_E_OK, .val = dl_val_make("\"j\"", "")};
    char line[512];
    size_t n = dl_index_line(0x105, &e, line, sizeof(line));
    assert_true(n > 0);
    assert_int_equal(dl_index_journal_append(&ix, line, n), 0);
    n = dl_index_line(0x10A, &e, line, sizeof(line));
    assert_int_equal(dl_index_journal_append(&ix, line, n - 5), 0); /* torn */
    free(e.val);
    dl_index_free(&ix);

    assert_int_equal(dl_index_load(&ix, dirfd, "http://a/{prefix}", NULL), 0);
    assert_int_equal(ix.jrecords, 1);
    assert_true(ix.bad_lines >= 1);
    for (uint32_t p = 0x100; p < 0x110; p++) {
        const dl_entry *x = &ix.e[p];
        assert_int_equal(x->state, DL_E_RECORD);
        if (p == 0x105) {
            assert_int_equal(x->size, 999);
            assert_string_equal(dl_entry_etag(x), "\"j\"");
            continue;
        }
        assert_int_equal(x->size, p);
        assert_true(x->mtime_ns == -(int64_t)p * 1000);
        assert_int_equal(x->hash[3], (uint8_t)p);
        assert_string_equal(dl_entry_etag(x), p & 1 ? "W/\"abc def\"" : "");
        assert_string_equal(dl_entry_lm(x), p & 2 ? "Mon, 01 Jan 2024 00:00:00 GMT" : "");
    }
    assert_int_equal(ix.e[0x0FF].state, DL_E_NONE);
    dl_index_free(&ix);

    /* another upstream: records kept, validators dropped */
    assert_int_equal(dl_index_load(&ix, dirfd, "http://b/{prefix}", NULL), 0);
    assert_true(ix.rewrite);
    assert_int_equal(ix.e[0x101].size, 0x101);
    assert_null(ix.e[0x101].val);
    dl_index_free(&ix);

    /* a flipped byte fails the line's check */
    char *path = tu_path("%s/%s", dir, BR_DOWNLOAD_INDEX_NAME);
    size_t len;
    uint8_t *data = tu_read_file(path, &len);
    char *l = strstr((char *)data, "00102\t");
    assert_non_null(l);
    l[6] = l[6] == '1' ? '2' : '1';
    assert_int_equal(tu_write_file(path, data, len), 0);
    free(data);
    assert_int_equal(dl_index_load(&ix, dirfd, "http://a/{prefix}", NULL), 0);
    assert_int_equal(ix.e[0x102].state, DL_E_NONE);
    assert_int_equal(ix.e[0x103].state, DL_E_RECORD);
    dl_index_free(&ix);
    free(path);
    close(dirfd);
    tu_rmrf(dir);
    free(dir);
}

/* The end check: a file whose size and mtime match its record is there; one
 * this process linked into place is taken as there without a stat (so a
 * file placed, then removed by someone else, is not noticed: documented),
 * every other one is stat'ed. */
static void test_check_files(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    dl_index ix;
    assert_int_equal(dl_index_load(&ix, dirfd, "http://a/{prefix}", NULL), 0);
    for (uint32_t p = 0x10; p < 0x14; p++) {
        char *f = tu_path("%s/%05X.txt", dir, p);
        assert_int_equal(tu_write_file(f, "A:1", 3), 0);
        struct stat st;
        assert_int_equal(stat(f, &st), 0);
        ix.e[p].state = DL_E_RECORD;
        ix.e[p].size = 3;
        ix.e[p].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        free(f);
    }
    ix.e[0x11].size = 4;                            /* record and file differ */
    dl_placed_set(&ix, 0x12);                       /* placed, then removed behind its back */
    char *gone = tu_path("%s/%05X.txt", dir, 0x13); /* not placed, removed */
    char *gone2 = tu_path("%s/%05X.txt", dir, 0x12);
    assert_int_equal(unlink(gone), 0);
    assert_int_equal(unlink(gone2), 0);
    dl_index_check_files(&ix, 0x10, 0x14);
    assert_int_equal(ix.e[0x10].state, DL_E_OK);
    assert_int_equal(ix.e[0x11].state, DL_E_RECORD);
    assert_int_equal(ix.e[0x12].state, DL_E_OK);
    assert_int_equal(ix.e[0x13].state, DL_E_RECORD);
    assert_int_equal(ix.e[0x14].state, DL_E_NONE);
    assert_false(dl_placed_has(&ix, 0x10));
    dl_index_free(&ix);
    free(gone);
    free(gone2);
    close(dirfd);
    tu_rmrf(dir);
    free(dir);
}

static void test_session(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    dl_index ix;
    assert_int_equal(dl_index_load(&ix, dirfd, "u{prefix}", NULL), 0);
    dl_session_begin(&ix, true, false);
    assert_false(ix.session_resumed);
    dl_session_set(&ix, 0);
    dl_session_set(&ix, 0xFFFFF);
    dl_session_set(&ix, 0x12345);
    assert_int_equal(dl_session_save(&ix), 0);
    dl_session_clear(&ix, 0x12345);
    dl_index_free(&ix);

    assert_int_equal(dl_index_load(&ix, dirfd, "u{prefix}", NULL), 0);
    dl_session_begin(&ix, false, false);
    assert_true(ix.session_resumed);
    assert_true(ix.session_force);
    assert_true(dl_session_has(&ix, 0) && dl_session_has(&ix, 0xFFFFF) &&
                dl_session_has(&ix, 0x12345));
    assert_false(dl_session_has(&ix, 1));
    dl_session_begin(&ix, true, false); /* --force starts over */
    assert_false(ix.session_resumed);
    assert_false(dl_session_has(&ix, 0));
    dl_index_free(&ix);

    /* a session of the SHA-1 corpus is not resumed by an NTLM run (its
     * files are of the other kind), nor the other way round */
    assert_int_equal(dl_index_load(&ix, dirfd, "u{prefix}", NULL), 0);
    dl_session_begin(&ix, false, true);
    assert_false(ix.session_resumed);
    assert_true(ix.session_ntlm);
    dl_session_set(&ix, 7);
    assert_int_equal(dl_session_save(&ix), 0);
    dl_index_free(&ix);
    assert_int_equal(dl_index_load(&ix, dirfd, "u{prefix}", NULL), 0);
    dl_session_begin(&ix, false, true);
    assert_true(ix.session_resumed);
    assert_true(dl_session_has(&ix, 7));
    dl_session_begin(&ix, false, false);
    assert_false(ix.session_resumed);
    assert_false(dl_session_has(&ix, 7));
    dl_index_free(&ix);
    /* and the SHA-1 session saved before is gone: start one again */
    assert_int_equal(dl_index_load(&ix, dirfd, "u{prefix}", NULL), 0);
    dl_session_begin(&ix, true, false);
    dl_session_set(&ix, 0);
    dl_session_set(&ix, 0xFFFFF);
    dl_session_set(&ix, 0x12345);
    assert_int_equal(dl_session_save(&ix), 0);
    dl_index_free(&ix);

    /* a damaged session file is ignored */
    char *path = tu_path("%s/%s", dir, BR_DOWNLOAD_SESSION_NAME);
    size_t len;
    uint8_t *data = tu_read_file(path, &len);
    data[100] ^= 1;
    assert_int_equal(tu_write_file(path, data, len), 0);
    free(data);
    assert_int_equal(dl_index_load(&ix, dirfd, "u{prefix}", NULL), 0);
    dl_session_begin(&ix, false, false);
    assert_false(ix.session_resumed);
    dl_index_free(&ix);
    free(path);
    close(dirfd);
    tu_rmrf(dir);
    free(dir);
}

static void test_single_file(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    /* unsorted, mixed line ends, an empty line; byte order marks at the
     * start of lines (the official downloader's blocks) are left out */
    const char *a = "\xEF\xBB\xBF"
                    "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB:2\n"
                    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA:1\r\n\r\n"
                    "\xEF\xBB\xBF"
                    "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC:3";
    const char *b = "\xEF\xBB\xBF"
                    "00000000000000000000000000000000001:9\r\n";
    char *pa = tu_path("%s/00000.txt", dir), *pb = tu_path("%s/00001.txt", dir);
    assert_int_equal(tu_write_file(pa, a, strlen(a)), 0);
    assert_int_equal(tu_write_file(pb, b, strlen(b)), 0);
    char *out = tu_path("%s/single.txt", dir);
    uint64_t lines;
    assert_int_equal(dl_write_single(dirfd, 0, 1, out, &lines, NULL), 0);
    assert_int_equal(lines, 4);
    size_t len;
    uint8_t *data = tu_read_file(out, &len);
    const char *want = "00000AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA:1\r\n"
                       "00000BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB:2\r\n"
                       "00000CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC:3\r\n"
                       "0000100000000000000000000000000000000001:9\r\n";
    assert_int_equal(len, strlen(want));
    assert_memory_equal(data, want, len);
    free(data);
    /* a missing prefix file: an error, no output */
    unlink(out);
    br_error err;
    assert_int_equal(dl_write_single(dirfd, 0, 2, out, &lines, &err), -ENOENT);
    assert_non_null(strstr(err.text, "00002"));
    assert_int_equal(access(out, F_OK), -1);
    free(pa);
    free(pb);
    free(out);
    close(dirfd);
    tu_rmrf(dir);
    free(dir);
}

static br_download_temp temp_mode; /* how test_file_runs writes its files */

static int run(const char *mirror, const char *out, uint32_t first, uint32_t last, bool force,
               br_download_result *res)
{
    char *tmpl = tu_path("file://%s/{prefix}.txt", mirror);
    br_download_opts o = {.out_dir = out,
                          .url_template = tmpl,
                          .first = first,
                          .last = last,
                          .parallel = 8,
                          .force = force,
                          .batch_files = 16,
                          .temp_files = temp_mode};
    br_error err = {{0}};
    int rc = br_download_run(&o, res, &err);
    if (rc < 0)
        fprintf(stderr, "download: %s\n", err.text);
    free(tmpl);
    return rc;
}

/* A full run, a re-run, changes, failures, a resume and a removed file, with
 * the temp files made the given way (every way a filesystem may force). */
static void file_runs(br_download_temp mode)
{
    temp_mode = mode;
    char *root = tu_mkdtemp();
    char *mirror = tu_path("%s/mirror", root), *out = tu_path("%s/out", root);
    mkdir(mirror, 0755);
    write_mirror(mirror, 0x200, 0x2FF, 0);
    br_download_result res;

    assert_int_equal(run(mirror, out, 0x200, 0x2FF, false, &res), 0);
    assert_true(res.complete);
    assert_int_equal(res.p.written, 256);
    assert_int_equal(count_dir(out, 0x200, 0x2FF, mirror), 256);

    /* file:// has no validators: a re-run fetches all, rewrites nothing */
    struct stat before, after;
    char *f = tu_path("%s/00250.txt", out);
    assert_int_equal(stat(f, &before), 0);
    assert_int_equal(run(mirror, out, 0x200, 0x2FF, false, &res), 0);
    assert_true(res.complete);
    assert_int_equal(res.p.unchanged, 256);
    assert_int_equal(res.p.written, 0);
    assert_int_equal(stat(f, &after), 0);
    assert_true(before.st_ino == after.st_ino && before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);

    /* one changed, one removed, one malformed: exit "incomplete", older copies kept */
    char buf[128];
    char *m250 = tu_path("%s/00250.txt", mirror), *m251 = tu_path("%s/00251.txt", mirror),
         *m252 = tu_path("%s/00252.txt", mirror);
    body_of(0x250, buf, sizeof(buf), 1);
    assert_int_equal(tu_write_file(m250, buf, strlen(buf)), 0);
    unlink(m251);
    assert_int_equal(tu_write_file(m252, "not a range\r\n", 13), 0);
    assert_int_equal(run(mirror, out, 0x200, 0x2FF, false, &res), 0);
    assert_false(res.complete);
    assert_int_equal(res.missing, 2);
    assert_int_equal(res.missing_prefix[0], 0x251);
    assert_string_equal(res.missing_reason[0],
                        "failed: file missing or unreadable; an older copy is kept");
    assert_int_equal(res.missing_prefix[1], 0x252);
    assert_string_equal(res.missing_reason[1], "failed: malformed body; an older copy is kept");
    assert_int_equal(res.p.written, 1);
    assert_int_equal(stat(f, &after), 0);
    assert_true(before.st_ino != after.st_ino); /* replaced, not rewritten in place */
    assert_int_equal(count_dir(out, 0x250, 0x250, mirror), 1);

    /* fixed: the session resumes, only the two are fetched */
    write_mirror(mirror, 0x251, 0x252, 0);
    assert_int_equal(run(mirror, out, 0x200, 0x2FF, false, &res), 0);
    assert_true(res.complete);
    assert_int_equal(res.p.resumed, 254);
    assert_int_equal(res.p.requests, 2);
    assert_int_equal(count_dir(out, 0x200, 0x2FF, mirror), 256);

    /* a file removed behind its back is fetched again; a killed run's named
     * temp file is removed */
    unlink(f);
    char *stale = tu_path("%s/.dl-00260.tmp", out);
    assert_int_equal(tu_write_file(stale, "partial", 7), 0);
    assert_int_equal(run(mirror, out, 0x200, 0x2FF, true, &res), 0);
    assert_true(res.complete);
    assert_int_equal(res.p.written, 1);
    assert_int_equal(res.p.unchanged, 255);
    assert_int_equal(count_dir(out, 0x200, 0x2FF, mirror), 256);
    assert_int_equal(access(stale, F_OK), -1);
    free(stale);

    /* no temp files, no session, no journal left */
    char *names[] = {BR_DOWNLOAD_SESSION_NAME, BR_DOWNLOAD_JOURNAL_NAME, ".dl-00250.tmp"};
    for (size_t i = 0; i < 3; i++) {
        char *p = tu_path("%s/%s", out, names[i]);
        assert_int_equal(access(p, F_OK), -1);
        free(p);
    }
    free(m250);
    free(m251);
    free(m252);
    free(f);
    free(mirror);
    free(out);
    tu_rmrf(root);
    free(root);
}

static size_t count_present(const char *dir, uint32_t first, uint32_t last)
{
    size_t n = 0;
    for (uint32_t p = first; p <= last; p++) {
        char *a = tu_path("%s/%05X.txt", dir, p);
        n += access(a, F_OK) == 0;
        free(a);
    }
    return n;
}

/* The output filesystem fills up mid-run (a 256 KiB tmpfs: ~60 small files):
 * the run fails and says why, every file under a final name is whole, and
 * once there is room the same command finishes the job. Needs root (mount). */
static void test_disk_full(void **state)
{
    (void)state;
    char *root = tu_mkdtemp();
    char *mirror = tu_path("%s/mirror", root), *out = tu_path("%s/out", root);
    mkdir(mirror, 0755);
    mkdir(out, 0755);
    write_mirror(mirror, 0x000, 0x3FF, 0);
    if (mount("tmpfs", out, "tmpfs", 0, "size=256k,mode=0755") < 0) {
        tu_rmrf(root);
        free(mirror);
        free(out);
        free(root);
        skip(); /* not root, or no mount namespace rights */
    }
    char *tmpl = tu_path("file://%s/{prefix}.txt", mirror);
    br_download_opts o = {.out_dir = out,
                          .url_template = tmpl,
                          .first = 0,
                          .last = 0x3FF,
                          .parallel = 8,
                          .batch_files = 16};
    br_download_result res;
    br_error err = {{0}};
    int rc = br_download_run(&o, &res, &err);
    assert_int_equal(rc, -ENOSPC);
    assert_non_null(strstr(err.text, "No space left on device"));
    assert_false(res.complete);
    size_t present = count_present(out, 0, 0x3FF);
    assert_true(present < 0x400);
    assert_int_equal(count_dir(out, 0, 0x3FF, mirror), present); /* all of them whole */

    /* The type is ignored by a remount; named all the same, for valgrind's
     * memcheck, which checks the pointer (tests/README.md). */
    assert_int_equal(mount("tmpfs", out, "tmpfs", MS_REMOUNT, "size=16m,mode=0755"), 0);
    memset(&err, 0, sizeof(err));
    rc = br_download_run(&o, &res, &err);
    if (rc < 0)
        fail_msg("after making room: %s", err.text);
    assert_true(res.complete);
    assert_int_equal(count_dir(out, 0, 0x3FF, mirror), 0x400);
    assert_int_equal(umount2(out, MNT_DETACH), 0);
    free(tmpl);
    tu_rmrf(root);
    free(mirror);
    free(out);
    free(root);
}

static void test_file_runs_auto(void **state)
{
    (void)state;
    file_runs(BR_DOWNLOAD_TEMP_AUTO);
}

static void test_file_runs_named_temp(void **state)
{
    (void)state;
    file_runs(BR_DOWNLOAD_TEMP_NAMED);
}

static void test_file_runs_proc_link(void **state)
{
    (void)state;
    file_runs(BR_DOWNLOAD_TEMP_PROC);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_range),
        cmocka_unit_test(test_index_roundtrip),
        cmocka_unit_test(test_check_files),
        cmocka_unit_test(test_session),
        cmocka_unit_test(test_single_file),
        cmocka_unit_test(test_file_runs_auto),
        cmocka_unit_test(test_file_runs_named_temp),
        cmocka_unit_test(test_file_runs_proc_link),
        cmocka_unit_test(test_disk_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
