/* SPDX-License-Identifier: MIT */
/* breachd.conf parsing (daemon/conf.c): defaults, every key, every unit,
 * every error with its exact FILE:LINE message, comments, CRLF, empty values,
 * the dump round trip, the example config. */
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
#include "testutil.h"

#define NAME "t.conf"

/* Load text (as file NAME). Returns the error code; *out on success. */
static int load_text(const char *text, breachd_config **out, br_error *err)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(f);
    memset(err, 0, sizeof(*err));
    int rc = breachd_config_load_stream(f, NAME, out, err);
    fclose(f);
    if (rc < 0)
        assert_null(*out);
    return rc;
}

static breachd_config *load_ok(const char *text)
{
    breachd_config *c = NULL;
    br_error err;
    int rc = load_text(text, &c, &err);
    if (rc != 0)
        fail_msg("unexpected error %d: %s\n--- config:\n%s", rc, err.text, text);
    assert_non_null(c);
    return c;
}

static void expect_error(const char *text, const char *want)
{
    breachd_config *c = NULL;
    br_error err;
    int rc = load_text(text, &c, &err);
    if (rc != -EINVAL)
        fail_msg("expected -EINVAL, got %d (%s)\n--- config:\n%s", rc, rc ? err.text : "ok", text);
    if (strcmp(err.text, want) != 0)
        fail_msg("wrong message\n  got:  %s\n  want: %s\n--- config:\n%s", err.text, want, text);
}

static char *dump_to_string(const breachd_config *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    breachd_config_dump(c, f);
    fclose(f);
    return buf;
}

static void check_defaults(const breachd_config *c)
{
    assert_string_equal(c->daemon.socket, "/run/breachd/breachd.sock");
    assert_int_equal(c->daemon.socket_mode, 0660);
    assert_string_equal(c->daemon.allowed_users_text, "");
    assert_int_equal(c->daemon.n_allowed_users, 0);
    assert_string_equal(c->daemon.allowed_groups_text, "");
    assert_int_equal(c->daemon.n_allowed_groups, 0);
    assert_string_equal(c->daemon.admin_users_text, "root");
    assert_int_equal(c->daemon.n_admin_users, 1);
    assert_int_equal(c->daemon.admin_users[0], 0);
    assert_int_equal(c->daemon.log_level, LOG_INFO);
    assert_string_equal(c->daemon.metrics_listen, "");
    assert_string_equal(c->daemon.metrics_host, "");
    assert_int_equal(c->daemon.metrics_port, 0);
    assert_string_equal(c->passwords.filter, "/var/lib/breachd/passwords.bfuse");
    assert_string_equal(c->passwords.upstream, "https://api.pwnedpasswords.com/range/{prefix}");
    assert_int_equal(c->passwords.max_filter_age_s, 45 * 86400);
    assert_string_equal(c->urls.filter, "");
    assert_string_equal(c->urls.upstream, "");
    assert_int_equal(c->urls.max_filter_age_s, 2 * 86400);
    assert_string_equal(c->cache.path, "/var/cache/breachd");
    assert_int_equal(c->cache.max_size, (uint64_t)1 << 30);
    assert_int_equal(c->cache.ttl_s, 7 * 86400);
    assert_int_equal(c->cache.max_stale_s, 30 * 86400);
    assert_int_equal(c->upstream.timeout_ms, 5000);
    assert_int_equal(c->upstream.max_inflight, 16);
    assert_int_equal(c->upstream.rate, 50);
    assert_string_equal(c->upstream.proxy, "");
    assert_string_equal(c->upstream.ca_file, "");
    assert_int_equal(c->upstream.decoys, 0);
}

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

