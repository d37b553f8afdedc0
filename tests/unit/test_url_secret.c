/* SPDX-License-Identifier: MIT */
/* The e-mail rule (url_secret.h) against the shared table of spellings
 * (tests/data/secret_spellings.txt): whole, cut, keep and none rows; the
 * expressions left must not depend on the address; folding edge cases. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "proto/protocol.h"
#include "testutil.h"
#include "url/url_expr.h"
#include "url/url_canon.h"
#include "url/url_secret.h"
#include "core/util.h"

#define TABLE TEST_DATA_DIR "/secret_spellings.txt"
#define MAX_ROWS 256

typedef struct row {
    char kind[8];
    char *tmpl, *indexed, *note;
    unsigned n; /* entry number, from 1: {H} */
} row;

static row rows[MAX_ROWS];
static size_t nrows;

typedef struct address {
    const char *local, *domain;
} address;

static const address victim = {"alice", "victim-mail.example"};
static const address other = {"bob", "other-mail.example"};

/* A growable string for expanding templates. */
typedef struct str {
    char *p;
    size_t len;
} str;

static void put(str *s, const void *b, size_t n)
{
    s->p = realloc(s->p, s->len + n + 1);
    assert_non_null(s->p);
    memcpy(s->p + s->len, b, n);
    s->len += n;
    s->p[s->len] = '\0';
}

static void put_fullwidth(str *s, const char *t)
{
    for (; *t; t++) {
        unsigned cp = 0xFF00u + (unsigned char)*t - 0x20u;
        uint8_t u[3] = {(uint8_t)(0xE0 | (cp >> 12)), (uint8_t)(0x80 | ((cp >> 6) & 0x3F)),
                        (uint8_t)(0x80 | (cp & 0x3F))};
        put(s, u, 3);
    }
}

static void put_transformed(str *s, const char *t, char how)
{
    char buf[8];
    for (; *t; t++) {
        unsigned char c = (unsigned char)*t;
        if (how == 'U')
            buf[0] = (char)(c >= 'a' && c <= 'z' ? c - 32 : c), put(s, buf, 1);
        else if (how == 'P')
            snprintf(buf, sizeof(buf), "%%%02X", c), put(s, buf, 3);
        else if (how == 'I' && c == '.')
            put(s, "\xE3\x80\x82", 3);
        else
            put(s, t, 1);
    }
}

/* Expand a template (placeholders in the table's header). */
static char *expand(const char *t, const address *a, unsigned n)
{
    str s = {0};
    put(&s, "", 0);
    while (*t) {
        const char *close = t[0] == '{' ? strchr(t, '}') : NULL;
        if (!close) {
            put(&s, t++, 1);
            continue;
        }
        char name[8] = {0};
        assert_true(close - t - 1 < (long)sizeof(name));
        memcpy(name, t + 1, (size_t)(close - t - 1));
        t = close + 1;
        if (strcmp(name, "H") == 0) {
            char h[64];
            snprintf(h, sizeof(h), "s%u.victims.example", n);
            put(&s, h, strlen(h));
            continue;
        }
        const char *v = name[0] == 'L' ? a->local : a->domain;
        assert_true(name[0] == 'L' || name[0] == 'D');
        if (name[1] == '\0')
            put(&s, v, strlen(v));
        else if (name[1] == 'F')
            put_fullwidth(&s, v);
        else
            put_transformed(&s, v, name[1]);
    }
    return s.p;
}

static int load_table(void **state)
{
    (void)state;
    size_t len;
    char *text = (char *)tu_read_file(TABLE, &len);
    assert_non_null(text);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || line[0] == '\0')
            continue;
        assert_true(nrows < MAX_ROWS);
        row *r = &rows[nrows++];
        char *f[4];
        for (int i = 0; i < 4; i++) {
            f[i] = line;
            line = strchr(line, '\t');
            assert_true(i == 3 || line);
            if (line)
                *line++ = '\0';
        }
        snprintf(r->kind, sizeof(r->kind), "%s", f[0]);
        r->tmpl = strdup(f[1]);
        r->indexed = strdup(f[2]);
        r->note = strdup(f[3]);
        r->n = (unsigned)nrows;
    }
    free(text);
    return 0;
}

