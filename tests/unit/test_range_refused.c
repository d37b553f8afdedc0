/* SPDX-License-Identifier: MIT */
/* lib/range/range.c refusing what is wrong: oversized and malformed bodies,
 * too many categories, and corrupt range sets of any kind given to lookups
 * (well-formed bodies: test_range.c). */
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
#include "range/range.h"
#include "range_helpers.h"
#include "core/util.h"

/* Copy into an exactly sized heap buffer so that ASan sees any overread. */
static int lookup_exact(br_range_kind kind, const uint8_t *v, size_t len, const uint8_t *h,
                        uint32_t *c, char *cat)
{
    uint8_t *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, v, len);
    int rc = br_range_lookup(kind, copy, len, h, c, cat);
    int vrc = br_range_validate(kind, copy, len, NULL);
    free(copy);
    assert_true(rc == 0 || rc == 1 || rc == -EINVAL);
    assert_true(vrc == 0 || vrc == -EINVAL);
    if (rc == -EINVAL)
        assert_int_equal(vrc, -EINVAL);
    return rc;
}

static void test_too_large(void **state)
{
    (void)state;
    const char *line = "1E4C9B93F3F0682250B6CF8331B7EE68FD8:10434004\n"; /* 45 bytes */
    sbuf b = {0};
    for (int i = 0; i < 10; i++)
        sb_str(&b, line);
    uint8_t *v;
    size_t len;
    br_error err = {{0}};
    /* Exactly at the limit is fine (duplicates merged), one byte less is not. */
    assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, b.p, b.len, b.len, &v, &len, &err), 0);
    assert_int_equal(len, BR_RANGE_HEADER_SIZE + 22);
    free(v);
    assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, b.p, b.len, b.len - 1, &v, &len, &err),
                     -EFBIG);
    assert_null(v);
    free(b.p);

    /* Default limit: 8 MiB. */
    size_t big = BR_RANGE_DEFAULT_MAX_BODY + 1;
    char *p = malloc(big);
    assert_non_null(p);
    memset(p, 'A', big);
    assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, p, big, 0, &v, &len, &err), -EFBIG);
    assert_null(strstr(err.text, "AAAAA"));
    free(p);
}

typedef struct bad_case {
    br_range_kind kind;
    const char *body;
    size_t line; /* expected line in the reason */
    const char *what;
} bad_case;

