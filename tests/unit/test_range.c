/* SPDX-License-Identifier: MIT */
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
#include "range.h"
#include "util.h"

#define NREAL 400
#define NPAD 150

/* A growing text buffer. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = BR_MAX(2 * b->cap, b->len + n + 1024);
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(sbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* A full hash with the given 20-bit prefix and a random rest. */
static void rand_hash(uint64_t *rng, uint32_t prefix, uint8_t *h, size_t hlen)
{
    for (size_t i = 0; i < hlen; i++)
        h[i] = (uint8_t)br_splitmix64(rng);
    h[0] = (uint8_t)(prefix >> 12);
    h[1] = (uint8_t)(prefix >> 4);
    h[2] = (uint8_t)((prefix & 0xF) << 4 | (h[2] & 0x0F));
}

/* The suffix of h as hex (upper), NUL-terminated. */
static void suffix_hex(const uint8_t *h, size_t hlen, char *out)
{
    char full[2 * BR_SHA256_LEN + 1];
    br_hex_encode_upper(h, hlen, full);
    strcpy(out, full + BR_RANGE_PREFIX_HEX);
}

typedef struct pw_set {
    uint8_t real[NREAL][BR_SHA1_LEN];
    uint32_t count[NREAL];
    uint8_t pad[NPAD][BR_SHA1_LEN];
} pw_set;

static void make_pw_set(pw_set *s, uint64_t seed)
{
    uint64_t rng = seed;
    for (int i = 0; i < NREAL; i++) {
        rand_hash(&rng, 0x5BAA6, s->real[i], BR_SHA1_LEN);
        s->count[i] = (uint32_t)(br_splitmix64(&rng) % 100000) + 1;
    }
    s->count[0] = 1;
    s->count[1] = UINT32_MAX;
    for (int i = 0; i < NPAD; i++)
        rand_hash(&rng, 0x5BAA6, s->pad[i], BR_SHA1_LEN);
}

enum { EOL_LF, EOL_CRLF, EOL_MIXED };

/* Body of the set: real lines in order perm (or as is), then padding. */
static void pw_body(const pw_set *s, sbuf *b, int eol, bool final_eol, bool lower, bool shuffle, bool padding)
{
    int order[NREAL];
    for (int i = 0; i < NREAL; i++)
        order[i] = i;
    if (shuffle) {
        uint64_t rng = 99;
        for (int i = NREAL - 1; i > 0; i--) {
            int j = (int)(br_splitmix64(&rng) % (uint64_t)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    int total = NREAL + (padding ? NPAD : 0);
    for (int n = 0; n < total; n++) {
        char sfx[64], line[96];
        if (n < NREAL) {
            suffix_hex(s->real[order[n]], BR_SHA1_LEN, sfx);
            snprintf(line, sizeof(line), "%s:%u", sfx, s->count[order[n]]);
        } else {
            suffix_hex(s->pad[n - NREAL], BR_SHA1_LEN, sfx);
            snprintf(line, sizeof(line), "%s:%s", sfx, n % 2 ? "0" : "000");
        }
        if (lower)
            for (char *c = line; *c; c++)
                if (*c >= 'A' && *c <= 'F')
                    *c = (char)(*c - 'A' + 'a');
        sb_str(b, line);
        if (n < total - 1 || final_eol) {
            bool crlf = eol == EOL_CRLF || (eol == EOL_MIXED && n % 3 == 0);
            sb_str(b, crlf ? "\r\n" : "\n");
        }
    }
}

static void check_pw_set(const pw_set *s, const uint8_t *v, size_t len, bool expect_padding_absent)
{
    uint32_t n;
    assert_int_equal(br_range_validate(BR_RANGE_PASSWORD_SHA1, v, len, &n), 0);
    assert_int_equal(n, NREAL);
    assert_int_equal(len, BR_RANGE_HEADER_SIZE + NREAL * 22);
    for (int i = 0; i < NREAL; i++) {
        uint32_t c = 0;
        char cat[BR_RANGE_CATEGORY_MAX + 1] = "x";
        assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, s->real[i], &c, cat), 1);
        assert_int_equal(c, s->count[i]);
        assert_string_equal(cat, "");
        /* Same suffix, other prefix: the prefix is not checked. */
        uint8_t h[BR_SHA1_LEN];
        memcpy(h, s->real[i], sizeof(h));
        h[0] ^= 0xFF;
        h[2] ^= 0xF0;
        assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, h, &c, NULL), 1);
        /* One bit off in the last digit: not found. */
        h[19] ^= 0x01;
        assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, h, &c, NULL), 0);
    }
    if (expect_padding_absent)
        for (int i = 0; i < NPAD; i++)
            assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, s->pad[i], NULL, NULL), 0);
}

static void parse_ok(br_range_kind kind, const char *body, size_t len, uint8_t **v, size_t *vlen)
{
    br_error err = {{0}};
    int rc = br_range_parse(kind, body, len, 0, v, vlen, &err);
    if (rc != 0)
        fail_msg("parse failed (%d): %s", rc, err.text);
}

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
        {EOL_CRLF, true, false, false, false},  {EOL_CRLF, false, false, false, false},
        {EOL_LF, false, false, false, false},   {EOL_MIXED, true, false, false, false},
        {EOL_LF, true, true, false, false},     {EOL_CRLF, true, false, true, false},
        {EOL_CRLF, true, false, false, true},   {EOL_LF, false, true, true, true},
        {EOL_MIXED, false, true, true, true},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(variants); i++) {
        sbuf b = {0};
        pw_body(s, &b, variants[i].eol, variants[i].final_eol, variants[i].lower, variants[i].shuffle,
                variants[i].padding);
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
    const char *pad = "00D4F6E8FA6EECAD2A3AA415EEC418D38EC:0\r\n0018A45C4D1DEF81644B54AB7F969B88D65:0";
    assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, pad, strlen(pad), 0, &v, &len, &err), 0);
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
        assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, empties[i], strlen(empties[i]), 0, &v, &len, &err),
                         -ENODATA);
        assert_null(v);
        assert_non_null(strstr(err.text, "empty"));
        /* URLs: an empty body is an answer with no entries (docs/upstream.md). */
        assert_int_equal(br_range_parse(BR_RANGE_URL_SHA256, empties[i], strlen(empties[i]), 0, &v, &len, &err), 0);
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
    assert_int_equal(br_range_parse((br_range_kind)9, pad, strlen(pad), 0, &v, &len, &err), -EINVAL);
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
    assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, b.p, b.len, b.len - 1, &v, &len, &err), -EFBIG);
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

