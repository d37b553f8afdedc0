/* SPDX-License-Identifier: MIT */
/* The NTLM range kind (lib/range/range.h, BR_RANGE_PASSWORD_NTLM): HIBP's
 * ?mode=ntlm bodies of 27-hex suffixes parse into range sets of 14-byte
 * suffixes and 4-byte counts, padding and duplicates behave as for SHA-1,
 * a SHA-1 body is named as such, and the LMDB cache keeps NTLM ranges apart
 * from SHA-1 ranges of the same prefix. */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/hash.h"
#include "core/nthash.h"
#include "range/range.h"
#include "range/range_cache.h"
#include "testutil.h"

/* NT("password") = 8846F7EAEE8FB117AD06BDD830B7586C: prefix 8846F. */
#define NT_PW "8846F7EAEE8FB117AD06BDD830B7586C"
#define BODY                                                                                       \
    "0000000000000000000000000AA:3\r\n"                                                            \
    "7EAEE8FB117AD06BDD830B7586C:10437277\r\n"                                                     \
    "\xEF\xBB\xBF"                                                                                 \
    "fffffffffffffffffffffffffff:0\r\n"                                                            \
    "7eaee8fb117ad06bdd830b7586c:12\r\n"                                                           \
    "1234567890ABCDEF1234567890A:1"

static void parse_ok(const char *body, uint8_t **v, size_t *len)
{
    br_error err = {{0}};
    int rc = br_range_parse(BR_RANGE_PASSWORD_NTLM, body, strlen(body), 0, v, len, &err);
    if (rc != 0)
        fail_msg("parse: %d %s", rc, err.text);
}

static void test_sizes(void **state)
{
    (void)state;
    assert_int_equal(br_range_hash_len(BR_RANGE_PASSWORD_NTLM), BR_NT_LEN);
    assert_int_equal(br_range_suffix_hex(BR_RANGE_PASSWORD_NTLM), 27);
    assert_true(br_range_kind_counted(BR_RANGE_PASSWORD_NTLM));
    assert_true(br_range_kind_counted(BR_RANGE_PASSWORD_SHA1));
    assert_false(br_range_kind_counted(BR_RANGE_URL_SHA256));
}

static void test_parse_lookup(void **state)
{
    (void)state;
    uint8_t *v = NULL;
    size_t len = 0;
    parse_ok(BODY, &v, &len);
    uint32_t n = 0;
    assert_int_equal(br_range_validate(BR_RANGE_PASSWORD_NTLM, v, len, &n), 0);
    assert_int_equal(n, 3); /* padding dropped, the duplicate merged */
    assert_int_equal(v[4], BR_RANGE_PASSWORD_NTLM);
    assert_int_equal(v[5], 14);
    assert_int_equal(v[6], 4);
    assert_int_equal(len, BR_RANGE_HEADER_SIZE + 3 * 18);

    uint8_t h[BR_NT_LEN];
    uint32_t count = 0;
    assert_true(br_hex_decode(NT_PW, BR_NT_LEN, h));
    assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_NTLM, v, len, h, &count, NULL), 1);
    assert_int_equal(count, 10437277); /* the larger of the two counts */
    assert_true(br_hex_decode("8846F1234567890ABCDEF1234567890A", BR_NT_LEN, h));
    assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_NTLM, v, len, h, &count, NULL), 1);
    assert_int_equal(count, 1);
    /* the padding line is not an entry */
    assert_true(br_hex_decode("8846FFFFFFFFFFFFFFFFFFFFFFFFFFFF", BR_NT_LEN, h));
    assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_NTLM, v, len, h, &count, NULL), 0);
    assert_true(br_hex_decode("8846F7EAEE8FB117AD06BDD830B7586D", BR_NT_LEN, h));
    assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_NTLM, v, len, h, &count, NULL), 0);
    /* a range set of one kind is not one of another */
    assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, h, &count, NULL), -EINVAL);
    assert_int_equal(br_range_validate(BR_RANGE_PASSWORD_SHA1, v, len, NULL), -EINVAL);
    free(v);
}

