/* SPDX-License-Identifier: MIT */
/* Protocol v1 line parsing: every verb, and a table of malformed requests
 * with their exact error codes and ids; answer lines. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/hash.h"
#include "proto/protocol.h"
#include "proto/protocol_terms.h"
#include "url/url_secret.h"

#define PW40 "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"

static void test_valid(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        const char *id;
        br_verb verb;
        const char *arg;
    } cases[] = {
        {"1 PING", "1", BR_VERB_PING, NULL},
        {"a.b_c-D PING\r", "a.b_c-D", BR_VERB_PING, NULL},
        {"0123456789abcdef VERSION", "0123456789abcdef", BR_VERB_VERSION, NULL},
        {"x PW " PW40, "x", BR_VERB_PW, PW40},
        {"x PW 5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8", "x", BR_VERB_PW,
         "5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8"},
        {"u URL http://example.com/a?b=c", "u", BR_VERB_URL, "http://example.com/a?b=c"},
        {"s STATS", "s", BR_VERB_STATS, NULL},
        {"r RELOAD\r", "r", BR_VERB_RELOAD, NULL},
        {"n NT 8846F7EAEE8FB117AD06BDD830B7586C", "n", BR_VERB_NT,
         "8846F7EAEE8FB117AD06BDD830B7586C"},
        {"n NT 8846f7eaee8fb117ad06bdd830b7586c\r", "n", BR_VERB_NT,
         "8846f7eaee8fb117ad06bdd830b7586c"},
        {"l LANE bulk", "l", BR_VERB_LANE, "bulk"},
        {"l LANE interactive\r", "l", BR_VERB_LANE, "interactive"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        br_request req;
        br_proto_error e;
        bool ok = br_request_parse(cases[i].line, strlen(cases[i].line), &req, &e);
        if (!ok)
            fail_msg("case %zu rejected: %s %s", i, br_proto_err_name(e.code), e.text);
        assert_string_equal(req.id, cases[i].id);
        assert_int_equal(req.verb, cases[i].verb);
        if (cases[i].arg) {
            assert_int_equal(req.arg_len, strlen(cases[i].arg));
            assert_memory_equal(req.arg, cases[i].arg, req.arg_len);
        } else {
            assert_null(req.arg);
        }
    }
    br_request req;
    br_proto_error e;
    assert_true(br_request_parse("x PW " PW40, 45, &req, &e));
    assert_int_equal(req.sha1[0], 0x5B);
    assert_int_equal(req.sha1[19], 0xD8);
    assert_true(br_request_parse("n NT 8846F7EAEE8FB117AD06BDD830B7586C", 37, &req, &e));
    assert_int_equal(req.nt[0], 0x88);
    assert_int_equal(req.nt[15], 0x6C);
    assert_true(br_request_parse("l LANE bulk", 11, &req, &e));
    assert_int_equal(req.lane, BR_LANE_BULK);
    assert_true(br_request_parse("l LANE interactive", 18, &req, &e));
    assert_int_equal(req.lane, BR_LANE_INTERACTIVE);
}

static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        br_proto_err code;
        const char *id;
    } cases[] = {
        {"", BR_PERR_BAD_REQUEST, "-"},
        {"\r", BR_PERR_BAD_REQUEST, "-"},
        {" PING", BR_PERR_BAD_ID, "-"},
        {"  PING", BR_PERR_BAD_ID, "-"},
        {"01234567890123456 PING", BR_PERR_BAD_ID, "-"},
        {"a/b PING", BR_PERR_BAD_ID, "-"},
        {"a:b PING", BR_PERR_BAD_ID, "-"},
        {"é PING", BR_PERR_BAD_ID, "-"},
        {"a\tb PING", BR_PERR_BAD_ID, "-"},
        {"1", BR_PERR_BAD_REQUEST, "1"},
        {"1 ", BR_PERR_BAD_REQUEST, "1"},
        {"1  PING", BR_PERR_BAD_REQUEST, "1"},
        {"1 ping", BR_PERR_UNKNOWN_VERB, "1"},
        {"1 Ping", BR_PERR_UNKNOWN_VERB, "1"},
        {"1 PINGX", BR_PERR_UNKNOWN_VERB, "1"},
        {"1 GET /", BR_PERR_UNKNOWN_VERB, "1"},
        {"1 HELP", BR_PERR_UNKNOWN_VERB, "1"},
        {"1 PING x", BR_PERR_BAD_REQUEST, "1"},
        {"1 PING ", BR_PERR_BAD_REQUEST, "1"},
        {"1 VERSION 2", BR_PERR_BAD_REQUEST, "1"},
        {"1 STATS all", BR_PERR_BAD_REQUEST, "1"},
        {"1 RELOAD now", BR_PERR_BAD_REQUEST, "1"},
        {"1 PW", BR_PERR_BAD_REQUEST, "1"},
        {"1 PW ", BR_PERR_BAD_REQUEST, "1"},
        {"1 PW  " PW40, BR_PERR_BAD_REQUEST, "1"},
        {"1 PW password", BR_PERR_BAD_REQUEST, "1"},
        {"1 PW 5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD", BR_PERR_BAD_REQUEST, "1"},
        {"1 PW 5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD80", BR_PERR_BAD_REQUEST, "1"},
        {"1 PW 5BAA61E4C9B93F3F0682250B6CF8331B7EE68FDG", BR_PERR_BAD_REQUEST, "1"},
        {"1 PW " PW40 " ", BR_PERR_BAD_REQUEST, "1"},
        {"1 PW " PW40 " extra", BR_PERR_BAD_REQUEST, "1"},
        {"1 PW 5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD\t", BR_PERR_BAD_REQUEST, "1"},
        {"1 URL", BR_PERR_BAD_REQUEST, "1"},
        {"1 URL ", BR_PERR_BAD_REQUEST, "1"},
        {"1 URL http://a b/", BR_PERR_BAD_REQUEST, "1"},
        {"1 URL  http://a/", BR_PERR_BAD_REQUEST, "1"},
        {"1 URL http://a/\x01", BR_PERR_BAD_REQUEST, "1"},
        {"1 URL http://a/\x7f", BR_PERR_BAD_REQUEST, "1"},
        {"1 PING\r\r", BR_PERR_BAD_REQUEST, "1"},
        {"1 PING\tx", BR_PERR_BAD_REQUEST, "1"},
        {"1 NT", BR_PERR_BAD_REQUEST, "1"},
        {"1 NT 5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8", BR_PERR_BAD_REQUEST, "1"}, /* a SHA-1 */
        {"1 NT 5BAA61E4C9B93F3F0682250B6CF8331", BR_PERR_BAD_REQUEST, "1"},
        {"1 NT 5BAA61E4C9B93F3F0682250B6CF8331G", BR_PERR_BAD_REQUEST, "1"},
        {"1 NT password", BR_PERR_BAD_REQUEST, "1"},
        {"1 nt 5BAA61E4C9B93F3F0682250B6CF83310", BR_PERR_UNKNOWN_VERB, "1"},
        {"1 PW 5BAA61E4C9B93F3F0682250B6CF83310", BR_PERR_BAD_REQUEST, "1"}, /* an NT hash */
        {"1 LANE", BR_PERR_BAD_REQUEST, "1"},
        {"1 LANE ", BR_PERR_BAD_REQUEST, "1"},
        {"1 LANE Bulk", BR_PERR_BAD_REQUEST, "1"},
        {"1 LANE bulk ", BR_PERR_BAD_REQUEST, "1"},
        {"1 LANE fast", BR_PERR_BAD_REQUEST, "1"},
        {"1 LANE  bulk", BR_PERR_BAD_REQUEST, "1"},
        {"1 lane bulk", BR_PERR_UNKNOWN_VERB, "1"},
        {"1 P\x01W " PW40, BR_PERR_BAD_REQUEST, "1"}, /* a control byte, not an unknown verb */
        {"1 PING\x7f", BR_PERR_BAD_REQUEST, "1"},
        {"0123456789abcdef. PING", BR_PERR_BAD_ID, "-"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        br_request req;
        br_proto_error e;
        if (br_request_parse(cases[i].line, strlen(cases[i].line), &req, &e))
            fail_msg("case %zu accepted", i);
        if (e.code != cases[i].code)
            fail_msg("case %zu: got %s, expected %s", i, br_proto_err_name(e.code),
                     br_proto_err_name(cases[i].code));
        assert_string_equal(req.id, cases[i].id);
        assert_non_null(e.text);
        /* No error text ever contains the argument. */
        assert_null(strstr(e.text, "5BAA61E4"));
        assert_null(strstr(e.text, "password"));
    }
    assert_true(sizeof(cases) / sizeof(cases[0]) >= 40);
}

