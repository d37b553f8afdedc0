/* SPDX-License-Identifier: MIT */
/* URL lookup expressions and their hashes, our own cases beyond the
 * document's examples (those are in test_url.c): prefixes, suffixes, the
 * maximum of 30, IPv6 and numeric-looking hosts, refusal of non-canonical
 * input, SHA-256 of an expression. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/hash.h"
#include "testutil.h"
#include "url/url_canon.h"
#include "url/url_expr.h"
#include "url_helpers.h"
#include "core/util.h"

static void test_own_expressions(void **state)
{
    (void)state;
    /* Exact path equal to a prefix, no duplicates. */
    static const char *const a[] = {"h.com/1/", "h.com/"};
    check_exprs("http://h.com/1/", a, BR_ARRAY_SIZE(a));
    /* A present but empty query adds no expression. */
    static const char *const b[] = {"h.com/q", "h.com/"};
    check_exprs("http://h.com/q?", b, BR_ARRAY_SIZE(b));
    /* Only the first four slashes make prefixes. */
    static const char *const c[] = {"x.y/1/2/3/4/5/6.html", "x.y/1/2/3/", "x.y/1/2/", "x.y/1/",
                                    "x.y/"};
    check_exprs("http://x.y/1/2/3/4/5/6.html", c, BR_ARRAY_SIZE(c));
    /* A single-label host has no suffixes; a two-label one has none besides
     * itself (never the bare TLD). */
    static const char *const d[] = {"localhost/"};
    check_exprs("http://localhost", d, BR_ARRAY_SIZE(d));
    static const char *const e[] = {"example.com/a", "example.com/"};
    check_exprs("https://example.com/a", e, BR_ARRAY_SIZE(e));
    /* IPv6: no suffixes. */
    static const char *const f[] = {"[2001:db8::1]/a/b?c", "[2001:db8::1]/a/b", "[2001:db8::1]/a/",
                                    "[2001:db8::1]/"};
    check_exprs("http://[2001:db8::1]/a/b?c", f, BR_ARRAY_SIZE(f));
    /* A host that only looks numeric is a name. */
    static const char *const g[] = {"256.1.1.1/", "1.1.1/", "1.1/"};
    check_exprs("http://256.1.1.1/", g, BR_ARRAY_SIZE(g));
    /* '\' ends the authority: the host browsers visit, never the one
     * after the '@'. */
    static const char *const bs[] = {"malware.test/@example.com/a", "malware.test/@example.com/",
                                     "malware.test/"};
    check_exprs("http://malware.test\\@example.com/a", bs, BR_ARRAY_SIZE(bs));
    /* The query's slashes make no prefixes; the maximum of 30. */
    const char *big = "http://a.b.c.d.e.f.g.h/1/2/3/4/5.html?x/y/z";
    br_error err;
    char *canon = NULL;
    assert_int_equal(br_url_canonicalize(big, strlen(big), &canon, &err), 0);
    br_url_exprs ex = {0};
    assert_int_equal(br_url_exprs_of(canon, strlen(canon), BR_URL_SB_HOST_COMPONENTS, &ex, &err),
                     0);
    assert_int_equal(ex.n, BR_URL_MAX_EXPRESSIONS);
    assert_string_equal(ex.expr[0], "a.b.c.d.e.f.g.h/1/2/3/4/5.html?x/y/z");
    assert_string_equal(ex.expr[1], "a.b.c.d.e.f.g.h/1/2/3/4/5.html");
    assert_string_equal(ex.expr[2], "a.b.c.d.e.f.g.h/1/2/3/");
    assert_string_equal(ex.expr[5], "a.b.c.d.e.f.g.h/");
    assert_string_equal(ex.expr[6], "d.e.f.g.h/1/2/3/4/5.html?x/y/z");
    assert_string_equal(ex.expr[29], "g.h/");
    for (size_t i = 0; i < ex.n; i++)
        assert_int_equal(ex.len[i], strlen(ex.expr[i]));
    br_url_exprs_clear(&ex);
    free(canon);
    /* Escaped bytes stay escaped in expressions. */
    static const char *const h[] = {"h.com/a%20b/c%23", "h.com/a%20b/", "h.com/"};
    check_exprs("http://h.com/a b/c%23", h, BR_ARRAY_SIZE(h));
    /* Not canonical: refused with a reason. */
    static const char *const bad[] = {"",          "example.com/", "http://",
                                      "http:///a", "http://h",     "HTTP://h/"};
    for (size_t i = 0; i < BR_ARRAY_SIZE(bad); i++) {
        err.text[0] = '\0';
        assert_int_equal(
            br_url_exprs_of(bad[i], strlen(bad[i]), BR_URL_SB_HOST_COMPONENTS, &ex, &err), -EINVAL);
        assert_int_equal(ex.n, 0);
        assert_true(strncmp(err.text, "not a canonical URL", 19) == 0);
    }
}

static void test_hash(void **state)
{
    (void)state;
    uint8_t h[BR_SHA256_LEN];
    char hex[2 * BR_SHA256_LEN + 1];
    /* The document's example hash: SHA-256("abc"). */
    assert_int_equal(br_url_expr_hash("abc", h), 0);
    br_hex_encode_upper(h, sizeof(h), hex);
    assert_string_equal(hex, "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD");
    /* An expression hashes as its exact bytes, no terminator. */
    uint8_t h2[BR_SHA256_LEN];
    assert_int_equal(br_url_expr_hash("a.b.c/1/2.html?param=1", h), 0);
    assert_int_equal(br_sha256("a.b.c/1/2.html?param=1", 22, h2), 0);
    assert_memory_equal(h, h2, sizeof(h));
}

/* Host suffixes beyond five components: "suffix/" only, after the exact
 * host's expressions, before the five-component ones. */
static void test_long_domains(void **state)
{
    (void)state;
    br_error err;
    br_url_exprs ex = {0};
    assert_int_equal(
        br_url_exprs_of("http://w.a.b.c.d.e.f/p", strlen("http://w.a.b.c.d.e.f/p"), 7, &ex, &err),
        0);
    static const char *const want[] = {
        "w.a.b.c.d.e.f/p", "w.a.b.c.d.e.f/", "a.b.c.d.e.f/", "b.c.d.e.f/p",
        "b.c.d.e.f/",      "c.d.e.f/p",      "c.d.e.f/",     "d.e.f/p",
        "d.e.f/",          "e.f/p",          "e.f/"};
    assert_int_equal(ex.n, BR_ARRAY_SIZE(want));
    for (size_t i = 0; i < ex.n; i++)
        assert_string_equal(ex.expr[i], want[i]);
    br_url_exprs_clear(&ex);
    /* Fewer than five means five; the most a 253-byte name can need. */
    assert_int_equal(
        br_url_exprs_of("http://w.a.b.c.d.e.f/p", strlen("http://w.a.b.c.d.e.f/p"), 2, &ex, &err),
        0);
    assert_int_equal(ex.n, 10);
    br_url_exprs_clear(&ex);
    char url[300] = "http://";
    for (int i = 0; i < 126; i++)
        strcat(url, "a.");
    strcat(url, "b/1/2/3/4/5?q");
    assert_int_equal(br_url_exprs_of(url, strlen(url), 1000, &ex, &err), 0);
    assert_int_equal(ex.n, BR_URL_MAX_LOOKUP_EXPRESSIONS);
    br_url_exprs_clear(&ex);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_expressions),
        cmocka_unit_test(test_long_domains),
        cmocka_unit_test(test_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
