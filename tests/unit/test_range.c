/* SPDX-License-Identifier: MIT */
/* lib/range/range.c on well-formed bodies: parsing, spellings, byte order
 * marks, padding, duplicates, categories, lookups (what is refused:
 * test_range_refused.c). */
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

static void test_prefix_helpers(void **state)
{
    (void)state;
    uint8_t h[BR_SHA1_LEN];
    char hex[6];
    assert_int_equal(br_sha1("password", 8, h), 0);
    assert_int_equal(br_range_prefix20(h), 0x5BAA6);
    br_range_prefix_hex(br_range_prefix20(h), hex);
    assert_string_equal(hex, "5BAA6");
    br_range_prefix_hex(0x0000F, hex);
    assert_string_equal(hex, "0000F");
    assert_int_equal(br_range_hash_len(BR_RANGE_PASSWORD_SHA1), 20);
    assert_int_equal(br_range_hash_len(BR_RANGE_URL_SHA256), 32);
    assert_int_equal(br_range_suffix_hex(BR_RANGE_PASSWORD_SHA1), 35);
    assert_int_equal(br_range_suffix_hex(BR_RANGE_URL_SHA256), 59);
    assert_int_equal(br_range_hash_len((br_range_kind)7), 0);
}

/* The real HIBP line for "password" in range 5BAA6. */
static void test_parse_known(void **state)
{
    (void)state;
    const char *body = "1E4C9B93F3F0682250B6CF8331B7EE68FD8:10434004\r\n"
                       "0018A45C4D1DEF81644B54AB7F969B88D65:21\r\n"
                       "00D4F6E8FA6EECAD2A3AA415EEC418D38EC:0\r\n";
    uint8_t *v;
    size_t len;
    parse_ok(BR_RANGE_PASSWORD_SHA1, body, strlen(body), &v, &len);
    assert_int_equal(len, BR_RANGE_HEADER_SIZE + 2 * 22);
    /* Header as documented. */
    assert_memory_equal(v, "BRS\x01", 4);
    assert_int_equal(v[4], BR_RANGE_PASSWORD_SHA1);
    assert_int_equal(v[5], 18);
    assert_int_equal(v[6], 4);
    assert_int_equal(v[7], 0);
    assert_int_equal(br_load_le32(v + 8), 2);
    assert_int_equal(br_load_le32(v + 12), 0);
    /* First entry: 0018A45C..., leading padding nibble 0. */
    assert_int_equal(v[16], 0x00);
    assert_int_equal(v[17], 0x01);
    assert_int_equal(v[18], 0x8A);
    assert_int_equal(br_load_le32(v + 16 + 18), 21);

    uint8_t h[BR_SHA1_LEN];
    uint32_t c = 0;
    assert_int_equal(br_sha1("password", 8, h), 0);
    assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, h, &c, NULL), 1);
    assert_int_equal(c, 10434004);
    assert_int_equal(br_sha1("correct horse battery staple", 28, h), 0);
    assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, h, &c, NULL), 0);
    /* Wrong kind for this value. */
    uint8_t h256[BR_SHA256_LEN] = {0};
    assert_int_equal(br_range_lookup(BR_RANGE_URL_SHA256, v, len, h256, NULL, NULL), -EINVAL);
    free(v);
}

