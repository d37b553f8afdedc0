/* SPDX-License-Identifier: MIT */
/* breachd.conf [http] (daemon/conf_values.c, conf_access.c): listen lists,
 * allowed_networks and their errors, with exact FILE:LINE messages; the client check
 * (breachd_config_http_allowed) for IPv4, IPv6, mapped and Unix peers. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cmocka.h>

#include "conf.h"
#include "config_helpers.h"

static void test_listen(void **state)
{
    (void)state;
    breachd_config *c = load_ok("[http]\nlisten = 127.0.0.1:8080\n");
    assert_int_equal(c->http.n_listens, 1);
    assert_int_equal(c->http.listens[0].family, AF_INET);
    assert_string_equal(c->http.listens[0].host, "127.0.0.1");
    breachd_config_free(c);
    c = load_ok("[http]\nlisten = [0:0::1]:1, /tmp/x.sock\n");
    assert_int_equal(c->http.n_listens, 2);
    assert_int_equal(c->http.listens[0].family, AF_INET6);
    assert_string_equal(c->http.listens[0].host, "::1"); /* canonical spelling */
    assert_int_equal(c->http.listens[0].port, 1);
    assert_int_equal(c->http.listens[1].family, AF_UNIX);
    assert_string_equal(c->http.listens[1].path, "/tmp/x.sock");
    breachd_config_free(c);
    c = load_ok("[http]\nlisten =\n");
    assert_int_equal(c->http.n_listens, 0);
    assert_null(c->http.listens);
    breachd_config_free(c);
}

static void test_listen_errors(void **state)
{
    (void)state;
    expect_error("[http]\nlisten = localhost:8080\n", NAME
                 ":2: [http] listen: \"localhost:8080\": not a numeric IPv4 address (names are "
                 "not resolved), e.g. 10.0.0.5:8080 or [::1]:8080");
    expect_error("[http]\nlisten = ::1:8080\n", NAME
                 ":2: [http] listen: bad listen item \"::1:8080\": expected HOST:PORT with a "
                 "numeric address (10.0.0.5:8080, [::1]:8080) or an absolute Unix socket path");
    expect_error("[http]\nlisten = 127.0.0.1:0\n",
                 NAME ":2: [http] listen: bad port in \"127.0.0.1:0\": expected 1 .. 65535");
    expect_error("[http]\nlisten = 127.0.0.1\n", NAME
                 ":2: [http] listen: bad listen item \"127.0.0.1\": expected HOST:PORT with a "
                 "numeric address (10.0.0.5:8080, [::1]:8080) or an absolute Unix socket path");
    expect_error("[http]\nlisten = 127.0.0.1:80,,/x\n",
                 NAME ":2: [http] listen: an empty or over-long item in the list");
    expect_error("[http]\nlisten = 127.0.0.1:80, 127.0.0.1:80\n",
                 NAME ":2: [http] listen: \"127.0.0.1:80\" is listed twice");
    char text[800] = "[http]\nlisten = /";
    memset(text + strlen(text), 'a', 600);
    strcat(text, "\n");
    expect_error(text, NAME ":2: [http] listen: an empty or over-long item in the list");
    memset(text, 0, sizeof(text));
    strcpy(text, "[http]\nlisten = /");
    memset(text + strlen(text), 'a', 110);
    strcat(text, "\n");
    char want[300];
    snprintf(want, sizeof(want),
             NAME ":2: [http] listen: socket path \"/%.79s...\" is too long (at most 107 bytes)",
             text + strlen("[http]\nlisten = /"));
    expect_error(text, want);
}

static void test_networks_errors(void **state)
{
    (void)state;
    expect_error("[http]\nallowed_networks = 10.0.0.5/8\n",
                 NAME ":2: [http] allowed_networks: network \"10.0.0.5/8\" has host bits set: did "
                      "you mean 10.0.0.0/8?");
    expect_error("[http]\nallowed_networks = fd00::1/8\n",
                 NAME ":2: [http] allowed_networks: network \"fd00::1/8\" has host bits set: did "
                      "you mean fd00::/8?");
    expect_error("[http]\nallowed_networks = 10.0.0.0/33\n",
                 NAME ":2: [http] allowed_networks: bad prefix length in \"10.0.0.0/33\": expected "
                      "0 .. 32");
    expect_error("[http]\nallowed_networks = intranet\n",
                 NAME ":2: [http] allowed_networks: bad network \"intranet\": expected "
                      "ADDRESS/BITS with a numeric address, e.g. 10.0.0.0/8 or fd00::/8");
    expect_error("[http]\nallowed_networks = 10.0.0.0/8,\n",
                 NAME ":2: [http] allowed_networks: an empty or over-long item in the list");
    expect_error("[http]\naccess_log = maybe\n",
                 NAME ":2: [http] access_log: bad value \"maybe\": expected no or yes");
    expect_error("[http]\nrate = 1000001\n",
                 NAME ":2: [http] rate: \"1000001\" is out of range (0 .. 1000000)");
}

