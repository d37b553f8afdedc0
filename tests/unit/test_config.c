/* SPDX-License-Identifier: MIT */
/* breachd.conf parsing (daemon/conf.c), accepted configs: defaults, every
 * key, every unit of durations and sizes, empty values, the peer and admin
 * policy. Syntax errors, comments and CRLF: test_config_syntax.c; value
 * errors: test_config_errors.c; dump round trip, files and the example
 * config: test_config_files.c. */
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

static void test_defaults(void **state)
{
    (void)state;
    breachd_config *c = NULL;
    assert_int_equal(breachd_config_defaults(&c), 0);
    check_defaults(c);
    assert_string_equal(c->path, "");
    breachd_config_free(c);

    /* An empty file, and one with only sections and comments, is the defaults. */
    c = load_ok("");
    check_defaults(c);
    assert_string_equal(c->path, NAME);
    breachd_config_free(c);
    c = load_ok("# nothing\n[daemon]\n[passwords]\n[urls]\n[cache]\n[upstream]\n");
    check_defaults(c);
    breachd_config_free(c);
    breachd_config_free(NULL);
}

static void test_every_key(void **state)
{
    (void)state;
    breachd_config *c = load_ok(full_config);
    check_full(c);
    breachd_config_free(c);

    /* Sections in another order, repeated; keys indented; blanks around '='. */
    c = load_ok("[upstream]\n  decoys=3\n[daemon]\n\tlog_level =   error   \n[upstream]\n"
                "rate= 7\nbulk_share = 50\n[daemon]\nmetrics_listen =[::1]:1\n");
    assert_int_equal(c->upstream.decoys, 3);
    assert_int_equal(c->upstream.rate, 7);
    assert_int_equal(c->upstream.bulk_share_pct, 50);
    assert_int_equal(c->daemon.log_level, LOG_ERR);
    assert_string_equal(c->daemon.metrics_host, "::1");
    assert_int_equal(c->daemon.metrics_port, 1);
    breachd_config_free(c);

    static const struct {
        const char *name;
        int level;
    } levels[] = {{"error", LOG_ERR}, {"warning", LOG_WARNING}, {"notice", LOG_NOTICE},
                  {"info", LOG_INFO}, {"debug", LOG_DEBUG},     {"DEBUG", LOG_DEBUG}};
    for (size_t i = 0; i < BR_ARRAY_SIZE(levels); i++) {
        char text[128];
        snprintf(text, sizeof(text), "[daemon]\nlog_level = %s\n", levels[i].name);
        c = load_ok(text);
        assert_int_equal(c->daemon.log_level, levels[i].level);
        breachd_config_free(c);
    }
    assert_string_equal(breachd_log_level_name(LOG_NOTICE), "notice");
    assert_null(breachd_log_level_name(LOG_ALERT));

    /* socket_mode is octal with or without the leading 0. */
    c = load_ok("[daemon]\nsocket_mode = 666\n");
    assert_int_equal(c->daemon.socket_mode, 0666);
    breachd_config_free(c);
    c = load_ok("[daemon]\nsocket_mode = 0\n");
    assert_int_equal(c->daemon.socket_mode, 0);
    breachd_config_free(c);
}

static void test_durations(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t seconds;
    } ages[] = {
        {"90", 90},    {"1s", 1},
        {"30s", 30},   {"5m", 300},
        {"2h", 7200},  {"3d", 3 * 86400},
        {"5000ms", 5}, {"3650d", 3650LL * 86400},
        {"0060s", 60}, {"87600h", 3650LL * 86400},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(ages); i++) {
        char text[128];
        snprintf(text, sizeof(text), "[passwords]\nmax_filter_age = %s\n", ages[i].text);
        breachd_config *c = load_ok(text);
        assert_int_equal(c->passwords.max_filter_age_s, ages[i].seconds);
        breachd_config_free(c);
    }
    static const struct {
        const char *text;
        uint32_t ms;
    } timeouts[] = {
        {"100ms", 100}, {"1500ms", 1500}, {"2", 2000}, {"2s", 2000}, {"1m", 60000}, {"5m", 300000},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(timeouts); i++) {
        char text[128];
        snprintf(text, sizeof(text), "[upstream]\ntimeout = %s\n", timeouts[i].text);
        breachd_config *c = load_ok(text);
        assert_int_equal(c->upstream.timeout_ms, timeouts[i].ms);
        breachd_config_free(c);
    }
    breachd_config *c = load_ok("[cache]\nttl = 1s\nmax_stale = 365d\n");
    assert_int_equal(c->cache.ttl_s, 1);
    assert_int_equal(c->cache.max_stale_s, 365 * 86400);
    breachd_config_free(c);
}