static int free_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < nrows; i++) {
        free(rows[i].tmpl);
        free(rows[i].indexed);
        free(rows[i].note);
    }
    return 0;
}

static void test_table_size(void **state)
{
    (void)state;
    size_t positive = 0;
    for (size_t i = 0; i < nrows; i++)
        positive += strcmp(rows[i].kind, "none") != 0;
    assert_true(positive >= 40);
}

/* What every entry point does with one spelling, as the library says. */
static void check_row(const row *r)
{
    char *url = expand(r->tmpl, &victim, r->n);
    size_t n = strlen(url);
    bool none = strcmp(r->kind, "none") == 0;
    if (br_url_holds_email(url, n) == none)
        fail_msg("row %u (%s): holds_email should be %d: %s", r->n, r->note, !none, url);
    /* The fast path may only skip what holds no address. */
    if (!none && !br_url_may_hold_email(url, n))
        fail_msg("row %u (%s): may_hold_email says no: %s", r->n, r->note, url);
    br_url_exprs ex = {0};
    size_t dropped = 99;
    br_error err = {{0}};
    int rc = br_url_lookup_expressions(url, n, 5, &ex, &dropped, &err);
    if (strcmp(r->kind, "whole") == 0) {
        if (rc != -EPERM || ex.n != 0)
            fail_msg("row %u (%s): expected -EPERM, got %d: %s", r->n, r->note, rc, url);
        assert_true(strstr(err.text, "e-mail") != NULL);
        assert_null(strstr(err.text, victim.local));
    } else {
        if (rc != 0)
            fail_msg("row %u (%s): %d %s: %s", r->n, r->note, rc, err.text, url);
        assert_true(ex.n >= 1);
        for (size_t i = 0; i < ex.n; i++) /* the lengths follow the expressions kept */
            assert_int_equal(ex.len[i], strlen(ex.expr[i]));
        if (strcmp(r->kind, "cut") == 0 && dropped == 0)
            fail_msg("row %u (%s): nothing dropped: %s", r->n, r->note, url);
        if (strcmp(r->kind, "cut") != 0 && dropped != 0)
            fail_msg("row %u (%s): %zu dropped: %s", r->n, r->note, dropped, url);
        if (!none) {
            char *want = expand(r->indexed, &victim, r->n);
            if (strcmp(ex.expr[0], want) != 0)
                fail_msg("row %u (%s): indexed %s, expected %s", r->n, r->note, ex.expr[0], want);
            free(want);
        }
        for (size_t i = 0; i < ex.n; i++)
            assert_false(br_url_holds_email(ex.expr[i], strlen(ex.expr[i])));
    }
    /* The protocol's check agrees on whole rows that are bare or mailto:. */
    if (none)
        assert_false(br_url_is_email(url, n));
    br_url_exprs_clear(&ex);
    free(url);
}

static void test_table_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < nrows; i++)
        check_row(&rows[i]);
}

/* What is left of a URL after its addresses are dropped is the same
 * whichever address it held: no answer can depend on the address. */
static void test_independent_of_address(void **state)
{
    (void)state;
    for (size_t i = 0; i < nrows; i++) {
        const row *r = &rows[i];
        if (strcmp(r->kind, "none") == 0)
            continue;
        char *a = expand(r->tmpl, &victim, r->n), *b = expand(r->tmpl, &other, r->n);
        br_url_exprs ea = {0}, eb = {0};
        int ra = br_url_lookup_expressions(a, strlen(a), 8, &ea, NULL, NULL);
        int rb = br_url_lookup_expressions(b, strlen(b), 8, &eb, NULL, NULL);
        assert_int_equal(ra, rb);
        if (ea.n != eb.n)
            fail_msg("row %u (%s): %zu vs %zu expressions", r->n, r->note, ea.n, eb.n);
        for (size_t k = 0; k < ea.n; k++)
            assert_string_equal(ea.expr[k], eb.expr[k]);
        br_url_exprs_clear(&ea);
        br_url_exprs_clear(&eb);
        free(a);
        free(b);
    }
}