/* The verb table (BR_VERBS): every row has a distinct name of capitals, a
 * verb that takes an argument has its two ERR texts (missing, malformed),
 * and ERR unknown-verb lists every verb, in the table's order. */
static void test_verb_table(void **state)
{
    (void)state;
    char want[256] = "verbs are";
    for (int v = 0; v < BR_VERB_COUNT_; v++) {
        const char *name = br_verb_name((br_verb)v);
        assert_true(name[0] != '\0' && strcmp(name, "?") != 0);
        for (const char *p = name; *p; p++)
            assert_true(*p >= 'A' && *p <= 'Z');
        for (int w = 0; w < v; w++)
            assert_string_not_equal(name, br_verb_name((br_verb)w));
        strcat(want, " ");
        strcat(want, name);

        char line[64];
        br_request req;
        br_proto_error e;
        br_verb_arg kind = br_verb_arg_kind((br_verb)v);
        assert_true(kind < BR_ARG_COUNT_);
        snprintf(line, sizeof(line), "i %s", name);
        bool ok = br_request_parse(line, strlen(line), &req, &e);
        if (kind == BR_ARG_NONE) {
            assert_true(ok);
            snprintf(line, sizeof(line), "i %s x", name);
            assert_false(br_request_parse(line, strlen(line), &req, &e));
            assert_string_equal(e.text, "this verb takes no argument");
            continue;
        }
        assert_false(ok); /* missing */
        assert_int_equal(e.code, BR_PERR_BAD_REQUEST);
        assert_non_null(e.text);
        assert_non_null(strstr(e.text, name));
        snprintf(line, sizeof(line), "i %s x y", name); /* malformed for every kind */
        assert_false(br_request_parse(line, strlen(line), &req, &e));
        assert_int_equal(e.code, BR_PERR_BAD_REQUEST);
        assert_non_null(e.text);
    }
    assert_int_equal(br_verb_arg_kind(BR_VERB_COUNT_), BR_ARG_NONE);
    assert_string_equal(br_verb_name(BR_VERB_COUNT_), "?");
    br_request req;
    br_proto_error e;
    assert_false(br_request_parse("i NOPE", 6, &req, &e));
    assert_int_equal(e.code, BR_PERR_UNKNOWN_VERB);
    assert_string_equal(e.text, want);
}

