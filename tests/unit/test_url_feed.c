/* SPDX-License-Identifier: MIT */
/* Feed parsing: the entry rule per format, the format matrix (urls, hosts,
 * domains; comments, CRLF, BOM, tabs; auto-detection), the secret-class
 * refusal (exact message), --skip-bad counting, categories, duplicates and
 * conflicts (first wins). Real files in a temporary directory. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/hash.h"
#include "testutil.h"
#include "url/url_expr.h"
#include "url/url_feed.h"
#include "url_helpers.h"
#include "core/util.h"

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_mkdtemp();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rmrf(g_dir);
    free(g_dir);
    return 0;
}

static char *feed_file(const char *name, const char *content)
{
    char *p = tu_path("%s/%s", g_dir, name);
    assert_int_equal(tu_write_file(p, content, strlen(content)), 0);
    return p;
}

static void test_split_arg(void **state)
{
    (void)state;
    char *path = NULL, cat[BR_FEED_CATEGORY_MAX + 1];
    br_error err;
    assert_int_equal(br_feed_split_input("feed.txt", &path, cat, NULL, &err), 0);
    assert_string_equal(path, "feed.txt");
    assert_string_equal(cat, BR_FEED_DEFAULT_CATEGORY);
    free(path);
    assert_int_equal(br_feed_split_input("feed.txt=phishing", &path, cat, NULL, &err), 0);
    assert_string_equal(path, "feed.txt");
    assert_string_equal(cat, "phishing");
    free(path);
    assert_int_equal(br_feed_split_input("a=b.txt=ads_2", &path, cat, NULL, &err), 0);
    assert_string_equal(path, "a=b.txt");
    assert_string_equal(cat, "ads_2");
    free(path);
    assert_int_equal(br_feed_split_input("a=b.txt", &path, cat, NULL, &err), -EINVAL);
    assert_int_equal(br_feed_split_input("f=Malware", &path, cat, NULL, &err), -EINVAL);
    assert_int_equal(br_feed_split_input("f=", &path, cat, NULL, &err), -EINVAL);
    assert_int_equal(br_feed_split_input("=ads", &path, cat, NULL, &err), -EINVAL);
    assert_int_equal(
        br_feed_split_input("f=abcdefghijklmnopqrstuvwxyz0123456", &path, cat, NULL, &err),
        -EINVAL); /* 33 */
    assert_int_equal(
        br_feed_split_input("f=abcdefghijklmnopqrstuvwxyz012345", &path, cat, NULL, &err), 0);
    free(path);
    /* =CATEGORY:FORMAT and =:FORMAT (the default category) */
    br_feed_format f;
    assert_int_equal(br_feed_split_input("a=b.txt=ads:hosts", &path, cat, &f, &err), 0);
    assert_string_equal(path, "a=b.txt");
    assert_string_equal(cat, "ads");
    assert_int_equal(f, BR_FEED_HOSTS);
    free(path);
    assert_int_equal(br_feed_split_input("feed.csv=:urlhaus", &path, cat, &f, &err), 0);
    assert_string_equal(cat, BR_FEED_DEFAULT_CATEGORY);
    assert_int_equal(f, BR_FEED_URLHAUS);
    free(path);
    assert_int_equal(br_feed_split_input("feed.txt=ads", &path, cat, &f, &err), 0);
    assert_int_equal(f, BR_FEED_AUTO);
    free(path);
    assert_int_equal(br_feed_split_input("feed.txt=ads:nosuch", &path, cat, &f, &err), -EINVAL);
    assert_non_null(strstr(err.text, "the format after ':' must be one of auto, urls"));
    assert_int_equal(br_feed_split_input("feed.txt=ads:hosts", &path, cat, NULL, &err), -EINVAL);
    assert_int_equal(br_feed_split_input("feed.txt=Ads:hosts", &path, cat, &f, &err), -EINVAL);
    assert_int_equal(br_feed_split_input("feed.txt=:", &path, cat, &f, &err), -EINVAL);
    assert_int_equal(br_feed_format_from_name("hosts", &f), 0);
    assert_int_equal(f, BR_FEED_HOSTS);
    assert_int_equal(br_feed_format_from_name("csv", &f), 0);
    assert_int_equal(f, BR_FEED_CSV);
    assert_int_equal(br_feed_format_from_name("xml", &f), -EINVAL);
}

