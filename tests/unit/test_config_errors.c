/* SPDX-License-Identifier: MIT */
/* breachd.conf parsing (daemon/conf.c), bad values: durations, sizes,
 * numbers, modes, log levels, paths, URL templates, proxies, metrics_listen,
 * user and group lists; every error with its exact FILE:LINE message. The
 * [dns] keys: the same message from breachd and from libbreachd-dns. */
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
#include "dns_conf.h"
#include "testutil.h"

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
    expect_error("[cache]\npartition_share = 0%\n",
                 NAME ":2: [cache] partition_share: \"0%\" is out of range (1% .. 100%)");
    expect_error("[upstream]\nbreaker_cooldown = 99ms\n",
                 NAME ":2: [upstream] breaker_cooldown: \"99ms\" is out of range (100ms .. 3600s)");
    expect_error("[upstream]\nbreaker_cooldown = 2h\n",
                 NAME ":2: [upstream] breaker_cooldown: \"2h\" is out of range (100ms .. 3600s)");
    expect_error("[upstream]\nbulk_queue = 0\n",
                 NAME ":2: [upstream] bulk_queue: \"0\" is out of range (1 .. 10000000)");
    expect_error("[upstream]\nbulk_share = 0%\n",
                 NAME ":2: [upstream] bulk_share: \"0%\" is out of range (1% .. 100%)");
    expect_error("[upstream]\nbulk_share = 101\n",
                 NAME ":2: [upstream] bulk_share: \"101\" is out of range (1% .. 100%)");
    for (size_t i = 0; i < 4; i++) {
        static const char *const bad[] = {"0.5", "50 %", "50%%", "%"};
        char text[64], want[160];
        snprintf(text, sizeof(text), "[upstream]\nbulk_share = %s\n", bad[i]);
        snprintf(want, sizeof(want),
                 NAME ":2: [upstream] bulk_share: bad percentage \"%s\": expected a whole number "
                      "1%% .. 100%%, e.g. 50%%",
                 bad[i]);
        expect_error(text, want);
    }
    expect_error("[urls]\nwhen_stale = bypass\n",
                 NAME ":2: [urls] when_stale: bad when_stale value \"bypass\": expected filter, "
                      "upstream or unknown");
    expect_error("[cache]\npartition = gid\n",
                 NAME ":2: [cache] partition: bad partition value \"gid\": expected uid or none");
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

/* text as a file read by breachd and by libbreachd-dns: both refuse it
 * with want (after "FILE:"). */
static void expect_dns_error(const char *text, const char *want)
{
    char *dir = tu_mkdtemp(), *path = tu_path("%s/breachd.conf", dir);
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
    char *full = tu_path("%s:%s", path, want);
    breachd_config *c = NULL;
    br_error err = {{0}};
    assert_int_equal(breachd_config_load(path, &c, &err), -EINVAL);
    if (strcmp(err.text, full) != 0)
        fail_msg("breachd\n  got:  %s\n  want: %s", err.text, full);
    bdns_conf *d = tu_xmalloc(sizeof(*d));
    memset(&err, 0, sizeof(err));
    assert_int_equal(bdns_conf_load(path, d, &err), -EINVAL);
    if (strcmp(err.text, full) != 0)
        fail_msg("libbreachd-dns\n  got:  %s\n  want: %s", err.text, full);
    free(d);
    free(full);
    tu_rmrf(dir);
    free(path);
    free(dir);
}

static void test_errors_dns(void **state)
{
    (void)state;
    expect_dns_error("[urls]\nfilter = /x\n\n[dns]\naction = nxdomain\naction.malware = drop\n",
                     "6: [dns] action.malware: expected nxdomain, nodata, sinkhole, redirect or "
                     "log, not \"drop\"");
    expect_dns_error("[dns]\n# a comment\naction.Mal_ware = sinkhole\n",
                     "3: [dns] action.Mal_ware: a category is 1 to 32 of a-z 0-9 _ -");
    expect_dns_error("[dns]\naction = block\n",
                     "2: [dns] action: expected nxdomain, nodata, sinkhole, redirect or log, not "
                     "\"block\"");
    expect_dns_error("[dns]\naction = log\naction = nodata\n", "3: [dns] action: set twice");
    expect_dns_error("[dns]\nsinkhole = 0.0.0.0, 1.2.3.4\n",
                     "2: [dns] sinkhole: expected at most one IPv4 and one IPv6 address, "
                     "comma-separated, not \"1.2.3.4\"");
    expect_dns_error("[dns]\nfilter = relative.bin\n",
                     "2: [dns] filter: expected absolute paths, comma-separated, not "
                     "\"relative.bin\"");
    expect_dns_error("[dns]\nactions = log\n",
                     "2: [dns] actions: unknown key (filter, action, action.CATEGORY, sinkhole, "
                     "redirect)");
    expect_dns_error("[dns]\nredirect = block page\n",
                     "2: [dns] redirect: expected a host name, not \"block page\"");
}

/* A good [dns] section is printed back by --check-config's dump. */
static void test_dns_dump(void **state)
{
    (void)state;
    breachd_config *c = load_ok("[dns]\naction = sinkhole\naction.phishing = redirect\n"
                                "redirect = block.example\nsinkhole = 10.0.0.1\n");
    char *text = dump_to_string(c);
    assert_non_null(strstr(text, "\n[dns]\n"));
    assert_non_null(strstr(text, "\naction = sinkhole\naction.phishing = redirect\n"));
    assert_non_null(strstr(text, "\nsinkhole = 10.0.0.1\n"));
    assert_non_null(strstr(text, "\nredirect = block.example\n"));
    breachd_config *again = load_ok(text); /* the dump loads */
    char *text2 = dump_to_string(again);
    assert_string_equal(text, text2);
    free(text2);
    free(text);
    breachd_config_free(again);
    breachd_config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors_values), cmocka_unit_test(test_errors_paths_urls),
        cmocka_unit_test(test_errors_users),  cmocka_unit_test(test_errors_dns),
        cmocka_unit_test(test_dns_dump),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