static void test_line_length(void **state)
{
    (void)state;
    static char line[BR_PROTO_MAX_LINE + 2];
    memset(line, 'a', sizeof(line));
    memcpy(line, "1 URL http://x/", 15);
    br_request req;
    br_proto_error e;
    assert_true(br_request_parse(line, BR_PROTO_MAX_LINE, &req, &e));
    assert_false(br_request_parse(line, BR_PROTO_MAX_LINE + 1, &req, &e));
    assert_int_equal(e.code, BR_PERR_LINE_TOO_LONG);
    line[BR_PROTO_MAX_LINE] = '\r';
    assert_true(br_request_parse(line, BR_PROTO_MAX_LINE + 1, &req, &e));
}

/* Every byte value at every place of an argument, in the word-at-a-time
 * part and the tail of the control-byte test: refused exactly when it is a
 * control byte (below 0x20, or 0x7f); a space is the URL rule's, any other
 * byte (UTF-8 included) passes. (The last byte stays: a final CR is
 * dropped before the test.) */
static void test_control_bytes(void **state)
{
    (void)state;
    char line[64];
    br_request req;
    br_proto_error e;
    for (size_t at = 0; at < 21; at++) {
        for (int b = 0; b < 256; b++) {
            memcpy(line, "1 URL ", 6);
            memset(line + 6, 'h', 22);
            line[6 + at] = (char)b;
            bool control = b < 0x20 || b == 0x7f;
            bool ok = br_request_parse(line, 6 + 22, &req, &e);
            assert_int_equal(ok, !control && b != ' ');
            if (control)
                assert_string_equal(e.text, "control character in the request");
        }
    }
    /* The same in a PW line, verb and hash: its rules admit no control
     * byte, and one is still named before anything else is said. */
    for (size_t at = 2; at < 45; at++) {
        for (int b = 0; b < 256; b++) {
            memcpy(line, "1 PW " PW40, 45);
            char was = line[at];
            line[at] = (char)b;
            bool ok = br_request_parse(line, 45, &req, &e);
            if ((b < 0x20 || b == 0x7f) && !(at == 44 && b == '\r')) /* a final CR is dropped */
                assert_string_equal(e.text, "control character in the request");
            if (ok)
                assert_true(b == was || (at >= 5 && br_hexval((unsigned char)b) >= 0));
        }
    }
}

