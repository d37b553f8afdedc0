/* SPDX-License-Identifier: MIT */
/* Banned terms (lib/banned/): the examples of docs/banned.md refused
 * (Contoso2024!, J0hnSmith1, Winter2025 and the look-alike spellings),
 * strong passwords accepted, the score as Entra counts it, Unicode
 * (NFKC, case folding, marks, other scripts' look-alikes), the user's
 * names split into parts, and the terms file's bad lines named
 * FILE:LINE while the rest loads. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "banned/banned.h"
#include "banned/banned_int.h"

static br_banned *site_list(void)
{
    br_banned *b = br_banned_new();
    assert_non_null(b);
    assert_int_equal(br_banned_add(b, BR_BANNED_SITE, "Contoso", 7, NULL), 0);
    assert_int_equal(br_banned_add(b, BR_BANNED_TERM, "winter", 6, NULL), 0);
    assert_int_equal(br_banned_add(b, BR_BANNED_TERM, "summer", 6, NULL), 0);
    assert_int_equal(br_banned_add(b, BR_BANNED_TERM, "password", 8, NULL), 0);
    assert_int_equal(br_banned_add(b, BR_BANNED_TERM, "IBM", 3, NULL), 0);
    return b;
}

static br_banned *user_list(const char *account, const char *full)
{
    br_banned *u = br_banned_new();
    assert_non_null(u);
    assert_true(br_banned_add_name(u, account, strlen(account)) >= 0);
    assert_true(br_banned_add_name(u, full, strlen(full)) >= 0);
    return u;
}

static br_banned_result check(const br_banned *site, const br_banned *user, const char *pw)
{
    const br_banned *lists[] = {site, user};
    br_banned_result r;
    assert_int_equal(br_banned_check(lists, 2, pw, strlen(pw), 0, &r), 0);
    return r;
}

static void refused(const br_banned *site, const br_banned *user, const char *pw, unsigned kind)
{
    br_banned_result r = check(site, user, pw);
    if (!r.refused || !(r.kinds & (1u << kind)))
        fail_msg("%s: refused %d score %d terms %u kinds %#x", pw, r.refused, r.score, r.terms,
                 r.kinds);
}

static void accepted(const br_banned *site, const br_banned *user, const char *pw)
{
    br_banned_result r = check(site, user, pw);
    if (r.refused)
        fail_msg("%s: refused, score %d terms %u", pw, r.score, r.terms);
}

static void test_issue_examples(void **state)
{
    (void)state;
    br_banned *site = site_list(), *user = user_list("jsmith", "John Smith,,,");
    refused(site, NULL, "Contoso2024!", BR_BANNED_SITE);
    refused(site, user, "J0hnSmith1", BR_BANNED_USER);
    refused(site, NULL, "Winter2025", BR_BANNED_TERM);
    br_banned_result r = check(site, NULL, "Contoso2024!");
    assert_int_equal(r.terms, 1);
    assert_int_equal(r.score, 2); /* contoso + the trailing run "2024!" */
    br_banned_free(site);
    br_banned_free(user);
}

static void test_lookalikes(void **state)
{
    (void)state;
    br_banned *site = site_list();
    static const char *const pws[] = {
        "C0nt0s0!",   "c0n7o$o2023", "(ontoso99",    "$ummer2024", "5umm3r!!",       "W1nt3r#1",
        "w!nter2025", "P@ssw0rd",    "p4$$w0rd1",    "Pa§§word",   "Summ€r2024",     "Wint3r",
        "!!Winter!!", "2024winter",  "winterwinter", "WINTER2025", "Wintre2025",     "Wniter1",
        "Winte2025",  "Wintxr2025",  "IBM2024!",     "Ibm!2024",   "Contosoqwerty1", "Contosoaaaa1",
    };
    for (size_t i = 0; i < sizeof(pws) / sizeof(pws[0]); i++) {
        br_banned_result r = check(site, NULL, pws[i]);
        if (!r.refused)
            fail_msg("%s: accepted, score %d terms %u", pws[i], r.score, r.terms);
    }
    br_banned_free(site);
}

static void test_strong_accepted(void **state)
{
    (void)state;
    br_banned *site = site_list(), *user = user_list("jsmith", "John Smith");
    static const char *const pws[] = {
        "correct horse battery staple",
        "Tr0ub4dor&3xQ",
        "k9#Lm2$vQ8!z",
        "Winter2025!Blue?Fox",
        "ContosoIsAGreatPlaceToWork",
        "zq8!Xv#3Lp0w",
        "Ibmtastic",
        "hibmal",
        "",
        "12345678",
        "qwertyuiop",
    };
    for (size_t i = 0; i < sizeof(pws) / sizeof(pws[0]); i++)
        accepted(site, user, pws[i]);
    br_banned_free(site);
    br_banned_free(user);
}

