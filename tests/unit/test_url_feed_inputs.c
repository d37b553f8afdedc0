/* SPDX-License-Identifier: MIT */
/* Blocklist inputs seen on real data (lib/url/url_feed*.c): a URLhaus CSV
 * whose header row is not commented, an AdBlock / uBlock Origin list headed
 * by `! Title:` that mixes bare hostnames with `||host/path^$options`
 * rules, and the wildcard-domain format (`*.example.com` per line). Golden
 * tests: each feed read through br_feedset_read (read_feed_path) gives exactly the listed
 * expressions (docs/breachctl.1, "INPUT FORMATS"). Also: every format has
 * one row in the format table (name, parser), so none falls through to
 * another format's parser. */
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
#include "url/url_expr.h"
#include "url/url_feed.h"
#include "url/url_feed_formats.h"
#include "url_helpers.h"
#include "core/util.h"

typedef struct golden {
    const char *name;
    br_feed_format format; /* BR_FEED_AUTO: detected */
    const char *text;
    br_feed_format want_format;
    const char *const *want; /* the expressions, NULL-terminated */
    uint64_t comments, skipped_options, skipped_rule;
    uint64_t first_options, first_rule; /* the line of the first skipped of the kind */
} golden;

static const char *const urlhaus_want[] = {"u.example.com/a", "198.51.100.7/bins/x.sh", NULL};
static const char *const adblock_want[] = {"example.com/", "ads.example.net/", "b.example.io/",
                                           "cdn.example.org/", NULL};
static const char *const wildcard_want[] = {"example.com/", "ads.example.net/",
                                            "deep.tracker.example.org/", "bare.example.io/", NULL};

static const golden goldens[] = {
    {"urlhaus-plain-header", BR_FEED_URLHAUS,
     "id,dateadded,url,url_status,last_online,threat,tags,urlhaus_link,reporter\r\n"
     "\"3000001\",\"2026-01-01 00:00:00\",\"http://u.example.com/a\",\"online\",\"\","
     "\"malware_download\",\"elf\",\"https://urlhaus.example/url/1/\",\"r\"\r\n"
     "\"3000002\",\"2026-01-01 00:00:01\",\"http://198.51.100.7/bins/x.sh\",\"offline\",\"\","
     "\"malware_download\",\"\",\"https://urlhaus.example/url/2/\",\"r\"\r\n",
     BR_FEED_URLHAUS, urlhaus_want, 1, 0, 0, 0, 0},
    /* the url column named by the header wherever it is */
    {"urlhaus-plain-header-reordered", BR_FEED_URLHAUS,
     "url,id,dateadded\n"
     "http://u.example.com/a,1,2026\n"
     "http://198.51.100.7/bins/x.sh,2,2026\n",
     BR_FEED_URLHAUS, urlhaus_want, 1, 0, 0, 0, 0},
    {"adblock-title-bare-hosts", BR_FEED_AUTO,
     "! Title: Mixed test list (generated)\n"
     "! Expires: 1 day\n"
     "! Homepage: https://lists.example/\n"
     "example.com\n"
     "Ads.Example.NET\n"
     "||tracker.example.org/path^$script,third-party\n"
     "||b.example.io^\n"
     "cdn.example.org\n"
     "/banner/\n"
     "ads\n",
     BR_FEED_ADBLOCK, adblock_want, 3, 1, 2, 6, 9},
    {"wildcard", BR_FEED_AUTO,
     "# Title: wildcard test list (generated)\n"
     "\n"
     "*.example.com\n"
     "*.Ads.Example.NET\n"
     "*.deep.tracker.example.org\n"
     "bare.example.io\n",
     BR_FEED_WILDCARD, wildcard_want, 2, 0, 0, 0, 0},
    {"wildcard-forced", BR_FEED_WILDCARD,
     "*.example.com\n*.ads.example.net\n"
     "*.deep.tracker.example.org\nbare.example.io\n",
     BR_FEED_WILDCARD, wildcard_want, 0, 0, 0, 0, 0},
};

static int cmp_hash(const void *a, const void *b)
{
    return memcmp(a, b, BR_SHA256_LEN);
}