static void test_malformed(void **state)
{
    (void)state;
    const bad_case cases[] = {
        {BR_RANGE_PASSWORD_SHA1, "1E4C9B93F3F0682250B6CF8331B7EE68FD:5\n", 1, "too short"},
        {BR_RANGE_PASSWORD_SHA1, S35 "0:5\n", 1, "longer"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":5\n1E4C9B93F3F0682250B6CF8331B7EE68FDG:5\n", 2, "hex"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":5\n" S35 ":7\n1E4C9B93 3F0682250B6CF8331B7EE68FD8:5\n", 3,
         "column 9"},
        {BR_RANGE_PASSWORD_SHA1, S35 "\n", 1, "no ':'"},
        {BR_RANGE_PASSWORD_SHA1, S35 "\r\n", 1, "no ':'"},
        {BR_RANGE_PASSWORD_SHA1, S35 ";5\n", 1, "expected ':'"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":\n", 1, "missing count"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":12a\n", 1, "column 39"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":-1\n", 1, "decimal"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":+1\n", 1, "decimal"},
        {BR_RANGE_PASSWORD_SHA1, S35 ": 1\n", 1, "decimal"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":1 \n", 1, "decimal"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":1:2\n", 1, "decimal"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":4294967296\n", 1, "over 4294967295"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":99999999999999999999999\n", 1, "over 4294967295"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":1\n\n" S35 ":2\n", 2, "empty line"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":1\n\n", 2, "empty line"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":1\r\n\r\n", 2, "empty line"},
        {BR_RANGE_PASSWORD_SHA1, "\n" S35 ":1\n", 1, "empty line"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":1\r\r\n", 1, "decimal"},
        {BR_RANGE_PASSWORD_SHA1, " " S35 ":1\n", 1, "column 1"},
        {BR_RANGE_PASSWORD_SHA1, S59 ":5\n", 1, "longer"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":phishing\n", 1, "decimal"},
        {BR_RANGE_URL_SHA256, S35 ":phishing\n", 1, "too short"},
        {BR_RANGE_URL_SHA256, S59 "A:phishing\n", 1, "longer"},
        {BR_RANGE_URL_SHA256, S59 ":\n", 1, "missing category"},
        {BR_RANGE_URL_SHA256, S59 ":Phishing\n", 1, "column 61"},
        {BR_RANGE_URL_SHA256, S59 ":phish ing\n", 1, "not allowed"},
        {BR_RANGE_URL_SHA256, S59 ":phish.ing\n", 1, "not allowed"},
        {BR_RANGE_URL_SHA256, S59 ":abcdefghijklmnopqrstuvwxyz0123456\n", 1, "longer than 32"},
        {BR_RANGE_URL_SHA256, S59 ":malware\n" S59 ":mal\xc3\xa9\n", 2, "not allowed"},
        {BR_RANGE_URL_SHA256, S59 ":malware\nzz", 2, "hex"},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(cases); i++) {
        uint8_t *v = (uint8_t *)"sentinel";
        size_t len = 7;
        br_error err = {{0}};
        int rc =
            br_range_parse(cases[i].kind, cases[i].body, strlen(cases[i].body), 0, &v, &len, &err);
        if (rc != -EBADMSG)
            fail_msg("case %zu: rc %d, want -EBADMSG (%s)", i, rc, err.text);
        assert_null(v);
        char want_line[32];
        snprintf(want_line, sizeof(want_line), "line %zu", cases[i].line);
        if (!strstr(err.text, want_line) || !strstr(err.text, cases[i].what))
            fail_msg("case %zu: reason \"%s\", want \"%s\" and \"%s\"", i, err.text, want_line,
                     cases[i].what);
        /* The reason never carries hash content. */
        assert_null(strstr(err.text, "1E4C9"));
        assert_null(strstr(err.text, "C4E1A"));
        assert_null(strstr(err.text, "phish"));
        assert_null(strstr(err.text, "5BAA6"));
    }
}

static void test_too_many_categories(void **state)
{
    (void)state;
    sbuf b = {0};
    uint64_t rng = 3;
    for (int i = 0; i < 256; i++) {
        uint8_t h[BR_SHA256_LEN];
        char sfx[64], line[128];
        rand_hash(&rng, 1, h, sizeof(h));
        suffix_hex(h, sizeof(h), sfx);
        snprintf(line, sizeof(line), "%s:cat%d\n", sfx, i);
        sb_str(&b, line);
    }
    uint8_t *v;
    size_t len;
    br_error err = {{0}};
    assert_int_equal(br_range_parse(BR_RANGE_URL_SHA256, b.p, b.len, 0, &v, &len, &err), -EBADMSG);
    assert_non_null(strstr(err.text, "categories"));
    /* 255 are fine. */
    char *last = b.p + b.len - 1;
    while (last > b.p && last[-1] != '\n')
        last--;
    assert_int_equal(
        br_range_parse(BR_RANGE_URL_SHA256, b.p, (size_t)(last - b.p), 0, &v, &len, &err), 0);
    assert_int_equal(v[7], 255);
    assert_int_equal(br_range_validate(BR_RANGE_URL_SHA256, v, len, NULL), 0);
    free(v);
    free(b.p);
}