typedef struct entry_case {
    br_feed_format format;
    const char *entry;
    const char *expr; /* NULL: refused with code */
    int code;
} entry_case;

static void test_entry_expression(void **state)
{
    (void)state;
    static const entry_case cases[] = {
        {BR_FEED_URLS, "http://Evil.Example.com/a/../b?x=1#frag", "evil.example.com/b?x=1", 0},
        {BR_FEED_URLS, "example.com", "example.com/", 0},
        {BR_FEED_URLS, "example.com/dir/", "example.com/dir/", 0},
        {BR_FEED_URLS, "https://1.2.3.4:8080/p", "1.2.3.4/p", 0},
        {BR_FEED_URLS, "http://user@example.com/x", "example.com/x", 0},
        {BR_FEED_URLS, "http://0x7f.1/", "127.0.0.1/", 0},
        {BR_FEED_URLS,
         "http://b\xc3\xbc"
         "cher.example/",
         "xn--bcher-kva.example/", 0},
        {BR_FEED_URLS, "http://example.com/q?", "example.com/q", 0}, /* empty query */
        {BR_FEED_URLS, "mailto:john@example.com", NULL, -EPERM},
        {BR_FEED_URLS, "MAILTO:x@y.org", NULL, -EPERM},
        {BR_FEED_URLS, "john@example.com", NULL, -EPERM},
        {BR_FEED_URLS, "john%40example.com", NULL, -EPERM},
        {BR_FEED_URLS, "javascript:alert(1)", NULL, -EINVAL},
        {BR_FEED_URLS, "http://*.example.com/", NULL, -EINVAL},
        {BR_FEED_URLS, "http:///", NULL, -EINVAL},
        {BR_FEED_DOMAINS, "Example.COM.", "example.com/", 0},
        {BR_FEED_DOMAINS,
         "b\xc3\xbc"
         "cher.example",
         "xn--bcher-kva.example/", 0},
        {BR_FEED_DOMAINS, "1.2.3.4", "1.2.3.4/", 0},
        {BR_FEED_DOMAINS, "2001:DB8::1", "[2001:db8::1]/", 0},
        {BR_FEED_DOMAINS, "[2001:db8::1]", "[2001:db8::1]/", 0},
        {BR_FEED_DOMAINS, "under_score.example", "under_score.example/", 0},
        {BR_FEED_DOMAINS, "example.com/path", NULL, -EINVAL},
        {BR_FEED_DOMAINS, "http://example.com", NULL, -EINVAL},
        {BR_FEED_DOMAINS, "example.com:80", NULL, -EINVAL},
        {BR_FEED_DOMAINS, "*.example.com", NULL, -EINVAL},
        {BR_FEED_DOMAINS, "john@example.com", NULL, -EPERM},
        {BR_FEED_DOMAINS, "@example", NULL, -EINVAL},
        {BR_FEED_HOSTS, "ads.example.com", "ads.example.com/", 0},
        {BR_FEED_HOSTS, "a..b.example", "a.b.example/", 0},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(cases); i++) {
        const entry_case *c = &cases[i];
        char *expr = NULL;
        br_error err = {{0}};
        int r = br_feed_entry_expression(c->format, c->entry, strlen(c->entry), &expr, &err);
        if (c->expr) {
            if (r != 0)
                fail_msg("%s '%s': refused: %s", br_feed_format_name(c->format), c->entry,
                         err.text);
            if (strcmp(expr, c->expr) != 0)
                fail_msg("%s '%s': '%s', expected '%s'", br_feed_format_name(c->format), c->entry,
                         expr, c->expr);
            free(expr);
        } else {
            if (r != c->code)
                fail_msg("%s '%s': %d (%s), expected %d", br_feed_format_name(c->format), c->entry,
                         r, err.text, c->code);
            if (r == -EPERM)
                assert_string_equal(err.text, BR_FEED_SECRET_TEXT);
            assert_null(expr);
        }
    }
}

