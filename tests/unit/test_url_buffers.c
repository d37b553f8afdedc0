/* SPDX-License-Identifier: MIT */
/* URL canonicalization's buffers (url_canon_int.h): the canonical URL is
 * built on the stack (BR_URL_CANON_ROOM bytes) and moves to the heap when it
 * outgrows it; a host's IDN form has its own stack room; the input is
 * copied to a 512-byte stack array when it must be changed. Each is crossed
 * here at and around its boundary, in the middle of each step that writes
 * (escaping, a host's dots, path resolution), up to BR_URL_MAX_LEN, through
 * br_url_canonicalize and br_url_lookup_expressions. */
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

#include "testutil.h"
#include "url/url_canon.h"
#include "url/url_canon_int.h"
#include "url/url_expr.h"
#include "url/url_secret.h"

/* A growable test string. */
typedef struct str {
    char *p;
    size_t len;
} str;

static void put(str *s, const char *t, size_t times)
{
    size_t n = strlen(t);
    s->p = realloc(s->p, s->len + n * times + 1);
    assert_non_null(s->p);
    for (size_t i = 0; i < times; i++)
        memcpy(s->p + s->len + i * n, t, n);
    s->len += n * times;
    s->p[s->len] = '\0';
}

/* in canonicalizes to want, which canonicalizes to itself; its first
 * lookup expression is want without the scheme. */
static void check(const str *in, const str *want)
{
    br_error err = {{0}};
    char *out = NULL;
    if (br_url_canonicalize(in->p, in->len, &out, &err) < 0)
        fail_msg("input of %zu bytes refused: %s", in->len, err.text);
    if (strcmp(out, want->p) != 0)
        fail_msg("input of %zu bytes: got %zu bytes, want %zu", in->len, strlen(out), want->len);
    char *again = NULL;
    assert_int_equal(br_url_canonicalize(out, strlen(out), &again, &err), 0);
    assert_string_equal(again, want->p);
    free(again);
    free(out);
    br_url_exprs ex = {0};
    assert_int_equal(br_url_lookup_expressions(in->p, in->len, 5, &ex, NULL, &err), 0);
    assert_string_equal(ex.expr[0], strstr(want->p, "://") + 3);
    br_url_exprs_clear(&ex);
}

static void refused(const str *in, const char *text)
{
    br_error err = {{0}};
    char *out = NULL;
    assert_int_equal(br_url_canonicalize(in->p, in->len, &out, &err), -EINVAL);
    assert_null(out);
    assert_string_equal(err.text, text);
    br_url_exprs ex = {0};
    assert_int_equal(br_url_lookup_expressions(in->p, in->len, 5, &ex, NULL, &err), -EINVAL);
    assert_int_equal(ex.n, 0);
    assert_string_equal(err.text, text);
}

static void reset(str *a, str *b)
{
    free(a->p);
    free(b->p);
    *a = *b = (str){0};
}

/* Canonical URLs of every length around the stack room (with and without
 * a query), and up to the limit: "http://h.example/ppp...". */
static void test_result_room(void **state)
{
    (void)state;
    const size_t prefix = strlen("http://h.example/");
    size_t lens[120], nl = 0;
    for (size_t l = BR_URL_CANON_ROOM - 40; l <= BR_URL_CANON_ROOM + 40; l++)
        lens[nl++] = l;
    for (size_t l = BR_URL_MAX_LEN - 5; l <= BR_URL_MAX_LEN; l++)
        lens[nl++] = l;
    str in = {0}, want = {0};
    for (size_t i = 0; i < nl; i++) {
        for (int query = 0; query < 2; query++) {
            put(&in, "http://h.example/", 1);
            put(&in, query ? "a?" : "", 1);
            put(&in, "p", lens[i] - prefix - (query ? 2 : 0));
            put(&want, in.p, 1);
            check(&in, &want);
            reset(&in, &want);
        }
    }
    /* One byte more is refused: as input, and as a canonical form that
     * escaping made longer. */
    put(&in, "http://h.example/", 1);
    put(&in, "p", BR_URL_MAX_LEN + 1 - prefix);
    refused(&in, "URL longer than 8192 bytes");
    in.p[in.len - 3] = ' '; /* not the last byte, which would be trimmed */
    in.len--;
    refused(&in, "canonical URL longer than 8192 bytes");
    reset(&in, &want);
}

