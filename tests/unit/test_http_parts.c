/* SPDX-License-Identifier: MIT */
/* The range endpoint's pure parts (daemon/http_range.h, http_rate.h): HIBP's padding
 * count, Accept-Encoding, If-None-Match, HTTP dates, entity tags, the
 * per-address token buckets (on a given clock), the body pool and the
 * prepared bodies' versions (http_prep.h), and the fast path's reader
 * (http_fast.h). */
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
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "config.h"
#include "http_fast.h"
#include "http_prep.h"
#include "http_range.h"
#include "http_rate.h"

static void test_pad_count(void **s)
{
    (void)s;
    /* small ranges: to a total of 800 .. 999 lines */
    assert_int_equal(bd_http_pad_count(0, 0), 800);
    assert_int_equal(bd_http_pad_count(300, 199), 999 - 300);
    assert_int_equal(bd_http_pad_count(1, 200), 799); /* r is taken mod 200 */
    /* HIBP-sized ones: 10 .. 209 more */
    assert_int_equal(bd_http_pad_count(1900, 0), 10);
    assert_int_equal(bd_http_pad_count(1900, 199), 209);
    assert_int_equal(bd_http_pad_count(850, 5), 15);
    for (uint32_t n = 0; n < 3000; n += 7)
        for (uint32_t r = 0; r < 400; r += 13) {
            size_t p = bd_http_pad_count(n, r);
            if (n < 790)
                assert_true(n + p >= 800 && n + p <= 999);
            if (n >= 800)
                assert_true(p >= 10 && p <= 209);
        }
}

static void test_encoding(void **s)
{
    (void)s;
    bool br = HAVE_BROTLI; /* whether this build writes brotli (libbrotlienc) */
    assert_int_equal(bd_http_pick_encoding(NULL, false), BD_ENC_IDENTITY);
    assert_int_equal(bd_http_pick_encoding("", false), BD_ENC_IDENTITY);
    assert_int_equal(bd_http_pick_encoding("gzip, deflate", false), BD_ENC_GZIP);
    assert_int_equal(bd_http_pick_encoding("GZip", false), BD_ENC_GZIP);
    assert_int_equal(bd_http_pick_encoding("x-gzip", false), BD_ENC_GZIP);
    assert_int_equal(bd_http_pick_encoding("deflate, identity", false), BD_ENC_IDENTITY);
    assert_int_equal(bd_http_pick_encoding("gzip;q=0", false), BD_ENC_IDENTITY);
    assert_int_equal(bd_http_pick_encoding("gzip ; q=0.000", false), BD_ENC_IDENTITY);
    assert_int_equal(bd_http_pick_encoding("gzip;q=0.001", false), BD_ENC_GZIP);
    assert_int_equal(bd_http_pick_encoding("*", false), BD_ENC_GZIP);
    assert_int_equal(bd_http_pick_encoding("*;q=0", false), BD_ENC_IDENTITY);
    assert_int_equal(bd_http_pick_encoding("*, gzip;q=0", false), br ? BD_ENC_BR : BD_ENC_IDENTITY);
    assert_int_equal(bd_http_pick_encoding("gzip, br", false), BD_ENC_GZIP);
    assert_int_equal(bd_http_pick_encoding("gzip, br", true), br ? BD_ENC_BR : BD_ENC_GZIP);
    assert_int_equal(bd_http_pick_encoding("br", false), br ? BD_ENC_BR : BD_ENC_IDENTITY);
    assert_int_equal(bd_http_pick_encoding("br;q=0, gzip", true), BD_ENC_GZIP);
    assert_string_equal(bd_http_enc_name(BD_ENC_GZIP), "gzip");
    assert_null(bd_http_enc_name(BD_ENC_IDENTITY));
}

static void test_if_none_match(void **s)
{
    (void)s;
    const char *core = "0123456789ABCDEF0123456789ABCDEF";
    assert_true(bd_http_inm_matches("\"0123456789ABCDEF0123456789ABCDEF\"", core));
    assert_true(bd_http_inm_matches("W/\"0123456789ABCDEF0123456789ABCDEF\"", core));
    assert_true(bd_http_inm_matches("\"0123456789ABCDEF0123456789ABCDEF-gzip\"", core));
    assert_true(bd_http_inm_matches("W/\"0123456789ABCDEF0123456789ABCDEF-br\"", core));
    assert_true(bd_http_inm_matches("\"x\", \"0123456789ABCDEF0123456789ABCDEF\"", core));
    assert_true(bd_http_inm_matches("*", core));
    assert_false(bd_http_inm_matches("\"0123456789ABCDEF0123456789ABCDE\"", core));
    assert_false(bd_http_inm_matches("\"0123456789ABCDEF0123456789ABCDEF-zstd\"", core));
    assert_false(bd_http_inm_matches("0123456789ABCDEF0123456789ABCDEF", core)); /* unquoted */
    assert_false(bd_http_inm_matches("\"0123456789abcdef0123456789abcdef\"", core));
    assert_false(bd_http_inm_matches("", core));
    assert_false(bd_http_inm_matches("\"", core));
    assert_false(bd_http_inm_matches("W/", core));
}

