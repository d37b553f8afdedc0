/* SPDX-License-Identifier: MIT */
/* The SIMILAR verb's lines (protocol_similar.h): requests of 1 to 128
 * hashes formatted and parsed back, the longest under the line limit;
 * malformed arguments refused without echoing a hash; the answer parsed;
 * and the request line through br_request_parse. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proto/protocol.h"
#include "proto/protocol_similar.h"

static void fill(uint8_t *h, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        h[i] = (uint8_t)(seed * 131u + i * 7u + 1u);
}

static void round_trip(bool nt, size_t n)
{
    size_t hl = nt ? BR_NT_LEN : BR_SHA1_LEN;
    uint8_t hashes[BR_SIMILAR_PER_REQUEST * BR_SHA1_LEN];
    fill(hashes, n * hl, (unsigned)n);
    char line[BR_PROTO_MAX_LINE + 64];
    size_t len;
    assert_int_equal(
        br_similar_request_format(line, sizeof(line), 9999999999999999ull, nt, hashes, n, &len), 0);
    assert_true(len - 1 <= BR_PROTO_MAX_LINE);
    assert_int_equal(line[len - 1], '\n');
    br_request req;
    br_proto_error e;
    assert_true(br_request_parse(line, len - 1, &req, &e));
    assert_int_equal(req.verb, BR_VERB_SIMILAR);
    br_similar_request q;
    assert_true(br_similar_request_parse(req.arg, req.arg_len, &q, &e));
    assert_int_equal(q.nt, nt);
    assert_int_equal(q.n, n);
    for (size_t i = 0; i < n; i++)
        assert_memory_equal(q.hash[i], hashes + i * hl, hl);
}

static void test_round_trip(void **state)
{
    (void)state;
    for (size_t n = 1; n <= BR_SIMILAR_PER_REQUEST; n++) {
        round_trip(false, n);
        round_trip(true, n);
    }
    uint8_t h[BR_SHA1_LEN * (BR_SIMILAR_PER_REQUEST + 1)] = {0};
    char line[BR_PROTO_MAX_LINE + 64];
    size_t len;
    assert_int_equal(br_similar_request_format(line, sizeof(line), 1, false, h, 0, &len), -EINVAL);
    assert_int_equal(br_similar_request_format(line, sizeof(line), 1, false, h,
                                               BR_SIMILAR_PER_REQUEST + 1, &len),
                     -EINVAL);
    assert_int_equal(br_similar_request_format(line, 100, 1, false, h, 3, &len), -EINVAL);
}

#define H40 "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"
#define H32 "8846F7EAEE8FB117AD06BDD830B7586C"

static void test_bad(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "sha1",
        "sha1 ",
        "md5 " H40,
        "SHA1 " H40,
        "sha1 " H40 ",",
        "sha1 ," H40,
        "sha1 " H40 ";" H40,
        "sha1 " H40 ", " H40,
        "sha1 " H32,
        "nt " H40,
        "nt " H32 H32,
        "sha1 5BAA61E4C9B93F3F0682250B6CF8331B7EE68FDG",
        "sha1  " H40,
    };
    br_similar_request q;
    br_proto_error e;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (br_similar_request_parse(bad[i], strlen(bad[i]), &q, &e))
            fail_msg("accepted: %s", bad[i]);
        assert_int_equal(e.code, BR_PERR_BAD_REQUEST);
        assert_null(strstr(e.text, "5BAA"));
    }
    /* 129 hashes */
    char big[129 * 41 + 8];
    size_t o = (size_t)snprintf(big, sizeof(big), "sha1 ");
    for (int i = 0; i < 129; i++)
        o += (size_t)snprintf(big + o, sizeof(big) - o, "%s%s", i ? "," : "", H40);
    assert_false(br_similar_request_parse(big, o, &q, &e));
    assert_non_null(strstr(e.text, "128"));
    /* any case */
    assert_true(
        br_similar_request_parse("sha1 5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8", 45, &q, &e));
    /* the verb without an argument */
    br_request req;
    assert_false(br_request_parse("1 SIMILAR", 9, &req, &e));
    assert_int_equal(e.code, BR_PERR_BAD_REQUEST);
}

static void test_answer(void **state)
{
    (void)state;
    uint64_t c = 0;
    unsigned h = 0;
    assert_true(br_similar_answer_parse("SIMILAR 1234567 3", &c, &h));
    assert_int_equal(c, 1234567);
    assert_int_equal(h, 3);
    assert_false(br_similar_answer_parse("SIMILAR -1 3", &c, &h));
    assert_false(br_similar_answer_parse("SIMILAR 5 3 x", &c, &h));
    assert_false(br_similar_answer_parse("SIMILAR 5", &c, &h));
    assert_false(br_similar_answer_parse("CLEAN", &c, &h));
    assert_false(br_similar_answer_parse("SIMILARX 5 3", &c, &h));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bad),
        cmocka_unit_test(test_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