static void test_parse_variants_identical(void **state)
{
    (void)state;
    pw_set *s = malloc(sizeof(*s));
    assert_non_null(s);
    make_pw_set(s, 42);

    sbuf ref_body = {0};
    pw_body(s, &ref_body, EOL_LF, true, false, false, false);
    uint8_t *ref;
    size_t ref_len;
    parse_ok(BR_RANGE_PASSWORD_SHA1, ref_body.p, ref_body.len, &ref, &ref_len);
    check_pw_set(s, ref, ref_len, true);

    struct {
        int eol;
        bool final_eol, lower, shuffle, padding;
    } variants[] = {
        {EOL_CRLF, true, false, false, false}, {EOL_CRLF, false, false, false, false},
        {EOL_LF, false, false, false, false},  {EOL_MIXED, true, false, false, false},
        {EOL_LF, true, true, false, false},    {EOL_CRLF, true, false, true, false},
        {EOL_CRLF, true, false, false, true},  {EOL_LF, false, true, true, true},
        {EOL_MIXED, false, true, true, true},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(variants); i++) {
        sbuf b = {0};
        pw_body(s, &b, variants[i].eol, variants[i].final_eol, variants[i].lower,
                variants[i].shuffle, variants[i].padding);
        uint8_t *v;
        size_t len;
        parse_ok(BR_RANGE_PASSWORD_SHA1, b.p, b.len, &v, &len);
        assert_int_equal(len, ref_len);
        assert_memory_equal(v, ref, len);
        check_pw_set(s, v, len, true);
        free(v);
        free(b.p);
    }
    /* A last line ended by a lone CR. */
    sbuf b = {0};
    pw_body(s, &b, EOL_CRLF, false, false, false, false);
    sb_str(&b, "\r");
    uint8_t *v;
    size_t len;
    parse_ok(BR_RANGE_PASSWORD_SHA1, b.p, b.len, &v, &len);
    assert_memory_equal(v, ref, ref_len);
    free(v);
    free(b.p);

    free(ref);
    free(ref_body.p);
    free(s);
}

static void test_padding_only_and_empty(void **state)
{
    (void)state;
    uint8_t *v = (uint8_t *)"sentinel";
    size_t len = 0;
    br_error err = {{0}};
    const char *pad =
        "00D4F6E8FA6EECAD2A3AA415EEC418D38EC:0\r\n0018A45C4D1DEF81644B54AB7F969B88D65:0";
    assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, pad, strlen(pad), 0, &v, &len, &err),
                     0);
    assert_int_equal(len, BR_RANGE_HEADER_SIZE);
    uint32_t n = 99;
    assert_int_equal(br_range_validate(BR_RANGE_PASSWORD_SHA1, v, len, &n), 0);
    assert_int_equal(n, 0);
    uint8_t h[BR_SHA1_LEN];
    assert_int_equal(br_sha1("password", 8, h), 0);
    assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, h, NULL, NULL), 0);
    free(v);

    const char *empties[] = {"", "\n", "\r\n", "\r\n\r\n\n"};
    for (size_t i = 0; i < BR_ARRAY_SIZE(empties); i++) {
        v = (uint8_t *)"sentinel";
        assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, empties[i], strlen(empties[i]), 0,
                                        &v, &len, &err),
                         -ENODATA);
        assert_null(v);
        assert_non_null(strstr(err.text, "empty"));
        /* URLs: an empty body is an answer with no entries (docs/upstream.md). */
        assert_int_equal(
            br_range_parse(BR_RANGE_URL_SHA256, empties[i], strlen(empties[i]), 0, &v, &len, &err),
            0);
        assert_int_equal(len, BR_RANGE_HEADER_SIZE);
        n = 99;
        assert_int_equal(br_range_validate(BR_RANGE_URL_SHA256, v, len, &n), 0);
        assert_int_equal(n, 0);
        uint8_t hu[BR_SHA256_LEN] = {0};
        assert_int_equal(br_range_lookup(BR_RANGE_URL_SHA256, v, len, hu, NULL, NULL), 0);
        free(v);
    }
    assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, NULL, 0, 0, &v, &len, &err), -ENODATA);
    assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, NULL, 5, 0, &v, &len, &err), -EINVAL);
    assert_int_equal(br_range_parse((br_range_kind)9, pad, strlen(pad), 0, &v, &len, &err),
                     -EINVAL);
}

/* A copy of body with a UTF-8 BOM before every `every`-th line, the first
 * included: the official downloader's blocks. */
static void add_boms(const sbuf *body, size_t every, sbuf *out)
{
    size_t line = 0;
    for (size_t i = 0; i < body->len;) {
        const char *nl = memchr(body->p + i, '\n', body->len - i);
        size_t n = nl ? (size_t)(nl - (body->p + i)) + 1 : body->len - i;
        if (line++ % every == 0)
            sb_str(out, "\xEF\xBB\xBF");
        sb_add(out, body->p + i, n);
        i += n;
    }
}