static void test_errors(void **state)
{
    (void)state;
    const struct {
        const char *body;
        int rc;
        const char *what;
    } bad[] = {
        {"", -ENODATA, "empty range response body"},
        {"\r\n", -ENODATA, "empty range response body"},
        {"1E4C9B93F3F0682250B6CF8331B7EE68FD8:3\r\n", -EBADMSG,
         "line 1: suffix longer than 27 hex digits: this is a SHA-1 range (kind password-sha1)"},
        {"7EAEE8FB117AD06BDD830B7586:3\r\n", -EBADMSG,
         "line 1: suffix too short (26 hex digits, want 27)"},
        {"7EAEE8FB117AD06BDD830B7586C:x\r\n", -EBADMSG,
         "line 1, column 29: count is not a decimal number"},
        {"7EAEE8FB117AD06BDD830B7586C:4294967296\r\n", -EBADMSG, "line 1: count over 4294967295"},
        {"7EAEE8FB117AD06BDD830B7586C:phishing\r\n", -EBADMSG,
         "line 1, column 29: count is not a decimal number"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        br_error err = {{0}};
        uint8_t *v = (uint8_t *)1;
        size_t len;
        int rc = br_range_parse(BR_RANGE_PASSWORD_NTLM, bad[i].body, strlen(bad[i].body), 0, &v,
                                &len, &err);
        if (rc != bad[i].rc || !strstr(err.text, bad[i].what))
            fail_msg("case %zu: rc %d \"%s\", want %d \"%s\"", i, rc, err.text, bad[i].rc,
                     bad[i].what);
        assert_null(v);
    }
    /* the other way round: an NTLM body read as SHA-1 */
    br_error err = {{0}};
    uint8_t *v;
    size_t len;
    assert_int_equal(br_range_parse(BR_RANGE_PASSWORD_SHA1, BODY, strlen(BODY), 0, &v, &len, &err),
                     -EBADMSG);
    assert_string_equal(err.text, "range response line 1: suffix too short (27 hex digits, want "
                                  "35): this is an NTLM range (kind password-ntlm)");
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* One prefix, both kinds: each lookup sees its own kind's range only. */
static void test_cache_apart(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/cache", dir);
    br_range_cache *c = NULL;
    br_error err = {{0}};
    assert_int_equal(br_range_cache_open(path, 1 << 20, &c, &err), 0);
    uint8_t *nv, *sv;
    size_t nlen, slen;
    parse_ok(BODY, &nv, &nlen);
    static const char sha1_body[] = "7EAEE8FB117AD06BDD830B7586C00000000:5\r\n";
    assert_int_equal(
        br_range_parse(BR_RANGE_PASSWORD_SHA1, sha1_body, strlen(sha1_body), 0, &sv, &slen, &err),
        0);
    assert_int_equal(
        br_range_cache_put(c, 7, BR_RANGE_PASSWORD_NTLM, 0x8846F, nv, nlen, 100, 1000, NULL, NULL),
        0);
    uint8_t nt[BR_NT_LEN], sha1[BR_SHA1_LEN];
    assert_true(br_hex_decode(NT_PW, BR_NT_LEN, nt));
    assert_true(br_hex_decode("8846F7EAEE8FB117AD06BDD830B7586C00000000", BR_SHA1_LEN, sha1));
    for (int flushed = 0; flushed < 2; flushed++) {
        br_range_cache_result r;
        assert_int_equal(br_range_cache_lookup(c, 7, BR_RANGE_PASSWORD_NTLM, nt, 200, 0, &r), 0);
        assert_int_equal(r.state, BR_RANGE_CACHE_FRESH);
        assert_true(r.found);
        assert_int_equal(r.count, 10437277);
        /* the SHA-1 kind of the same prefix has nothing yet */
        assert_int_equal(br_range_cache_lookup(c, 7, BR_RANGE_PASSWORD_SHA1, sha1, 200, 0, &r), 0);
        assert_int_equal(r.state, BR_RANGE_CACHE_MISS);
        /* nor another partition */
        assert_int_equal(br_range_cache_lookup(c, 8, BR_RANGE_PASSWORD_NTLM, nt, 200, 0, &r), 0);
        assert_int_equal(r.state, BR_RANGE_CACHE_MISS);
        assert_int_equal(br_range_cache_flush(c), 0);
    }
    assert_int_equal(
        br_range_cache_put(c, 7, BR_RANGE_PASSWORD_SHA1, 0x8846F, sv, slen, 100, 1000, NULL, NULL),
        0);
    br_range_cache_result r;
    assert_int_equal(br_range_cache_lookup(c, 7, BR_RANGE_PASSWORD_SHA1, sha1, 200, 0, &r), 0);
    assert_true(r.found);
    assert_int_equal(r.count, 5);
    assert_int_equal(br_range_cache_lookup(c, 7, BR_RANGE_PASSWORD_NTLM, nt, 200, 0, &r), 0);
    assert_int_equal(r.count, 10437277);
    /* a range set of the wrong kind is refused */
    assert_int_equal(
        br_range_cache_put(c, 7, BR_RANGE_PASSWORD_NTLM, 0x8846F, sv, slen, 100, 1000, NULL, NULL),
        -EINVAL);
    br_range_cache_free(c);
    free(nv);
    free(sv);
    assert_int_equal(nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
    free(path);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_parse_lookup),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_cache_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
