/* SPDX-License-Identifier: MIT */
/* `breachctl download` end to end: a real breachctl process against
 * nginx on 127.0.0.1 serving a generated mirror of 4096 prefixes (1024 under
 * ASan). Everything lives in a temp dir.
 *
 *  full          full run: byte-for-byte equal to the mirror, nothing else in
 *                DIR but the index and the lock, all 200, no Add-Padding, our
 *                User-Agent; --single-file; `filter build --input DIR` on it
 *  changed       a re-run after changing a few mirror files: only those are
 *                200 and rewritten, the rest 304 with inode and mtime intact
 *  force         --force: all 200, unchanged content not rewritten
 *  missing       prefixes missing from the mirror: exit 2 with the exact
 *                report; once restored, a re-run asks only for those
 *  kill_resume   kill -9 mid-run (nginx rate-limited), then a re-run:
 *                completes, byte-for-byte equal, no temp files, resumed
 *  locked        a second run on a locked DIR: exit 2
 *
 * Against the fault server: test_download_faults.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "download_fx.h"
#include "core/hash.h"
#include "rtest.h"
#include "core/util.h"

#if defined(__SANITIZE_ADDRESS__)
#define NPREFIX 1024
#else
#define NPREFIX 4096
#endif
#define LAST_HEX (NPREFIX == 4096 ? "00FFF" : "003FF")

static char *root, *mirror;
static rt_nginx ngx;
static char *tmpl; /* http://127.0.0.1:PORT/range/{prefix} */
static char range_arg[16];

/* ---- helpers ----------------------------------------------------------------- */

static int run_cmd(char *const argv[])
{
    pid_t pid = rt_spawn(argv, NULL, true);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void write_mirror_file(uint32_t p, uint64_t seed)
{
    rt_range r;
    rt_range_gen(&r, BR_RANGE_PASSWORD_SHA1, p, 1 + (p + seed) % 6, 0, seed * 7919 + 1);
    char *path = rt_fmt("%s/%05X.txt", mirror, p);
    rt_range_write(&r, RT_NO_FINAL_NL, path); /* HIBP style: uppercase, CRLF, no final CRLF */
    free(path);
    rt_range_free(&r);
}

/* Compare DIR's prefix files with the mirror's, byte for byte. Returns the
 * number of prefixes that differ or are missing; extra names counted too. */
static size_t compare_dir(const char *dir, bool allow_temp)
{
    size_t bad = 0;
    for (uint32_t p = 0; p < NPREFIX; p++) {
        char *a = rt_fmt("%s/%05X.txt", mirror, p), *b = rt_fmt("%s/%05X.txt", dir, p);
        size_t la, lb;
        char *da = rt_read_file(a, &la), *db = rt_read_file(b, &lb);
        if (!da || !db || la != lb || memcmp(da, db, la) != 0) {
            if (bad < 5)
                fprintf(stderr, "  differs: %05X (%s)\n", p, !db ? "missing" : "content");
            bad++;
        }
        free(da);
        free(db);
        free(a);
        free(b);
    }
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, ".breachd-download-index") ||
            !strcmp(n, ".breachd-download.lock"))
            continue;
        if (strlen(n) == 9 && !strcmp(n + 5, ".txt"))
            continue;
        if (allow_temp && !strncmp(n, ".", 1))
            continue;
        fprintf(stderr, "  unexpected file in %s: %s\n", dir, n);
        bad++;
    }
    closedir(d);
    return bad;
}

/* Count access-log lines by status (200, 304, other). */
static void log_statuses(size_t *s200, size_t *s304, size_t *other, size_t want)
{
    rt_access_count(&ngx, NULL, want);
    size_t n;
    char **lines = rt_access_lines(&ngx, &n);
    *s200 = *s304 = *other = 0;
    for (size_t i = 0; i < n; i++) {
        int st = atoi(lines[i]);
        if (st == 200)
            (*s200)++;
        else if (st == 304)
            (*s304)++;
        else
            (*other)++;
    }
    rt_free_lines(lines, n);
}

static void clear_log(void)
{
    assert_int_equal(truncate(ngx.access_log, 0), 0);
}

static void stat_of(const char *dir, uint32_t p, struct stat *st)
{
    char *path = rt_fmt("%s/%05X.txt", dir, p);
    assert_int_equal(stat(path, st), 0);
    free(path);
}

