/* SPDX-License-Identifier: MIT */
/* breachctl audit --html FILE: the audit as one HTML page to show (docs/audit.md,
 * "A report to show"). Everything is in the file: CSS in a style element,
 * the charts as inline SVG, no script, no font, no image or link to fetch;
 * a Content-Security-Policy of default-src 'none' says so to the browser.
 * The page holds account names, counts and groups only (audit.h's
 * audit_report has no field for anything else), and says so at its top. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "core/clock.h"
#include "core/util.h"

#define CHART_W 640   /* every chart's width, px */
#define LABEL_W 190   /* the label column of a bar chart */
#define BAR_W 360     /* the longest bar */
#define ROW_H 26      /* one bar and its gap */
#define TOP_GROUPS 10 /* groups drawn in the reuse chart (all are listed) */

/* ---- text ------------------------------------------------------------------ */

/* s as HTML text or attribute value; control bytes as '?'. */
static void html_text(FILE *f, const char *s)
{
    static const char *const entity[256] = {
        ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&#39;",
    };
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (entity[*p])
            fputs(entity[*p], f);
        else
            fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
    }
}

/* n with thousands separators ("10,437,277"). */
static const char *grouped(uint64_t n, char buf[32])
{
    char raw[24];
    int len = snprintf(raw, sizeof(raw), "%" PRIu64, n);
    size_t o = 0;
    for (int i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = '\0';
    return buf;
}

/* ---- charts ---------------------------------------------------------------- */

typedef struct bar {
    char label[48];
    uint64_t value;
} bar;

/* A horizontal bar chart: one row per bar, the label left, the value after
 * the bar. id names it for the tests (docs/audit.md). */
static void bar_chart(FILE *f, const char *id, const char *title, const bar *b, size_t n,
                      const char *color)
{
    uint64_t max = 1;
    for (size_t i = 0; i < n; i++)
        max = BR_MAX(max, b[i].value);
    unsigned h = (unsigned)(n * ROW_H + 16);
    fprintf(f,
            "<svg id=\"%s\" class=\"chart\" width=\"%d\" height=\"%u\" viewBox=\"0 0 %d %u\" "
            "role=\"img\" aria-label=\"",
            id, CHART_W, h, CHART_W, h);
    html_text(f, title);
    fputs("\">\n", f);
    for (size_t i = 0; i < n; i++) {
        char num[32];
        unsigned y = (unsigned)(i * ROW_H + 8);
        unsigned w = b[i].value ? (unsigned)(1 + (BAR_W - 1) * b[i].value / max) : 0;
        fprintf(f, "<text x=\"%d\" y=\"%u\" text-anchor=\"end\">", LABEL_W - 8, y + 15);
        html_text(f, b[i].label);
        fprintf(f,
                "</text><rect x=\"%d\" y=\"%u\" width=\"%u\" height=\"%d\" fill=\"%s\"/>"
                "<text x=\"%u\" y=\"%u\">%s</text>\n",
                LABEL_W, y, w, ROW_H - 6, color, LABEL_W + w + 6, y + 15, grouped(b[i].value, num));
    }
    fputs("</svg>\n", f);
}

/* The breached accounts by how often their password was seen, in decades. */
static void chart_counts(FILE *f, const audit_report *r)
{
    static const char *const names[] = {
        "once",           "2 to 9 times",     "10 to 99",           "100 to 999",
        "1,000 to 9,999", "10,000 to 99,999", "100,000 to 999,999", "a million or more"};
    bar b[BR_ARRAY_SIZE(names)];
    for (size_t i = 0; i < BR_ARRAY_SIZE(names); i++) {
        snprintf(b[i].label, sizeof(b[i].label), "%s", names[i]);
        b[i].value = 0;
    }
    for (size_t i = 0; i < r->n_breached; i++) {
        uint64_t c = r->breached[i].count;
        size_t d = c > 1; /* once; 2 to 9; then one bar per decade */
        for (; c >= 10 && d + 1 < BR_ARRAY_SIZE(b); c /= 10)
            d++;
        b[d].value++;
    }
    bar_chart(f, "chart-counts", "Breached accounts by how often their password was seen", b,
              BR_ARRAY_SIZE(b), "#c0392b");
}

/* The largest groups of accounts that share a password. */
static void chart_reuse(FILE *f, const audit_report *r)
{
    bar b[TOP_GROUPS];
    size_t n = BR_MIN(r->n_groups, (size_t)TOP_GROUPS);
    for (size_t i = 0; i < n; i++) {
        snprintf(b[i].label, sizeof(b[i].label), "group %zu%s", i + 1,
                 r->groups[i].count ? " (breached)" : "");
        b[i].value = r->groups[i].n;
    }
    bar_chart(f, "chart-reuse", "Accounts per shared password, largest groups", b, n, "#d68910");
}

/* Where the accounts stand: one bar per verdict. */
static void chart_summary(FILE *f, const audit_report *r)
{
    const bar b[] = {{"breached", r->pwned},
                     {"empty password", r->empty},
                     {"not settled", r->unknown + r->errors},
                     {"clean", r->clean}};
    bar_chart(f, "chart-summary", "Accounts by verdict", b, BR_ARRAY_SIZE(b), "#1a5276");
}

/* ---- sections -------------------------------------------------------------- */

static const char style[] =
    "body{font-family:sans-serif;margin:2em auto;padding:0 1em;max-width:60em;color:#222}"
    "h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.6em}"
    ".note{background:#eef5fb;border-left:4px solid #2e86c1;padding:.6em 1em}"
    "table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:.25em .8em;"
    "text-align:left}td.n{text-align:right}"
    "svg.chart text{font-family:sans-serif;font-size:13px;fill:#222}";

static void head(FILE *f, const audit_report *r)
{
    char when[64];
    time_t t = (time_t)br_clock_now_real();
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm))
        snprintf(when, sizeof(when), "(unknown date)");
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'\">\n<title>Password audit</title>\n<style>",
          f);
    fputs(style, f);
    fputs("</style></head>\n<body>\n<h1>Password audit</h1>\n<p class=\"note\" id=\"privacy\">"
          "This report holds no password and no password hash: only account names, how "
          "often each breached password was seen in known data breaches, and which accounts "
          "share a password. It needs no network and runs no script.</p>\n<p>Input: ",
          f);
    html_text(f, r->source);
    fprintf(f, ". Written by breachctl audit, %s.</p>\n", when);
}