static struct sockaddr_storage v4(const char *a)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *s = (struct sockaddr_in *)&ss;
    s->sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, a, &s->sin_addr), 1);
    return ss;
}

static struct sockaddr_storage v6(const char *a)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
    s->sin6_family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, a, &s->sin6_addr), 1);
    return ss;
}

static bool allowed(const breachd_config *c, struct sockaddr_storage ss)
{
    return breachd_config_http_allowed(c, (const struct sockaddr *)&ss);
}

/* The client and connection keys: defaults, values, bounds. */
static void test_client_keys(void **state)
{
    (void)state;
    breachd_config *c = load_ok("[http]\n");
    assert_int_equal(c->http.ipv6_prefix, 64);
    assert_int_equal(c->http.max_connections, 1024);
    assert_int_equal(c->http.max_connections_per_client, 64);
    assert_int_equal(c->http.header_timeout_ms, 10000);
    breachd_config_free(c);
    c = load_ok("[http]\nipv6_prefix = 128\nmax_connections = 10\n"
                "max_connections_per_client = 2\nheader_timeout = 1500ms\n");
    assert_int_equal(c->http.ipv6_prefix, 128);
    assert_int_equal(c->http.max_connections, 10);
    assert_int_equal(c->http.max_connections_per_client, 2);
    assert_int_equal(c->http.header_timeout_ms, 1500);
    breachd_config_free(c);
    expect_error("[http]\nipv6_prefix = 129\n",
                 NAME ":2: [http] ipv6_prefix: \"129\" is out of range (0 .. 128)");
    expect_error("[http]\nmax_connections_per_client = 0\n",
                 NAME ":2: [http] max_connections_per_client: \"0\" is out of range "
                      "(1 .. 1048576)");
    expect_error("[http]\nheader_timeout = 50ms\n",
                 NAME ":2: [http] header_timeout: \"50ms\" is out of range (100ms .. 3600s)");
}

static void test_allowed(void **state)
{
    (void)state;
    breachd_config *c = load_ok("");
    assert_true(allowed(c, v4("127.0.0.1")));
    assert_true(allowed(c, v4("127.255.0.9")));
    assert_false(allowed(c, v4("128.0.0.1")));
    assert_false(allowed(c, v4("10.0.0.1")));
    assert_true(allowed(c, v6("::1")));
    assert_false(allowed(c, v6("::2")));
    assert_true(allowed(c, v6("::ffff:127.0.0.2"))); /* mapped: as IPv4 */
    assert_false(allowed(c, v6("::ffff:10.0.0.1")));
    struct sockaddr_storage un = {.ss_family = AF_UNIX};
    assert_true(allowed(c, un));
    assert_false(breachd_config_http_allowed(c, NULL));
    breachd_config_free(c);

    c = load_ok("[http]\nallowed_networks = 10.1.2.0/23, 2001:db8:80::/41, 192.0.2.7, 0.0.0.0/0\n");
    assert_true(allowed(c, v4("10.1.3.255")));
    assert_true(allowed(c, v4("8.8.8.8"))); /* 0.0.0.0/0 */
    assert_true(allowed(c, v6("2001:db8:ff::1")));
    assert_false(allowed(c, v6("2001:db8:100::1")));
    assert_false(allowed(c, v6("::1")));
    breachd_config_free(c);

    c = load_ok("[http]\nallowed_networks = 10.1.2.0/23, 192.0.2.7\n");
    assert_true(allowed(c, v4("10.1.2.0")));
    assert_false(allowed(c, v4("10.1.4.0")));
    assert_true(allowed(c, v4("192.0.2.7")));
    assert_false(allowed(c, v4("192.0.2.6")));
    assert_false(allowed(c, v4("127.0.0.1")));
    breachd_config_free(c);

    c = load_ok("[http]\nallowed_networks =\n"); /* nobody over TCP */
    assert_false(allowed(c, v4("127.0.0.1")));
    assert_true(allowed(c, un));
    breachd_config_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listen),          cmocka_unit_test(test_listen_errors),
        cmocka_unit_test(test_networks_errors), cmocka_unit_test(test_allowed),
        cmocka_unit_test(test_client_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