/* Entra's count: 1 point per term, 1 per other character. */
static void test_score(void **state)
{
    (void)state;
    br_banned *site = site_list();
    br_banned_result r = check(site, NULL, "ContosoAbX");
    assert_int_equal(r.terms, 1);
    assert_int_equal(r.score, 4); /* contoso, a, b, x */
    assert_true(r.refused);
    r = check(site, NULL, "ContosoAbXy");
    assert_int_equal(r.score, 5);
    assert_false(r.refused);
    const br_banned *l[] = {site};
    assert_int_equal(br_banned_check(l, 1, "ContosoAbXy", 11, 6, &r), 0);
    assert_true(r.refused);
    r = check(site, NULL, "WinterSummer"); /* two terms: 2 points */
    assert_int_equal(r.terms, 2);
    assert_int_equal(r.score, 2);
    br_banned_free(site);
}

/* The table of docs/banned.md, "Score". */
static void test_doc_table(void **state)
{
    (void)state;
    br_banned *site = site_list(), *user = user_list("jsmith", "John Smith");
    static const struct {
        const char *pw;
        int score;
        unsigned terms;
    } rows[] = {
        {"Contoso2024!", 2, 1},
        {"J0hnSmith1", 2, 1},
        {"Winter2025", 2, 1},
        {"P@ssw0rd1", 2, 1},
        {"Wintre2025", 2, 1},
        {"Contosoqwerty1", 3, 1},
        {"ContosoAbXy", 5, 1},
        {"Winter2025!Blue?Fox", 14, 1},
        {"correct horse battery staple", 28, 0},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        br_banned_result r = check(site, user, rows[i].pw);
        if (r.score != rows[i].score || r.terms != rows[i].terms)
            fail_msg("%s: score %d terms %u", rows[i].pw, r.score, r.terms);
    }
    br_banned_free(site);
    br_banned_free(user);
}

static void test_unicode(void **state)
{
    (void)state;
    br_banned *b = br_banned_new();
    assert_int_equal(br_banned_add(b, BR_BANNED_SITE, "Zürich", strlen("Zürich"), NULL), 0);
    assert_int_equal(br_banned_add(b, BR_BANNED_TERM, "Москва", strlen("Москва"), NULL), 0);
    /* the same term again, in another case and composition: a duplicate */
    assert_int_equal(br_banned_add(b, BR_BANNED_SITE, "ZU\xcc\x88RICH", 8, NULL), 1);
    static const char *const pws[] = {
        "zurich2024",                    /* the mark dropped */
        "ZÜRICH!!",                      /* case folded */
        "\xef\xbc\xba\xef\xbd\x95rich1", /* fullwidth Z u: NFKC */
        "МОСКВА2024",                    /* Cyrillic, case folded */
        "Zur\xd1\x96"
        "ch99", /* Cyrillic і for i */
    };
    for (size_t i = 0; i < sizeof(pws) / sizeof(pws[0]); i++) {
        const br_banned *l[] = {b};
        br_banned_result r;
        assert_int_equal(br_banned_check(l, 1, pws[i], strlen(pws[i]), 0, &r), 0);
        if (!r.refused)
            fail_msg("%s: accepted, score %d", pws[i], r.score);
    }
    br_banned_free(b);
}

static void test_names(void **state)
{
    (void)state;
    br_banned *u = user_list("j.smith", "Jöhn Q. Smith-Jones,Room 12,,");
    br_banned_kind kind;
    bool john = false, jones = false, q = false;
    for (size_t i = 0; i < br_banned_count(u); i++) {
        const char *t = br_banned_term(u, i, &kind);
        assert_int_equal(kind, BR_BANNED_USER);
        john |= strcmp(t, "john") == 0;
        jones |= strcmp(t, "jones") == 0;
        q |= strcmp(t, "q") == 0;
    }
    assert_true(john);
    assert_true(jones);
    assert_false(q);
    refused(NULL, u, "Jones1990!", BR_BANNED_USER);
    refused(NULL, u, "jsmith2024", BR_BANNED_USER);
    accepted(NULL, u, "Tr0ub4dor&3xQ");
    assert_string_equal(br_banned_kinds_text(1u << BR_BANNED_USER | 1u << BR_BANNED_SITE),
                        "the user's own name");
    br_banned_free(u);
}