/* The room runs out in the middle of escaping: spaces become "%20". */
static void test_escape_growth(void **state)
{
    (void)state;
    str in = {0}, want = {0};
    for (size_t k = (BR_URL_CANON_ROOM - 40) / 3; k <= (BR_URL_CANON_ROOM + 40) / 3; k++) {
        for (int where = 0; where < 3; where++) {
            /* In the path, in the query, and in the path of an input with
             * an escape (the copy that is unescaped in place). */
            const char *head = where == 1   ? "http://h.example/x?"
                               : where == 2 ? "http://h.example/%78"
                                            : "http://h.example/x";
            put(&in, head, 1);
            put(&in, " ", k);
            put(&in, "x", 1);
            put(&want, where == 1 ? "http://h.example/x?" : "http://h.example/x", 1);
            put(&want, "%20", k);
            put(&want, "x", 1);
            check(&in, &want);
            reset(&in, &want);
        }
    }
}

/* Path resolution in a result that moved to the heap: dot segments after
 * a long path, and ".." segments that shrink a long path back to a short
 * one. */
static void test_path_resolution(void **state)
{
    (void)state;
    str in = {0}, want = {0};
    for (size_t k = BR_URL_CANON_ROOM / 2 - 20; k <= BR_URL_CANON_ROOM / 2 + 5; k++) {
        put(&in, "http://h.example/", 1);
        put(&in, "a/", k);
        put(&in, ".//b/../c/./", 1);
        put(&want, "http://h.example/", 1);
        put(&want, "a/", k);
        put(&want, "c/", 1);
        check(&in, &want);
        reset(&in, &want);
    }
    put(&in, "http://h.example/", 1);
    put(&in, "xy/", 1200);
    put(&in, "../", 1199);
    put(&in, "z", 1);
    put(&want, "http://h.example/xy/z", 1);
    check(&in, &want);
    reset(&in, &want);
}

/* Hosts: an ASCII host whose dots are folded straight into the result
 * (its raw length decides the room it asks for), and an IDN host whose
 * A-label form, before its dots are folded, crosses its own stack room
 * (BR_URL_MAX_HOST + 3 bytes): "xn--bcher-kva" + dots + "de". */
static void test_host_rooms(void **state)
{
    (void)state;
    str in = {0}, want = {0};
    for (size_t k = BR_URL_CANON_ROOM - 30; k <= BR_URL_CANON_ROOM + 10; k += 4) {
        put(&in, "http://", 1);
        put(&in, ".", k);
        put(&in, "A..Example.", 1);
        put(&in, ".", k);
        put(&in, "/x", 1);
        put(&want, "http://a.example/x", 1);
        check(&in, &want);
        reset(&in, &want);
    }
    const size_t room = BR_URL_MAX_HOST + 3, idn = strlen("xn--bcher-kva") + strlen("de");
    for (size_t k = room - idn - 8; k <= room - idn + 4; k++) {
        put(&in, "http://b\303\274cher", 1);
        put(&in, ".", k);
        put(&in, "de/", 1);
        put(&want, "http://xn--bcher-kva.de/", 1);
        check(&in, &want);
        reset(&in, &want);
    }
    /* A host that is not valid UTF-8 stays bytes, escaped where it is. */
    put(&in, "http://a\x80\xff.example/", 1);
    put(&want, "http://a%80%FF.example/", 1);
    check(&in, &want);
    reset(&in, &want);
}

/* Inputs around the 512-byte stack copy (an escape makes the copy). */
static void test_work_copy(void **state)
{
    (void)state;
    str in = {0}, want = {0};
    for (size_t len = 500; len <= 520; len++) {
        put(&in, "http://h.example/%41", 1);
        put(&in, "b", len - in.len);
        put(&want, "http://h.example/A", 1);
        put(&want, "b", len - strlen("http://h.example/%41"));
        check(&in, &want);
        reset(&in, &want);
    }
}