static void test_secret_class(void **state)
{
    (void)state;
    static const char *secret[] = {
        "mailto:alice@example.com", "MAILTO:bob@example.org",    "mailto:",
        "alice@example.com",        "a.b+tag@sub.example.co.uk", "alice@example.com/",
        "x@y.z?subject=hi",         "alice@localhost", /* a single-label domain is an address too */
    };
    static const char *not_secret[] = {
        "http://example.com/",
        "http://user@example.com/",
        "https://a.b/c@d.e",
        "example.com/@x.y",
        "@example.com",
        "ftp://x@y.z/",
        "alice@",
        "http://example.com/mailto:x@y.z",
    };
    for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
        if (!br_url_is_email(secret[i], strlen(secret[i])))
            fail_msg("not refused: %s", secret[i]);
    for (size_t i = 0; i < sizeof(not_secret) / sizeof(not_secret[0]); i++)
        if (br_url_is_email(not_secret[i], strlen(not_secret[i])))
            fail_msg("refused: %s", not_secret[i]);
}

static void test_format_error(void **state)
{
    (void)state;
    char buf[64];
    size_t n = br_format_error(buf, sizeof(buf), "7", BR_PERR_BUSY, "too many requests");
    assert_int_equal(n, strlen("7 ERR busy too many requests\n"));
    assert_memory_equal(buf, "7 ERR busy too many requests\n", n);
    char small[16];
    n = br_format_error(small, sizeof(small), "7", BR_PERR_BUSY, "too many requests in flight");
    assert_int_equal(n, sizeof(small) - 1);
    assert_int_equal(small[n - 1], '\n');
}

/* Answer lines, the clients' side: every status, the fields of each, and
 * lines without an id. */
static void test_answers(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        const char *id;
        br_answer_kind kind;
        uint64_t count;
        const char *category, *detail;
    } cases[] = {
        {"7 CLEAN", "7", BR_ANSWER_CLEAN, 0, "", ""},
        {"7 PWNED 3861493\r", "7", BR_ANSWER_PWNED, 3861493, "", ""},
        {"u SAFE", "u", BR_ANSWER_SAFE, 0, "", ""},
        {"u BLOCKED phishing evil.test/login", "u", BR_ANSWER_BLOCKED, 0, "phishing",
         "evil.test/login"},
        {"u BLOCKED malware", "u", BR_ANSWER_BLOCKED, 0, "malware", ""},
        {"9 UNKNOWN upstream-error", "9", BR_ANSWER_UNKNOWN, 0, "", "upstream-error"},
        {"- ERR busy too many requests", "-", BR_ANSWER_ERROR, 0, "", "busy too many requests"},
        {"p PONG", "p", BR_ANSWER_OTHER, 0, "", "PONG"},
        {"s STATS a=1 b=2", "s", BR_ANSWER_OTHER, 0, "", "STATS a=1 b=2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char id[BR_PROTO_MAX_ID + 1];
        br_answer a;
        assert_int_equal(br_answer_parse_line(cases[i].line, strlen(cases[i].line), id, &a), 0);
        assert_string_equal(id, cases[i].id);
        assert_int_equal(a.kind, cases[i].kind);
        assert_int_equal(a.count, cases[i].count);
        assert_string_equal(a.category, cases[i].category);
        assert_string_equal(a.detail, cases[i].detail);
    }
    char id[BR_PROTO_MAX_ID + 1];
    br_answer a;
    assert_int_equal(br_answer_parse_line("CLEAN", 5, id, &a), -EINVAL);
    assert_int_equal(br_answer_parse_line(" CLEAN", 6, id, &a), -EINVAL);
    assert_int_equal(br_answer_parse_line("0123456789abcdefX CLEAN", 23, id, &a), -EINVAL);
    /* A line need not be NUL-terminated: only len bytes are read. */
    assert_int_equal(br_answer_parse_line("1 PWNED 12345", 10, id, &a), 0);
    assert_int_equal(a.count, 12);
    assert_string_equal(br_answer_kind_name(BR_ANSWER_PWNED), "PWNED");
}