static const char full_config[] = "[daemon]\n"
                                  "socket = /run/test/b.sock\n"
                                  "socket_mode = 0600\n"
                                  "allowed_users = root, 1234 ,daemon,1234\n"
                                  "allowed_groups = root,4242\n"
                                  "admin_users = 1000\n"
                                  "log_level = debug\n"
                                  "metrics_listen = 127.0.0.2:9750\n"
                                  "[passwords]\n"
                                  "filter = /srv/pw.bfuse\n"
                                  "upstream = file:///srv/mirror/{prefix}.txt\n"
                                  "max_filter_age = 10d\n"
                                  "[urls]\n"
                                  "filter = /srv/urls.bloom\n"
                                  "upstream = http://127.0.0.1:8080/url/{prefix}?x=1\n"
                                  "max_filter_age = 12h\n"
                                  "[cache]\n"
                                  "path = /srv/cache\n"
                                  "max_size = 256M\n"
                                  "ttl = 90m\n"
                                  "max_stale = 0\n"
                                  "[upstream]\n"
                                  "timeout = 2500ms\n"
                                  "max_inflight = 1024\n"
                                  "rate = 100000\n"
                                  "proxy = socks5h://127.0.0.1:1080\n"
                                  "ca_file = /etc/ssl/certs/ca-certificates.crt\n"
                                  "decoys = 16\n";

static void check_full(const breachd_config *c)
{
    assert_string_equal(c->daemon.socket, "/run/test/b.sock");
    assert_int_equal(c->daemon.socket_mode, 0600);
    assert_string_equal(c->daemon.allowed_users_text, "root, 1234 ,daemon,1234");
    assert_int_equal(c->daemon.n_allowed_users, 3); /* sorted, duplicates dropped */
    assert_int_equal(c->daemon.allowed_users[0], 0);
    assert_int_equal(c->daemon.allowed_users[1], 1); /* daemon: uid 1 on Debian */
    assert_int_equal(c->daemon.allowed_users[2], 1234);
    assert_int_equal(c->daemon.n_allowed_groups, 2);
    assert_int_equal(c->daemon.allowed_groups[0], 0);
    assert_int_equal(c->daemon.allowed_groups[1], 4242);
    assert_int_equal(c->daemon.n_admin_users, 1);
    assert_int_equal(c->daemon.admin_users[0], 1000);
    assert_int_equal(c->daemon.log_level, LOG_DEBUG);
    assert_string_equal(c->daemon.metrics_listen, "127.0.0.2:9750");
    assert_string_equal(c->daemon.metrics_host, "127.0.0.2");
    assert_int_equal(c->daemon.metrics_port, 9750);
    assert_string_equal(c->passwords.filter, "/srv/pw.bfuse");
    assert_string_equal(c->passwords.upstream, "file:///srv/mirror/{prefix}.txt");
    assert_int_equal(c->passwords.max_filter_age_s, 10 * 86400);
    assert_string_equal(c->urls.filter, "/srv/urls.bloom");
    assert_string_equal(c->urls.upstream, "http://127.0.0.1:8080/url/{prefix}?x=1");
    assert_int_equal(c->urls.max_filter_age_s, 12 * 3600);
    assert_string_equal(c->cache.path, "/srv/cache");
    assert_int_equal(c->cache.max_size, (uint64_t)256 << 20);
    assert_int_equal(c->cache.ttl_s, 90 * 60);
    assert_int_equal(c->cache.max_stale_s, 0);
    assert_int_equal(c->upstream.timeout_ms, 2500);
    assert_int_equal(c->upstream.max_inflight, 1024);
    assert_int_equal(c->upstream.rate, 100000);
    assert_string_equal(c->upstream.proxy, "socks5h://127.0.0.1:1080");
    assert_string_equal(c->upstream.ca_file, "/etc/ssl/certs/ca-certificates.crt");
    assert_int_equal(c->upstream.decoys, 16);
}