static void test_fold_edges(void **state)
{
    (void)state;
    /* Bytes that are not UTF-8 around a fullwidth at. */
    const char *s = "x\xff\xfe"
                    "a\xEF\xBC\xA0"
                    "b.example\xC0";
    assert_true(br_url_holds_email(s, strlen(s)));
    /* Not UTF-8 in the middle of a sequence: no address. */
    const char *t = "a\xEF\xBC"
                    "b.example";
    assert_false(br_url_holds_email(t, strlen(t)));
    /* Deep escapes: %25 nested many times, then 40. */
    char deep[512] = "a%";
    for (int i = 0; i < 60; i++)
        strcat(deep, "25");
    strcat(deep, "40b.example");
    assert_true(br_url_holds_email(deep, strlen(deep)));
    /* An embedded NUL does not end the string. */
    const char nul[] = "x\0a@b.example";
    assert_true(br_url_holds_email(nul, sizeof(nul) - 1));
    assert_false(br_url_holds_email("", 0));
    assert_false(br_url_is_email("", 0));
    /* Inside a string, IPv4 after '@' counts only as a dotted quad; a
     * whole string takes any host. */
    assert_true(br_url_holds_email("u@192.0.2.1", 11));
    assert_false(br_url_holds_email("x/u@1.2.3", 9));
    assert_false(br_url_holds_email("x/u@1.2.3.256", 13));
    assert_true(br_url_holds_email("u@1.2.3", 7));
    assert_true(br_url_holds_email("u@1.2.3.256", 11));
    /* %uXXXX: every length of UTF-8, a surrogate kept as bytes, and one
     * cut short. */
    assert_true(br_url_holds_email("x/a%u0040b.example", 18));
    assert_true(br_url_holds_email("x/a%uFF20b.example", 18));
    assert_true(br_url_holds_email("x/a%u00e9@b.example", 19));
    assert_false(br_url_holds_email("x/a%uD800b.example", 18));
    assert_false(br_url_holds_email("x/a%u004b.example", 17));
    assert_false(br_url_holds_email("x/a%u00", 7));
    /* NFKC expansion does not overflow: U+FDFA expands to 18 characters. */
    str big = {0};
    for (int i = 0; i < 2000; i++)
        put(&big, "\xEF\xB7\xBA", 3);
    put(&big, "a@b.example", 11);
    assert_true(br_url_holds_email(big.p, big.len));
    free(big.p);
}

/* br_url_may_hold_email: no for plain URLs, yes for anything that could
 * fold or canonicalize into an address. */
static void test_may_hold_email(void **state)
{
    (void)state;
    static const char *const no[] = {
        "http://www.example.com/a/b.html?q=1&r=2",
        "https://cdn.example.net:8443/x",
        "example.org",
        "http://mail.example/to:x",
        "http://h/mailto",
        "MAILTO",
        "",
        /* escapes that decode to harmless bytes need no folding */
        "http://h/?q=a%20b%2Fc&d=%3D%3f",
        "http://h/p%41th",
        "http://h/%6dailto",
    };
    static const char *const yes[] = {
        "alice@example.com",
        "mailto:alice",
        "MailTo:bob",
        "http://h/?to=alice%40example.com",
        "alice\xef\xbc\xa0"
        "example.com",
        "mail\tto:x",
        "http://h/\x7f",
        "http://h/%2540",
        "http://h/?to=x%25",
        "http://h/%",
        "http://h/%4",
        "http://h/%%34%30",
        "%6Dailto%3Aalice",
        "http://h/%6D%41ILTO:x",
        "http://h/%E2%80%A8",
        "http://h/%09",
        "http://h/%7F",
    };
    for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
        if (br_url_may_hold_email(no[i], strlen(no[i])))
            fail_msg("may_hold_email(%s) should be false", no[i]);
    for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
        if (!br_url_may_hold_email(yes[i], strlen(yes[i])))
            fail_msg("may_hold_email(%s) should be true", yes[i]);
    /* A control byte between "mail" and "to:" is removed by
     * canonicalization: flagged, and the URL is refused as an address. */
    br_url_exprs ex = {0};
    assert_int_equal(br_url_lookup_expressions("mail\tto:alice", 13, 5, &ex, NULL, NULL), -EPERM);
}

/* No derived text of s (its canonical form, that form's lookup
 * expressions) holds an address: checked with folding every time. */