struct terms_seen {
    char text[4][64];
    char kind[4];
    int n;
};

static int take_term(void *ctx, char kind, const char *term, size_t len)
{
    struct terms_seen *t = ctx;
    assert_true(t->n < 4 && len < 64);
    memcpy(t->text[t->n], term, len);
    t->text[t->n][len] = '\0';
    t->kind[t->n++] = kind;
    return 0;
}

/* BANNED: its argument, and the TERMS answer written and read back. */
static void test_banned_terms(void **state)
{
    (void)state;
    br_request req;
    br_proto_error e;
    static const char good[] = "a BANNED 12345";
    assert_true(br_request_parse(good, strlen(good), &req, &e));
    assert_int_equal(req.index, 12345);
    static const char *const bad[] = {"a BANNED", "a BANNED 123456", "a BANNED x", "a BANNED -1",
                                      "a BANNED 1 2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(br_request_parse(bad[i], strlen(bad[i]), &req, &e));
    char items[BR_TERMS_PAGE_BYTES + 1] = "", line[BR_TERMS_PAGE_BYTES + 64];
    size_t len = 0;
    assert_true(br_terms_item_format(items, sizeof(items), &len, 's', "contoso"));
    assert_true(br_terms_item_format(items, sizeof(items), &len, 'b', "a,b%c d\xc3\xbc"));
    assert_string_equal(items, "scontoso,ba%2Cb%25c%20d%C3%BC");
    snprintf(line, sizeof(line), "TERMS 7 5 9 2 %s", items);
    struct terms_seen t = {0};
    br_terms_page page;
    assert_int_equal(br_terms_answer_parse(line, &page, take_term, &t), 0);
    assert_int_equal(page.generation, 7);
    assert_int_equal(page.min_score, 5);
    assert_int_equal(page.total, 9);
    assert_int_equal(page.next, 2);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.text[1], "a,b%c d\xc3\xbc");
    assert_int_equal(t.kind[0], 's');
    assert_int_equal(br_terms_answer_parse("TERMS 0 5 0 0", &page, take_term, &t), 0);
    static const char *const broken[] = {
        "TERMS 1 5 3 4", "TERMS 1 5 3 1 xabc", "TERMS 1 5 3 1 babc,", "TERMS 1 5 3 1 ba%4",
        "PONG",          "TERMS 1 5 3 1  babc"};
    for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++)
        assert_int_equal(br_terms_answer_parse(broken[i], &page, NULL, NULL), -EPROTO);
    /* a page never takes the items past BR_TERMS_PAGE_BYTES */
    char big[70];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    len = 0;
    items[0] = '\0';
    int n = 0;
    while (br_terms_item_format(items, sizeof(items), &len, 'b', big))
        n++;
    assert_true(len <= BR_TERMS_PAGE_BYTES && n == BR_TERMS_PAGE_BYTES / 71);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_line_length),  cmocka_unit_test(test_secret_class),
        cmocka_unit_test(test_format_error), cmocka_unit_test(test_answers),
        cmocka_unit_test(test_verb_table),   cmocka_unit_test(test_control_bytes),
        cmocka_unit_test(test_banned_terms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