static void test_dates(void **s)
{
    (void)s;
    assert_int_equal(bd_http_parse_date("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
    assert_int_equal(bd_http_parse_date("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
    assert_int_equal(bd_http_parse_date("Sunday, 06-Nov-94 08:49:37 GMT"), -1); /* obsolete */
    assert_int_equal(bd_http_parse_date("Sun, 06 Nov 1994 08:49:37 GMT x"), -1);
    assert_int_equal(bd_http_parse_date("yesterday"), -1);
    assert_int_equal(bd_http_parse_date(""), -1);
    assert_int_equal(bd_http_parse_date(NULL), -1);
}

static void test_etag(void **s)
{
    (void)s;
    uint8_t set1[40] = {'B', 'R', 'S', 1, 1}, set2[40] = {'B', 'R', 'S', 1, 1, 7};
    br_range_answer a = {.value = set1,
                         .len = sizeof(set1),
                         .etag = "\"abc\"",
                         .last_modified = "Sun, 06 Nov 1994 08:49:37 GMT"};
    char t1[33], t2[33];
    /* with validators: they decide, with the prefix and the size */
    assert_int_equal(bd_http_etag_core(BR_RANGE_PASSWORD_SHA1, 0x5BAA6, &a, t1), 0);
    assert_int_equal(strlen(t1), 32);
    a.value = set2;
    assert_int_equal(bd_http_etag_core(BR_RANGE_PASSWORD_SHA1, 0x5BAA6, &a, t2), 0);
    assert_string_equal(t1, t2);
    assert_int_equal(bd_http_etag_core(BR_RANGE_PASSWORD_SHA1, 0x5BAA7, &a, t2), 0);
    assert_string_not_equal(t1, t2);
    a.len = 39;
    assert_int_equal(bd_http_etag_core(BR_RANGE_PASSWORD_SHA1, 0x5BAA6, &a, t2), 0);
    assert_string_not_equal(t1, t2);
    a.len = 40;
    a.etag = "\"abd\"";
    assert_int_equal(bd_http_etag_core(BR_RANGE_PASSWORD_SHA1, 0x5BAA6, &a, t2), 0);
    assert_string_not_equal(t1, t2);
    /* without: the content */
    a.etag = a.last_modified = "";
    a.value = set1;
    assert_int_equal(bd_http_etag_core(BR_RANGE_PASSWORD_SHA1, 0x5BAA6, &a, t1), 0);
    a.value = set2;
    assert_int_equal(bd_http_etag_core(BR_RANGE_PASSWORD_SHA1, 0x5BAA6, &a, t2), 0);
    assert_string_not_equal(t1, t2);
    memcpy(set2, set1, sizeof(set1));
    assert_int_equal(bd_http_etag_core(BR_RANGE_PASSWORD_SHA1, 0x12345, &a, t2), 0);
    assert_string_equal(t1, t2);
}

static struct sockaddr_in v4(const char *a)
{
    struct sockaddr_in s = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, a, &s.sin_addr), 1);
    return s;
}

static void test_rate(void **s)
{
    (void)s;
    bd_rate_table *t = bd_rate_new();
    assert_non_null(t);
    struct sockaddr_in a = v4("10.0.0.1"), b = v4("10.0.0.2");
    const struct sockaddr *sa = (const struct sockaddr *)&a, *sb = (const struct sockaddr *)&b;
    /* a bucket one second deep: 5 at once, the 6th waits 200 ms */
    for (int i = 0; i < 5; i++)
        assert_int_equal(bd_rate_take(t, sa, 5, 1000), 0);
    uint32_t wait = bd_rate_take(t, sa, 5, 1000);
    assert_true(wait >= 199 && wait <= 201);
    assert_int_equal(bd_rate_take(t, sb, 5, 1000), 0); /* its own bucket */
    assert_true(bd_rate_take(t, sa, 5, 1100) > 0);
    assert_int_equal(bd_rate_take(t, sa, 5, 1200), 0); /* refilled one */
    assert_true(bd_rate_take(t, sa, 5, 1200) > 0);
    /* an IPv4-mapped IPv6 address is the same client */
    struct sockaddr_in6 m = {.sin6_family = AF_INET6};
    assert_int_equal(inet_pton(AF_INET6, "::ffff:10.0.0.1", &m.sin6_addr), 1);
    assert_true(bd_rate_take(t, (const struct sockaddr *)&m, 5, 1200) > 0);
    /* many addresses: the table grows, idle buckets go. A full table holds
     * at most 3/4 of 2^17 clients; every one of the 200000 gets a bucket of
     * its own only because the idle ones are dropped (kept, the rest would
     * share the overflow bucket, 5 a second, and most be refused). */
    for (uint32_t i = 0; i < 200000; i++) {
        struct sockaddr_in c = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x0B000000 + i)};
        assert_int_equal(bd_rate_take(t, (const struct sockaddr *)&c, 5, 5000 + i / 100), 0);
    }
    struct sockaddr_storage un = {.ss_family = AF_UNIX};
    assert_int_equal(bd_rate_take(t, (const struct sockaddr *)&un, 1, 0), 0);
    bd_rate_free(t);
}