static void summary_row(FILE *f, const char *what, uint64_t n)
{
    char num[32];
    fprintf(f, "<tr><td>%s</td><td class=\"n\">%s</td></tr>\n", what, grouped(n, num));
}

static void summary(FILE *f, const audit_report *r)
{
    fputs("<h2 id=\"summary\">Summary</h2>\n<table>\n", f);
    summary_row(f, "accounts audited", r->accounts);
    summary_row(f, "breached password", r->pwned);
    summary_row(f, "empty password", r->empty);
    summary_row(f, "clean", r->clean);
    summary_row(f, "not settled (unknown or error)", r->unknown + r->errors);
    uint64_t shared = 0;
    for (size_t i = 0; i < r->n_groups; i++)
        shared += r->groups[i].n;
    summary_row(f, "sharing a password with another account", shared);
    summary_row(f, "machine accounts skipped", r->machines);
    summary_row(f, "without an NT hash", r->no_hash);
    if (r->history) {
        summary_row(f, "old passwords (history)", r->history);
        summary_row(f, "old passwords breached or empty", r->history_pwned);
    }
    fputs("</table>\n", f);
    chart_summary(f, r);
}

/* The charts, under the summary: what a reader looks at first. */
static void charts(FILE *f, const audit_report *r)
{
    fputs("<h2 id=\"seen\">How often the breached passwords were seen</h2>\n", f);
    if (r->n_breached)
        chart_counts(f, r);
    else
        fputs("<p>No account has a breached password.</p>\n", f);
    fputs("<h2 id=\"shared\">Passwords shared by several accounts</h2>\n", f);
    if (r->n_groups)
        chart_reuse(f, r);
    else
        fputs("<p>No two accounts share a password.</p>\n", f);
}

static void breached(FILE *f, const audit_report *r)
{
    fputs("<h2 id=\"breached\">Breached accounts, most seen first</h2>\n", f);
    if (r->n_breached == 0) {
        fputs("<p>None.</p>\n", f);
    } else {
        fputs("<table><tr><th>account</th><th>seen in breaches</th></tr>\n", f);
        for (size_t i = 0; i < r->n_breached; i++) {
            char num[32];
            fputs("<tr><td>", f);
            html_text(f, r->breached[i].name);
            fprintf(f, "</td><td class=\"n\">%s</td></tr>\n", grouped(r->breached[i].count, num));
        }
        fputs("</table>\n", f);
    }
    if (r->n_empty) {
        fputs("<h2 id=\"empty\">Accounts with an empty password</h2>\n<ul>\n", f);
        for (size_t i = 0; i < r->n_empty; i++) {
            fputs("<li>", f);
            html_text(f, r->empty_names[i]);
            fputs("</li>\n", f);
        }
        fputs("</ul>\n", f);
    }
}

static void groups(FILE *f, const audit_report *r)
{
    if (r->n_groups == 0)
        return;
    fputs("<h2 id=\"reuse\">Accounts that share a password, largest groups first</h2>\n", f);
    fputs("<table><tr><th>group</th><th>accounts</th><th>breached</th><th>names</th></tr>\n", f);
    for (size_t i = 0; i < r->n_groups; i++) {
        char num[32];
        const audit_report_group *g = &r->groups[i];
        fprintf(f, "<tr><td>%zu</td><td class=\"n\">%zu</td><td class=\"n\">%s</td><td>", i + 1,
                g->n, g->count ? grouped(g->count, num) : "no");
        for (size_t k = 0; k < g->n; k++) {
            fputs(k ? ", " : "", f);
            html_text(f, g->names[k]);
        }
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

/* ---- the page -------------------------------------------------------------- */

static int by_count(const void *x, const void *y)
{
    const audit_report_account *a = x, *b = y;
    if (a->count != b->count)
        return a->count < b->count ? 1 : -1;
    return strcmp(a->name, b->name);
}

static int by_size(const void *x, const void *y)
{
    const audit_report_group *a = x, *b = y;
    if (a->n != b->n)
        return a->n < b->n ? 1 : -1;
    return (a->count < b->count) - (a->count > b->count);
}

static void page(FILE *f, const audit_report *r)
{
    head(f, r);
    summary(f, r);
    charts(f, r);
    breached(f, r);
    groups(f, r);
    fputs("</body></html>\n", f);
}

int audit_write_html(const char *path, audit_report *r, char *why, size_t why_len)
{
    qsort(r->breached, r->n_breached, sizeof(*r->breached), by_count);
    qsort(r->groups, r->n_groups, sizeof(*r->groups), by_size);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        snprintf(why, why_len, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    page(f, r);
    bool bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        snprintf(why, why_len, "writing %s: %s", path, strerror(errno ? errno : EIO));
        return -1;
    }
    return 0;
}
