/* SPDX-License-Identifier: MIT */
/* URL canonicalization v1 and lookup expressions: every example of Safe
 * Browsing's "URLs and Hashing" (v4 canonicalization list and expression
 * examples, the v5 IPv6 examples), our own cases (IPv4 forms, IPv6, IDN,
 * limits, rejections with their reasons), and properties over random and
 * mutated inputs: no crash, idempotent, canonical shape, every rejection has
 * a reason. BR_URL_TEST_ITERATIONS overrides the property iteration count. */
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

#include "hash.h"
#include "testutil.h"
#include "url.h"
#include "util.h"

/* A table row: input (with its length, for embedded NUL and control
 * bytes) and the expected canonical URL. */
typedef struct canon_case {
    const char *in;
    size_t len; /* 0: strlen(in) */
    const char *want;
} canon_case;

static void check_canon_table(const canon_case *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        br_error err = {{0}};
        char *out = NULL;
        size_t len = t[i].len ? t[i].len : strlen(t[i].in);
        int r = br_url_canonicalize(t[i].in, len, &out, &err);
        if (r < 0)
            fail_msg("case %zu (%s): refused: %s", i, t[i].want, err.text);
        if (strcmp(out, t[i].want) != 0)
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, out, t[i].want);
        /* Idempotent on every row. */
        char *again = NULL;
        r = br_url_canonicalize(out, strlen(out), &again, &err);
        if (r < 0)
            fail_msg("case %zu: canonical form refused: %s", i, err.text);
        assert_string_equal(again, out);
        free(again);
        free(out);
    }
}

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

