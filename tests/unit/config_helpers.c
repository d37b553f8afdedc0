/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test_config*.c programs: see config_helpers.h. */
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

breachd_config *load_ok(const char *text)
{
    breachd_config *c = NULL;
    br_error err;
    int rc = load_text(text, &c, &err);
    if (rc != 0)
        fail_msg("unexpected error %d: %s\n--- config:\n%s", rc, err.text, text);
    assert_non_null(c);
    return c;
}

void expect_error(const char *text, const char *want)
{
    breachd_config *c = NULL;
    br_error err;
    int rc = load_text(text, &c, &err);
    if (rc != -EINVAL)
        fail_msg("expected -EINVAL, got %d (%s)\n--- config:\n%s", rc, rc ? err.text : "ok", text);
    if (strcmp(err.text, want) != 0)
        fail_msg("wrong message\n  got:  %s\n  want: %s\n--- config:\n%s", err.text, want, text);
}

char *dump_to_string(const breachd_config *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    breachd_config_dump(c, true, f);
    fclose(f);
    return buf;
}

void check_defaults(const breachd_config *c)
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
    assert_string_equal(c->daemon.stats_users_text, "");
    assert_int_equal(c->daemon.n_stats_users, 0);
    assert_int_equal(c->daemon.log_level, LOG_INFO);
    assert_string_equal(c->daemon.metrics_listen, "");
    assert_string_equal(c->daemon.metrics_host, "");
    assert_int_equal(c->daemon.metrics_port, 0);
    assert_int_equal(c->limits.max_connections, 1024);
    assert_int_equal(c->limits.max_inflight, 256);
    assert_int_equal(c->limits.idle_timeout_ms, 300000);
    assert_int_equal(c->limits.max_unread, 1 << 20);
    assert_int_equal(c->limits.drain_timeout_ms, 10000);
    assert_string_equal(c->passwords.filter, "");
    assert_string_equal(c->passwords.upstream, "https://api.pwnedpasswords.com/range/{prefix}");
    assert_int_equal(c->passwords.max_filter_age_s, 45 * 86400);
    assert_string_equal(c->urls.filter, "");
    assert_string_equal(c->urls.upstream, "");
    assert_int_equal(c->urls.max_filter_age_s, 2 * 86400);
    assert_int_equal(c->urls.when_stale, BREACHD_WHEN_STALE_FILTER);
    assert_string_equal(c->cache.path, "/var/cache/breachd");
    assert_int_equal(c->cache.max_size, (uint64_t)1 << 30);
    assert_int_equal(c->cache.ttl_s, 7 * 86400);
    assert_int_equal(c->cache.max_stale_s, 30 * 86400);
    assert_int_equal(c->cache.partition, BREACHD_PARTITION_UID);
    assert_int_equal(c->cache.partition_share_pct, 25);
    assert_int_equal(c->upstream.timeout_ms, 5000);
    assert_int_equal(c->upstream.max_inflight, 16);
    assert_int_equal(c->upstream.rate, 50);
    assert_string_equal(c->upstream.proxy, "");
    assert_string_equal(c->upstream.ca_file, "");
    assert_int_equal(c->upstream.decoys, 0);
    assert_int_equal(c->upstream.bulk_queue, 100000);
    assert_int_equal(c->upstream.bulk_share_pct, 50);
    assert_int_equal(c->upstream.breaker_cooldown_ms, 30000);
    assert_string_equal(c->http.listen, "");
    assert_int_equal(c->http.n_listens, 0);
    assert_string_equal(c->http.allowed_networks_text, "127.0.0.0/8, ::1/128");
    assert_int_equal(c->http.n_allowed_networks, 2);
    assert_int_equal(c->http.allowed_networks[0].bits, 8);
    assert_int_equal(c->http.allowed_networks[1].bits, 128);
    assert_int_equal(c->http.rate, 100);
    assert_int_equal(c->http.access_log, 0);
    assert_int_equal(c->daemon.trust_own_filters, 0);
}

