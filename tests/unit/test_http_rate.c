/* SPDX-License-Identifier: MIT */
/* Adversary tests of [http] rate's buckets (daemon/http_rate.c,
 * breachd.conf(5) [http] rate and ipv6_prefix): a client that rotates
 * through the addresses of its IPv6 /64 is one client; a flood of new
 * addresses that fills the table is still limited. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "http_rate.h"

static struct sockaddr_in6 v6(const char *text)
{
    struct sockaddr_in6 a = {.sin6_family = AF_INET6};
    assert_int_equal(inet_pton(AF_INET6, text, &a.sin6_addr), 1);
    return a;
}

static uint32_t take6(bd_rate_table *t, const char *text, uint32_t rate, uint64_t now)
{
    struct sockaddr_in6 a = v6(text);
    return bd_rate_take(t, (const struct sockaddr *)&a, rate, now);
}

/* The attack: one request from each of 50 addresses of one /64, at a rate
 * of 5 a second. By default the /64 is one client. */
static void test_rotating_through_a_64(void **s)
{
    (void)s;
    bd_rate_table *t = bd_rate_new();
    assert_non_null(t);
    uint32_t allowed = 0;
    for (unsigned i = 0; i < 50; i++) {
        char a[64];
        snprintf(a, sizeof(a), "2001:db8:1:2:%x:%x::1", i * 7919 % 65536, i);
        allowed += take6(t, a, 5, 1000) == 0;
    }
    assert_int_equal(allowed, 5);
    /* another /64 has its own bucket */
    assert_int_equal(take6(t, "2001:db8:1:3::1", 5, 1000), 0);
    bd_rate_free(t);
}

static uint32_t take4(bd_rate_table *t, const char *text, uint32_t rate, uint64_t now)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, text, &a.sin_addr), 1);
    return bd_rate_take(t, (const struct sockaddr *)&a, rate, now);
}

/* The attack: a local user cycles through 127.0.0.0/8 (any address of it
 * reaches a listener on 127.0.0.1), ::1 and their IPv4-mapped forms, one
 * request from each, at a rate of 5 a second. Loopback is one client. */
static void test_rotating_through_loopback(void **s)
{
    (void)s;
    bd_rate_table *t = bd_rate_new();
    assert_non_null(t);
    uint32_t allowed = 0;
    for (unsigned i = 0; i < 40; i++) {
        char a[64];
        snprintf(a, sizeof(a), "127.%u.%u.%u", i % 3, i / 3, i + 1);
        allowed += take4(t, a, 5, 1000) == 0;
        snprintf(a, sizeof(a), "::ffff:127.0.%u.%u", i, i + 2);
        allowed += take6(t, a, 5, 1000) == 0;
    }
    allowed += take6(t, "::1", 5, 1000) == 0;
    assert_int_equal(allowed, 5);
    /* another address is another client */
    assert_int_equal(take4(t, "192.0.2.1", 5, 1000), 0);
    /* the limit key of every loopback address is one; the partition key
     * (bd_http_client_key) still tells them apart */
    uint8_t k1[16], k2[16], k3[16];
    struct sockaddr_in a1 = {.sin_family = AF_INET}, a2 = {.sin_family = AF_INET};
    struct sockaddr_in6 a3 = v6("::1");
    inet_pton(AF_INET, "127.0.0.1", &a1.sin_addr);
    inet_pton(AF_INET, "127.9.8.7", &a2.sin_addr);
    assert_true(bd_http_limit_key((const struct sockaddr *)&a1, 64, k1));
    assert_true(bd_http_limit_key((const struct sockaddr *)&a2, 64, k2));
    assert_true(bd_http_limit_key((const struct sockaddr *)&a3, 128, k3));
    assert_memory_equal(k1, k2, 16);
    assert_memory_equal(k1, k3, 16);
    assert_true(bd_http_client_key((const struct sockaddr *)&a1, 64, k1));
    assert_true(bd_http_client_key((const struct sockaddr *)&a2, 64, k2));
    assert_memory_not_equal(k1, k2, 16);
    bd_rate_free(t);
}

