/* SPDX-License-Identifier: MIT */
/* URL canonicalization v1 and lookup expressions, properties over random and
 * mutated inputs: no crash, idempotent, canonical shape, sane expressions,
 * every rejection has a known reason. BR_URL_TEST_ITERATIONS overrides the
 * iteration count. */
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
    r = br_url_exprs_of(out, strlen(out), BR_URL_SB_HOST_COMPONENTS, &ex, &err);
    if (r < 0)
        fail_msg("expressions refused (%s): \"%s\"", err.text, out);
    assert_true(ex.n >= 1 && ex.n <= BR_URL_MAX_EXPRESSIONS);
    /* The first expression is the canonical URL without its scheme (and
     * without a '?' that ends it: an empty query adds no expression). */
    const char *whole = strstr(out, "://") + 3;
    size_t wl = strlen(whole);
    if (wl > 0 && whole[wl - 1] == '?' && !strchr(whole, '?')[1])
        wl--;
    assert_int_equal(strlen(ex.expr[0]), wl);
    assert_memory_equal(ex.expr[0], whole, wl);
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
        cmocka_unit_test(test_properties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