/* Read one feed into a fresh set. */
static int read_feed(const char *path, br_feed_format fmt, bool skip_bad, br_feedset **fs,
                     br_feed_stats *st, br_error *err)
{
    assert_int_equal(br_feedset_new(fs), 0);
    br_feed_opts o = {.format = fmt, .skip_bad = skip_bad};
    return read_feed_path(*fs, path, "malware", &o, st, err);
}

/* The finished set holds exactly these expressions. */
static void expect_set(br_feedset *fs, const char *const *exprs, size_t n)
{
    br_feedset_finish(fs, NULL);
    if (br_feedset_count(fs) != n)
        fail_msg("%zu distinct entries, expected %zu", br_feedset_count(fs), n);
    const br_feed_entry *e = br_feedset_entries(fs);
    for (size_t i = 0; i < n; i++) {
        uint8_t h[32];
        assert_int_equal(br_url_expr_hash(exprs[i], h), 0);
        bool found = false;
        for (size_t j = 0; j < n && !found; j++)
            found = memcmp(e[j].hash, h, 32) == 0;
        if (!found)
            fail_msg("expression '%s' is not in the set", exprs[i]);
    }
}

static const char urls_feed[] = "\xEF\xBB\xBF# a URL list\r\n"
                                "http://evil.example.com/path/x.html?a=1\r\n"
                                "\r\n"
                                "   # indented comment\n"
                                "\tEXAMPLE.org/bad/  \t\n"
                                "https://phish.example.net/login#frag  # trailing comment\n"
                                "http://1.2.3.4/x\n"
                                "malware.example"; /* no final line end */
static const char *const urls_exprs[] = {
    "evil.example.com/path/x.html?a=1",
    "example.org/bad/",
    "phish.example.net/login",
    "1.2.3.4/x",
    "malware.example/",
};

static const char hosts_feed[] = "# hosts blocklist\r\n"
                                 "127.0.0.1 localhost\r\n"
                                 "127.0.0.1\tlocalhost.localdomain\r\n"
                                 "::1 localhost ip6-localhost ip6-loopback\r\n"
                                 "255.255.255.255 broadcasthost\r\n"
                                 "0.0.0.0 0.0.0.0\r\n"
                                 "0.0.0.0 ads.example.com\r\n"
                                 "0.0.0.0\ttracker.example.com   track2.example.com # two\r\n"
                                 "127.0.0.1 Mixed.Case.Example#comment without blank\r\n"
                                 "::  v6.example\n";
static const char *const hosts_exprs[] = {
    "ads.example.com/",    "tracker.example.com/", "track2.example.com/",
    "mixed.case.example/", "v6.example/",
};

static const char domains_feed[] = "# domains\n"
                                   "malware.example\n"
                                   "b\xc3\xbc"
                                   "cher.example\n"
                                   "Sub.Example.COM.\n"
                                   "\n"
                                   "10.0.0.1 # an address\n";
static const char *const domains_exprs[] = {
    "malware.example/",
    "xn--bcher-kva.example/",
    "sub.example.com/",
    "10.0.0.1/",
};

typedef struct matrix_case {
    const char *name;
    const char *content;
    br_feed_format forced;
    br_feed_format detected;
    const char *const *exprs;
    size_t n;
    uint64_t comments, ignored;
} matrix_case;

static void test_format_matrix(void **state)
{
    (void)state;
    const matrix_case cases[] = {
        {"urls.txt", urls_feed, BR_FEED_URLS, BR_FEED_URLS, urls_exprs, 5, 3, 0},
        {"hosts.txt", hosts_feed, BR_FEED_HOSTS, BR_FEED_HOSTS, hosts_exprs, 5, 1, 7},
        {"domains.txt", domains_feed, BR_FEED_DOMAINS, BR_FEED_DOMAINS, domains_exprs, 4, 2, 0},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(cases); i++) {
        const matrix_case *c = &cases[i];
        char *path = feed_file(c->name, c->content);
        for (int pass = 0; pass < 2; pass++) {
            br_feed_format fmt = pass ? BR_FEED_AUTO : c->forced;
            br_feedset *fs = NULL;
            br_feed_stats st = {0};
            br_error err = {{0}};
            if (read_feed(path, fmt, false, &fs, &st, &err) < 0)
                fail_msg("%s as %s: %s", c->name, br_feed_format_name(fmt), err.text);
            assert_int_equal(st.format, pass ? c->detected : c->forced);
            assert_int_equal(st.entries, c->n);
            assert_int_equal(st.comments, c->comments);
            assert_int_equal(st.ignored, c->ignored);
            assert_int_equal(st.bad, 0);
            expect_set(fs, c->exprs, c->n);
            br_feedset_free(fs);
        }
        free(path);
    }
}