static void test_byte_order_marks(void **state)
{
    (void)state;
    pw_set *s = malloc(sizeof(*s));
    assert_non_null(s);
    make_pw_set(s, 7);
    sbuf ref_body = {0};
    pw_body(s, &ref_body, EOL_LF, true, false, false, false);
    uint8_t *ref;
    size_t ref_len;
    parse_ok(BR_RANGE_PASSWORD_SHA1, ref_body.p, ref_body.len, &ref, &ref_len);
    static const int eols[] = {EOL_LF, EOL_CRLF};
    for (size_t e = 0; e < BR_ARRAY_SIZE(eols); e++) {
        for (size_t every = 1; every <= 64; every *= 8) {
            sbuf b = {0}, bom = {0};
            pw_body(s, &b, eols[e], true, e == 1, false, true);
            add_boms(&b, every, &bom);
            uint8_t *v;
            size_t len;
            parse_ok(BR_RANGE_PASSWORD_SHA1, bom.p, bom.len, &v, &len);
            assert_int_equal(len, ref_len);
            assert_memory_equal(v, ref, len);
            free(v);
            free(b.p);
            free(bom.p);
        }
    }
    /* a URL body too */
    uint8_t *v;
    size_t len;
    static const char url_body[] =
        "\xEF\xBB\xBF" S59 ":malware\r\n\xEF\xBB\xBF" S59 ":phishing\r\n";
    parse_ok(BR_RANGE_URL_SHA256, url_body, strlen(url_body), &v, &len);
    free(v);
    /* a BOM inside a line, or alone on one, is not ignored; columns count it */
    const struct {
        const char *body;
        const char *what;
    } bad[] = {
        {S35 ":1\n\xEF\xBB\xBF\n", "line 2: empty line"},
        {"\xEF\xBB\xBF" S35 ":1\n1E4C9\xEF\xBB\xBF:1\n", "line 2, column 6: not a hex digit"},
        {"\xEF\xBB\xBF" S35 ":x\n", "line 1, column 40: count is not a decimal number"},
        {"\xEF\xBB\xBF\xEF\xBB\xBF" S35 ":1\n", "line 1, column 4: not a hex digit"},
        {"7EAEE8FB117AD06BDD830B7586C:10\r\n",
         "line 1: suffix too short (27 hex digits, want 35): this is an NTLM range"},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(bad); i++) {
        br_error err = {{0}};
        v = NULL;
        int rc = br_range_parse(BR_RANGE_PASSWORD_SHA1, bad[i].body, strlen(bad[i].body), 0, &v,
                                &len, &err);
        if (rc != -EBADMSG || !strstr(err.text, bad[i].what))
            fail_msg("case %zu: rc %d \"%s\", want \"%s\"", i, rc, err.text, bad[i].what);
        assert_null(v);
    }
    free(ref);
    free(ref_body.p);
    free(s);
}

static void test_duplicates(void **state)
{
    (void)state;
    const char *body =
        S35 ":5\n" S35 ":900\n" S35 ":0\n1E4C9B93F3F0682250B6CF8331B7EE68FD9:3\n" S35 ":7\n";
    uint8_t *v;
    size_t len;
    parse_ok(BR_RANGE_PASSWORD_SHA1, body, strlen(body), &v, &len);
    assert_int_equal(len, BR_RANGE_HEADER_SIZE + 2 * 22);
    uint8_t h[BR_SHA1_LEN];
    assert_int_equal(br_sha1("password", 8, h), 0);
    uint32_t c = 0;
    assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, h, &c, NULL), 1);
    assert_int_equal(c, 900);
    free(v);

    const char *ubody = S59 ":phishing\n" S59 ":malware\n" S59 ":phishing\n";
    parse_ok(BR_RANGE_URL_SHA256, ubody, strlen(ubody), &v, &len);
    /* One entry, and only the category it uses remains in the table. */
    assert_int_equal(len, BR_RANGE_HEADER_SIZE + 31 + 1 + 8);
    uint8_t h256[BR_SHA256_LEN];
    assert_true(br_hex_decode("ABCDE" S59 "0", BR_SHA256_LEN, h256));
    char cat[BR_RANGE_CATEGORY_MAX + 1];
    assert_int_equal(br_range_lookup(BR_RANGE_URL_SHA256, v, len, h256, &c, cat), 1);
    assert_string_equal(cat, "phishing");
    assert_int_equal(c, 1);
    assert_int_equal(br_range_validate(BR_RANGE_URL_SHA256, v, len, NULL), 0);
    free(v);
}