static void test_sizes(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t bytes;
    } sizes[] = {
        {"1048576", 1048576},      {"1024K", 1 << 20},           {"2048k", 2 << 20},
        {"1M", 1 << 20},           {"512m", 512 << 20},          {"1G", (uint64_t)1 << 30},
        {"3g", (uint64_t)3 << 30}, {"1024G", (uint64_t)1 << 40}, {"1048577", 1048577},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(sizes); i++) {
        char text[128];
        snprintf(text, sizeof(text), "[cache]\nmax_size = %s\n", sizes[i].text);
        breachd_config *c = load_ok(text);
        assert_int_equal(c->cache.max_size, sizes[i].bytes);
        breachd_config_free(c);
    }
}

static void test_empty_values(void **state)
{
    (void)state;
    breachd_config *c = load_ok("[daemon]\n"
                                "allowed_users =\n"
                                "allowed_groups =   \n"
                                "admin_users =\n"
                                "metrics_listen =\n"
                                "[passwords]\n"
                                "filter =\n"
                                "upstream =\n"
                                "[urls]\n"
                                "filter =\n"
                                "upstream =\n"
                                "[upstream]\n"
                                "proxy =\n"
                                "ca_file =\n");
    assert_int_equal(c->daemon.n_allowed_users, 0);
    assert_int_equal(c->daemon.n_allowed_groups, 0);
    assert_int_equal(c->daemon.n_admin_users, 0);
    assert_string_equal(c->daemon.admin_users_text, "");
    assert_string_equal(c->daemon.metrics_host, "");
    assert_int_equal(c->daemon.metrics_port, 0);
    assert_string_equal(c->passwords.filter, "");
    assert_string_equal(c->passwords.upstream, "");
    assert_string_equal(c->urls.filter, "");
    assert_string_equal(c->urls.upstream, "");
    assert_string_equal(c->upstream.proxy, "");
    assert_string_equal(c->upstream.ca_file, "");
    /* Nobody is admin; anyone may connect. */
    assert_false(breachd_config_is_admin(c, 0));
    assert_true(breachd_config_peer_allowed(c, 4321, 4321, NULL, 0));
    breachd_config_free(c);
}

static void test_peer_policy(void **state)
{
    (void)state;
    breachd_config *c = load_ok("[daemon]\nallowed_users = 1000, 1001\nallowed_groups = 50\n"
                                "admin_users = root, 1001\n");
    assert_true(breachd_config_peer_allowed(c, 1000, 1000, NULL, 0));
    assert_true(breachd_config_peer_allowed(c, 1001, 1001, NULL, 0));
    assert_true(breachd_config_peer_allowed(c, 0, 0, NULL, 0)); /* admin */
    assert_true(breachd_config_peer_allowed(c, 2000, 50, NULL, 0));
    gid_t groups[] = {7, 50};
    assert_true(breachd_config_peer_allowed(c, 2000, 2000, groups, 2));
    assert_false(breachd_config_peer_allowed(c, 2000, 2000, groups, 1));
    assert_false(breachd_config_peer_allowed(c, 2000, 2000, NULL, 0));
    assert_true(breachd_config_is_admin(c, 0));
    assert_true(breachd_config_is_admin(c, 1001));
    assert_false(breachd_config_is_admin(c, 1000));
    breachd_config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),     cmocka_unit_test(test_every_key),
        cmocka_unit_test(test_durations),    cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_empty_values), cmocka_unit_test(test_peer_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