/* Auto-detection looks at the first 100 entry lines, however many comment
 * lines come first; a file detected as domains still takes a URL later on;
 * forced domains refuse it. */
static void test_auto_detection(void **state)
{
    (void)state;
    size_t cap = 1 << 16, len = 0;
    char *buf = tu_xmalloc(cap);
    for (int i = 0; i < 300; i++)
        len += (size_t)snprintf(buf + len, cap - len, "# header line %d\n", i);
    len += (size_t)snprintf(buf + len, cap - len, "0.0.0.0 a.example\n0.0.0.0 b.example\n");
    char *path = feed_file("commented-hosts.txt", buf);
    br_feedset *fs = NULL;
    br_feed_stats st = {0};
    br_error err = {{0}};
    assert_int_equal(read_feed(path, BR_FEED_AUTO, false, &fs, &st, &err), 0);
    assert_int_equal(st.format, BR_FEED_HOSTS);
    assert_int_equal(st.entries, 2);
    br_feedset_free(fs);
    free(path);

    len = 0;
    for (int i = 0; i < 150; i++)
        len += (size_t)snprintf(buf + len, cap - len, "d%d.example\n", i);
    len += (size_t)snprintf(buf + len, cap - len, "http://late.example/path\n");
    path = feed_file("mostly-domains.txt", buf);
    assert_int_equal(read_feed(path, BR_FEED_AUTO, false, &fs, &st, &err), 0);
    assert_int_equal(st.format, BR_FEED_DOMAINS);
    assert_int_equal(st.entries, 151);
    br_feedset_free(fs);
    assert_int_equal(read_feed(path, BR_FEED_DOMAINS, false, &fs, &st, &err), -EINVAL);
    char *want = tu_path("%s:151: ", path);
    if (strncmp(err.text, want, strlen(want)) != 0)
        fail_msg("'%s' does not start with '%s'", err.text, want);
    br_feedset_free(fs);
    free(want);
    free(path);

    /* A hosts file read as a URL list: two fields, refused with a hint. */
    path = feed_file("hosts-as-urls.txt", hosts_feed);
    assert_int_equal(read_feed(path, BR_FEED_URLS, false, &fs, &st, &err), -EINVAL);
    assert_non_null(strstr(err.text, ":2: "));
    assert_non_null(strstr(err.text, "--format hosts"));
    br_feedset_free(fs);
    free(path);
    /* An empty file is a valid, empty feed. */
    path = feed_file("empty.txt", "");
    assert_int_equal(read_feed(path, BR_FEED_AUTO, false, &fs, &st, &err), 0);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.lines, 0);
    br_feedset_free(fs);
    free(path);
    free(buf);
}

typedef struct secret_case {
    const char *content;
    br_feed_format format;
    unsigned line;
} secret_case;