static void assert_nothing_derived(const char *s, size_t n)
{
    if (br_url_holds_email_folded(s, n) || br_url_is_email_folded(s, n))
        fail_msg("may_hold_email said no, folding finds an address: %.*s", (int)n, s);
    char *canon = NULL;
    if (br_url_canonicalize(s, n, &canon, NULL) < 0)
        return;
    if (br_url_holds_email_folded(canon, strlen(canon)))
        fail_msg("may_hold_email said no, the canonical form holds an address: %s", canon);
    br_url_exprs ex = {0};
    if (br_url_exprs_of(canon, strlen(canon), BR_URL_SB_HOST_COMPONENTS, &ex, NULL) == 0)
        for (size_t i = 0; i < ex.n; i++)
            if (br_url_holds_email_folded(ex.expr[i], strlen(ex.expr[i])))
                fail_msg("may_hold_email said no, an expression holds an address: %s", ex.expr[i]);
    br_url_exprs_clear(&ex);
    free(canon);
}

/* The fast path against folding, over random strings built from the pieces
 * that matter (escapes of '@', '%' and ':', "mailto" in parts and cases,
 * controls, fullwidth '@'): wherever it says "cannot hold", folding agrees,
 * for the string and what canonicalization derives from it. */
static void test_may_hold_email_random(void **state)
{
    (void)state;
    static const char *const pieces[] = {
        "%",         "%4",      "%40", "%25", "%2540", "%6D",   "%6d", "%41", "mailto",
        "MaIlTo",    "mail",    "to",  ":",   "%3A",   "%3a",   "@",   "a",   "b",
        ".",         "/",       "?",   "=",   "\t",    "x.com", "%20", "%2F", "\xef\xbc\xa0",
        "%EF%BC%A0", "http://", "[",   "]",   "0",     "1",     "#",   "%23", "%%",
        "e",         "%65",     "%34", "%30",
    };
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    size_t no = 0;
    for (int iter = 0; iter < 200000; iter++) {
        char buf[128];
        size_t n = 0;
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        int parts = 1 + (int)((seed >> 33) % 10);
        for (int k = 0; k < parts; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            const char *p = pieces[(seed >> 33) % BR_ARRAY_SIZE(pieces)];
            size_t pl = strlen(p);
            if (n + pl >= sizeof(buf))
                break;
            memcpy(buf + n, p, pl);
            n += pl;
        }
        if (br_url_may_hold_email(buf, n))
            continue;
        no++;
        assert_nothing_derived(buf, n);
    }
    /* The generator reaches the fast path's "no" often enough to mean it. */
    assert_true(no > 10000);
}

/* Folding starts on a 512-byte stack copy and moves to the heap for a
 * longer string: lengths around it, ASCII (folded in the copy) and not
 * (NFKC), with and without an address at the end. */
static void test_fold_room(void **state)
{
    (void)state;
    /* "alice@b.example" with an escaped or a fullwidth at; the same with
     * an escaped or fullwidth solidus (no address). */
    static const char *const with[] = {"alice%40b.example", "alice\357\274\240b.example"};
    static const char *const without[] = {"alice%2Fb.example", "alice\357\274\217b.example"};
    for (size_t k = 470; k <= 530; k++) {
        for (size_t kind = 0; kind < 4; kind++) {
            str t = {0};
            const char *head = kind & 2 ? "p/" : "p%2F";
            put(&t, head, strlen(head));
            for (size_t i = 0; i < k; i++)
                put(&t, "p", 1);
            size_t base = t.len;
            const char *tail = with[kind & 1];
            put(&t, tail, strlen(tail));
            assert_true(br_url_holds_email(t.p, t.len));
            assert_false(br_url_is_email(t.p, t.len));
            t.len = base;
            tail = without[kind & 1];
            put(&t, tail, strlen(tail));
            assert_false(br_url_holds_email(t.p, t.len));
            free(t.p);
        }
    }
}

/* The rule of br_url_is_plain, byte by byte (url_secret.h): true when s
 * is not plain. */
static bool not_plain_model(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f || c == '@' || c == '%' || c == '\\')
            return true;
        if (c == ':' && i >= 6 && strncasecmp(s + i - 6, "mailto", 6) == 0)
            return true;
    }
    return false;
}

