/* SPDX-License-Identifier: MIT */
/* URL canonicalization v1 and lookup expressions: every example of Safe
 * Browsing's "URLs and Hashing" (v4 canonicalization list and expression
 * examples, the v5 IPv6 examples). Our own cases are in test_url_canon.c
 * (canonicalization, rejections, limits) and test_url_exprs.c (expressions,
 * hashes); random and mutated inputs in test_url_properties.c. */
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
#include "url_helpers.h"
#include "core/util.h"

/* ---- the documentation's examples ---- */

static void test_doc_canonicalization(void **state)
{
    (void)state;
    static const canon_case t[] = {
        /* "URLs and Hashing" v4, the canonicalization test list, in order. */
        {"http://host/%25%32%35", 0, "http://host/%25"},
        {"http://host/%25%32%35%25%32%35", 0, "http://host/%25%25"},
        {"http://host/%2525252525252525", 0, "http://host/%25"},
        {"http://host/asdf%25%32%35asd", 0, "http://host/asdf%25asd"},
        {"http://host/%%%25%32%35asd%%", 0, "http://host/%25%25%25asd%25%25"},
        {"http://www.google.com/", 0, "http://www.google.com/"},
        {"http://%31%36%38%2e%31%38%38%2e%39%39%2e%32%36/%2E%73%65%63%75%72%65/"
         "%77%77%77%2E%65%62%61%79%2E%63%6F%6D/",
         0, "http://168.188.99.26/.secure/www.ebay.com/"},
        {"http://195.127.0.11/uploads/%20%20%20%20/.verify/"
         ".eBaysecure=updateuserdataxplimnbqmn-xplmvalidateinfoswqpcmlx=hgplmcx/",
         0,
         "http://195.127.0.11/uploads/%20%20%20%20/.verify/"
         ".eBaysecure=updateuserdataxplimnbqmn-xplmvalidateinfoswqpcmlx=hgplmcx/"},
        {"http://host%23.com/"
         "%257Ea%2521b%2540c%2523d%2524e%25f%255E00%252611%252A22%252833%252944_55%252B",
         0, "http://host%23.com/~a!b@c%23d$e%25f^00&11*22(33)44_55+"},
        {"http://3279880203/blah", 0, "http://195.127.0.11/blah"},
        {"http://www.google.com/blah/..", 0, "http://www.google.com/"},
        {"www.google.com/", 0, "http://www.google.com/"},
        {"www.google.com", 0, "http://www.google.com/"},
        {"http://www.evil.com/blah#frag", 0, "http://www.evil.com/blah"},
        {"http://www.GOOgle.com/", 0, "http://www.google.com/"},
        {"http://www.google.com.../", 0, "http://www.google.com/"},
        {"http://www.google.com/foo\tbar\rbaz\n2", 0, "http://www.google.com/foobarbaz2"},
        {"http://www.google.com/q?", 0, "http://www.google.com/q?"},
        {"http://www.google.com/q?r?", 0, "http://www.google.com/q?r?"},
        {"http://www.google.com/q?r?s", 0, "http://www.google.com/q?r?s"},
        {"http://evil.com/foo#bar#baz", 0, "http://evil.com/foo"},
        {"http://evil.com/foo;", 0, "http://evil.com/foo;"},
        {"http://evil.com/foo?bar;", 0, "http://evil.com/foo?bar;"},
        {"http://\x01\x80.com/", 0, "http://%01%80.com/"},
        {"http://notrailingslash.com", 0, "http://notrailingslash.com/"},
        {"http://www.gotaport.com:1234/", 0, "http://www.gotaport.com/"},
        {"  http://www.google.com/  ", 0, "http://www.google.com/"},
        {"http:// leadingspace.com/", 0, "http://%20leadingspace.com/"},
        {"http://%20leadingspace.com/", 0, "http://%20leadingspace.com/"},
        {"%20leadingspace.com/", 0, "http://%20leadingspace.com/"},
        {"https://www.securesite.com/", 0, "https://www.securesite.com/"},
        {"http://host.com/ab%23cd", 0, "http://host.com/ab%23cd"},
        {"http://host.com//twoslashes?more//slashes", 0,
         "http://host.com/twoslashes?more//slashes"},
        /* The prose of the same page. */
        {"http://google.com/#frag", 0, "http://google.com/"},
        {"http://google.com", 0, "http://google.com/"},
        {"http://www.google.com/foo%0abar", 0,
         "http://www.google.com/foo%0Abar"}, /* escapes of LF stay */
        /* v5 ("URLs and Hashing" of the v5 reference): IPv6 hosts. */
        {"http://[2001:0db8:0000::1]/", 0, "http://[2001:db8::1]/"},
        {"http://[::ffff:1.2.3.4]/", 0, "http://1.2.3.4/"},
        {"http://[64:ff9b::1.2.3.4]/", 0, "http://1.2.3.4/"},
        /* Yandex's Safe Browsing edition of the page adds this one. */
        {"http://%32%31%33%2e%31%38%30%2e%32%31%30%2e5/"
         "%2e%73%65%63%75%72%65%2f%77%77%77%2e%6d%6f%69%6b%72%75%67%2e%72%75/",
         0, "http://213.180.210.5/.secure/www.moikrug.ru/"},
    };
    check_canon_table(t, BR_ARRAY_SIZE(t));
}

static void test_doc_expressions(void **state)
{
    (void)state;
    /* The three examples of "Suffix/Prefix Expressions" (the document lists
     * them as sets; our order is most specific first: hosts from the exact
     * one down, and per host the path with query, without it, then the
     * prefixes longest first). */
    static const char *const e1[] = {
        "a.b.c/1/2.html?param=1", "a.b.c/1/2.html", "a.b.c/1/", "a.b.c/",
        "b.c/1/2.html?param=1",   "b.c/1/2.html",   "b.c/1/",   "b.c/",
    };
    check_exprs("http://a.b.c/1/2.html?param=1", e1, BR_ARRAY_SIZE(e1));
    /* "For b.c.d.e.f.g, we'll skip it, since we'll take only the last five
     * hostname components, and the full hostname." */
    static const char *const e2[] = {
        "a.b.c.d.e.f.g/1.html", "a.b.c.d.e.f.g/", "c.d.e.f.g/1.html", "c.d.e.f.g/",
        "d.e.f.g/1.html",       "d.e.f.g/",       "e.f.g/1.html",     "e.f.g/",
        "f.g/1.html",           "f.g/",
    };
    check_exprs("http://a.b.c.d.e.f.g/1.html", e2, BR_ARRAY_SIZE(e2));
    static const char *const e3[] = {"1.2.3.4/1/", "1.2.3.4/"};
    check_exprs("http://1.2.3.4/1/", e3, BR_ARRAY_SIZE(e3));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doc_canonicalization),
        cmocka_unit_test(test_doc_expressions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