static void test_every_key(void **state)
{
    (void)state;
    breachd_config *c = load_ok(full_config);
    check_full(c);
    breachd_config_free(c);

    /* Sections in another order, repeated; keys indented; blanks around '='. */
    c = load_ok("[upstream]\n  decoys=3\n[daemon]\n\tlog_level =   error   \n[upstream]\n"
                "rate= 7\n[daemon]\nmetrics_listen =[::1]:1\n");
    assert_int_equal(c->upstream.decoys, 3);
    assert_int_equal(c->upstream.rate, 7);
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

static void test_errors_structure(void **state)
{
    (void)state;
    expect_error("[daemon]\nsocket = /x\n[foo]\n",
                 NAME ":3: unknown section [foo]: expected [daemon], [passwords], [urls], [cache] "
                      "or [upstream]");
    expect_error("[Daemon]\n", NAME ":1: unknown section [Daemon]: expected [daemon], "
                                    "[passwords], [urls], [cache] or [upstream]");
    expect_error("[]\n", NAME ":1: unknown section []: expected [daemon], [passwords], [urls], "
                              "[cache] or [upstream]");
    expect_error("\n\n[daemon\n", NAME ":3: section line without a closing ]");
    expect_error("[daemon] # main\n", NAME ":1: text after the section's ] (a comment must be on "
                                           "a line of its own)");
    expect_error("[daemon]\nsockt = /x\n", NAME ":2: [daemon] sockt: unknown key");
    expect_error("[cache]\ntimeout = 5s\n",
                 NAME ":2: [cache] timeout: unknown key (timeout is a key of [upstream])");
    expect_error("[upstream]\nrate = 5\ntimeout = 1s\n\nrate = 6\n",
                 NAME ":5: [upstream] rate: duplicate key (first set on line 2)");
    expect_error("[upstream]\nrate = 5\n[daemon]\n[upstream]\nrate = 5\n",
                 NAME ":5: [upstream] rate: duplicate key (first set on line 2)");
    expect_error("# top\nsocket = /x\n",
                 NAME ":2: socket: key outside a section (put it under its [section])");
    expect_error("[daemon]\nsocket /x\n", NAME ":2: expected \"key = value\", \"[section]\" or a "
                                               "comment line starting with # or ;");
    expect_error("[daemon]\nsocket: /x\n", NAME ":2: expected \"key = value\", \"[section]\" or "
                                                "a comment line starting with # or ;");
    expect_error("[daemon]\n = /x\n", NAME ":2: missing key name before =");
    expect_error("[daemon]\nsock et = /x\n", NAME ":2: bad key name \"sock et\"");
    /* An indented line is not a continuation of the previous value. */
    expect_error("[daemon]\nsocket = /x\n  /y\n", NAME ":3: expected \"key = value\", "
                                                       "\"[section]\" or a comment line starting "
                                                       "with # or ;");
    static const char nul[] = "[daemon]\nsocket = /x\0y\n";
    FILE *f = fmemopen((void *)nul, sizeof(nul) - 1, "r");
    assert_non_null(f);
    breachd_config *c = NULL;
    br_error err;
    assert_int_equal(breachd_config_load_stream(f, NAME, &c, &err), -EINVAL);
    assert_string_equal(err.text, NAME ":2: NUL byte in the line");
    fclose(f);
    expect_error("[daemon]\nsocket = /x\x01y\n",
                 NAME ":2: [daemon] socket: control character in the value");

    /* Line length: 16384 bytes is fine (libinih's own limit is 200), one more is not. */
    char *line = tu_xmalloc(20000);
    int n = snprintf(line, 20000, "[upstream]\nca_file = /");
    size_t head = strlen("ca_file = /");
    memset(line + n, 'a', 16384 - head);
    strcpy(line + n + 16384 - head, "\n");
    char want[512];
    snprintf(want, sizeof(want),
             NAME ":2: [upstream] ca_file: path \"%.80s...\" is too long (at most 4095 bytes)",
             line + n - 1);
    expect_error(line, want);
    strcpy(line + n + 16384 - head, "a\n");
    expect_error(line, NAME ":2: line too long (more than 16384 bytes)");
    free(line);
}

static void test_errors_values(void **state)
{
    (void)state;
    /* durations */
    expect_error("[upstream]\ntimeout = 5x\n",
                 NAME ":2: [upstream] timeout: bad duration \"5x\": the unit must be one of ms, "
                      "s, m, h, d (e.g. 45d, 5s)");
    expect_error("[upstream]\ntimeout = s\n",
                 NAME ":2: [upstream] timeout: bad duration \"s\": expected a whole number with "
                      "a unit ms, s, m, h or d (e.g. 45d, 5s)");
    expect_error("[upstream]\ntimeout = -5s\n",
                 NAME ":2: [upstream] timeout: bad duration \"-5s\": expected a whole number "
                      "with a unit ms, s, m, h or d (e.g. 45d, 5s)");
    expect_error("[upstream]\ntimeout = 1.5s\n",
                 NAME ":2: [upstream] timeout: bad duration \"1.5s\": the unit must be one of ms, "
                      "s, m, h, d (e.g. 45d, 5s)");
    expect_error("[upstream]\ntimeout = 5 s\n",
                 NAME ":2: [upstream] timeout: bad duration \"5 s\": the unit must be one of ms, "
                      "s, m, h, d (e.g. 45d, 5s)");
    expect_error("[upstream]\ntimeout = 5S\n",
                 NAME ":2: [upstream] timeout: bad duration \"5S\": the unit must be one of ms, "
                      "s, m, h, d (e.g. 45d, 5s)");
    expect_error("[upstream]\ntimeout =\n",
                 NAME ":2: [upstream] timeout: bad duration \"\": expected a whole number with a "
                      "unit ms, s, m, h or d (e.g. 45d, 5s)");
    expect_error("[upstream]\ntimeout = 99ms\n",
                 NAME ":2: [upstream] timeout: \"99ms\" is out of range (100ms .. 300s)");
    expect_error("[upstream]\ntimeout = 301s\n",
                 NAME ":2: [upstream] timeout: \"301s\" is out of range (100ms .. 300s)");
    expect_error("[passwords]\nmax_filter_age = 99999999999999999999d\n",
                 NAME ":2: [passwords] max_filter_age: bad duration \"99999999999999999999d\": "
                      "expected a whole number with a unit ms, s, m, h or d (e.g. 45d, 5s)");
    expect_error("[passwords]\nmax_filter_age = 999999999999999d\n",
                 NAME ":2: [passwords] max_filter_age: bad duration \"999999999999999d\": too "
                      "large");
    expect_error("[passwords]\nmax_filter_age = 0\n",
                 NAME ":2: [passwords] max_filter_age: \"0\" is out of range (1s .. 3650d)");
    expect_error("[urls]\nmax_filter_age = 3651d\n",
                 NAME ":2: [urls] max_filter_age: \"3651d\" is out of range (1s .. 3650d)");
    expect_error("[cache]\nttl = 1500ms\n",
                 NAME ":2: [cache] ttl: \"1500ms\" is not a whole number of seconds");
    expect_error("[cache]\nttl = 0s\n",
                 NAME ":2: [cache] ttl: \"0s\" is out of range (1s .. 365d)");
    expect_error("[cache]\nmax_stale = 366d\n",
                 NAME ":2: [cache] max_stale: \"366d\" is out of range (0s .. 365d)");
    /* sizes */
    expect_error("[cache]\nmax_size = 1T\n",
                 NAME ":2: [cache] max_size: bad size \"1T\": the unit must be K, M or G (powers "
                      "of 1024)");
    expect_error("[cache]\nmax_size = 1GB\n",
                 NAME ":2: [cache] max_size: bad size \"1GB\": the unit must be K, M or G (powers "
                      "of 1024)");
    expect_error("[cache]\nmax_size = big\n",
                 NAME ":2: [cache] max_size: bad size \"big\": expected a whole number with an "
                      "optional unit K, M or G (e.g. 512M, 1G)");
    expect_error("[cache]\nmax_size = 1023K\n",
                 NAME ":2: [cache] max_size: size \"1023K\" is out of range (1M .. 1024G)");
    expect_error("[cache]\nmax_size = 1025G\n",
                 NAME ":2: [cache] max_size: size \"1025G\" is out of range (1M .. 1024G)");
    expect_error("[cache]\nmax_size = 18014398509481984G\n",
                 NAME ":2: [cache] max_size: bad size \"18014398509481984G\": too large");
    /* numbers */
    expect_error("[upstream]\nmax_inflight = 0\n",
                 NAME ":2: [upstream] max_inflight: \"0\" is out of range (1 .. 1024)");
    expect_error("[upstream]\nmax_inflight = 1025\n",
                 NAME ":2: [upstream] max_inflight: \"1025\" is out of range (1 .. 1024)");
    expect_error("[upstream]\nrate = 0\n",
                 NAME ":2: [upstream] rate: \"0\" is out of range (1 .. 100000)");
    expect_error("[upstream]\nrate = 2.5\n",
                 NAME ":2: [upstream] rate: bad number \"2.5\": expected a whole number 1 .. "
                      "100000");
    expect_error("[upstream]\ndecoys = 17\n",
                 NAME ":2: [upstream] decoys: \"17\" is out of range (0 .. 16)");
    expect_error("[upstream]\ndecoys = -1\n",
                 NAME ":2: [upstream] decoys: bad number \"-1\": expected a whole number 0 .. 16");
    /* modes */
    expect_error("[daemon]\nsocket_mode = 0778\n",
                 NAME ":2: [daemon] socket_mode: bad mode \"0778\": expected octal digits, e.g. "
                      "0660");
    expect_error("[daemon]\nsocket_mode = 1777\n",
                 NAME ":2: [daemon] socket_mode: bad mode \"1777\": at most 0777 (no setuid, "
                      "setgid or sticky bits)");
    expect_error("[daemon]\nsocket_mode = rw-rw----\n",
                 NAME ":2: [daemon] socket_mode: bad mode \"rw-rw----\": expected octal digits, "
                      "e.g. 0660");
    expect_error("[daemon]\nsocket_mode = 00660\n",
                 NAME ":2: [daemon] socket_mode: bad mode \"00660\": expected octal digits, e.g. "
                      "0660");
    /* log level */
    expect_error("[daemon]\nlog_level = verbose\n",
                 NAME ":2: [daemon] log_level: bad log level \"verbose\": expected error, "
                      "warning, notice, info or debug");
}

static void test_errors_paths_urls(void **state)
{
    (void)state;
    expect_error("[daemon]\nsocket =\n", NAME ":2: [daemon] socket: must not be empty");
    expect_error("[daemon]\nsocket = run/b.sock\n",
                 NAME ":2: [daemon] socket: \"run/b.sock\" is not an absolute path");
    /* sun_path holds 107 bytes and the NUL. */
    char sock[160], text[256], want[512];
    snprintf(sock, sizeof(sock), "/run/breachd/%0*d", 107 - 13, 0);
    snprintf(text, sizeof(text), "[daemon]\nsocket = %s\n", sock);
    breachd_config *c = load_ok(text);
    assert_string_equal(c->daemon.socket, sock);
    breachd_config_free(c);
    snprintf(text, sizeof(text), "[daemon]\nsocket = %s1\n", sock);
    snprintf(want, sizeof(want),
             NAME ":2: [daemon] socket: path \"%.80s...\" is too long (at most 107 bytes)", sock);
    expect_error(text, want);
    expect_error("[cache]\npath =\n", NAME ":2: [cache] path: must not be empty");
    expect_error("[passwords]\nfilter = passwords.bfuse\n",
                 NAME ":2: [passwords] filter: \"passwords.bfuse\" is not an absolute path");
    expect_error("[upstream]\nca_file = ~/ca.pem\n",
                 NAME ":2: [upstream] ca_file: \"~/ca.pem\" is not an absolute path");

    expect_error("[passwords]\nupstream = https://api.pwnedpasswords.com/range/\n",
                 NAME ":2: [passwords] upstream: URL template "
                      "\"https://api.pwnedpasswords.com/range/\" has no {prefix}");
    expect_error("[urls]\nupstream = ftp://mirror/{prefix}\n",
                 NAME ":2: [urls] upstream: URL template \"ftp://mirror/{prefix}\" must start "
                      "with https://, http:// or file://");
    expect_error("[passwords]\nupstream = https://x/{hash}/{prefix}\n",
                 NAME ":2: [passwords] upstream: URL template \"https://x/{hash}/{prefix}\": only "
                      "{prefix} may appear in braces");
    expect_error("[passwords]\nupstream = https:///range/{prefix}\n",
                 NAME ":2: [passwords] upstream: URL template \"https:///range/{prefix}\" has no "
                      "host");
    expect_error("[passwords]\nupstream = file://srv/{prefix}.txt\n",
                 NAME ":2: [passwords] upstream: file URL \"file://srv/{prefix}.txt\" must name "
                      "an absolute path, e.g. file:///srv/mirror/{prefix}.txt");
    expect_error("[upstream]\nproxy = 127.0.0.1:3128\n",
                 NAME ":2: [upstream] proxy: proxy URL \"127.0.0.1:3128\" must start with "
                      "http://, https://, socks4://, socks4a://, socks5:// or socks5h://");
    expect_error("[upstream]\nproxy = http://\n",
                 NAME ":2: [upstream] proxy: proxy URL \"http://\" has no host");

    /* metrics_listen: loopback only */
    static const char *const not_loopback[] = {"0.0.0.0:9750", "10.1.2.3:9750", "128.0.0.1:9750"};
    for (size_t i = 0; i < BR_ARRAY_SIZE(not_loopback); i++) {
        snprintf(text, sizeof(text), "[daemon]\nmetrics_listen = %s\n", not_loopback[i]);
        snprintf(want, sizeof(want),
                 NAME ":2: [daemon] metrics_listen: \"%s\" is not a loopback address: the metrics "
                      "are served without authentication, so only a loopback address "
                      "(127.0.0.0/8 or [::1]) is allowed",
                 not_loopback[i]);
        expect_error(text, want);
    }
    expect_error("[daemon]\nmetrics_listen = [::]:9750\n",
                 NAME ":2: [daemon] metrics_listen: \"[::]:9750\" is not a loopback address: the "
                      "metrics are served without authentication, so only a loopback address "
                      "(127.0.0.0/8 or [::1]) is allowed");
    expect_error("[daemon]\nmetrics_listen = [::ffff:127.0.0.1]:9750\n",
                 NAME ":2: [daemon] metrics_listen: \"[::ffff:127.0.0.1]:9750\" is not a loopback "
                      "address: the metrics are served without authentication, so only a "
                      "loopback address (127.0.0.0/8 or [::1]) is allowed");
    expect_error("[daemon]\nmetrics_listen = localhost:9750\n",
                 NAME ":2: [daemon] metrics_listen: \"localhost:9750\" is not a numeric loopback "
                      "address: the metrics are served without authentication, so only a "
                      "loopback address (127.0.0.0/8 or [::1]) is allowed");
    expect_error("[daemon]\nmetrics_listen = 127.0.0.1\n",
                 NAME ":2: [daemon] metrics_listen: bad address \"127.0.0.1\": expected "
                      "HOST:PORT, e.g. 127.0.0.1:9750 or [::1]:9750");
    expect_error("[daemon]\nmetrics_listen = 127.0.0.1:0\n",
                 NAME ":2: [daemon] metrics_listen: bad port in \"127.0.0.1:0\": expected 1 .. "
                      "65535");
    expect_error("[daemon]\nmetrics_listen = 127.0.0.1:65536\n",
                 NAME ":2: [daemon] metrics_listen: bad port in \"127.0.0.1:65536\": expected 1 "
                      ".. 65535");
    expect_error("[daemon]\nmetrics_listen = ::1:9750\n",
                 NAME ":2: [daemon] metrics_listen: bad address \"::1:9750\": write an IPv6 "
                      "address in brackets, e.g. [::1]:9750");
    expect_error("[daemon]\nmetrics_listen = [::1]9750\n",
                 NAME ":2: [daemon] metrics_listen: bad address \"[::1]9750\": expected "
                      "HOST:PORT, e.g. 127.0.0.1:9750 or [::1]:9750");
}

static void test_errors_users(void **state)
{
    (void)state;
    expect_error("[daemon]\nallowed_users = root,nosuchuser-breachd-test\n",
                 NAME ":2: [daemon] allowed_users: unknown user \"nosuchuser-breachd-test\"");
    expect_error("[daemon]\nadmin_users = nosuchuser-breachd-test\n",
                 NAME ":2: [daemon] admin_users: unknown user \"nosuchuser-breachd-test\"");
    expect_error("[daemon]\nallowed_groups = root, nosuchgroup-breachd-test\n",
                 NAME ":2: [daemon] allowed_groups: unknown group \"nosuchgroup-breachd-test\"");
    expect_error("[daemon]\nallowed_users = root,,1000\n",
                 NAME ":2: [daemon] allowed_users: empty entry in the user list (a stray "
                      "comma?)");
    expect_error("[daemon]\nallowed_groups = root,\n",
                 NAME ":2: [daemon] allowed_groups: empty entry in the group list (a stray "
                      "comma?)");
    expect_error("[daemon]\nallowed_users = 4294967295\n",
                 NAME ":2: [daemon] allowed_users: user id \"4294967295\" is out of range");

    char *many = tu_xmalloc(4096);
    strcpy(many, "[daemon]\nallowed_users = 0");
    for (int i = 1; i <= BREACHD_CONF_MAX_LIST; i++)
        sprintf(many + strlen(many), ",%d", i);
    strcat(many, "\n");
    expect_error(many, NAME ":2: [daemon] allowed_users: more than 256 entries");
    free(many);
}

static void test_inline_comments(void **state)
{
    (void)state;
    /* A comment is a whole line: text after a value is part of it. */
    expect_error("[upstream]\ntimeout = 5s # timeout\n",
                 NAME ":2: [upstream] timeout: bad duration \"5s # timeout\": the unit must be "
                      "one of ms, s, m, h, d (e.g. 45d, 5s) (a comment must be on a line of its "
                      "own)");
    /* libinih would strip " ; ..." by itself; it must not. */
    expect_error("[upstream]\nrate = 50 ; per second\n",
                 NAME ":2: [upstream] rate: bad number \"50 ; per second\": expected a whole "
                      "number 1 .. 100000 (a comment must be on a line of its own)");
    expect_error("[passwords]\nupstream = https://x/{prefix} # mirror\n",
                 NAME ":2: [passwords] upstream: URL template \"https://x/{prefix} # mirror\" "
                      "holds a blank or control character (a comment must be on a line of its "
                      "own)");
    /* '#' or ';' inside a value without a blank before them is just text. */
    breachd_config *c = load_ok("[passwords]\nupstream = https://x/r;v=1/{prefix}#frag\n"
                                "filter = /srv/a#b;c\n");
    assert_string_equal(c->passwords.upstream, "https://x/r;v=1/{prefix}#frag");
    assert_string_equal(c->passwords.filter, "/srv/a#b;c");
    breachd_config_free(c);
}

static void test_comments_crlf(void **state)
{
    (void)state;
    breachd_config *c = load_ok("# a comment\n"
                                "; another\n"
                                "   # indented comment\n"
                                "\t; indented, with a tab\n"
                                "\n"
                                "[upstream]\n"
                                "# rate = 1\n"
                                "; rate = 2\n"
                                "rate = 3\n"
                                "   \n");
    assert_int_equal(c->upstream.rate, 3);
    breachd_config_free(c);

    /* CRLF endings, a UTF-8 BOM, no final newline; errors keep their line. */
    c = load_ok("\xEF\xBB\xBF[daemon]\r\nlog_level = debug\r\n# x\r\n[cache]\r\nmax_size = 2G");
    assert_int_equal(c->daemon.log_level, LOG_DEBUG);
    assert_int_equal(c->cache.max_size, (uint64_t)2 << 30);
    breachd_config_free(c);
    expect_error("[daemon]\r\n\r\nlog_level = loud\r\n",
                 NAME ":3: [daemon] log_level: bad log level \"loud\": expected error, warning, "
                      "notice, info or debug");
    expect_error("\xEF\xBB\xBF[nope]\r\n", NAME ":1: unknown section [nope]: expected [daemon], "
                                                "[passwords], [urls], [cache] or [upstream]");
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
        "\nlog_level = ",
        "\nmetrics_listen =",
        "[passwords]",
        "\nfilter = ",
        "\nupstream = ",
        "\nmax_filter_age = ",
        "[urls]",
        "\nfilter =",
        "\nupstream =",
        "\nmax_filter_age = ",
        "[cache]",
        "\npath = ",
        "\nmax_size = ",
        "\nttl = ",
        "\nmax_stale = ",
        "[upstream]",
        "\ntimeout = ",
        "\nmax_inflight = ",
        "\nrate = ",
        "\nproxy =",
        "\nca_file =",
        "\ndecoys = ",
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
        cmocka_unit_test(test_defaults),          cmocka_unit_test(test_every_key),
        cmocka_unit_test(test_durations),         cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_errors_structure),  cmocka_unit_test(test_errors_values),
        cmocka_unit_test(test_errors_paths_urls), cmocka_unit_test(test_errors_users),
        cmocka_unit_test(test_inline_comments),   cmocka_unit_test(test_comments_crlf),
        cmocka_unit_test(test_empty_values),      cmocka_unit_test(test_peer_policy),
        cmocka_unit_test(test_dump_roundtrip),    cmocka_unit_test(test_files),
        cmocka_unit_test(test_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
