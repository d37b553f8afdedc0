/* SPDX-License-Identifier: MIT */
/* NT hashes (lib/core/nthash.c): the test's own MD4 (OpenSSL's legacy
 * provider, as nthash.c loads it) against the test suite of RFC 1320
 * (appendix A.5), NT hashes against values made by OpenSSL's command line
 * (`iconv -t UTF-16LE | openssl dgst -md4 -provider legacy`) and against
 * that MD4 of their UTF-16LE text, and the UTF-8 to UTF-16LE rules of
 * nthash.h, byte by byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

#include "core/hash.h"
#include "core/nthash.h"

static void hex_of(const uint8_t d[BR_NT_LEN], char out[2 * BR_NT_LEN + 1])
{
    br_hex_encode_upper(d, BR_NT_LEN, out);
}

/* Plain MD4 of buf (RFC 1320), the reference the NT hashes are held to:
 * OpenSSL's legacy provider in a library context of the test's own. */
static void md4(const void *buf, size_t len, uint8_t out[BR_NT_LEN])
{
    OSSL_LIB_CTX *ctx = OSSL_LIB_CTX_new();
    assert_non_null(ctx);
    OSSL_PROVIDER *legacy = OSSL_PROVIDER_load(ctx, "legacy");
    assert_non_null(legacy);
    EVP_MD *md = EVP_MD_fetch(ctx, "MD4", NULL);
    assert_non_null(md);
    assert_int_equal(EVP_Digest(buf, len, out, NULL, md, NULL), 1);
    EVP_MD_free(md);
    OSSL_PROVIDER_unload(legacy);
    OSSL_LIB_CTX_free(ctx);
}

static void test_md4_rfc1320(void **state)
{
    (void)state;
    static const struct {
        const char *in, *md4;
    } v[] = {
        {"", "31D6CFE0D16AE931B73C59D7E0C089C0"},
        {"a", "BDE52CB31DE33E46245E05FBDBD6FB24"},
        {"abc", "A448017AAF21D8525FC10AE87AA6729D"},
        {"message digest", "D9130A8164549FE818874806E1C7014B"},
        {"abcdefghijklmnopqrstuvwxyz", "D79E1C308AA5BBCDEEA8ED63DF412DA9"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
         "043F8582F241DB351CE627E153E7F0E4"},
        {"1234567890123456789012345678901234567890123456789012345678901234567890123456789"
         "0",
         "E33B4DDC9C38F2199C3E7B164FCC0536"},
    };
    br_error err = {{0}};
    assert_int_equal(br_md4_check(&err), 0);
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        uint8_t d[BR_NT_LEN];
        char hex[2 * BR_NT_LEN + 1];
        md4(v[i].in, strlen(v[i].in), d);
        hex_of(d, hex);
        assert_string_equal(hex, v[i].md4);
    }
}

/* Known NT hashes: the first two are well known (NT("password"), the empty
 * password that accounts without one hold), the rest were made with
 * OpenSSL's command line from the UTF-8 text. */
static const struct {
    const char *pw, *nt;
} known[] = {
    {"password", "8846F7EAEE8FB117AD06BDD830B7586C"},
    {"", BR_NT_EMPTY_HEX},
    {"123456", "32ED87BDB5FDC5E9CBA88547376818D4"},
    {"hunter2", "6608E4BC7B2B7A5F77CE3573570775AF"},
    {"Passw0rd!", "FC525C9683E8FE067095BA2DDC971889"},
    {"p\xC3\xA4ssw\xC3\xB6rd", "0553152250AC01ADB4213CB9938663E4"}, /* pässwörd */
    {"\xF0\x9F\x94\x91key", "08636AD2DBBE22210305DB7278DE577F"},    /* U+1F511 key */
    {"\xC3\x9Cn\xC3\xAF"
     "c\xC3\xB6"
     "d\xC3\xA9\xE2\x82\xAC",
     "616478F0F4C897D0535D5F1A058285CA"},
};

static void test_nt_known(void **state)
{
    (void)state;
    br_error err = {{0}};
    br_nt_hasher *h = br_nt_hasher_new(&err);
    assert_non_null(h);
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        uint8_t d[BR_NT_LEN], e[BR_NT_LEN];
        char hex[2 * BR_NT_LEN + 1];
        assert_int_equal(br_nt_hash(known[i].pw, strlen(known[i].pw), d), 0);
        hex_of(d, hex);
        assert_string_equal(hex, known[i].nt);
        /* the reusable context, twice: same answer */
        for (int k = 0; k < 2; k++) {
            assert_int_equal(br_nt_hasher_digest(h, known[i].pw, strlen(known[i].pw), e), 0);
            assert_memory_equal(d, e, BR_NT_LEN);
        }
    }
    br_nt_hasher_free(h);
}

/* A password longer than the hashing chunk (512 bytes of UTF-16LE) hashes
 * like its UTF-16LE text in one piece. */