static void test_secret_refusal(void **state)
{
    (void)state;
    static const secret_case cases[] = {
        {"http://ok.example/\nexample.org\njohn@example.com\n", BR_FEED_URLS, 3},
        {"http://ok.example/\nmailto:jane@example.org?subject=x\n", BR_FEED_URLS, 2},
        {"http://ok.example/\r\nMailTo:jane@example.org\r\n", BR_FEED_AUTO, 2},
        {"0.0.0.0 ads.example\n0.0.0.0 ok.example john@example.com\n", BR_FEED_HOSTS, 2},
        {"ok.example\nbad/line\njane.doe@mail.example.net extra field\n", BR_FEED_DOMAINS, 3},
        {"ok.example\njane.doe%40mail.example.net\n", BR_FEED_URLS, 2},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(cases); i++) {
        char name[32];
        snprintf(name, sizeof(name), "secret%zu.txt", i);
        char *path = feed_file(name, cases[i].content);
        for (int skip = 0; skip < 2; skip++) {
            br_feedset *fs = NULL;
            br_feed_stats st = {0};
            br_error err = {{0}};
            int r = read_feed(path, cases[i].format, skip, &fs, &st, &err);
            if (cases[i].line == 3 && cases[i].format == BR_FEED_DOMAINS && !skip) {
                /* Without --skip-bad the bad line 2 stops the read first. */
                assert_int_equal(r, -EINVAL);
                br_feedset_free(fs);
                continue;
            }
            if (r != -EPERM)
                fail_msg("case %zu (skip %d): %d %s", i, skip, r, err.text);
            char *want = tu_path("%s:%u: secret-class data (e-mail address) is never indexed", path,
                                 cases[i].line);
            assert_string_equal(err.text, want);
            free(want);
            br_feedset_free(fs);
        }
        free(path);
    }
}

typedef struct bad_log {
    char lines[8][512];
    size_t n;
} bad_log;

static void log_bad(void *ctx, const char *msg)
{
    bad_log *l = ctx;
    if (l->n < 8)
        snprintf(l->lines[l->n], sizeof(l->lines[0]), "%s", msg);
    l->n++;
}

static void test_skip_bad(void **state)
{
    (void)state;
    char *path = feed_file("bad.txt", "http://good.example/1\n"
                                      "javascript:alert(1)\n"
                                      "http://*.wild.example/\n"
                                      "http://good.example/2\n"
                                      "two fields\n"
                                      "http://good.example/3\n");
    br_feedset *fs = NULL;
    br_feed_stats st = {0};
    br_error err = {{0}};
    assert_int_equal(read_feed(path, BR_FEED_URLS, false, &fs, &st, &err), -EINVAL);
    char *want = tu_path("%s:2: ", path);
    assert_memory_equal(err.text, want, strlen(want));
    free(want);
    br_feedset_free(fs);

    bad_log log = {0};
    assert_int_equal(br_feedset_new(&fs), 0);
    br_feed_opts o = {.format = BR_FEED_AUTO, .skip_bad = true, .on_bad = log_bad, .ctx = &log};
    assert_int_equal(read_feed_path(fs, path, "phishing", &o, &st, &err), 0);
    assert_int_equal(st.bad, 3);
    assert_int_equal(st.entries, 3);
    assert_int_equal(st.lines, 6);
    assert_int_equal(log.n, 3);
    static const unsigned lines[] = {2, 3, 5};
    for (size_t i = 0; i < 3; i++) {
        char *p = tu_path("%s:%u: ", path, lines[i]);
        if (strncmp(log.lines[i], p, strlen(p)) != 0)
            fail_msg("bad line report '%s', expected '%s...'", log.lines[i], p);
        free(p);
    }
    static const char *const exprs[] = {"good.example/1", "good.example/2", "good.example/3"};
    expect_set(fs, exprs, 3);
    assert_string_equal(br_feedset_category(fs, br_feedset_entries(fs)[0].category), "phishing");
    br_feedset_free(fs);
    free(path);
}

/* The first feed (then the first line) listing an expression wins. */
/* A URL holding an address is cut to its longest expression free of it,
 * reported by FILE:LINE only; a domain entry records its label count. */