static void test_corrupt_values(void **state)
{
    (void)state;
    pw_set *s = malloc(sizeof(*s));
    assert_non_null(s);
    make_pw_set(s, 5);
    sbuf b = {0};
    pw_body(s, &b, EOL_LF, true, false, false, false);
    uint8_t *v;
    size_t len;
    parse_ok(BR_RANGE_PASSWORD_SHA1, b.p, b.len, &v, &len);

    /* Every truncation. */
    for (size_t l = 0; l < len; l++)
        assert_int_equal(lookup_exact(BR_RANGE_PASSWORD_SHA1, v, l, s->real[0], NULL, NULL),
                         -EINVAL);
    /* Longer than it says. */
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, v, len);
    longer[len] = 0;
    assert_int_equal(lookup_exact(BR_RANGE_PASSWORD_SHA1, longer, len + 1, s->real[0], NULL, NULL),
                     -EINVAL);
    free(longer);

    /* Random bytes. */
    uint64_t rng = 11;
    for (int it = 0; it < 2000; it++) {
        size_t l = (size_t)(br_splitmix64(&rng) % 300);
        uint8_t buf[300];
        for (size_t k = 0; k < l; k++)
            buf[k] = (uint8_t)br_splitmix64(&rng);
        assert_int_equal(lookup_exact(BR_RANGE_PASSWORD_SHA1, buf, l, s->real[0], NULL, NULL),
                         -EINVAL);
        assert_int_equal(lookup_exact(BR_RANGE_URL_SHA256, buf, l, s->real[0], NULL, NULL),
                         -EINVAL);
    }

    /* Every single header byte changed: rejected. */
    for (size_t k = 0; k < BR_RANGE_HEADER_SIZE; k++) {
        for (int bit = 0; bit < 8; bit++) {
            v[k] ^= (uint8_t)(1 << bit);
            assert_int_equal(lookup_exact(BR_RANGE_PASSWORD_SHA1, v, len, s->real[0], NULL, NULL),
                             -EINVAL);
            v[k] ^= (uint8_t)(1 << bit);
        }
    }
    /* Random bit flips anywhere: never out of bounds, validate catches order breaks. */
    for (int it = 0; it < 3000; it++) {
        size_t pos = (size_t)(br_splitmix64(&rng) % len);
        uint8_t mask = (uint8_t)(1u << (br_splitmix64(&rng) % 8));
        v[pos] ^= mask;
        (void)lookup_exact(BR_RANGE_PASSWORD_SHA1, v, len, s->real[it % NREAL], NULL, NULL);
        v[pos] ^= mask;
    }
    /* A zero count is corrupt. */
    uint8_t *e0 = v + BR_RANGE_HEADER_SIZE;
    uint8_t saved[4];
    memcpy(saved, e0 + 18, 4);
    memset(e0 + 18, 0, 4);
    uint8_t h[BR_SHA1_LEN] = {0x5B, 0xAA, 0x60};
    memcpy(h + 2, e0, 18);
    h[2] |= 0x60;
    assert_int_equal(lookup_exact(BR_RANGE_PASSWORD_SHA1, v, len, h, NULL, NULL), -EINVAL);
    memcpy(e0 + 18, saved, 4);
    assert_int_equal(lookup_exact(BR_RANGE_PASSWORD_SHA1, v, len, h, NULL, NULL), 1);
    free(v);
    free(b.p);
    free(s);

    /* URL sets: a bad category index or table is caught on a hit. */
    const char *ubody = S59 ":phishing\n";
    parse_ok(BR_RANGE_URL_SHA256, ubody, strlen(ubody), &v, &len);
    uint8_t h256[BR_SHA256_LEN];
    assert_true(br_hex_decode("ABCDE" S59 "0", BR_SHA256_LEN, h256));
    char cat[BR_RANGE_CATEGORY_MAX + 1];
    assert_int_equal(lookup_exact(BR_RANGE_URL_SHA256, v, len, h256, NULL, cat), 1);
    v[BR_RANGE_HEADER_SIZE + 30] = 1; /* index 1 of 1 category */
    assert_int_equal(lookup_exact(BR_RANGE_URL_SHA256, v, len, h256, NULL, cat), -EINVAL);
    v[BR_RANGE_HEADER_SIZE + 30] = 0;
    v[BR_RANGE_HEADER_SIZE + 31] = 9; /* name length past the end */
    assert_int_equal(lookup_exact(BR_RANGE_URL_SHA256, v, len, h256, NULL, cat), -EINVAL);
    v[BR_RANGE_HEADER_SIZE + 31] = 8;
    v[BR_RANGE_HEADER_SIZE + 33] = '\n'; /* a character no category may hold */
    assert_int_equal(lookup_exact(BR_RANGE_URL_SHA256, v, len, h256, NULL, cat), -EINVAL);
    free(v);

    assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, NULL, 0, h, NULL, NULL), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_too_many_categories),
        cmocka_unit_test(test_corrupt_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