static void test_prefix_lengths(void **s)
{
    (void)s;
    bd_rate_table *t = bd_rate_new();
    assert_non_null(t);
    /* /128: every address its own client */
    bd_rate_set_ipv6_prefix(t, 128);
    assert_int_equal(take6(t, "2001:db8::1", 1, 1000), 0);
    assert_int_equal(take6(t, "2001:db8::2", 1, 1000), 0);
    assert_true(take6(t, "2001:db8::1", 1, 1000) > 0);
    /* /48: a whole site is one client */
    bd_rate_set_ipv6_prefix(t, 48);
    assert_int_equal(take6(t, "2001:db8:5:1::1", 1, 1000), 0);
    assert_true(take6(t, "2001:db8:5:ffff::9", 1, 1000) > 0);
    assert_int_equal(take6(t, "2001:db8:6::1", 1, 1000), 0);
    /* an IPv4-mapped address counts as its IPv4 address, not by the prefix */
    bd_rate_set_ipv6_prefix(t, 64);
    assert_int_equal(take6(t, "::ffff:10.0.0.1", 1, 1000), 0);
    assert_int_equal(take6(t, "::ffff:10.0.0.2", 1, 1000), 0);
    bd_rate_free(t);
}

/* The client key behind the rate, the connection caps and the cache
 * partitions. */
static void test_client_key(void **s)
{
    (void)s;
    uint8_t a[16], b[16];
    struct sockaddr_in6 x = v6("2001:db8:1:2:aaaa:bbbb:cccc:dddd");
    struct sockaddr_in6 y = v6("2001:db8:1:2::");
    assert_true(bd_http_client_key((const struct sockaddr *)&x, 64, a));
    assert_true(bd_http_client_key((const struct sockaddr *)&y, 64, b));
    assert_memory_equal(a, b, 16);
    assert_true(bd_http_client_key((const struct sockaddr *)&x, 128, a));
    assert_memory_not_equal(a, b, 16);
    struct sockaddr_in v4 = {.sin_family = AF_INET};
    inet_pton(AF_INET, "192.0.2.7", &v4.sin_addr);
    struct sockaddr_in6 m = v6("::ffff:192.0.2.7");
    assert_true(bd_http_client_key((const struct sockaddr *)&v4, 64, a));
    assert_true(bd_http_client_key((const struct sockaddr *)&m, 0, b));
    assert_memory_equal(a, b, 16);
    struct sockaddr un = {.sa_family = AF_UNIX};
    assert_false(bd_http_client_key(&un, 64, a));
}

/* The attack: as many busy addresses as the table holds, then one more
 * address asks far past the rate. */
static void test_full_table_still_limits(void **s)
{
    (void)s;
    bd_rate_table *t = bd_rate_new();
    assert_non_null(t);
    struct sockaddr_in c = {.sin_family = AF_INET};
    uint32_t i = 0;
    /* each takes one of its 2 tokens: busy (not full again) for 500 ms;
     * the table holds 3/4 of its largest size, 2^17 slots */
    for (; i < (1u << 17) / 4 * 3; i++) {
        c.sin_addr.s_addr = htonl(0x0A000000u + i);
        assert_int_equal(bd_rate_take(t, (const struct sockaddr *)&c, 2, 5000), 0);
    }
    c.sin_addr.s_addr = htonl(0x0B000001u);
    uint32_t allowed = 0;
    for (int k = 0; k < 100; k++)
        allowed += bd_rate_take(t, (const struct sockaddr *)&c, 2, 5000) == 0;
    assert_true(allowed <= 2);
    /* once the flood's buckets are full again, the address has its own */
    c.sin_addr.s_addr = htonl(0x0B000002u);
    assert_int_equal(bd_rate_take(t, (const struct sockaddr *)&c, 2, 7000), 0);
    assert_int_equal(bd_rate_take(t, (const struct sockaddr *)&c, 2, 7000), 0);
    assert_true(bd_rate_take(t, (const struct sockaddr *)&c, 2, 7000) > 0);
    bd_rate_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rotating_through_a_64),     cmocka_unit_test(test_prefix_lengths),
        cmocka_unit_test(test_rotating_through_loopback), cmocka_unit_test(test_client_key),
        cmocka_unit_test(test_full_table_still_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