/* Compare out (most specific first) with want as an ordered list. */
static void check_exprs(const char *url, const char *const *want, size_t nwant)
{
    br_error err = {{0}};
    char *canon = NULL;
    if (br_url_canonicalize(url, strlen(url), &canon, &err) < 0)
        fail_msg("%s: refused: %s", url, err.text);
    br_url_exprs ex = {0};
    if (br_url_expressions(canon, &ex, &err) < 0)
        fail_msg("%s: expressions refused: %s", url, err.text);
    for (size_t i = 0; i < ex.n && i < nwant; i++)
        if (strcmp(ex.expr[i], want[i]) != 0)
            fail_msg("%s: expression %zu is \"%s\", want \"%s\"", url, i, ex.expr[i], want[i]);
    if (ex.n != nwant)
        fail_msg("%s: %zu expressions, want %zu", url, ex.n, nwant);
    br_url_exprs_clear(&ex);
    assert_int_equal(ex.n, 0);
    free(canon);
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

/* ---- our own ---- */

static void test_own_canonicalization(void **state)
{
    (void)state;
    static const canon_case t[] = {
        /* IPv4: every inet_aton form. */
        {"http://0x7f.1/", 0, "http://127.0.0.1/"},
        {"http://0177.0.0.01/", 0, "http://127.0.0.1/"},
        {"http://017700000001/", 0, "http://127.0.0.1/"},
        {"http://0x7F000001/", 0, "http://127.0.0.1/"},
        {"http://2130706433/", 0, "http://127.0.0.1/"},
        {"http://127.1/", 0, "http://127.0.0.1/"},
        {"http://127.0.1/", 0, "http://127.0.0.1/"},
        {"http://10.0.65535/", 0, "http://10.0.255.255/"},
        {"http://10.16777215/", 0, "http://10.255.255.255/"},
        {"http://0/", 0, "http://0.0.0.0/"},
        {"http://4294967295/", 0, "http://255.255.255.255/"},
        {"http://0xC0.0250.0x0.1/", 0, "http://192.168.0.1/"},
        {"http://.1.2.3.4./", 0, "http://1.2.3.4/"},
        {"http://1..2...3.4/", 0, "http://1.2.3.4/"},
        {"http://%31%32%37.0.0.1/", 0, "http://127.0.0.1/"},
        /* Not addresses: stay host names. */
        {"http://4294967296/", 0, "http://4294967296/"},
        {"http://256.1.1.1/", 0, "http://256.1.1.1/"},
        {"http://1.2.3.4.5/", 0, "http://1.2.3.4.5/"},
        {"http://08.1.1.1/", 0, "http://08.1.1.1/"},
        {"http://0x.1.1.1/", 0, "http://0x.1.1.1/"},
        {"http://1.2.3.0x100/", 0, "http://1.2.3.0x100/"},
        {"http://1.2.3.x/", 0, "http://1.2.3.x/"},
        /* IPv6 (RFC 5952: lowercase, no leading zeros, longest zero run). */
        {"http://[::1]/", 0, "http://[::1]/"},
        {"http://[0:0:0:0:0:0:0:1]:8080/x", 0, "http://[::1]/x"},
        {"http://[2001:DB8::A]/", 0, "http://[2001:db8::a]/"},
        {"http://[2001:db8:0:1:1:1:1:1]/", 0, "http://[2001:db8:0:1:1:1:1:1]/"},
        {"http://[2001:0:0:1:0:0:0:1]/", 0, "http://[2001:0:0:1::1]/"},
        {"http://[2001:db8:0:0:1:0:0:1]/", 0, "http://[2001:db8::1:0:0:1]/"},
        {"http://[::]/", 0, "http://[::]/"},
        {"http://[1::]/", 0, "http://[1::]/"},
        {"http://[::ffff:7f00:1]/", 0, "http://127.0.0.1/"},
        {"http://[64:ff9b::c000:201]/", 0, "http://192.0.2.1/"},
        {"http://[::1.2.3.4]/", 0, "http://[::102:304]/"},
        {"http://[64:ff9b:1::1.2.3.4]/", 0, "http://[64:ff9b:1::102:304]/"},
        {"http://user@[::1]:99/", 0, "http://[::1]/"},
        {"http://%5B::1%5D/", 0, "http://[::1]/"},
        /* IDN: UTS #46 mapping, punycode. */
        {"http://bücher.de/", 0, "http://xn--bcher-kva.de/"},
        {"http://BÜCHER.DE/", 0, "http://xn--bcher-kva.de/"},
        {"http://b%C3%BCcher.de/", 0, "http://xn--bcher-kva.de/"},
        {"http://xn--bcher-kva.de/", 0, "http://xn--bcher-kva.de/"},
        {"http://faß.de/", 0, "http://xn--fa-hia.de/"},
        {"http://例え.テスト/", 0, "http://xn--r8jz45g.xn--zckzah/"},
        {"http://例え。テスト/", 0, "http://xn--r8jz45g.xn--zckzah/"},
        {"http://ｅｘａｍｐｌｅ．ｃｏｍ/", 0, "http://example.com/"},
        {"http://１２７．０．０．１/", 0, "http://127.0.0.1/"},
        {"http://💩.la/", 0, "http://xn--ls8h.la/"},
        {"http://a_b.bücher.de/", 0, "http://a_b.xn--bcher-kva.de/"},
        {"http://ab--c.bücher.de/", 0, "http://ab--c.xn--bcher-kva.de/"},
        {"http://\xff\xfe.com/", 0, "http://%FF%FE.com/"},               /* not UTF-8: bytes kept */
        {"http://\xe0\x80\x80.com/", 0, "http://%E0%80%80.com/"},        /* overlong */
        {"http://\xed\xa0\x80.com/", 0, "http://%ED%A0%80.com/"},        /* surrogate */
        {"http://\xf4\x90\x80\x80.com/", 0, "http://%F4%90%80%80.com/"}, /* > U+10FFFF */
        {"http://a\xc3.com/", 0, "http://a%C3.com/"},                    /* truncated */
        /* Schemes, userinfo, port. */
        {"HTTPS://Example.COM:443/", 0, "https://example.com/"},
        {"ftp://ftp.example.org/pub/", 0, "ftp://ftp.example.org/pub/"},
        {"ws://example.org/chat", 0, "ws://example.org/chat"},
        {"WSS://example.org/chat", 0, "wss://example.org/chat"},
        {"http://user:secret@example.com/", 0, "http://example.com/"},
        {"http://a@b@example.com/", 0, "http://example.com/"},
        {"http://example.com:/", 0, "http://example.com/"},
        {"example.com:8080/x", 0, "http://example.com/x"},
        {"localhost:8080", 0, "http://localhost/"},
        {"http:example.com/a", 0, "http://example.com/a"},
        {"http:///example.com/a", 0, "http://example.com/a"},
        {"http:/example.com/a", 0, "http://example.com/a"},
        {"Http:example.com", 0, "http://example.com/"},
        {"http:80", 0, "http://0.0.0.80/"}, /* an accepted scheme is always the scheme */
        {"localhost:", 0, "http://localhost/"},
        {"localhost:/x", 0, "http://localhost/x"},
        {"localhost:8080?q", 0, "http://localhost/?q"},
        {"http://example.com?q=1", 0, "http://example.com/?q=1"},
        {"http://example.com?", 0, "http://example.com/?"},
        {"http://example.com%3A80/", 0, "http://example.com/"},
        {"http://user%40x@example.com/", 0, "http://example.com/"},
        /* Path. */
        {"http://h/a/./b/../c", 0, "http://h/a/c"},
        {"http://h/a/b/../../..", 0, "http://h/"},
        {"http://h/../../a", 0, "http://h/a"},
        {"http://h/a/.", 0, "http://h/a/"},
        {"http://h/a//../b", 0, "http://h/a/b"},
        {"http://h///a////b//", 0, "http://h/a/b/"},
        {"http://h/.../..../a", 0, "http://h/.../..../a"},
        {"http://h/%2e%2E/a", 0, "http://h/a"},
        {"http://h/a%2Fb", 0, "http://h/a/b"},
        {"http://h/a%3Fb/../c", 0, "http://h/a?b/../c"}, /* %3F unescaped: now the query */
        {"http://h/a?b/../c//d", 0, "http://h/a?b/../c//d"},
        {"http://h/a?q=%41%2541", 0, "http://h/a?q=AA"},
        {"http://h/a?q=#frag", 0, "http://h/a?q="},
        {"http://h/%00%7f%ff", 0, "http://h/%00%7F%FF"},
        {"http://h/\x7f", 0, "http://h/%7F"},
        {"http://h/a b", 0, "http://h/a%20b"},
        {"http://h/a\\b", 0, "http://h/a\\b"},
        {"http://h/~a!$&'()*+,;=:@", 0, "http://h/~a!$&'()*+,;=:@"},
        {"http://h/%%41", 0, "http://h/%25A"},
        {"http://h/%2", 0, "http://h/%252"},
        {"http://h/%4%31", 0, "http://h/A"}, /* %4%31 -> %41 -> A */
        {"http://h/%25%34%31", 0, "http://h/A"},
        /* Whitespace and controls. */
        {"\t\r\n http://h/ \t", 0, "http://h/"},
        {"\x01http://h/\x02", 0, "http://h/"},
        {"http://h/a%09b", 0, "http://h/a%09b"},
        {"http://h/\0x", 12, "http://h/%00x"},
    };
    check_canon_table(t, BR_ARRAY_SIZE(t));
}

typedef struct reject_case {
    const char *in;
    size_t len;
    int code;
    const char *reason; /* exact text */
} reject_case;

#define SECRET "secret-class data (e-mail address) is never indexed"
#define BADSCHEME "scheme is not http, https, ftp, ws or wss"

static void test_rejections(void **state)
{
    (void)state;
    static const reject_case t[] = {
        {"", 0, -EINVAL, "empty URL"},
        {" \t\r\n ", 0, -EINVAL, "empty URL"},
        {"http://", 0, -EINVAL, "no host"},
        {"http:///", 0, -EINVAL, "no host"},
        {"http://.../a", 0, -EINVAL, "no host"},
        {"http://user@/a", 0, -EINVAL, "no host"},
        {"http://:80/", 0, -EINVAL, "no host"},
        {"/just/a/path", 0, -EINVAL, "no host"},
        {"?q", 0, -EINVAL, "no host"},
        {"javascript:alert(1)", 0, -EINVAL, BADSCHEME},
        {"file:///etc/passwd", 0, -EINVAL, BADSCHEME},
        {"gopher://h/", 0, -EINVAL, BADSCHEME},
        {"data:text/html,x", 0, -EINVAL, BADSCHEME},
        {"about:blank", 0, -EINVAL, BADSCHEME},
        {"httpx://h/", 0, -EINVAL, BADSCHEME},
        {"h:x", 0, -EINVAL, BADSCHEME},
        {"h.com:x", 0, -EINVAL, "invalid port"},
        {"%66ile://h/", 0, -EINVAL, BADSCHEME},
        {"mailto:someone@example.com", 0, -EPERM, SECRET},
        {"MAILTO:someone@example.com", 0, -EPERM, SECRET},
        {"mailto:", 0, -EPERM, SECRET},
        {"someone@example.com", 0, -EPERM, SECRET},
        {"  someone@example.com  ", 0, -EPERM, SECRET},
        {"someone%40example.com", 0, -EPERM, SECRET},
        {"%6Dailto:x@example.com", 0, -EPERM, SECRET},
        {"some.one@example.com#x", 0, -EPERM, SECRET},
        {"http://h:abc/", 0, -EINVAL, "invalid port"},
        {"http://h:80x/", 0, -EINVAL, "invalid port"},
        {"http://a:b:80/", 0, -EINVAL, "invalid character in host (':', '[' or ']')"},
        {"http://a]b/", 0, -EINVAL, "invalid character in host (':', '[' or ']')"},
        {"http://.[1]/", 0, -EINVAL, "invalid character in host (':', '[' or ']')"},
        {"http://[::1/", 0, -EINVAL, "invalid IPv6 address"},
        {"http://[::1]x/", 0, -EINVAL, "invalid IPv6 address"},
        {"http://[1:2:3]/", 0, -EINVAL, "invalid IPv6 address"},
        {"http://[]/", 0, -EINVAL, "invalid IPv6 address"},
        {"http://[fe80::1%25eth0]/", 0, -EINVAL, "invalid IPv6 address"},
        {"http://[::1]:8x/", 0, -EINVAL, "invalid port"},
        {"http://-bücher.de/", 0, -EINVAL,
         "invalid internationalized host name (string start/ends with forbidden hyphen)"},
        {"http://a\x01\xc3\xbc.de/", 0, -EINVAL, NULL}, /* libidn2's words */
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(t); i++) {
        br_error err = {{0}};
        char *out = (char *)1;
        size_t len = t[i].len ? t[i].len : strlen(t[i].in);
        int r = br_url_canonicalize(t[i].in, len, &out, &err);
        if (r >= 0)
            fail_msg("case %zu: accepted as %s", i, out);
        assert_null(out);
        if (r != t[i].code)
            fail_msg("case %zu: code %d, want %d (%s)", i, r, t[i].code, err.text);
        if (t[i].reason)
            assert_string_equal(err.text, t[i].reason);
        else
            assert_true(strncmp(err.text, "invalid internationalized host name (", 37) == 0);
    }
    /* A NULL err is allowed. */
    char *out;
    assert_int_equal(br_url_canonicalize("gopher:x", 8, &out, NULL), -EINVAL);
}

static char *repeat(const char *unit, size_t times, const char *prefix, const char *suffix)
{
    size_t ul = strlen(unit), pl = strlen(prefix), sl = strlen(suffix);
    char *s = tu_xmalloc(pl + ul * times + sl + 1);
    memcpy(s, prefix, pl);
    for (size_t i = 0; i < times; i++)
        memcpy(s + pl + i * ul, unit, ul);
    memcpy(s + pl + ul * times, suffix, sl + 1);
    return s;
}

static int canon_rc(const char *s, br_error *err)
{
    char *out = NULL;
    int r = br_url_canonicalize(s, strlen(s), &out, err);
    free(out);
    return r;
}

static void test_limits(void **state)
{
    (void)state;
    br_error err;
    /* Labels: 63 bytes fine, 64 refused. */
    char *s = repeat("a", 63, "http://", ".com/");
    assert_int_equal(canon_rc(s, &err), 0);
    free(s);
    s = repeat("a", 64, "http://", ".com/");
    assert_int_equal(canon_rc(s, &err), -EINVAL);
    assert_string_equal(err.text, "host label longer than 63 bytes");
    free(s);
    /* Host: 253 bytes fine (4 x 63 + ... ), 254 refused. */
    char host[300];
    memset(host, 'b', 253);
    for (int i = 63; i < 253; i += 64)
        host[i] = '.';
    host[253] = '\0';
    char url[400];
    snprintf(url, sizeof(url), "http://%s/", host);
    assert_int_equal(canon_rc(url, &err), 0);
    snprintf(url, sizeof(url), "http://%sb/", host);
    assert_int_equal(canon_rc(url, &err), -EINVAL);
    assert_string_equal(err.text, "host longer than 253 bytes");
    /* Trailing dot and escaped dots do not count. */
    snprintf(url, sizeof(url), "http://%s./", host);
    assert_int_equal(canon_rc(url, &err), 0);
    /* An IDN label is measured in its A-label form. */
    s = repeat("\xc3\xbc", 20, "http://", ".de/");
    char *out = NULL;
    assert_int_equal(br_url_canonicalize(s, strlen(s), &out, &err), 0);
    free(out);
    free(s);
    s = repeat("\xc3\xbc", 70, "http://", ".de/");
    assert_int_equal(canon_rc(s, &err), -EINVAL);
    free(s);
    /* URL length: 8192 bytes accepted, 8193 refused, before any work. */
    s = repeat("a", 8192 - strlen("http://h/"), "http://h/", "");
    assert_int_equal(strlen(s), 8192);
    assert_int_equal(canon_rc(s, &err), 0);
    free(s);
    s = repeat("a", 8193 - strlen("http://h/"), "http://h/", "");
    assert_int_equal(canon_rc(s, &err), -EINVAL);
    assert_string_equal(err.text, "URL longer than 8192 bytes");
    free(s);
    /* The canonical form must fit too (escaping can triple the length), so
     * that it canonicalizes to itself. */
    s = repeat(" ", 3000, "http://h/", "x");
    assert_int_equal(canon_rc(s, &err), -EINVAL);
    assert_string_equal(err.text, "canonical URL longer than 8192 bytes");
    free(s);
    /* Deep escapes are linear, not quadratic: %25 nested 2700 deep. */
    s = repeat("25", 4000, "http://h/%", "");
    assert_int_equal(br_url_canonicalize(s, strlen(s), &out, &err), 0);
    assert_string_equal(out, "http://h/%25");
    free(out);
    free(s);
}

static void test_own_expressions(void **state)
{
    (void)state;
    /* Exact path equal to a prefix, no duplicates. */
    static const char *const a[] = {"h.com/1/", "h.com/"};
    check_exprs("http://h.com/1/", a, BR_ARRAY_SIZE(a));
    /* An empty query is kept as its own expression. */
    static const char *const b[] = {"h.com/q?", "h.com/q", "h.com/"};
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
    /* The query's slashes make no prefixes; the maximum of 30. */
    const char *big = "http://a.b.c.d.e.f.g.h/1/2/3/4/5.html?x/y/z";
    br_error err;
    char *canon = NULL;
    assert_int_equal(br_url_canonicalize(big, strlen(big), &canon, &err), 0);
    br_url_exprs ex = {0};
    assert_int_equal(br_url_expressions(canon, &ex, &err), 0);
    assert_int_equal(ex.n, BR_URL_MAX_EXPRESSIONS);
    assert_string_equal(ex.expr[0], "a.b.c.d.e.f.g.h/1/2/3/4/5.html?x/y/z");
    assert_string_equal(ex.expr[1], "a.b.c.d.e.f.g.h/1/2/3/4/5.html");
    assert_string_equal(ex.expr[2], "a.b.c.d.e.f.g.h/1/2/3/");
    assert_string_equal(ex.expr[5], "a.b.c.d.e.f.g.h/");
    assert_string_equal(ex.expr[6], "d.e.f.g.h/1/2/3/4/5.html?x/y/z");
    assert_string_equal(ex.expr[29], "g.h/");
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
        assert_int_equal(br_url_expressions(bad[i], &ex, &err), -EINVAL);
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

/* ---- properties ---- */

static bool is_upper_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

/* Everything a canonical URL must be; returns a complaint or NULL. */
static const char *canonical_shape(const char *u)
{
    size_t n = strlen(u);
    if (n > BR_URL_MAX_LEN)
        return "too long";
    static const char *const schemes[] = {"http://", "https://", "ftp://", "ws://", "wss://"};
    const char *host = NULL;
    for (size_t i = 0; i < BR_ARRAY_SIZE(schemes); i++)
        if (strncmp(u, schemes[i], strlen(schemes[i])) == 0)
            host = u + strlen(schemes[i]);
    if (!host)
        return "scheme";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)u[i];
        if (c <= 0x20 || c >= 0x7F || c == '#')
            return "unescaped byte";
        if (c == '%' && !(i + 2 < n && is_upper_hex(u[i + 1]) && is_upper_hex(u[i + 2])))
            return "bad escape";
    }
    const char *path = strchr(host, '/');
    if (!path || path == host)
        return "no host or path";
    size_t hl = (size_t)(path - host);
    size_t raw = 0, label = 0;
    bool ip6 = host[0] == '[';
    for (size_t i = 0; i < hl; i++) {
        char c = host[i];
        if (c == '?' || c == '@' || (!ip6 && (c == ':' || c == '[' || c == ']')))
            return "host character";
        if (c >= 'A' && c <= 'Z' && !(i >= 1 && host[i - 1] == '%') &&
            !(i >= 2 && host[i - 2] == '%'))
            return "host not lowercase";
        if (c == '.') {
            if (i == 0 || i + 1 == hl || host[i + 1] == '.')
                return "host dots";
            label = 0;
            raw++;
            continue;
        }
        if (c == '%')
            i += 2;
        raw++;
        if (++label > BR_URL_MAX_LABEL && !ip6)
            return "label too long";
    }
    if (raw > BR_URL_MAX_HOST)
        return "host too long";
    const char *q = strchr(path, '?');
    size_t pl = q ? (size_t)(q - path) : strlen(path);
    for (size_t i = 0; i < pl; i++) {
        if (path[i] != '/')
            continue;
        if (i + 1 < pl && path[i + 1] == '/')
            return "double slash";
        size_t j = i + 1;
        while (j < pl && path[j] != '/')
            j++;
        size_t seg = j - i - 1;
        if ((seg == 1 && path[i + 1] == '.') ||
            (seg == 2 && path[i + 1] == '.' && path[i + 2] == '.'))
            return "dot segment";
    }
    return NULL;
}