/* ---- setup ------------------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    rt_clean_env();
    root = rt_mkdtemp("download");
    char *ndir = rt_fmt("%s/nginx", root);
    mkdir(ndir, 0755);
    char *www = rt_fmt("%s/www", ndir);
    mkdir(www, 0755);
    mirror = rt_fmt("%s/range", www);
    mkdir(mirror, 0755);
    for (uint32_t p = 0; p < NPREFIX; p++)
        write_mirror_file(p, 1);
    rt_nginx_start(&ngx, ndir, false);
    tmpl = rt_fmt("http://127.0.0.1:%d/range/{prefix}", ngx.port);
    snprintf(range_arg, sizeof(range_arg), "00000-%s", LAST_HEX);
    dl_fx_set_root(root);
    free(ndir);
    free(www);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    rt_nginx_stop(&ngx);
    if (!getenv("KEEP_TMP"))
        rt_rmrf(root);
    free(root);
    free(mirror);
    free(tmpl);
    return 0;
}

/* ---- tests ------------------------------------------------------------------- */

static void test_full(void **state)
{
    (void)state;
    char *dir = rt_fmt("%s/d1", root), *single = rt_fmt("%s/single.txt", root);
    clear_log();
    double t0 = rt_now();
    run_out r = ctl("full", "--out", dir, "--upstream", tmpl, "--range", range_arg, "--single-file",
                    single, NULL);
    fprintf(stderr, "  full run: %.2f s\n", rt_now() - t0);
    assert_int_equal(r.status, 0);
    char *want = rt_fmt("download: complete: %d/%d prefixes present (%d written,", NPREFIX, NPREFIX,
                        NPREFIX);
    assert_non_null(strstr(r.out, want));
    assert_int_equal(compare_dir(dir, false), 0);

    /* every request: 200, no padding header, our User-Agent */
    size_t s200, s304, other;
    log_statuses(&s200, &s304, &other, NPREFIX);
    assert_int_equal(s200, NPREFIX);
    assert_int_equal(s304 + other, 0);
    size_t n;
    char **lines = rt_access_lines(&ngx, &n);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(strstr(lines[i], " - breachd/" BREACHD_VERSION));
        assert_non_null(strstr(lines[i], "HTTP/1.1"));
    }
    rt_free_lines(lines, n);

    /* the single file: HASH40:COUNT CRLF lines in hash order */
    size_t slen;
    char *sf = rt_read_file(single, &slen);
    assert_non_null(sf);
    size_t k = 0, nlines = 0;
    char prev[41] = "";
    for (uint32_t p = 0; p < NPREFIX; p++) {
        rt_range rr;
        rt_range_gen(&rr, BR_RANGE_PASSWORD_SHA1, p, 1 + (p + 1) % 6, 0, 1 * 7919 + 1);
        nlines += rr.n;
        rt_range_free(&rr);
    }
    for (char *l = sf; l < sf + slen; k++) {
        char *crlf = strstr(l, "\r\n");
        assert_non_null(crlf);
        assert_true(crlf - l > 41 && l[40] == ':');
        assert_true(memcmp(prev, l, 40) < 0);
        memcpy(prev, l, 40);
        l = crlf + 2;
    }
    assert_int_equal(k, nlines);
    free(sf);

    /* the layout feeds the filter builder */
    char *filter = rt_fmt("%s/pw.bfuse", root);
    char *argv[] = {BREACHCTL,  "filter", "build",   "--kind", "password-sha1",
                    "--output", filter,   "--input", dir,      NULL};
    assert_int_equal(run_cmd(argv), 0);
    rt_range rr;
    rt_range_gen(&rr, BR_RANGE_PASSWORD_SHA1, 0x123, 1 + (0x123 + 1) % 6, 0, 1 * 7919 + 1);
    char hex[41];
    br_hex_encode_upper(rr.e[0].hash, 20, hex);
    rt_range_free(&rr);
    char *qargv[] = {BREACHCTL, "filter", "query", filter, hex, NULL};
    int out_fd;
    pid_t q = rt_spawn(qargv, &out_fd, false);
    char buf[256] = "";
    ssize_t got = read(out_fd, buf, sizeof(buf) - 1);
    close(out_fd);
    waitpid(q, NULL, 0);
    assert_true(got > 0);
    assert_non_null(strstr(buf, "maybe"));
    free(filter);
    free(want);
    run_free(&r);
    free(dir);
    free(single);
}

