/* SPDX-License-Identifier: MIT */
/* Tests of the blocklist format parsers (lib/url/url_feed_formats.c,
 * url_feed_csv.c, url_feed_json.c) line by line: what each line is (comment,
 * skipped rule by kind, entries, bad with its reason), CSV records across
 * lines, detection; and whole feeds through br_feedset_read (read_feed_path). The end-to-end
 * fixtures of every format are in tests/integration/feedfx.py. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "url/url_feed.h"
#include "url/url_feed_formats.h"
#include "url_helpers.h"
#include "core/util.h"

typedef struct line_case {
    br_feed_format format;
    const char *line;
    br_fmt_kind kind;
    int skip;         /* BR_FMT_SKIP: the kind */
    const char *want; /* ENTRIES: the entries joined by ' '; BAD: part of the reason */
} line_case;

static const line_case cases[] = {
    {BR_FEED_ADBLOCK, "! comment", BR_FMT_COMMENT, 0, NULL},
    {BR_FEED_ADBLOCK, "[Adblock Plus 2.0]", BR_FMT_COMMENT, 0, NULL},
    {BR_FEED_ADBLOCK, "  ||Ex.COM^  ", BR_FMT_ENTRIES, 0, "Ex.COM"},
    {BR_FEED_ADBLOCK, "||ex.com", BR_FMT_ENTRIES, 0, "ex.com"},
    {BR_FEED_ADBLOCK, "||ex.com^|", BR_FMT_ENTRIES, 0, "ex.com"},
    {BR_FEED_ADBLOCK, "@@||ex.com^", BR_FMT_SKIP, BR_FEED_SKIP_EXCEPTION, NULL},
    {BR_FEED_ADBLOCK, "||ex.com^$important", BR_FMT_SKIP, BR_FEED_SKIP_OPTIONS, NULL},
    {BR_FEED_ADBLOCK, "||ex.com/ads/", BR_FMT_SKIP, BR_FEED_SKIP_PATH, NULL},
    {BR_FEED_ADBLOCK, "||ex.com^foo", BR_FMT_SKIP, BR_FEED_SKIP_PATH, NULL},
    {BR_FEED_ADBLOCK, "||a*.ex.com^", BR_FMT_SKIP, BR_FEED_SKIP_RULE, NULL},
    {BR_FEED_ADBLOCK, "ex.com##.ad", BR_FMT_SKIP, BR_FEED_SKIP_RULE, NULL},
    {BR_FEED_ADBLOCK, "##.ad", BR_FMT_SKIP, BR_FEED_SKIP_RULE, NULL},
    {BR_FEED_ADBLOCK, "|http://ex.com/|", BR_FMT_SKIP, BR_FEED_SKIP_RULE, NULL},
    {BR_FEED_ADBLOCK, "||^", BR_FMT_BAD, 0, "no domain after '||'"},
    {BR_FEED_DNSMASQ, "address=/a.ex/b.ex/0.0.0.0", BR_FMT_ENTRIES, 0, "a.ex b.ex"},
    {BR_FEED_DNSMASQ, "address=/a.ex/#", BR_FMT_ENTRIES, 0, "a.ex"},
    {BR_FEED_DNSMASQ, "server=/a.ex/", BR_FMT_ENTRIES, 0, "a.ex"},
    {BR_FEED_DNSMASQ, "server=/a.ex/192.0.2.1#5353", BR_FMT_SKIP, BR_FEED_SKIP_ALLOW, NULL},
    {BR_FEED_DNSMASQ, "server=192.0.2.1", BR_FMT_SKIP, BR_FEED_SKIP_OTHER, NULL},
    {BR_FEED_DNSMASQ, "no-resolv", BR_FMT_SKIP, BR_FEED_SKIP_OTHER, NULL},
    {BR_FEED_DNSMASQ, "address=/#/0.0.0.0", BR_FMT_BAD, 0, "every domain"},
    {BR_FEED_DNSMASQ, "address=/a.ex//b.ex/", BR_FMT_BAD, 0, "an empty domain"},
    {BR_FEED_DNSMASQ, "address=/a.ex", BR_FMT_BAD, 0, "no closing '/'"},
    {BR_FEED_DNSMASQ, "Address=/a.ex/", BR_FMT_BAD, 0, "not a dnsmasq option"},
    {BR_FEED_UNBOUND, "server:", BR_FMT_COMMENT, 0, NULL},
    {BR_FEED_UNBOUND, "local-zone: ex.com. refuse", BR_FMT_ENTRIES, 0, "ex.com"},
    {BR_FEED_UNBOUND, "local-zone: \"ex.com\" always_null # x", BR_FMT_ENTRIES, 0, "ex.com"},
    {BR_FEED_UNBOUND, "local-data: \"ex.com. IN A 0.0.0.0\"", BR_FMT_ENTRIES, 0, "ex.com"},
    {BR_FEED_UNBOUND, "local-zone: \"ex.com\" typetransparent", BR_FMT_SKIP, BR_FEED_SKIP_ALLOW,
     NULL},
    {BR_FEED_UNBOUND, "local-zone: \"ex.com\"", BR_FMT_BAD, 0, "needs a name and a type"},
    {BR_FEED_UNBOUND, "local-data: ex.com A 0.0.0.0", BR_FMT_BAD, 0, "quoted record"},
    {BR_FEED_UNBOUND, "local zone ex.com", BR_FMT_BAD, 0, "not an unbound option"},
    {BR_FEED_UNBOUND, "local-zone: \"ex.com\" nxdomainn", BR_FMT_BAD, 0, "type 'nxdomainn'"},
    /* A token quoted in a reason is never one that holds or could make an
     * e-mail address (docs/privacy.md): found by fuzz_feed. */
    {BR_FEED_UNBOUND, "local-zone: \"ex.com\" victim@mail.test", BR_FMT_BAD, 0,
     "type '(not shown: it may hold an e-mail address)'"},
    {BR_FEED_UNBOUND, "local-zone: \"ex.com\" nxdmailto:", BR_FMT_BAD, 0, "(not shown"},
    {BR_FEED_UNBOUND, "local-zone: \"ex.com\" x%40y.test", BR_FMT_BAD, 0, "(not shown"},
    {BR_FEED_RPZ, "$victim@mail.test x", BR_FMT_BAD, 0,
     "(not shown: it may hold an e-mail address) is not supported"},
};