static void test_cut_and_labels(void **state)
{
    (void)state;
    char *path = feed_file("cut.txt", "# feed\n"
                                      "http://t.example/u?email=alice%40victim.example\n"
                                      "http://t.example/ok\n"
                                      "http://p.example/a/alice@victim.example/b\n");
    br_feedset *fs = NULL;
    br_feed_stats st = {0};
    br_error err = {{0}};
    bad_log cuts = {0};
    assert_int_equal(br_feedset_new(&fs), 0);
    br_feed_opts o = {.format = BR_FEED_URLS, .on_cut = log_bad, .ctx = &cuts};
    assert_int_equal(read_feed_path(fs, path, "phishing", &o, &st, &err), 0);
    assert_int_equal(st.cut, 2);
    assert_int_equal(st.entries, 3);
    assert_int_equal(cuts.n, 2);
    char *want = tu_path("%s:2: " BR_FEED_CUT_TEXT, path);
    assert_string_equal(cuts.lines[0], want);
    free(want);
    for (size_t i = 0; i < cuts.n; i++)
        assert_null(strstr(cuts.lines[i], "alice"));
    assert_int_equal(br_feedset_max_domain_labels(fs), 0); /* URL entries only */
    static const char *const exprs[] = {"t.example/u", "t.example/ok", "p.example/a/"};
    expect_set(fs, exprs, BR_ARRAY_SIZE(exprs));
    br_feedset_free(fs);
    free(path);

    path = feed_file("long.txt", "a.example\nx.a.b.c.d.e.long.example\n[2001:db8::1]\n");
    assert_int_equal(read_feed(path, BR_FEED_DOMAINS, false, &fs, &st, &err), 0);
    assert_int_equal(br_feedset_max_domain_labels(fs), 8);
    br_feedset_free(fs);
    free(path);
    path = feed_file("long.hosts", "0.0.0.0 a.b.c.d.e.f.example\n");
    assert_int_equal(read_feed(path, BR_FEED_AUTO, false, &fs, &st, &err), 0);
    assert_int_equal(br_feedset_max_domain_labels(fs), 7);
    br_feedset_free(fs);
    free(path);
}

static void test_duplicates_and_conflicts(void **state)
{
    (void)state;
    char *a = feed_file("a.txt", "x.example\ny.example\nhttp://x.example/\n");
    char *b = feed_file("b.txt", "0.0.0.0 y.example z.example\n");
    br_feedset *fs = NULL;
    assert_int_equal(br_feedset_new(&fs), 0);
    br_feed_opts o = {0};
    br_error err = {{0}};
    assert_int_equal(read_feed_path(fs, a, "phishing", &o, NULL, &err), 0);
    assert_int_equal(read_feed_path(fs, b, "ads", &o, NULL, &err), 0);
    br_feedset_stats st;
    br_feedset_finish(fs, &st);
    assert_int_equal(st.distinct, 3);
    assert_int_equal(st.duplicates, 1);
    assert_int_equal(st.conflicts, 1);
    assert_int_equal(br_feedset_category_count(fs), 2);
    static const char *const names[] = {"x.example/", "y.example/", "z.example/"};
    static const char *const cats[] = {"phishing", "phishing", "ads"};
    const br_feed_entry *e = br_feedset_entries(fs);
    for (size_t i = 0; i < 3; i++) {
        uint8_t h[32];
        assert_int_equal(br_url_expr_hash(names[i], h), 0);
        size_t j = 0;
        while (j < 3 && memcmp(e[j].hash, h, 32) != 0)
            j++;
        assert_true(j < 3);
        assert_string_equal(br_feedset_category(fs, e[j].category), cats[i]);
    }
    for (size_t i = 1; i < 3; i++)
        assert_true(memcmp(e[i - 1].hash, e[i].hash, 32) < 0);
    br_feedset_free(fs);
    /* A bad category name and a missing file. */
    assert_int_equal(br_feedset_new(&fs), 0);
    assert_int_equal(read_feed_path(fs, a, "Bad Name", &o, NULL, &err), -EINVAL);
    char *missing = tu_path("%s/none.txt", g_dir);
    assert_int_equal(read_feed_path(fs, missing, "ads", &o, NULL, &err), -ENOENT);
    br_feedset_free(fs);
    free(missing);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_arg),
        cmocka_unit_test(test_entry_expression),
        cmocka_unit_test(test_format_matrix),
        cmocka_unit_test(test_auto_detection),
        cmocka_unit_test(test_secret_refusal),
        cmocka_unit_test(test_skip_bad),
        cmocka_unit_test(test_duplicates_and_conflicts),
        cmocka_unit_test(test_cut_and_labels),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