static void test_pool(void **s)
{
    (void)s;
    bd_http_buf b;
    assert_int_equal(bd_http_buf_get(1000, &b), 0);
    assert_true(b.cap >= 1000);
    memcpy(b.p, "hello", 5);
    b.len = 5;
    char *first = b.p;
    struct evbuffer *out = evbuffer_new();
    assert_int_equal(bd_http_buf_give(&b, out), 0);
    assert_null(b.p);
    assert_int_equal(evbuffer_get_length(out), 5);
    evbuffer_free(out); /* back in the pool */
    assert_int_equal(bd_http_buf_get(10, &b), 0);
    assert_ptr_equal(b.p, first); /* reused */
    bd_http_buf_put(&b);
    assert_int_equal(bd_http_buf_get((size_t)1 << 20, &b), 0); /* a bigger one */
    assert_true(b.cap >= (size_t)1 << 20);
    bd_http_buf_put(&b);
    bd_http_buf_put(&b); /* empty: fine */
}

/* An entry with a plain body of text, held. */
static bd_prepared *prep_with(bd_http_prep *t, const bd_prep_key *k, const char *text)
{
    bd_prep_meta m = {.core = "C0RE", .lm = "", .lm_s = -1};
    bd_prepared *e = bd_http_prep_add(t, k, &m);
    assert_non_null(e);
    assert_int_equal(bd_http_prep_set(t, e, 0, strdup(text), strlen(text), 1, 1 << 20, 1 << 20), 0);
    return e;
}

/* One entry per range and version: the upstream's validators tell the
 * version (the caller's strings are copied), a changed one drops the entry;
 * the body is the same from an unnamed file in the directory or a memfd. */
static void test_prep_versions(void **s)
{
    (void)s;
    char dir[] = "/tmp/breachd-prep-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *dirs[] = {dir, NULL, "/nonexistent/breachd"};
    for (size_t i = 0; i < 3; i++) {
        bd_http_prep *t = bd_http_prep_new(dirs[i]);
        assert_non_null(t);
        char etag[16] = "\"v1\"";
        bd_prep_key k = {.partition = 7,
                         .prefix20 = 0x12345,
                         .fetched_at = 100,
                         .len = 40,
                         .etag = etag,
                         .last_modified = ""};
        bd_http_prep_release(prep_with(t, &k, "ABC:1"));
        memcpy(etag, "\"zz\"", 5); /* the caller's buffer changes: not the entry's */
        assert_null(bd_http_prep_find(t, &k));
        memcpy(etag, "\"v1\"", 5);
        assert_null(bd_http_prep_find(t, &k)); /* dropped by the other version */
        bd_http_prep_release(prep_with(t, &k, "ABC:1"));
        bd_prepared *e = bd_http_prep_find(t, &k);
        assert_non_null(e);
        assert_string_equal(bd_http_prep_meta(e)->core, "C0RE");
        const char *p;
        size_t len;
        assert_true(bd_http_prep_body(e, 0, &p, &len));
        assert_int_equal(len, 5);
        assert_memory_equal(p, "ABC:1", 5);
        struct evbuffer *out = evbuffer_new();
        assert_int_equal(bd_http_prep_give(e, 0, out), 0);
        bd_http_prep_release(e);
        bd_http_prep_free(t); /* the body stays until out is done with it */
        char got[8] = {0};
        assert_int_equal(evbuffer_remove(out, got, sizeof(got)), 5);
        assert_string_equal(got, "ABC:1");
        evbuffer_free(out);
        k.last_modified = "Mon, 07 Dec 2026 00:00:00 GMT";
        t = bd_http_prep_new(dirs[i]);
        bd_http_prep_release(prep_with(t, &k, "X"));
        k.last_modified = "Tue, 08 Dec 2026 00:00:00 GMT";
        assert_null(bd_http_prep_find(t, &k));
        bd_http_prep_free(t);
    }
    assert_int_equal(rmdir(dir), 0); /* nothing named left in it */
}