static void join_entries(const br_fmt_result *res, char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < res->n; i++)
        len += (size_t)snprintf(out + len, size - len, "%s%.*s", i ? " " : "", (int)res->e[i].n,
                                res->e[i].s);
}

static void test_lines(void **state)
{
    (void)state;
    for (size_t i = 0; i < BR_ARRAY_SIZE(cases); i++) {
        const line_case *c = &cases[i];
        br_fmt_state *st = NULL;
        assert_int_equal(br_fmt_state_new(c->format, NULL, &st, NULL), 0);
        br_fmt_result res;
        assert_int_equal(br_fmt_line(st, c->line, strlen(c->line), 7, &res), 0);
        char got[256];
        join_entries(&res, got, sizeof(got));
        bool ok = res.kind == c->kind;
        if (ok && c->kind == BR_FMT_SKIP)
            ok = (int)res.skip == c->skip;
        if (ok && c->kind == BR_FMT_ENTRIES)
            ok = strcmp(got, c->want) == 0 && res.rule == BR_FEED_DOMAINS;
        if (ok && c->kind == BR_FMT_BAD)
            ok = strstr(res.reason, c->want) != NULL && res.line == 7;
        if (!ok)
            fail_msg("case %zu '%s': kind %d skip %d entries '%s' reason '%s'", i, c->line,
                     res.kind, res.skip, got, res.reason);
        br_fmt_state_free(st);
    }
}

/* Feed lines to one parser; a summary "K:what" per line, ';'-separated. */
static void run_lines(br_feed_format f, const char *column, const char *const *lines, size_t n,
                      char *out, size_t size)
{
    br_fmt_state *st = NULL;
    assert_int_equal(br_fmt_state_new(f, column, &st, NULL), 0);
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i <= n; i++) {
        br_fmt_result res;
        if (i < n)
            assert_int_equal(br_fmt_line(st, lines[i], strlen(lines[i]), i + 1, &res), 0);
        else
            br_fmt_finish(st, &res);
        char what[256] = "";
        if (res.kind == BR_FMT_ENTRIES)
            join_entries(&res, what, sizeof(what));
        else if (res.kind == BR_FMT_BAD)
            snprintf(what, sizeof(what), "%llu %s", (unsigned long long)res.line, res.reason);
        else if (res.kind == BR_FMT_SKIP)
            snprintf(what, sizeof(what), "%d", res.skip);
        static const char kinds[] = "CSEBP";
        len +=
            (size_t)snprintf(out + len, size - len, "%s%c:%s", i ? ";" : "", kinds[res.kind], what);
    }
    br_fmt_state_free(st);
}