const char full_config[] = "[daemon]\n"
                           "socket = /run/test/b.sock\n"
                           "socket_mode = 0600\n"
                           "allowed_users = root, 1234 ,daemon,1234\n"
                           "allowed_groups = root,4242\n"
                           "admin_users = 1000\n"
                           "stats_users = 1001, 1002\n"
                           "log_level = debug\n"
                           "metrics_listen = 127.0.0.2:9750\n"
                           "[limits]\n"
                           "max_connections = 5\n"
                           "max_inflight = 65536\n"
                           "idle_timeout = 400ms\n"
                           "max_unread = 4K\n"
                           "drain_timeout = 0\n"
                           "[passwords]\n"
                           "filter = /srv/pw.bfuse\n"
                           "upstream = file:///srv/mirror/{prefix}.txt\n"
                           "max_filter_age = 10d\n"
                           "[urls]\n"
                           "filter = /srv/urls.bloom\n"
                           "upstream = http://127.0.0.1:8080/url/{prefix}?x=1\n"
                           "max_filter_age = 12h\n"
                           "when_stale = unknown\n"
                           "[cache]\n"
                           "path = /srv/cache\n"
                           "max_size = 256M\n"
                           "ttl = 90m\n"
                           "max_stale = 0\n"
                           "partition = none\n"
                           "partition_share = 60%\n"
                           "[upstream]\n"
                           "timeout = 2500ms\n"
                           "max_inflight = 1024\n"
                           "rate = 100000\n"
                           "proxy = socks5h://127.0.0.1:1080\n"
                           "ca_file = /etc/ssl/certs/ca-certificates.crt\n"
                           "decoys = 16\n"
                           "bulk_queue = 7\n"
                           "bulk_share = 100%\n"
                           "breaker_cooldown = 1500ms\n"
                           "[http]\n"
                           "listen = 10.0.0.5:8080, [::]:8443 ,/run/test/http.sock\n"
                           "allowed_networks = 10.0.0.0/8,fd00::/8, 192.0.2.7\n"
                           "rate = 0\n"
                           "access_log = yes\n";

void check_full(const breachd_config *c)
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
    assert_int_equal(c->daemon.n_stats_users, 2);
    assert_int_equal(c->daemon.stats_users[1], 1002);
    assert_int_equal(c->daemon.log_level, LOG_DEBUG);
    assert_string_equal(c->daemon.metrics_listen, "127.0.0.2:9750");
    assert_string_equal(c->daemon.metrics_host, "127.0.0.2");
    assert_int_equal(c->daemon.metrics_port, 9750);
    assert_int_equal(c->limits.max_connections, 5);
    assert_int_equal(c->limits.max_inflight, 65536);
    assert_int_equal(c->limits.idle_timeout_ms, 400);
    assert_int_equal(c->limits.max_unread, 4096);
    assert_int_equal(c->limits.drain_timeout_ms, 0);
    assert_string_equal(c->passwords.filter, "/srv/pw.bfuse");
    assert_string_equal(c->passwords.upstream, "file:///srv/mirror/{prefix}.txt");
    assert_int_equal(c->passwords.max_filter_age_s, 10 * 86400);
    assert_string_equal(c->urls.filter, "/srv/urls.bloom");
    assert_string_equal(c->urls.upstream, "http://127.0.0.1:8080/url/{prefix}?x=1");
    assert_int_equal(c->urls.max_filter_age_s, 12 * 3600);
    assert_int_equal(c->urls.when_stale, BREACHD_WHEN_STALE_UNKNOWN);
    assert_string_equal(c->cache.path, "/srv/cache");
    assert_int_equal(c->cache.max_size, (uint64_t)256 << 20);
    assert_int_equal(c->cache.ttl_s, 90 * 60);
    assert_int_equal(c->cache.max_stale_s, 0);
    assert_int_equal(c->cache.partition, BREACHD_PARTITION_NONE);
    assert_int_equal(c->cache.partition_share_pct, 60);
    assert_int_equal(c->upstream.timeout_ms, 2500);
    assert_int_equal(c->upstream.max_inflight, 1024);
    assert_int_equal(c->upstream.rate, 100000);
    assert_string_equal(c->upstream.proxy, "socks5h://127.0.0.1:1080");
    assert_string_equal(c->upstream.ca_file, "/etc/ssl/certs/ca-certificates.crt");
    assert_int_equal(c->upstream.decoys, 16);
    assert_int_equal(c->upstream.bulk_queue, 7);
    assert_int_equal(c->upstream.bulk_share_pct, 100);
    assert_int_equal(c->upstream.breaker_cooldown_ms, 1500);
    assert_string_equal(c->http.listen, "10.0.0.5:8080, [::]:8443 ,/run/test/http.sock");
    assert_int_equal(c->http.n_listens, 3);
    assert_string_equal(c->http.listens[0].host, "10.0.0.5");
    assert_int_equal(c->http.listens[0].port, 8080);
    assert_string_equal(c->http.listens[1].host, "::");
    assert_int_equal(c->http.listens[1].port, 8443);
    assert_string_equal(c->http.listens[2].path, "/run/test/http.sock");
    assert_int_equal(c->http.n_allowed_networks, 3);
    assert_int_equal(c->http.allowed_networks[2].bits, 32);
    assert_int_equal(c->http.rate, 0);
    assert_int_equal(c->http.access_log, 1);
}