#define S35 "1E4C9B93F3F0682250B6CF8331B7EE68FD8"
#define S59 "C4E1A9C3F2B5D6E7F8091A2B3C4D5E6F708192A3B4C5D6E7F8091A2B3C4"

static void test_malformed(void **state)
{
    (void)state;
    const bad_case cases[] = {
        {BR_RANGE_PASSWORD_SHA1, "1E4C9B93F3F0682250B6CF8331B7EE68FD:5\n", 1, "too short"},
        {BR_RANGE_PASSWORD_SHA1, S35 "0:5\n", 1, "longer"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":5\n1E4C9B93F3F0682250B6CF8331B7EE68FDG:5\n", 2, "hex"},
        {BR_RANGE_PASSWORD_SHA1, S35 ":5\n" S35 ":7\n1E4C9B93 3F0682250B6CF8331B7EE68FD8:5\n", 3, "column 9"},
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
        int rc = br_range_parse(cases[i].kind, cases[i].body, strlen(cases[i].body), 0, &v, &len, &err);
        if (rc != -EBADMSG)
            fail_msg("case %zu: rc %d, want -EBADMSG (%s)", i, rc, err.text);
        assert_null(v);
        char want_line[32];
        snprintf(want_line, sizeof(want_line), "line %zu", cases[i].line);
        if (!strstr(err.text, want_line) || !strstr(err.text, cases[i].what))
            fail_msg("case %zu: reason \"%s\", want \"%s\" and \"%s\"", i, err.text, want_line, cases[i].what);
        /* The reason never carries hash content. */
        assert_null(strstr(err.text, "1E4C9"));
        assert_null(strstr(err.text, "C4E1A"));
        assert_null(strstr(err.text, "phish"));
        assert_null(strstr(err.text, "5BAA6"));
    }
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
    static const char url_body[] = "\xEF\xBB\xBF" S59 ":malware\r\n\xEF\xBB\xBF" S59 ":phishing\r\n";
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
    const char *body = S35 ":5\n" S35 ":900\n" S35 ":0\n1E4C9B93F3F0682250B6CF8331B7EE68FD9:3\n" S35 ":7\n";
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
    static const char *cats[] = {"phishing", "malware", "unwanted-software", "social_engineering", "0",
                                 "abcdefghijklmnopqrstuvwxyz012345"};
    enum { N = 300 };
    uint8_t (*hs)[BR_SHA256_LEN] = malloc(N * BR_SHA256_LEN);
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
    assert_int_equal(br_range_parse(BR_RANGE_URL_SHA256, b.p, (size_t)(last - b.p), 0, &v, &len, &err), 0);
    assert_int_equal(v[7], 255);
    assert_int_equal(br_range_validate(BR_RANGE_URL_SHA256, v, len, NULL), 0);
    free(v);
    free(b.p);
}

/* Copy into an exactly sized heap buffer so that ASan sees any overread. */
static int lookup_exact(br_range_kind kind, const uint8_t *v, size_t len, const uint8_t *h, uint32_t *c, char *cat)
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
        assert_int_equal(lookup_exact(BR_RANGE_PASSWORD_SHA1, v, l, s->real[0], NULL, NULL), -EINVAL);
    /* Longer than it says. */
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, v, len);
    longer[len] = 0;
    assert_int_equal(lookup_exact(BR_RANGE_PASSWORD_SHA1, longer, len + 1, s->real[0], NULL, NULL), -EINVAL);
    free(longer);

    /* Random bytes. */
    uint64_t rng = 11;
    for (int it = 0; it < 2000; it++) {
        size_t l = (size_t)(br_splitmix64(&rng) % 300);
        uint8_t buf[300];
        for (size_t k = 0; k < l; k++)
            buf[k] = (uint8_t)br_splitmix64(&rng);
        assert_int_equal(lookup_exact(BR_RANGE_PASSWORD_SHA1, buf, l, s->real[0], NULL, NULL), -EINVAL);
        assert_int_equal(lookup_exact(BR_RANGE_URL_SHA256, buf, l, s->real[0], NULL, NULL), -EINVAL);
    }

    /* Every single header byte changed: rejected. */
    for (size_t k = 0; k < BR_RANGE_HEADER_SIZE; k++) {
        for (int bit = 0; bit < 8; bit++) {
            v[k] ^= (uint8_t)(1 << bit);
            assert_int_equal(lookup_exact(BR_RANGE_PASSWORD_SHA1, v, len, s->real[0], NULL, NULL), -EINVAL);
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
        cmocka_unit_test(test_prefix_helpers),
        cmocka_unit_test(test_parse_known),
        cmocka_unit_test(test_parse_variants_identical),
        cmocka_unit_test(test_byte_order_marks),
        cmocka_unit_test(test_padding_only_and_empty),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_url_categories),
        cmocka_unit_test(test_too_many_categories),
        cmocka_unit_test(test_corrupt_values),
        cmocka_unit_test(test_count_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