static void test_changed(void **state)
{
    (void)state;
    char *dir = rt_fmt("%s/d1", root);
    static const uint32_t changed[] = {0x000, 0x007, 0x100, 0x3FE, NPREFIX - 1};
    struct stat *before = calloc(NPREFIX, sizeof(*before));
    for (uint32_t p = 0; p < NPREFIX; p++)
        stat_of(dir, p, &before[p]);
    for (size_t i = 0; i < BR_ARRAY_SIZE(changed); i++) {
        write_mirror_file(changed[i], 99);
        char *path = rt_fmt("%s/%05X.txt", mirror, changed[i]);
        struct timespec ts[2] = {{.tv_sec = time(NULL) + 100}, {.tv_sec = time(NULL) + 100}};
        utimensat(AT_FDCWD, path, ts, 0); /* a new ETag whatever the clock granularity */
        free(path);
    }
    clear_log();
    double t0 = rt_now();
    run_out r = ctl("changed", "--out", dir, "--upstream", tmpl, "--range", range_arg, NULL);
    fprintf(stderr, "  incremental run: %.2f s\n", rt_now() - t0);
    assert_int_equal(r.status, 0);
    char *want =
        rt_fmt("(5 written, 0 unchanged, %d not modified, 0 resumed, 0 failed)", NPREFIX - 5);
    assert_non_null(strstr(r.out, want));
    size_t s200, s304, other;
    log_statuses(&s200, &s304, &other, NPREFIX);
    assert_int_equal(s200, 5);
    assert_int_equal(s304, NPREFIX - 5);
    assert_int_equal(other, 0);
    for (size_t i = 0; i < BR_ARRAY_SIZE(changed); i++) {
        char *uri = rt_fmt("/range/%05X", changed[i]);
        size_t n;
        char **lines = rt_access_lines(&ngx, &n);
        for (size_t k = 0; k < n; k++)
            if (strstr(lines[k], uri) && strncmp(lines[k], "200 ", 4) != 0)
                fail_msg("%s was not a 200: %s", uri, lines[k]);
        rt_free_lines(lines, n);
        free(uri);
    }
    size_t rewritten = 0;
    for (uint32_t p = 0; p < NPREFIX; p++) {
        struct stat now;
        stat_of(dir, p, &now);
        if (now.st_ino != before[p].st_ino || now.st_mtim.tv_sec != before[p].st_mtim.tv_sec ||
            now.st_mtim.tv_nsec != before[p].st_mtim.tv_nsec)
            rewritten++;
    }
    assert_int_equal(rewritten, 5);
    assert_int_equal(compare_dir(dir, false), 0);
    free(before);
    free(want);
    run_free(&r);
    free(dir);
}

static void test_force(void **state)
{
    (void)state;
    char *dir = rt_fmt("%s/d1", root);
    struct stat *before = calloc(NPREFIX, sizeof(*before));
    for (uint32_t p = 0; p < NPREFIX; p++)
        stat_of(dir, p, &before[p]);
    clear_log();
    run_out r =
        ctl("force", "--out", dir, "--upstream", tmpl, "--range", range_arg, "--force", NULL);
    assert_int_equal(r.status, 0);
    char *want = rt_fmt("(0 written, %d unchanged, 0 not modified", NPREFIX);
    assert_non_null(strstr(r.out, want));
    size_t s200, s304, other;
    log_statuses(&s200, &s304, &other, NPREFIX);
    assert_int_equal(s200, NPREFIX);
    for (uint32_t p = 0; p < NPREFIX; p++) {
        struct stat now;
        stat_of(dir, p, &now);
        assert_true(now.st_ino == before[p].st_ino);
    }
    assert_int_equal(compare_dir(dir, false), 0);
    free(before);
    free(want);
    run_free(&r);
    free(dir);
}

static void test_missing(void **state)
{
    (void)state;
    char *dir = rt_fmt("%s/d2", root);
    static const uint32_t gone[] = {0x010, 0x0A0, NPREFIX - 1};
    char *saved[3];
    size_t saved_len[3];
    for (size_t i = 0; i < 3; i++) {
        char *path = rt_fmt("%s/%05X.txt", mirror, gone[i]);
        saved[i] = rt_read_file(path, &saved_len[i]);
        unlink(path);
        free(path);
    }
    run_out r = ctl("missing", "--out", dir, "--upstream", tmpl, "--range", range_arg, NULL);
    assert_int_equal(r.status, 2);
    char *want = rt_fmt("breachctl: download: 3 of %d prefixes missing: 00010 (failed: HTTP 404), "
                        "000A0 (failed: HTTP 404), %05X (failed: HTTP 404)\n",
                        NPREFIX, NPREFIX - 1);
    assert_non_null(strstr(r.err, want));
    assert_non_null(strstr(r.out, "download: incomplete: "));
    for (size_t i = 0; i < 3; i++) {
        char *path = rt_fmt("%s/%05X.txt", dir, gone[i]);
        assert_int_equal(access(path, F_OK), -1);
        free(path);
    }
    /* restored: the re-run asks for those three only */
    for (size_t i = 0; i < 3; i++) {
        char *path = rt_fmt("%s/%05X.txt", mirror, gone[i]);
        rt_write_file(path, saved[i], saved_len[i]);
        free(saved[i]);
        free(path);
    }
    clear_log();
    run_out r2 = ctl("missing2", "--out", dir, "--upstream", tmpl, "--range", range_arg, NULL);
    assert_int_equal(r2.status, 0);
    size_t s200, s304, other;
    log_statuses(&s200, &s304, &other, 3);
    assert_int_equal(s200, 3);
    assert_int_equal(s304 + other, 0);
    assert_int_equal(compare_dir(dir, false), 0);
    free(want);
    run_free(&r);
    run_free(&r2);
    free(dir);
}