/* br_url_is_plain looks at blocks of bytes (16 or 8, the last one
 * overlapping the one before): every stop byte and its neighbours that are
 * not, at every position of strings of every length up to 70, and
 * "mailto:" across block boundaries, answer as the rule does; and a plain
 * string never may hold an address. */
static void check_plain(const char *s, size_t n, const char *what, size_t a, size_t b)
{
    bool plain = br_url_is_plain(s, n);
    if (plain == not_plain_model(s, n))
        fail_msg("%s: length %zu, %zu, %zu", what, n, a, b);
    if (plain && br_url_may_hold_email(s, n))
        fail_msg("%s: plain, and may hold an address: length %zu, %zu, %zu", what, n, a, b);
}

static void test_is_plain_blocks(void **state)
{
    (void)state;
    static const unsigned char bytes[] = {0x00, 0x01, 0x1f, 0x20, 0x21, 0x7e, 0x7f, 0x80,
                                          0xbf, 0xff, '@',  '?',  'A',  '%',  '$',  '&',
                                          ':',  ';',  '9',  '\\', '[',  ']'};
    char s[80];
    for (size_t n = 0; n <= 70; n++) {
        memset(s, 'a', n);
        assert_true(br_url_is_plain(s, n));
        for (size_t p = 0; p < n; p++) {
            for (size_t b = 0; b < sizeof(bytes); b++) {
                s[p] = (char)bytes[b];
                check_plain(s, n, "one byte", bytes[b], p);
            }
            s[p] = 'a';
            if (p + 7 <= n) {
                memcpy(s + p, (p & 1) ? "MailTo:" : "mailto:", 7);
                assert_false(br_url_is_plain(s, n));
                assert_true(br_url_may_hold_email(s, n));
                s[p + 5] = 'x';
                assert_true(br_url_is_plain(s, n));
                memset(s + p, 'a', 7);
            }
        }
    }
    /* Random strings over those bytes and the letters of "mailto". */
    static const char alpha[] = "mailtoMAILTO:/.@%a\x01\x7f\x80 \\";
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int round = 0; round < 20000; round++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = (size_t)(x % 70);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            /* Mostly letters, so that few strings stop early. */
            s[i] =
                (x >> 8) % 8 ? "mailto./"[(x >> 16) % 8] : alpha[(x >> 24) % (sizeof(alpha) - 1)];
        }
        check_plain(s, n, "random string", (size_t)round, 0);
    }
}

static void test_is_email(void **state)
{
    (void)state;
    static const char *const yes[] = {"a@b.example",
                                      "  MAILTO:x",
                                      "mailto:",
                                      "a.b+c@d.example:1/",
                                      "a%40b.example",
                                      "a\xEF\xBC\xA0"
                                      "b.example",
                                      "a@b",
                                      "a@1.2.3",
                                      "a@b:8080/x",
                                      "a @ @b",
                                      "a%u0040b"};
    static const char *const no[] = {"http://a@b.example/",
                                     "x/a@b.example",
                                     "b.example/?a@c.d",
                                     "@b.example",
                                     " @b",
                                     "a@",
                                     "a@/x",
                                     "a:p@b",
                                     "a/@b"};
    for (size_t i = 0; i < BR_ARRAY_SIZE(yes); i++)
        if (!br_url_is_email(yes[i], strlen(yes[i])))
            fail_msg("is_email(%s) should be true", yes[i]);
    for (size_t i = 0; i < BR_ARRAY_SIZE(no); i++)
        if (br_url_is_email(no[i], strlen(no[i])))
            fail_msg("is_email(%s) should be false", no[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_size),
        cmocka_unit_test(test_table_rows),
        cmocka_unit_test(test_independent_of_address),
        cmocka_unit_test(test_fold_edges),
        cmocka_unit_test(test_fold_room),
        cmocka_unit_test(test_may_hold_email),
        cmocka_unit_test(test_may_hold_email_random),
        cmocka_unit_test(test_is_plain_blocks),
        cmocka_unit_test(test_is_email),
    };
    return cmocka_run_group_tests(tests, load_table, free_table);
}