static void test_nt_long(void **state)
{
    (void)state;
    char pw[6001];
    uint8_t u16[2 * 6000], d[BR_NT_LEN], want[BR_NT_LEN];
    for (size_t i = 0; i < 1000; i++) /* "aé€" repeated: 1, 2, 3 UTF-8 bytes */
        memcpy(pw + 6 * i, "a\xC3\xA9\xE2\x82\xAC", 6);
    size_t len = 2999; /* cut inside a euro sign on purpose */
    pw[len] = '\0';
    size_t pos = 0;
    size_t n = br_utf16le_encode((const uint8_t *)pw, len, &pos, u16, sizeof(u16));
    assert_int_equal(pos, len);
    md4(u16, n, want);
    assert_int_equal(br_nt_hash(pw, len, d), 0);
    assert_memory_equal(d, want, BR_NT_LEN);
}

/* Convert in to UTF-16LE and compare with want (n bytes), also converting
 * with the smallest output buffer so that every character crosses a chunk. */
static void expect_u16(const char *in, size_t len, const uint8_t *want, size_t n)
{
    uint8_t out[256];
    size_t pos = 0;
    size_t got = br_utf16le_encode((const uint8_t *)in, len, &pos, out, sizeof(out));
    assert_int_equal(pos, len);
    assert_int_equal(got, n);
    assert_memory_equal(out, want, n);
    size_t off = 0;
    pos = 0;
    while (pos < len) {
        size_t before = pos;
        size_t k = br_utf16le_encode((const uint8_t *)in, len, &pos, out + off, 4);
        assert_true(pos > before);
        off += k;
    }
    assert_int_equal(off, n);
    assert_memory_equal(out, want, n);
}

#define U16(in, ...)                                                                               \
    do {                                                                                           \
        static const uint8_t w_[] = {__VA_ARGS__};                                                 \
        expect_u16(in, sizeof(in) - 1, w_, sizeof(w_));                                            \
    } while (0)

static void test_utf16_rules(void **state)
{
    (void)state;
    U16("aZ", 'a', 0, 'Z', 0);
    U16("\xC3\xA9", 0xE9, 0);                        /* é, 2 bytes */
    U16("\xE2\x82\xAC", 0xAC, 0x20);                 /* €, 3 bytes */
    U16("\xEF\xBF\xBD", 0xFD, 0xFF);                 /* U+FFFD itself */
    U16("\xF0\x9F\x94\x91", 0x3D, 0xD8, 0x11, 0xDD); /* U+1F511: a surrogate pair */
    U16("\xF4\x8F\xBF\xBF", 0xFF, 0xDB, 0xFF, 0xDF); /* U+10FFFF, the last one */
    /* not UTF-8: each byte alone as Latin-1 */
    U16("\xE9", 0xE9, 0); /* é in Latin-1 */
    U16("p\xE4ss", 'p', 0, 0xE4, 0, 's', 0, 's', 0);
    U16("\x80", 0x80, 0);              /* a stray continuation byte */
    U16("\xC0\xAF", 0xC0, 0, 0xAF, 0); /* overlong '/' */
    U16("\xC1\xBF", 0xC1, 0, 0xBF, 0);
    U16("\xE0\x80\xAF", 0xE0, 0, 0x80, 0, 0xAF, 0);              /* overlong, 3 bytes */
    U16("\xED\xA0\x80", 0xED, 0, 0xA0, 0, 0x80, 0);              /* an encoded surrogate */
    U16("\xF0\x80\x80\xAF", 0xF0, 0, 0x80, 0, 0x80, 0, 0xAF, 0); /* overlong, 4 bytes */
    U16("\xF4\x90\x80\x80", 0xF4, 0, 0x90, 0, 0x80, 0, 0x80, 0); /* above U+10FFFF */
    U16("\xF5\x80", 0xF5, 0, 0x80, 0);
    U16("\xFF", 0xFF, 0);
    U16("\xE2\x82", 0xE2, 0, 0x82, 0); /* cut short at the end */
    U16("\xE2\x82"
        "a",
        0xE2, 0, 0x82, 0, 'a', 0);         /* cut short before another character */
    U16("\xC3\xC3\xA9", 0xC3, 0, 0xE9, 0); /* a lead byte, then a good sequence */
    U16("\xF0\x9F\x94", 0xF0, 0, 0x9F, 0, 0x94, 0);
    U16("\x00", 0, 0);
}

/* A Latin-1 password has the NT hash of its characters: the same as its
 * UTF-8 spelling. */
static void test_latin1_fallback_hash(void **state)
{
    (void)state;
    uint8_t a[BR_NT_LEN], b[BR_NT_LEN];
    assert_int_equal(br_nt_hash("p\xE4ssw\xF6rd", 8, a), 0);
    assert_int_equal(br_nt_hash("p\xC3\xA4ssw\xC3\xB6rd", 10, b), 0);
    assert_memory_equal(a, b, BR_NT_LEN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_md4_rfc1320),
        cmocka_unit_test(test_nt_known),
        cmocka_unit_test(test_nt_long),
        cmocka_unit_test(test_utf16_rules),
        cmocka_unit_test(test_latin1_fallback_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
