/* SPDX-License-Identifier: MIT */
/* `breachctl download` end to end: a real breachctl process against
 * the fault server (tests/integration/faultserver.c). Everything lives in a
 * temp dir.
 *
 *  chaos         5xx, resets and closes on first tries: complete and exact
 *  badsome       prefixes that always 503 or serve garbage: exit 2, report
 *  outage        the upstream is down at the start, then up: completes
 *
 * Against nginx: test_download.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "config.h"
#include "download_fx.h"
#include "rtest.h"

static char *root;
static rt_fault fault;

static const char ok_body[] = "00000000000000000000000000000000001:42\r\n"
                              "ABCDEF0123456789ABCDEF0123456789ABC:7\r\n"
                              "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:0\r\n";

static void check_ok_files(const char *dir, uint32_t first, uint32_t last, uint32_t skip_mod)
{
    for (uint32_t p = first; p <= last; p++) {
        char *path = rt_fmt("%s/%05X.txt", dir, p);
        size_t len;
        char *d = rt_read_file(path, &len);
        if (skip_mod && (p % 64 == 5 || p % 64 == 6)) {
            assert_null(d);
        } else {
            assert_non_null(d);
            assert_int_equal(len, strlen(ok_body));
            assert_memory_equal(d, ok_body, len);
        }
        free(d);
        free(path);
    }
}

static void test_chaos(void **state)
{
    (void)state;
    char *dir = rt_fmt("%s/d4", root);
    char *t = rt_fmt("http://127.0.0.1:%d/chaos/{prefix}", fault.port);
    run_out r = ctl("chaos", "--out", dir, "--upstream", t, "--range", "00100-001FF", "--parallel",
                    "16", NULL);
    assert_int_equal(r.status, 0);
    check_ok_files(dir, 0x100, 0x1FF, 0);
    size_t total = rt_fault_count(&fault, "chaos", 0x100000);
    fprintf(stderr, "  chaos: %zu requests for 256 prefixes\n", total);
    assert_true(total >= 256 + 256 * 3 / 4 + 256 / 8);
    /* never padding, always our User-Agent */
    char *logp = rt_fmt("%s/requests.log", fault.dir);
    char *log = rt_read_file(logp, NULL);
    assert_null(strstr(log, "padding=true"));
    for (char *save = NULL, *l = strtok_r(log, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        if (!strncmp(l, "chaos ", 6))
            assert_non_null(strstr(l, "ua=breachd/" BREACHD_VERSION));
    free(log);
    free(logp);
    run_free(&r);
    free(t);
    free(dir);
}

static void test_badsome(void **state)
{
    (void)state;
    char *dir = rt_fmt("%s/d5", root);
    char *t = rt_fmt("http://127.0.0.1:%d/badsome/{prefix}", fault.port);
    run_out r = ctl("badsome", "--out", dir, "--upstream", t, "--range", "00000-000FF", NULL);
    assert_int_equal(r.status, 2);
    assert_non_null(
        strstr(r.err, "breachctl: download: 8 of 256 prefixes missing: 00005 (failed: HTTP 503), "
                      "00006 (failed: malformed body), 00045 (failed: HTTP 503), 00046 (failed: "
                      "malformed body), 00085 (failed: HTTP 503), 00086 (failed: malformed body), "
                      "000C5 (failed: HTTP 503), 000C6 (failed: malformed body)\n"));
    check_ok_files(dir, 0, 0xFF, 1);
    /* bounded: 3 fetches of 3 attempts for a 503, 3 fetches for a bad body */
    assert_int_equal(rt_fault_count(&fault, "badsome", 0x005), 9);
    assert_int_equal(rt_fault_count(&fault, "badsome", 0x006), 3);
    run_free(&r);
    free(t);
    free(dir);
}

static void test_outage(void **state)
{
    (void)state;
    char *dir = rt_fmt("%s/d6", root);
    char *t = rt_fmt("http://127.0.0.1:%d/sw/{prefix}", fault.port);
    rt_fault_set_down(&fault, true);
    char *args[] = {"--out", dir, "--upstream", t, "--range", "00000-0003F", NULL};
    pid_t pid = spawn_ctl(args, "outage");
    usleep(1500000);
    rt_fault_set_down(&fault, false);
    run_out r = wait_ctl(pid, "outage");
    fprintf(stderr, "[outage] exit %d\n  stdout: %s  stderr: %s", r.status, r.out, r.err);
    assert_int_equal(r.status, 0);
    check_ok_files(dir, 0, 0x3F, 0);
    run_free(&r);
    free(t);
    free(dir);
}

static int group_setup(void **state)
{
    (void)state;
    rt_clean_env();
    root = rt_mkdtemp("download-faults");
    dl_fx_set_root(root);
    char *fdir = rt_fmt("%s/fault", root);
    mkdir(fdir, 0755);
    rt_fault_start(&fault, FAULTSERVER, fdir);
    free(fdir);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    rt_fault_stop(&fault);
    if (!getenv("KEEP_TMP"))
        rt_rmrf(root);
    free(root);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chaos),
        cmocka_unit_test(test_badsome),
        cmocka_unit_test(test_outage),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