static const char *const known_reasons[] = {
    "empty URL",
    "no host",
    "host longer than 253 bytes",
    "host label longer than 63 bytes",
    "URL longer than 8192 bytes",
    "canonical URL longer than 8192 bytes",
    SECRET,
    BADSCHEME,
    "invalid port",
    "invalid IPv6 address",
    "invalid character in host (':', '[' or ']')",
    "invalid internationalized host name (",
};

static bool known_reason(const char *text)
{
    for (size_t i = 0; i < BR_ARRAY_SIZE(known_reasons); i++)
        if (strncmp(text, known_reasons[i], strlen(known_reasons[i])) == 0)
            return true;
    return false;
}

typedef struct gen {
    uint64_t st;
    char buf[BR_URL_MAX_LEN + 512];
    size_t len;
} gen;

static uint64_t rnd(gen *g, uint64_t n)
{
    return br_splitmix64(&g->st) % n;
}

static void put(gen *g, const char *s, size_t n)
{
    if (g->len >= sizeof(g->buf))
        return;
    if (n > sizeof(g->buf) - g->len)
        n = sizeof(g->buf) - g->len;
    memcpy(g->buf + g->len, s, n);
    g->len += n;
}

static void puts_(gen *g, const char *s)
{
    put(g, s, strlen(s));
}