static void check_golden(const golden *g, const char *dir)
{
    char *p = tu_path("%s/%s.txt", dir, g->name);
    assert_int_equal(tu_write_file(p, g->text, strlen(g->text)), 0);
    br_feedset *fs = NULL;
    assert_int_equal(br_feedset_new(&fs), 0);
    br_feed_opts o = {.format = g->format};
    br_feed_stats st = {0};
    br_error err = {{0}};
    if (read_feed_path(fs, p, "malware", &o, &st, &err) != 0)
        fail_msg("%s: %s", g->name, err.text);
    br_feedset_finish(fs, NULL);
    size_t n = 0;
    while (g->want[n])
        n++;
    uint8_t want[8][BR_SHA256_LEN];
    for (size_t i = 0; i < n; i++)
        assert_int_equal(br_url_expr_hash(g->want[i], want[i]), 0);
    qsort(want, n, BR_SHA256_LEN, cmp_hash);
    if (st.format != g->want_format || br_feedset_count(fs) != n || st.entries != n)
        fail_msg("%s: format %s, %zu keys, %llu entries; want %s, %zu", g->name,
                 br_feed_format_name(st.format), br_feedset_count(fs),
                 (unsigned long long)st.entries, br_feed_format_name(g->want_format), n);
    const br_feed_entry *e = br_feedset_entries(fs);
    for (size_t i = 0; i < n; i++)
        if (memcmp(e[i].hash, want[i], BR_SHA256_LEN) != 0)
            fail_msg("%s: key %zu differs from the golden set", g->name, i);
    if (st.comments != g->comments || st.skipped[BR_FEED_SKIP_OPTIONS] != g->skipped_options ||
        st.skipped[BR_FEED_SKIP_RULE] != g->skipped_rule || st.bad != 0 ||
        st.first_skipped[BR_FEED_SKIP_OPTIONS] != g->first_options ||
        st.first_skipped[BR_FEED_SKIP_RULE] != g->first_rule)
        fail_msg("%s: comments %llu options %llu rules %llu bad %llu", g->name,
                 (unsigned long long)st.comments,
                 (unsigned long long)st.skipped[BR_FEED_SKIP_OPTIONS],
                 (unsigned long long)st.skipped[BR_FEED_SKIP_RULE], (unsigned long long)st.bad);
    br_feedset_free(fs);
    free(p);
}

static void test_golden(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    for (size_t i = 0; i < BR_ARRAY_SIZE(goldens); i++)
        check_golden(&goldens[i], dir);
    tu_rmrf(dir);
    free(dir);
}

typedef struct line_case {
    br_feed_format format;
    const char *line;
    br_fmt_kind kind;
    const char *want; /* ENTRIES: the entry; BAD: part of the reason */
} line_case;

static const line_case cases[] = {
    /* uBlock Origin reads a line that is a plain hostname as ||hostname^ */
    {BR_FEED_ADBLOCK, "example.com", BR_FMT_ENTRIES, "example.com"},
    {BR_FEED_ADBLOCK, "a-b.Example.co_x.org", BR_FMT_ENTRIES, "a-b.Example.co_x.org"},
    {BR_FEED_ADBLOCK, "ads", BR_FMT_SKIP, NULL},       /* a substring */
    {BR_FEED_ADBLOCK, "192.0.2.1", BR_FMT_SKIP, NULL}, /* not a hostname to uBO */
    {BR_FEED_ADBLOCK, "example.com/ads", BR_FMT_SKIP, NULL},
    {BR_FEED_ADBLOCK, ".example.com", BR_FMT_SKIP, NULL},
    {BR_FEED_ADBLOCK, "-ad.example.", BR_FMT_SKIP, NULL},
    {BR_FEED_WILDCARD, "*.example.com", BR_FMT_ENTRIES, "example.com"},
    {BR_FEED_WILDCARD, "  *.Example.COM  ", BR_FMT_ENTRIES, "Example.COM"},
    {BR_FEED_WILDCARD, "example.com", BR_FMT_ENTRIES, "example.com"},
    {BR_FEED_WILDCARD, "# comment", BR_FMT_COMMENT, NULL},
    {BR_FEED_WILDCARD, "", BR_FMT_COMMENT, NULL},
    {BR_FEED_WILDCARD, "*.a.example # trailing", BR_FMT_ENTRIES, "a.example"},
    {BR_FEED_WILDCARD, "*", BR_FMT_BAD, "no domain after '*.'"},
    {BR_FEED_WILDCARD, "*.", BR_FMT_BAD, "no domain after '*.'"},
    {BR_FEED_WILDCARD, "*.*.example.com", BR_FMT_BAD, "one leading '*.'"},
    {BR_FEED_WILDCARD, "a.*.example.com", BR_FMT_BAD, "one leading '*.'"},
    {BR_FEED_WILDCARD, "*example.com", BR_FMT_BAD, "one leading '*.'"},
    {BR_FEED_WILDCARD, "*.a.example b.example", BR_FMT_BAD, "one domain per line"},
};

