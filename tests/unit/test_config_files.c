/* SPDX-License-Identifier: MIT */
/* breachd.conf (daemon/conf.c) beyond parsing a text: the dump round trip,
 * loading from files (missing, a directory, errors naming the path), and the
 * example config data/breachd.conf.example. */
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
#include <syslog.h>

#include <cmocka.h>

#include "conf.h"
#include "config_helpers.h"
#include "testutil.h"

static void test_dump_roundtrip(void **state)
{
    (void)state;
    breachd_config *d = NULL;
    assert_int_equal(breachd_config_defaults(&d), 0);
    char *d1 = dump_to_string(d);
    breachd_config *d2 = load_ok(d1);
    check_defaults(d2);
    char *d1b = dump_to_string(d2);
    /* Only the header line (the source) differs. */
    assert_string_equal(strchr(d1, '\n'), strchr(d1b, '\n'));
    assert_non_null(strstr(d1, "\nsocket_mode = 0660\n"));
    assert_non_null(strstr(d1, "\nmax_filter_age = 45d\n"));
    assert_non_null(strstr(d1, "\nmax_size = 1G\n"));
    assert_non_null(strstr(d1, "\ntimeout = 5s\n"));
    assert_non_null(strstr(d1, "\n# admin_users: uids 0\n"));
    free(d1);
    free(d1b);
    breachd_config_free(d);
    breachd_config_free(d2);

    breachd_config *c = load_ok(full_config);
    char *s1 = dump_to_string(c);
    breachd_config *c2 = load_ok(s1);
    check_full(c2);
    char *s2 = dump_to_string(c2);
    assert_string_equal(s1, s2);
    assert_non_null(strstr(s1, "\n# allowed_users: uids 0, 1, 1234\n"));
    assert_non_null(strstr(s1, "\nttl = 90m\n"));
    assert_non_null(strstr(s1, "\nmax_stale = 0s\n"));
    assert_non_null(strstr(s1, "\ntimeout = 2500ms\n"));
    assert_non_null(strstr(s1, "\nmax_size = 256M\n"));
    free(s1);
    free(s2);
    breachd_config_free(c);
    breachd_config_free(c2);
}

static void test_files(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/breachd.conf", dir);
    breachd_config *c = NULL;
    br_error err;

    assert_int_equal(breachd_config_load(path, &c, &err), -ENOENT);
    assert_null(c);
    char *want = tu_path("%s: No such file or directory", path);
    assert_string_equal(err.text, want);
    free(want);

    assert_int_equal(breachd_config_load(dir, &c, &err), -EISDIR);
    want = tu_path("%s: is a directory", dir);
    assert_string_equal(err.text, want);
    free(want);

    static const char bad[] = "[daemon]\n# ok\nlog_level = info\n\n[upstream]\ndecoys = 99\n";
    assert_int_equal(tu_write_file(path, bad, strlen(bad)), 0);
    assert_int_equal(breachd_config_load(path, &c, &err), -EINVAL);
    want = tu_path("%s:6: [upstream] decoys: \"99\" is out of range (0 .. 16)", path);
    assert_string_equal(err.text, want);
    free(want);

    assert_int_equal(tu_write_file(path, full_config, strlen(full_config)), 0);
    assert_int_equal(breachd_config_load(path, &c, &err), 0);
    check_full(c);
    assert_string_equal(c->path, path);
    breachd_config_free(c);

    tu_rmrf(dir);
    free(path);
    free(dir);
}

/* data/breachd.conf.example: parses, sets every key, and to the defaults. */
static void test_example(void **state)
{
    (void)state;
    char *path = tu_path("%s/../breachd.conf.example", FIXTURES_DIR);
    breachd_config *c = NULL;
    br_error err;
    int rc = breachd_config_load(path, &c, &err);
    if (rc != 0)
        fail_msg("%s", err.text);
    check_defaults(c);
    size_t len;
    uint8_t *data = tu_read_file(path, &len);
    assert_non_null(data);
    char *text = tu_xmalloc(len + 1);
    memcpy(text, data, len);
    text[len] = '\0';
    free(data);
    static const char *const keys[] = {
        "[daemon]",
        "\nsocket = ",
        "\nsocket_mode = ",
        "\nallowed_users =",
        "\nallowed_groups =",
        "\nadmin_users = ",
        "\nstats_users =",
        "\nlog_level = ",
        "\nmetrics_listen =",
        "[passwords]",
        "\nfilter =",
        "\nupstream = ",
        "\nmax_filter_age = ",
        "[urls]",
        "\nfilter =",
        "\nupstream =",
        "\nmax_filter_age = ",
        "\nwhen_stale = ",
        "[cache]",
        "\npath = ",
        "\nmax_size = ",
        "\nttl = ",
        "\nmax_stale = ",
        "\npartition = ",
        "[upstream]",
        "\ntimeout = ",
        "\nmax_inflight = ",
        "\nrate = ",
        "\nproxy =",
        "\nca_file =",
        "\ndecoys = ",
        "\nbulk_queue = ",
        "\nbulk_share = ",
    };
    /* In this order, each after the previous one. */
    const char *p = text;
    for (size_t i = 0; i < BR_ARRAY_SIZE(keys); i++) {
        const char *q = strstr(p, keys[i]);
        if (!q)
            fail_msg("%s: \"%s\" missing (or out of order)", path, keys[i]);
        p = q + 1;
    }
    free(text);
    breachd_config_free(c);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dump_roundtrip),
        cmocka_unit_test(test_files),
        cmocka_unit_test(test_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