static void test_rpz(void **state)
{
    (void)state;
    static const char *const zone[] = {
        "$TTL 1h",
        "$ORIGIN Policy.Example.",
        "@ 3600 IN SOA ns. admin. ( 1 ; serial",
        " 2 3 4 5 )",
        " NS ns.",
        "a.ex CNAME .",
        "B.EX.policy.example. 60 CNAME *.",
        "*.c.ex IN CNAME rpz-drop.",
        "d.ex CNAME rpz-passthru.",
        "  A 192.0.2.1 ; the owner of the line before",
        "other.zone. CNAME .",
        "policy.example. CNAME .",
        "24.0.2.0.192.rpz-ip CNAME .",
        "ns.ex.rpz-nsdname CNAME .",
        "e.ex TXT \"a ; b\"",
        "f.ex 300 IN",
        "$INCLUDE other.zone",
    };
    char got[2048];
    run_lines(BR_FEED_RPZ, NULL, zone, BR_ARRAY_SIZE(zone), got, sizeof(got));
    assert_string_equal(got, "C:;C:;S:5;C:;S:5;E:a.ex;E:b.ex;E:c.ex;S:4;E:d.ex;E:other.zone;S:5;"
                             "S:6;S:6;S:5;B:16 no record type;"
                             "B:17 $INCLUDE is not supported (only $ORIGIN and $TTL);P:");
}

static void test_csv(void **state)
{
    (void)state;
    /* a quoted field over three lines, doubled quotes, an empty record */
    static const char *const phishtank[] = {
        "phish_id,URL,target",
        "1,\"http://a.ex/x,y\",\"T \"\"1\"\"\"",
        "2,http://b.ex/,\"line one",
        "line two",
        "line three\"",
        "",
        "# not a record",
        "3,\"http://c.ex/\"x,z",
        "4",
        "5,\"unclosed",
    };
    char got[2048];
    run_lines(BR_FEED_PHISHTANK, NULL, phishtank, BR_ARRAY_SIZE(phishtank), got, sizeof(got));
    assert_string_equal(got, "C:;E:http://a.ex/x,y;P:;P:;E:http://b.ex/;C:;C:;"
                             "B:8 character 17 follows a closing quote (expected ',');"
                             "B:9 the record has 1 field; the URL is field 2;P:;"
                             "B:10 a quoted field is not closed at the end of the file");
    /* urlhaus: the header comment names the column; without it, field 3 */
    static const char *const urlhaus[] = {
        "# comment, with a comma",
        "# id,dateadded,url,status",
        "\"1\",\"2026\",\"http://u.ex/a\",\"online\"",
    };
    run_lines(BR_FEED_URLHAUS, NULL, urlhaus, BR_ARRAY_SIZE(urlhaus), got, sizeof(got));
    assert_string_equal(got, "C:;C:;E:http://u.ex/a;P:");
    static const char *const csv[] = {"a,b,c", "\"x\"y", "d,,f"};
    run_lines(BR_FEED_CSV, "2", csv, BR_ARRAY_SIZE(csv), got, sizeof(got));
    assert_string_equal(got, "E:b;B:2 character 4 follows a closing quote (expected ',');"
                             "B:3 field 2 (the URL) is empty;P:");
    run_lines(BR_FEED_CSV, "C", csv, BR_ARRAY_SIZE(csv), got, sizeof(got));
    assert_string_equal(got, "C:;B:2 character 4 follows a closing quote (expected ',');E:f;P:");
    run_lines(BR_FEED_CSV, "nope", csv, BR_ARRAY_SIZE(csv), got, sizeof(got));
    assert_string_equal(got, "B:1 the header line has no 'nope' column;"
                             "B:2 character 4 follows a closing quote (expected ',');"
                             "B:3 no 'nope' column (the header on line 1 has none);P:");
    br_fmt_state *st = NULL;
    br_error err = {{0}};
    assert_int_equal(br_fmt_state_new(BR_FEED_CSV, NULL, &st, &err), -EINVAL);
    assert_int_equal(br_fmt_state_new(BR_FEED_CSV, "0", &st, &err), -EINVAL);
    assert_int_equal(br_fmt_state_new(BR_FEED_CSV, "257", &st, &err), -EINVAL);
}