static void putf(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(gen *g, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (k > 0)
        put(g, tmp, (size_t)k < sizeof(tmp) ? (size_t)k : sizeof(tmp) - 1);
}

static const char *const pick_schemes[] = {
    "http://", "https://", "HTTP://",     "ftp://",  "ws://",   "wss://",   "",          "",
    "http:",   "http:///", "javascript:", "mailto:", "file://", "Https://", "gopher://",
};
static const char *const pick_special[] = {
    "%",
    "%25",
    "%2",
    "%2e",
    "%2E",
    "%2f",
    "%3F",
    "%23",
    "%40",
    "%3A",
    "%00",
    "%20",
    "%7f",
    "%ff",
    "%C3%BC",
    "/",
    "//",
    "/./",
    "/../",
    "..",
    ".",
    "?",
    "#",
    "@",
    ":",
    "[",
    "]",
    "\t",
    "\r",
    "\n",
    " ",
    "\\",
    "\xc3\xbc",
    "\xe2\x98\x83",
    "\xf0\x9f\x92\xa9",
    "\x80",
    "\xff",
    "xn--",
    "-",
    "_",
    "A",
    "0x",
    "0",
};

static void gen_label(gen *g)
{
    size_t n = 1 + rnd(g, rnd(g, 8) == 0 ? 70 : 10);
    for (size_t i = 0; i < n; i++) {
        uint64_t k = rnd(g, 20);
        if (k < 14)
            putf(g, "%c", (char)('a' + rnd(g, 26)));
        else if (k < 16)
            putf(g, "%c", (char)('0' + rnd(g, 10)));
        else if (k < 17)
            puts_(g, "-");
        else if (k < 18)
            putf(g, "%c", (char)('A' + rnd(g, 26)));
        else
            puts_(g, pick_special[rnd(g, BR_ARRAY_SIZE(pick_special))]);
    }
}

static void gen_host(gen *g)
{
    switch (rnd(g, 10)) {
    case 0: /* IPv4, any form */ {
        size_t parts = 1 + rnd(g, 5);
        for (size_t i = 0; i < parts; i++) {
            if (i)
                puts_(g, ".");
            uint64_t v = rnd(g, 3) == 0 ? rnd(g, UINT64_C(0x1FFFFFFFF)) : rnd(g, 300);
            switch (rnd(g, 3)) {
            case 0:
                putf(g, "%llu", (unsigned long long)v);
                break;
            case 1:
                putf(g, "0%llo", (unsigned long long)v);
                break;
            default:
                putf(g, "0x%llx", (unsigned long long)v);
            }
        }
        break;
    }
    case 1: /* IPv6 */ {
        puts_(g, "[");
        size_t groups = rnd(g, 9);
        bool dc = false;
        for (size_t i = 0; i < groups; i++) {
            if (i)
                puts_(g, ":");
            if (!dc && rnd(g, 4) == 0) {
                puts_(g, ":");
                dc = true;
            }
            putf(g, "%llx", (unsigned long long)rnd(g, rnd(g, 2) ? 0x10000 : 3));
        }
        if (rnd(g, 4) == 0)
            putf(g, ":%u.%u.%u.%u", (unsigned)rnd(g, 256), (unsigned)rnd(g, 256),
                 (unsigned)rnd(g, 256), (unsigned)rnd(g, 256));
        if (rnd(g, 5) == 0)
            puts_(g, rnd(g, 2) ? "::ffff:1.2.3.4" : "64:ff9b::a.0.0.1");
        if (rnd(g, 10))
            puts_(g, "]");
        break;
    }
    default: {
        size_t labels = 1 + rnd(g, rnd(g, 10) == 0 ? 12 : 5);
        for (size_t i = 0; i < labels; i++) {
            if (i)
                puts_(g, rnd(g, 10) ? "." : "..");
            gen_label(g);
        }
        if (rnd(g, 8) == 0)
            puts_(g, ".");
    }
    }
}

static void gen_segment(gen *g)
{
    uint64_t k = rnd(g, 10);
    if (k == 0)
        puts_(g, ".");
    else if (k == 1)
        puts_(g, "..");
    else if (k == 2)
        return; /* empty: "//" */
    else
        gen_label(g);
}

static void gen_url(gen *g)
{
    g->len = 0;
    if (rnd(g, 20) == 0)
        puts_(g, "  ");
    puts_(g, pick_schemes[rnd(g, BR_ARRAY_SIZE(pick_schemes))]);
    if (rnd(g, 10) == 0)
        puts_(g, rnd(g, 2) ? "user:pw@" : "someone@");
    gen_host(g);
    if (rnd(g, 6) == 0)
        putf(g, ":%u", (unsigned)rnd(g, 70000));
    size_t segs = rnd(g, 8);
    for (size_t i = 0; i < segs; i++) {
        puts_(g, "/");
        gen_segment(g);
    }
    if (rnd(g, 3) == 0) {
        puts_(g, "?");
        size_t qn = rnd(g, 4);
        for (size_t i = 0; i < qn; i++) {
            gen_label(g);
            puts_(g, rnd(g, 2) ? "=" : "/");
        }
    }
    if (rnd(g, 6) == 0) {
        puts_(g, "#");
        gen_label(g);
    }
}

static void mutate(gen *g)
{
    size_t m = rnd(g, 4);
    for (size_t k = 0; k < m; k++) {
        size_t pos = g->len ? rnd(g, g->len + 1) : 0;
        switch (rnd(g, 4)) {
        case 0: /* flip a byte */
            if (pos < g->len)
                g->buf[pos] = (char)rnd(g, 256);
            break;
        case 1: /* delete a run */ {
            size_t n = rnd(g, 8);
            if (pos + n > g->len)
                n = g->len - pos;
            memmove(g->buf + pos, g->buf + pos + n, g->len - pos - n);
            g->len -= n;
            break;
        }
        case 2: /* insert a special token */ {
            const char *t = pick_special[rnd(g, BR_ARRAY_SIZE(pick_special))];
            size_t n = strlen(t);
            if (g->len + n > sizeof(g->buf))
                break;
            memmove(g->buf + pos + n, g->buf + pos, g->len - pos);
            memcpy(g->buf + pos, t, n);
            g->len += n;
            break;
        }
        default: /* duplicate a chunk */ {
            size_t n = rnd(g, 16);
            if (pos + n > g->len)
                n = g->len - pos;
            if (g->len + n > sizeof(g->buf))
                break;
            memmove(g->buf + pos + n, g->buf + pos, g->len - pos);
            g->len += n;
        }
        }
    }
}

static void check_one(const char *in, size_t len, size_t *ok, size_t *refused)
{
    br_error err = {{0}};
    char *out = NULL;
    int r = br_url_canonicalize(in, len, &out, &err);
    if (r < 0) {
        assert_null(out);
        if (r != -EINVAL && r != -EPERM)
            fail_msg("unexpected code %d (%s)", r, err.text);
        if (!known_reason(err.text))
            fail_msg("rejection without a known reason: \"%s\"", err.text);
        (*refused)++;
        return;
    }
    (*ok)++;
    const char *bad = canonical_shape(out);
    if (bad)
        fail_msg("not canonical (%s): \"%s\"", bad, out);
    char *again = NULL;
    r = br_url_canonicalize(out, strlen(out), &again, &err);
    if (r < 0)
        fail_msg("canonical form refused (%s): \"%s\"", err.text, out);
    if (strcmp(out, again) != 0)
        fail_msg("not idempotent: \"%s\" -> \"%s\"", out, again);
    br_url_exprs ex = {0};
    r = br_url_expressions(out, &ex, &err);
    if (r < 0)
        fail_msg("expressions refused (%s): \"%s\"", err.text, out);
    assert_true(ex.n >= 1 && ex.n <= BR_URL_MAX_EXPRESSIONS);
    /* The first expression is the canonical URL without its scheme. */
    assert_string_equal(ex.expr[0], strstr(out, "://") + 3);
    for (size_t i = 0; i < ex.n; i++) {
        assert_non_null(strchr(ex.expr[i], '/'));
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(ex.expr[i], ex.expr[j]);
    }
    br_url_exprs_clear(&ex);
    free(again);
    free(out);
}

static void test_properties(void **state)
{
    (void)state;
    size_t iters = 200000;
    const char *env = getenv("BR_URL_TEST_ITERATIONS");
    if (env && *env)
        iters = strtoull(env, NULL, 10);
    static gen g;
    g.st = 0x5eed0f0ca11ab1eULL;
    size_t ok = 0, refused = 0;
    uint64_t t0 = br_now_ns();
    for (size_t i = 0; i < iters; i++) {
        gen_url(&g);
        if (i % 2)
            mutate(&g);
        check_one(g.buf, g.len, &ok, &refused);
        /* Pure random bytes, now and then. */
        if (i % 16 == 0) {
            size_t n = rnd(&g, 64);
            for (size_t k = 0; k < n; k++)
                g.buf[k] = (char)rnd(&g, 256);
            check_one(g.buf, n, &ok, &refused);
        }
    }
    double secs = (double)(br_now_ns() - t0) / 1e9;
    print_message("properties: %zu inputs, %zu canonical, %zu refused, %.2f s\n", ok + refused, ok,
                  refused, secs);
    /* The generator must exercise both sides. */
    assert_true(ok > iters / 4);
    assert_true(refused > iters / 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doc_canonicalization),
        cmocka_unit_test(test_doc_expressions),
        cmocka_unit_test(test_own_canonicalization),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_own_expressions),
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_properties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