static void test_url_categories(void **state)
{
    (void)state;
    static const char *cats[] = {
        "phishing",           "malware", "unwanted-software",
        "social_engineering", "0",       "abcdefghijklmnopqrstuvwxyz012345"};
    enum { N = 300 };
    uint8_t(*hs)[BR_SHA256_LEN] = malloc(N * BR_SHA256_LEN);
    assert_non_null(hs);
    uint64_t rng = 7;
    sbuf b = {0};
    for (int i = 0; i < N; i++) {
        rand_hash(&rng, 0x00ABC, hs[i], BR_SHA256_LEN);
        char sfx[64];
        suffix_hex(hs[i], BR_SHA256_LEN, sfx);
        if (i % 2)
            for (char *p = sfx; *p; p++)
                if (*p >= 'A' && *p <= 'F')
                    *p = (char)(*p - 'A' + 'a');
        sb_str(&b, sfx);
        sb_str(&b, ":");
        sb_str(&b, cats[i % BR_ARRAY_SIZE(cats)]);
        sb_str(&b, i % 3 ? "\n" : "\r\n");
    }
    uint8_t *v;
    size_t len;
    parse_ok(BR_RANGE_URL_SHA256, b.p, b.len, &v, &len);
    size_t tab = 0;
    for (size_t i = 0; i < BR_ARRAY_SIZE(cats); i++)
        tab += 1 + strlen(cats[i]);
    assert_int_equal(len, BR_RANGE_HEADER_SIZE + N * 31 + tab);
    assert_int_equal(v[5], 30);
    assert_int_equal(v[6], 1);
    assert_int_equal(v[7], BR_ARRAY_SIZE(cats));
    /* Table sorted by name: "0" first. */
    const uint8_t *t = v + BR_RANGE_HEADER_SIZE + N * 31;
    assert_int_equal(t[0], 1);
    assert_int_equal(t[1], '0');
    uint32_t n;
    assert_int_equal(br_range_validate(BR_RANGE_URL_SHA256, v, len, &n), 0);
    assert_int_equal(n, N);
    for (int i = 0; i < N; i++) {
        char cat[BR_RANGE_CATEGORY_MAX + 1] = "";
        uint32_t c = 0;
        assert_int_equal(br_range_lookup(BR_RANGE_URL_SHA256, v, len, hs[i], &c, cat), 1);
        assert_string_equal(cat, cats[i % BR_ARRAY_SIZE(cats)]);
        uint8_t h[BR_SHA256_LEN];
        memcpy(h, hs[i], sizeof(h));
        h[31] ^= 0x80;
        assert_int_equal(br_range_lookup(BR_RANGE_URL_SHA256, v, len, h, &c, cat), 0);
    }
    /* A URL set is not a password set. */
    assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, hs[0], NULL, NULL), -EINVAL);
    assert_int_equal(br_range_validate(BR_RANGE_PASSWORD_SHA1, v, len, NULL), -EINVAL);
    free(v);
    free(b.p);
    free(hs);
}

static void test_count_limits(void **state)
{
    (void)state;
    const char *body = S35 ":4294967295\n1E4C9B93F3F0682250B6CF8331B7EE68FD9:0000000000000001\n";
    uint8_t *v;
    size_t len;
    parse_ok(BR_RANGE_PASSWORD_SHA1, body, strlen(body), &v, &len);
    uint8_t h[BR_SHA1_LEN];
    assert_true(br_hex_decode("5BAA6" S35, BR_SHA1_LEN, h));
    uint32_t c = 0;
    assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, h, &c, NULL), 1);
    assert_int_equal(c, UINT32_MAX);
    h[19] = 0xD9;
    assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, h, &c, NULL), 1);
    assert_int_equal(c, 1);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_helpers),           cmocka_unit_test(test_parse_known),
        cmocka_unit_test(test_parse_variants_identical), cmocka_unit_test(test_byte_order_marks),
        cmocka_unit_test(test_padding_only_and_empty),   cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_url_categories),           cmocka_unit_test(test_count_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