/* Does the fast path take text, and for which prefix? */
static bool fast(const char *text, uint32_t *prefix20)
{
    return bd_http_fast_parse(text, strlen(text), prefix20);
}

static void test_fast_reader(void **s)
{
    (void)s;
    uint32_t p = 0;
    assert_true(fast("GET /range/21BD1 HTTP/1.1\r\nHost: x\r\n\r\n", &p));
    assert_int_equal(p, 0x21BD1);
    assert_true(fast("GET /range/abcde HTTP/1.1\r\n\r\n", &p));
    assert_int_equal(p, 0xABCDE);
    assert_true(fast("GET /range/00000 HTTP/1.1\r\nhost:x\r\nUSER-AGENT: a b/1\r\n"
                     "Accept: */*\r\nAccept-Encoding: identity \r\n\r\n",
                     &p));
    assert_true(fast("GET /range/00000 HTTP/1.1\r\nAccept-Encoding: gzip;q=0\r\n\r\n", &p));
    static const char *const refused[] = {
        "GET /range/21BD1 HTTP/1.1\r\nHost: x\r\n",                           /* not whole */
        "GET /range/21BD1 HTTP/1.1\r\n\r\nGET /range/21BD1 HTTP/1.1\r\n\r\n", /* two */
        "GET /range/21BD1 HTTP/1.0\r\n\r\n",                                  /* another version */
        "HEAD /range/21BD1 HTTP/1.1\r\n\r\n",                                 /* another method */
        "GET /range/21BD1?mode=ntlm HTTP/1.1\r\n\r\n",                        /* a query */
        "GET /range/21BD HTTP/1.1\r\n\r\n",                                   /* HIBP's 400s */
        "GET /range/21BDG HTTP/1.1\r\n\r\n",
        "GET /range/21BD10 HTTP/1.1\r\n\r\n",
        "GET /range/21BD1 HTTP/1.1\r\nAdd-Padding: true\r\n\r\n",
        "GET /range/21BD1 HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n",
        "GET /range/21BD1 HTTP/1.1\r\nAccept-Encoding: *\r\n\r\n",
        "GET /range/21BD1 HTTP/1.1\r\nIf-None-Match: \"x\"\r\n\r\n",
        "GET /range/21BD1 HTTP/1.1\r\nConnection: close\r\n\r\n",
        "GET /range/21BD1 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
        "GET /range/21BD1 HTTP/1.1\r\nHost : x\r\n\r\n",      /* a blank before the colon */
        "GET /range/21BD1 HTTP/1.1\r\nHost: x\r\n y\r\n\r\n", /* a folded line */
        "GET /range/21BD1 HTTP/1.1\r\nHost: x\ny\r\n\r\n",
        "GET /range/21BD1 HTTP/1.1\r\nHost: \x80\r\n\r\n",
        "GET /range/21BD1 HTTP/1.1\n\n",
        "GET /range/21BD1 HTTP/1.1\r\n\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        assert_false(fast(refused[i], &p));
    /* a NUL in the head (the endpoint refuses it with 400) */
    static const char nul[] = "GET /range/21BD1 HTTP/1.1\r\nHost: \0\r\n\r\n";
    assert_false(bd_http_fast_parse(nul, sizeof(nul) - 1, &p));
    char big[BD_HTTP_FAST_MAX + 64];
    int n = snprintf(big, sizeof(big), "GET /range/21BD1 HTTP/1.1\r\nUser-Agent: %*s\r\n\r\n",
                     BD_HTTP_FAST_MAX, "x");
    assert_true(n > BD_HTTP_FAST_MAX);
    assert_false(fast(big, &p));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pad_count),     cmocka_unit_test(test_encoding),
        cmocka_unit_test(test_if_none_match), cmocka_unit_test(test_dates),
        cmocka_unit_test(test_etag),          cmocka_unit_test(test_rate),
        cmocka_unit_test(test_pool),          cmocka_unit_test(test_prep_versions),
        cmocka_unit_test(test_fast_reader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