static void test_lines(void **state)
{
    (void)state;
    for (size_t i = 0; i < BR_ARRAY_SIZE(cases); i++) {
        const line_case *c = &cases[i];
        br_fmt_state *st = NULL;
        assert_int_equal(br_fmt_state_new(c->format, NULL, &st, NULL), 0);
        br_fmt_result res;
        assert_int_equal(br_fmt_line(st, c->line, strlen(c->line), 3, &res), 0);
        bool ok = res.kind == c->kind;
        if (ok && c->kind == BR_FMT_ENTRIES)
            ok = res.n == 1 && res.e[0].n == strlen(c->want) &&
                 memcmp(res.e[0].s, c->want, res.e[0].n) == 0 && res.rule == BR_FEED_DOMAINS;
        if (ok && c->kind == BR_FMT_SKIP)
            ok = res.skip == BR_FEED_SKIP_RULE;
        if (ok && c->kind == BR_FMT_BAD)
            ok = strstr(res.reason, c->want) != NULL;
        if (!ok)
            fail_msg("case %zu '%s': kind %d entries %zu reason '%s'", i, c->line, res.kind, res.n,
                     res.reason);
        br_fmt_state_free(st);
    }
}

/* Detection: a `!` header means AdBlock whatever the rules below look like,
 * and so do `!` comments further down when a rule is `||`-style or every
 * one a plain hostname; wildcard lines are the wildcard format only when every entry line is a
 * wildcard or a bare domain. */
static void test_detect(void **state)
{
    (void)state;
    const struct {
        const char *text;
        br_feed_format want;
    } d[] = {
        {"! Title: x\nexample.com\nb.example", BR_FEED_ADBLOCK},
        {"! Title: x\nhttp://a.example/x\nhttp://b.example/y", BR_FEED_ADBLOCK},
        /* '!' comments further down, with one || rule or only plain hostnames */
        {"example.com\nfoo.example\n! section\n||x.example^", BR_FEED_ADBLOCK},
        {"example.com\n! section\nb.example", BR_FEED_ADBLOCK},
        {"http://a.example/x\n! note", BR_FEED_AUTO},
        {"*.a.example\n*.b.example\nc.example", BR_FEED_WILDCARD},
        {"# c\n*.a.example", BR_FEED_WILDCARD},
        {"a.example\nb.example", BR_FEED_AUTO},
        {"*.a.example\nhttp://b.example/x", BR_FEED_AUTO},
        {"0.0.0.0 a.example\n*.b.example", BR_FEED_AUTO},
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
        if (got != d[i].want)
            fail_msg("case %zu: format %s, want %s", i, br_feed_format_name(got),
                     br_feed_format_name(d[i].want));
        free(copy);
    }
}

/* A feed whose detection fails names no line, and no comment line is ever
 * read as an entry of another format (it used to be "FILE:1: more than one
 * field" for the `! Title:` line of a list read as URLs). */
static void test_failed_detection(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *p = tu_path("%s/feed.txt", dir);
    static const char text[] = "! Title: x y\nfoo bar\nbaz qux quux\n";
    assert_int_equal(tu_write_file(p, text, strlen(text)), 0);
    br_feedset *fs = NULL;
    assert_int_equal(br_feedset_new(&fs), 0);
    br_feed_opts o = {.format = BR_FEED_AUTO, .skip_bad = true};
    br_feed_stats st = {0};
    br_error err = {{0}};
    int r = read_feed_path(fs, p, "ads", &o, &st, &err);
    char *line1 = tu_path("%s:1:", p);
    if (r == 0 ? st.comments != 1 : strstr(err.text, line1) != NULL)
        fail_msg("rc %d, %llu comments: %s", r, (unsigned long long)st.comments, err.text);
    free(line1);
    br_feedset_free(fs);
    free(p);
    tu_rmrf(dir);
    free(dir);
}

/* The format table: a name per format, each name read back, and every
 * format other than auto has a parser (none falls through to another's). */
static void test_table(void **state)
{
    (void)state;
    for (int f = BR_FEED_AUTO; f <= BR_FEED_FORMAT_LAST; f++) {
        const char *name = br_feed_format_name((br_feed_format)f);
        br_feed_format back;
        assert_string_not_equal(name, "?");
        assert_int_equal(br_feed_format_from_name(name, &back), 0);
        assert_int_equal(back, f);
        assert_non_null(strstr(BR_FEED_FORMAT_NAMES, name));
    }
    assert_non_null(strstr(BR_FEED_FORMAT_NAMES, "wildcard"));
    br_fmt_state *st = NULL;
    br_error err = {{0}};
    assert_int_equal(br_fmt_state_new(BR_FEED_AUTO, NULL, &st, &err), -EINVAL);
    assert_int_equal(br_fmt_state_new((br_feed_format)(BR_FEED_FORMAT_LAST + 1), NULL, &st, &err),
                     -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden), cmocka_unit_test(test_lines),
        cmocka_unit_test(test_detect), cmocka_unit_test(test_failed_detection),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