static void test_add_errors(void **state)
{
    (void)state;
    br_banned *b = br_banned_new();
    br_error e = {{0}};
    assert_int_equal(br_banned_add(b, BR_BANNED_TERM, "ab", 2, &e), -EINVAL);
    assert_non_null(strstr(e.text, "too short"));
    assert_int_equal(br_banned_add(b, BR_BANNED_TERM,
                                   "ab\xff"
                                   "cd",
                                   5, &e),
                     -EINVAL);
    assert_non_null(strstr(e.text, "invalid UTF-8 at byte 2"));
    char big[100];
    memset(big, 'a', sizeof(big));
    assert_int_equal(br_banned_add(b, BR_BANNED_TERM, big, sizeof(big), &e), -EINVAL);
    assert_non_null(strstr(e.text, "too long"));
    assert_null(strstr(e.text, "aaaa")); /* never the term */
    char t[16];
    for (int i = 0; i < BR_BANNED_MAX_TERMS; i++) {
        int n = snprintf(t, sizeof(t), "term%d", i);
        assert_int_equal(br_banned_add(b, BR_BANNED_TERM, t, (size_t)n, NULL), 0);
    }
    assert_int_equal(br_banned_add(b, BR_BANNED_TERM, "onemore", 7, &e), -ENOSPC);
    assert_int_equal(br_banned_count(b), BR_BANNED_MAX_TERMS);
    br_banned_free(b);
}

struct bad_lines {
    char text[8][600];
    int n;
};

static void on_bad(void *ctx, const char *message)
{
    struct bad_lines *b = ctx;
    assert_true(b->n < 8);
    snprintf(b->text[b->n++], sizeof(b->text[0]), "%s", message);
}

static void test_file(void **state)
{
    (void)state;
    char path[] = "/tmp/test_banned_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char body[] =
        "# the organisation\n"
        "contoso\n"
        "  fabrikam  \r\n"
        "\n"
        "bad\xc3(utf8\n"
        "ab\n"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
        "\t# indented comment\n"
        "northwind";
    assert_int_equal(write(fd, body, sizeof(body) - 1), (ssize_t)sizeof(body) - 1);
    close(fd);
    br_banned *b = br_banned_new();
    struct bad_lines bad = {0};
    br_error e = {{0}};
    assert_int_equal(br_banned_load(b, BR_BANNED_TERM, path, on_bad, &bad, &e), 3);
    assert_int_equal(bad.n, 4);
    char want[4][80];
    snprintf(want[0], sizeof(want[0]), "%s:4: empty line", path);
    snprintf(want[1], sizeof(want[1]), "%s:5: invalid UTF-8 at byte 3", path);
    snprintf(want[2], sizeof(want[2]), "%s:6: too short", path);
    snprintf(want[3], sizeof(want[3]), "%s:7: too long", path);
    for (int i = 0; i < 4; i++)
        if (strncmp(bad.text[i], want[i], strlen(want[i])) != 0)
            fail_msg("line %d: %s", i, bad.text[i]);
    assert_string_equal(br_banned_term(b, 1, NULL), "fabrikam");
    unlink(path);
    assert_true(br_banned_load(b, BR_BANNED_TERM, path, on_bad, &bad, &e) < 0);
    assert_non_null(strstr(e.text, path));
    br_banned_free(b);
}

/* Any bytes, any length: no crash, and the walk and repeat rule. */
static void test_odd_input(void **state)
{
    (void)state;
    br_banned *site = site_list();
    char big[5000];
    memset(big, 'x', sizeof(big));
    memcpy(big, "contoso", 7);
    br_banned_result r = check(site, NULL, "");
    assert_false(r.refused);
    const br_banned *l[] = {site};
    assert_int_equal(br_banned_check(l, 1, big, sizeof(big), 0, &r), 0);
    assert_true(r.refused); /* contoso and one repeat: 2 points */
    assert_int_equal(br_banned_check(l, 1, "cont\0oso\xff\xfe", 10, 0, &r), 0);
    uint32_t p[] = {'q', 'w', 'e', 'r', 't', 'y', '1', '2', '3', 'x'};
    assert_int_equal(br_banned_run_end(p, 10, 0), 6);
    assert_int_equal(br_banned_run_end(p, 10, 6), 9);
    assert_int_equal(br_banned_run_end(p, 10, 7), 7);
    br_banned_free(site);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue_examples),
        cmocka_unit_test(test_lookalikes),
        cmocka_unit_test(test_strong_accepted),
        cmocka_unit_test(test_score),
        cmocka_unit_test(test_doc_table),
        cmocka_unit_test(test_unicode),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_add_errors),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_odd_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