static void test_detect(void **state)
{
    (void)state;
    const struct {
        const char *text; /* lines separated by '\n' */
        br_feed_format want;
        bool json;
    } d[] = {
        {"[\n{\"url\": \"x\"}]", BR_FEED_PHISHTANK, true},
        {"  [{\"url\": \"x\"}]", BR_FEED_PHISHTANK, true},
        {"[Adblock Plus 2.0]\n||a.ex^", BR_FEED_ADBLOCK, false},
        {"! c\n||a.ex^\n||b.ex^\nfoo", BR_FEED_ADBLOCK, false},
        {"# c\naddress=/a.ex/\nserver=/b.ex/", BR_FEED_DNSMASQ, false},
        {"server:\nlocal-zone: \"a\" static", BR_FEED_UNBOUND, false},
        {"$TTL 300\n@ SOA a. b. 1 2 3 4 5", BR_FEED_RPZ, false},
        {"a.ex CNAME .\nb.ex CNAME .", BR_FEED_RPZ, false},
        {"#####\n# URLhaus dump\n\"1\",\"2\",\"http://a/\"", BR_FEED_URLHAUS, false},
        {"phish_id,url,x\n1,http://a/,b", BR_FEED_PHISHTANK, false},
        {"a.ex\nb.ex", BR_FEED_AUTO, false},
        {"0.0.0.0 a.ex", BR_FEED_AUTO, false},
        {"url,x\nhttp://a/,1", BR_FEED_AUTO, false},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(d); i++) {
        char *copy = strdup(d[i].text);
        const char *lines[8];
        size_t lens[8], n = 0;
        for (char *save = NULL, *t = strtok_r(copy, "\n", &save); t && n < 8;
             t = strtok_r(NULL, "\n", &save)) {
            lines[n] = t;
            lens[n++] = strlen(t);
        }
        bool json;
        br_feed_format got = br_fmt_detect(lines, lens, n, &json);
        if (got != d[i].want || json != d[i].json)
            fail_msg("case %zu: format %d json %d", i, got, json);
        free(copy);
    }
}

/* Whole feeds through br_feedset_read (read_feed_path): a JSON document with a CRLF line
 * end and a BOM, forced and detected; a JSON syntax error names its line. */
static void test_json_feed(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *p = tu_path("%s/feed.json", dir);
    static const char doc[] = "\xEF\xBB\xBF[\r\n {\"url\": \"http://a.ex/1\"},\r\n"
                              " {\"url\": \"http://a.ex/2\", \"x\": [1, {\"y\": null}]}\r\n]\r\n";
    assert_int_equal(tu_write_file(p, doc, strlen(doc)), 0);
    for (int forced = 0; forced < 2; forced++) {
        br_feedset *fs = NULL;
        assert_int_equal(br_feedset_new(&fs), 0);
        br_feed_opts o = {.format = forced ? BR_FEED_PHISHTANK : BR_FEED_AUTO};
        br_feed_stats st = {0};
        br_error err = {{0}};
        int r = read_feed_path(fs, p, "phishing", &o, &st, &err);
        if (r != 0)
            fail_msg("%s", err.text);
        assert_int_equal(st.entries, 2);
        assert_int_equal(st.lines, 4);
        assert_int_equal(st.format, BR_FEED_PHISHTANK);
        br_feedset_free(fs);
    }
    static const char bad[] = "[\n {\"url\": \"http://a.ex/1\"}\n {\"url\": 2}\n]\n";
    assert_int_equal(tu_write_file(p, bad, strlen(bad)), 0);
    br_feedset *fs = NULL;
    assert_int_equal(br_feedset_new(&fs), 0);
    br_error err = {{0}};
    assert_int_equal(read_feed_path(fs, p, "phishing", NULL, NULL, &err), -EINVAL);
    char *want = tu_path("%s:3: not valid JSON (expected ',' or ']')", p);
    assert_string_equal(err.text, want);
    free(want);
    br_feedset_free(fs);
    free(p);
    tu_rmrf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines),  cmocka_unit_test(test_rpz),       cmocka_unit_test(test_csv),
        cmocka_unit_test(test_detect), cmocka_unit_test(test_json_feed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