/* br_url_exprs_of reads only the bytes it is given. */
static void test_exprs_of_length(void **state)
{
    (void)state;
    static const char canon[] = "http://a.b.c.example/x/y/z?q=1";
    char buf[64];
    memcpy(buf, canon, strlen(canon));
    memset(buf + strlen(canon), 'Z', sizeof(buf) - strlen(canon));
    br_url_exprs a = {0}, b = {0};
    assert_int_equal(br_url_exprs_of(buf, strlen(canon), 5, &a, NULL), 0);
    assert_int_equal(br_url_exprs_of(canon, strlen(canon), 5, &b, NULL), 0);
    assert_int_equal(a.n, b.n);
    for (size_t i = 0; i < a.n; i++)
        assert_string_equal(a.expr[i], b.expr[i]);
    br_url_exprs_clear(&a);
    br_url_exprs_clear(&b);
}

/* br_url_exprs_of a string that is not canonical, with more
 * than 127 host labels: no more expressions than expr[] holds (a canonical
 * host has at most 127 labels, and gets every suffix). */
static void test_exprs_bound(void **state)
{
    (void)state;
    str in = {0}, none = {0};
    put(&in, "http://", 1);
    put(&in, "a.", 140);
    put(&in, "a/b/c/d/e?q", 1);
    br_url_exprs ex = {0};
    assert_int_equal(br_url_exprs_of(in.p, strlen(in.p), BR_URL_MAX_HOST_LABELS, &ex, NULL), 0);
    assert_int_equal(ex.n, BR_URL_MAX_LOOKUP_EXPRESSIONS);
    assert_string_equal(ex.expr[ex.n - 1], "a.a/");
    br_url_exprs_clear(&ex);
    /* 127 labels: the exact host and all its 126 suffixes of 2 or more. */
    reset(&in, &none);
    put(&in, "http://", 1);
    put(&in, "a.", 126);
    put(&in, "a/", 1);
    assert_int_equal(br_url_exprs_of(in.p, strlen(in.p), 1000, &ex, NULL), 0);
    assert_int_equal(ex.n, 126);
    br_url_exprs_clear(&ex);
    reset(&in, &none);
}

/* Hosts of 14 to 48 bytes (16 at a time when nothing is to be folded):
 * a dot, two dots, a leading or trailing dot, an upper case letter, a byte
 * that sends the host to the IDN path, at every position; the expected
 * host is lowercased with its dots stripped and collapsed. */
static void test_host_blocks(void **state)
{
    (void)state;
    static const char *const marks[] = {".", "..", "Q", "\303\274", "-", "_"};
    for (size_t n = 14; n <= 48; n++) {
        for (size_t m = 0; m < sizeof(marks) / sizeof(marks[0]); m++) {
            for (size_t at = 0; at + strlen(marks[m]) <= n; at++) {
                char host[64];
                memset(host, 'k', n);
                host[n] = '\0';
                host[n / 2] = '.'; /* two labels, under 64 bytes each */
                memcpy(host + at, marks[m], strlen(marks[m]));
                str in = {0}, want = {0};
                put(&in, "http://", 1);
                put(&in, host, 1);
                put(&in, "/", 1);
                /* The model: lowercase, no dot first, last or twice. */
                char w[64];
                size_t o = 0;
                for (size_t i = 0; i < n; i++) {
                    char c = host[i];
                    if (c == '.' && (o == 0 || w[o - 1] == '.'))
                        continue;
                    w[o++] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
                }
                if (o > 0 && w[o - 1] == '.')
                    o--;
                w[o] = '\0';
                put(&want, "http://", 1);
                put(&want, w, 1);
                put(&want, "/", 1);
                if (m == 3) { /* an IDN label: its A-label form */
                    char *out = NULL;
                    assert_int_equal(br_url_canonicalize(in.p, in.len, &out, NULL), 0);
                    assert_non_null(strstr(out, "xn--"));
                    free(out);
                } else {
                    check(&in, &want);
                }
                reset(&in, &want);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_result_room),     cmocka_unit_test(test_escape_growth),
        cmocka_unit_test(test_path_resolution), cmocka_unit_test(test_host_rooms),
        cmocka_unit_test(test_work_copy),       cmocka_unit_test(test_exprs_of_length),
        cmocka_unit_test(test_exprs_bound),     cmocka_unit_test(test_host_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
