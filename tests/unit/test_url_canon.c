/* SPDX-License-Identifier: MIT */
/* URL canonicalization v1, our own cases beyond the document's examples
 * (those are in test_url.c): IPv4 forms, IPv6, IDN, schemes, userinfo, ports,
 * paths, whitespace and controls; rejections with their exact reasons; the
 * label, host and URL length limits. */
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
        /* A "/." or "//" anywhere in a 16-byte block, across two, in the
         * tail; none in a long path; escapes anywhere in a long host. */
        {"http://h/0123456789abcd/./x", 0, "http://h/0123456789abcd/x"},
        {"http://h/0123456789abcde/./x", 0, "http://h/0123456789abcde/x"},
        {"http://h/0123456789abcdef/./x", 0, "http://h/0123456789abcdef/x"},
        {"http://h/0123456789abcdefghijklmnopqrst//x", 0,
         "http://h/0123456789abcdefghijklmnopqrst/x"},
        {"http://h/0123456789abcdefghijklmnopqrstuvwxyz/x/.", 0,
         "http://h/0123456789abcdefghijklmnopqrstuvwxyz/x/"},
        {"http://h/0123456789abcdefghijklmnopqrstuvwxyz/x/y", 0,
         "http://h/0123456789abcdefghijklmnopqrstuvwxyz/x/y"},
        {"http://abcdefghijklmnop%25qrstuvw.com/", 0, "http://abcdefghijklmnop%25qrstuvw.com/"},
        {"http://abcdefghijklmnopqrstuv%23w.com/", 0, "http://abcdefghijklmnopqrstuv%23w.com/"},
        {"http://abcdefghijklmnopqrstuvw%25.com/", 0, "http://abcdefghijklmnopqrstuvw%25.com/"},
        {"http://abcdefghijklmnopqrstu%01vw%7Fx.com/", 0,
         "http://abcdefghijklmnopqrstu%01vw%7Fx.com/"},
        {"http://h/a b", 0, "http://h/a%20b"},
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

/* The host browsers visit (the WHATWG URL standard, for the special schemes
 * http, https, ftp, ws and wss): '\\' is '/' before the query, so that it
 * ends the authority; the userinfo ends at the last '@' before the first
 * '/', '\\' or '?' as written, before anything is unescaped. */
static void test_whatwg_authority(void **state)
{
    (void)state;
    static const canon_case t[] = {
        {"http://malware.test\\@example.com/", 0, "http://malware.test/@example.com/"},
        {"https://malware.test\\@example.com/x", 0, "https://malware.test/@example.com/x"},
        {"http://malware.test\\example.com/", 0, "http://malware.test/example.com/"},
        {"http:\\\\example.com\\a\\b", 0, "http://example.com/a/b"},
        {"http:/\\example.com/", 0, "http://example.com/"},
        {"ws://h\\a", 0, "ws://h/a"},
        {"http://h/a\\b", 0, "http://h/a/b"},
        {"http://h/a\\..\\b", 0, "http://h/b"},
        {"http://h/a%5Cb", 0, "http://h/a/b"},
        {"http://h/a?b\\c", 0, "http://h/a?b\\c"}, /* the query keeps it */
        {"http://h/a?b%5Cc", 0, "http://h/a?b\\c"},
        {"http://h?\\@x.com", 0, "http://h/?\\@x.com"},
        /* An escaped '/', '?' or '\\' is userinfo: the host is after the '@'. */
        {"http://malware.test%5C@example.com/", 0, "http://example.com/"},
        {"http://malware.test%2F@example.com/", 0, "http://example.com/"},
        {"http://malware.test%3F@example.com/", 0, "http://example.com/"},
        /* Tabs and newlines anywhere are removed, as browsers do. */
        {"ht\ttp://ex\nam\rple.com/a\tb", 0, "http://example.com/ab"},
    };
    check_canon_table(t, BR_ARRAY_SIZE(t));
}

typedef struct reject_case {
    const char *in;
    size_t len;
    int code;
    const char *reason; /* exact text */
} reject_case;

static void test_rejections(void **state)
{
    (void)state;
    static const reject_case t[] = {
        {"", 0, -EINVAL, "empty URL"},
        {" \t\r\n ", 0, -EINVAL, "empty URL"},
        {"http://", 0, -EINVAL, "no host"},
        {"http:///", 0, -EINVAL, "no host"},
        {"http://u:p\\@h/", 0, -EINVAL, "invalid port"}, /* host u, port "p" */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_canonicalization),
        cmocka_unit_test(test_whatwg_authority),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