static size_t count_final(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strlen(de->d_name) == 9 && !strcmp(de->d_name + 5, ".txt"))
            n++;
    closedir(d);
    return n;
}

static void test_kill_resume(void **state)
{
    (void)state;
    /* a second nginx on the same mirror, rate-limited so the run takes ~2.5 s */
    char *ndir = rt_fmt("%s/nginx-slow", root);
    mkdir(ndir, 0755);
    char *www = rt_fmt("%s/www", ndir);
    mkdir(www, 0755);
    char *link = rt_fmt("%s/range", www);
    assert_int_equal(symlink(mirror, link), 0);
    char *http_extra =
        rt_fmt("limit_req_zone $server_addr zone=dl:1m rate=%dr/s;", NPREFIX * 2 / 5);
    rt_nginx_opts o = {.http_extra = http_extra,
                       .location_extra = "limit_req zone=dl burst=100000;"};
    rt_nginx slow;
    rt_nginx_start_opts(&slow, ndir, &o);
    char *slow_tmpl = rt_fmt("http://127.0.0.1:%d/range/{prefix}", slow.port);
    char *dir = rt_fmt("%s/d3", root);

    char *args[] = {"--out", dir, "--upstream", slow_tmpl, "--range", range_arg, NULL};
    pid_t pid = spawn_ctl(args, "kill");
    /* kill once a batch is committed and the session file written */
    char *session = rt_fmt("%s/.breachd-download-session", dir);
    double end = rt_now() + 20;
    while (rt_now() < end && access(session, F_OK) < 0)
        usleep(2000);
    free(session);
    kill(pid, SIGKILL);
    size_t seen;
    run_out r = wait_ctl(pid, "kill");
    assert_int_equal(r.status, 128 + SIGKILL);
    seen = count_final(dir);
    fprintf(stderr, "  killed with %zu of %d files in place\n", seen, NPREFIX);
    assert_true(seen > 0 && seen < NPREFIX);
    /* whatever is under a final name is whole */
    for (uint32_t p = 0; p < NPREFIX; p++) {
        char *a = rt_fmt("%s/%05X.txt", mirror, p), *b = rt_fmt("%s/%05X.txt", dir, p);
        size_t la, lb;
        char *db = rt_read_file(b, &lb);
        if (db) {
            char *da = rt_read_file(a, &la);
            assert_true(la == lb && memcmp(da, db, la) == 0);
            free(da);
        }
        free(db);
        free(a);
        free(b);
    }
    run_out r2 = ctl("resume", "--out", dir, "--upstream", slow_tmpl, "--range", range_arg, NULL);
    assert_int_equal(r2.status, 0);
    unsigned written, unchanged, notmod, resumed;
    const char *paren = strchr(r2.out, '(');
    assert_non_null(paren);
    assert_int_equal(sscanf(paren, "(%u written, %u unchanged, %u not modified, %u resumed",
                            &written, &unchanged, &notmod, &resumed),
                     4);
    assert_int_equal(written + unchanged + notmod + resumed, NPREFIX);
    assert_true(resumed > 0);
    fprintf(stderr, "  resumed %u, %u not modified, %u written\n", resumed, notmod, written);
    assert_int_equal(compare_dir(dir, false), 0);
    rt_nginx_stop(&slow);
    run_free(&r);
    run_free(&r2);
    free(ndir);
    free(www);
    free(link);
    free(http_extra);
    free(slow_tmpl);
    free(dir);
}

static void test_locked(void **state)
{
    (void)state;
    char *dir = rt_fmt("%s/d7", root);
    mkdir(dir, 0755);
    char *lock = rt_fmt("%s/.breachd-download.lock", dir);
    int fd = open(lock, O_RDWR | O_CREAT, 0644);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    run_out r = ctl("locked", "--out", dir, "--upstream", tmpl, "--range", "0-F", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "another download is running there"));
    close(fd);
    run_free(&r);
    free(lock);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full),        cmocka_unit_test(test_changed),
        cmocka_unit_test(test_force),       cmocka_unit_test(test_missing),
        cmocka_unit_test(test_kill_resume), cmocka_unit_test(test_locked),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
