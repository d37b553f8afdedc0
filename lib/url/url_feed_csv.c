/* SPDX-License-Identifier: MIT */
/* CSV blocklists (URLhaus, PhishTank, any CSV with --column): an RFC 4180
 * record reader and the choice of the URL column; rules in
 * url_feed_formats.h and docs/breachctl.1 ("INPUT FORMATS").
 *
 * Records: fields separated by ','; a field that starts with '"' is quoted
 * up to the next lone '"', and may hold ',', line breaks and doubled quotes
 * ("" is one '"'); after the closing quote comes ',' or the end of the
 * record. A '"' inside an unquoted field is an error, not guessed at. A line
 * that starts with '#' outside a record is a comment; blank lines too.
 * URLhaus: the column named url in a header, commented ("# id,dateadded,url,
 * ...") or not (the first record, when a field is named url); else field 3. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "url_feed_formats.h"
#include "core/util.h"

#define MAX_FIELDS 256
#define MAX_RECORD (64u << 10)
#define COLUMN_NAME_MAX 64
#define URLHAUS_URL_FIELD 2 /* id,dateadded,url,... when no header names it */

enum { COL_BY_NAME = -1, COL_UNUSABLE = -2 };

struct br_csv {
    br_feed_format format;
    long column;                    /* 0-based field index, or COL_* */
    char name[COLUMN_NAME_MAX + 1]; /* the header name looked for */
    uint64_t header_line;           /* where a header without the column was */
    /* the record being read */
    char *buf; /* decoded fields, each ended by NUL */
    size_t len, cap;
    size_t start[MAX_FIELDS];
    size_t nf;
    bool open;        /* a record continues on the next line */
    bool in_quotes;   /* inside a quoted field */
    bool after_quote; /* right after a quoted field's closing quote */
    bool at_field_start;
    uint64_t first_line;
    char error[BR_FMT_REASON_MAX]; /* a fault found in this record */
};

static int put(br_csv *c, char ch)
{
    if (c->len + 1 >= c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 1024;
        char *b = realloc(c->buf, cap);
        if (!b)
            return -ENOMEM;
        c->buf = b;
        c->cap = cap;
    }
    c->buf[c->len++] = ch;
    return 0;
}

static void fault(br_csv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fault(br_csv *c, const char *fmt, ...)
{
    if (c->error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof(c->error), fmt, ap);
    va_end(ap);
}

static int end_field(br_csv *c)
{
    if (c->nf == MAX_FIELDS) {
        fault(c, "more than %d fields", MAX_FIELDS);
    } else {
        c->nf++;
        if (c->nf < MAX_FIELDS)
            c->start[c->nf] = c->len + 1;
    }
    c->at_field_start = true;
    c->after_quote = false;
    return put(c, '\0');
}

static void record_reset(br_csv *c)
{
    c->len = 0;
    c->nf = 0;
    c->start[0] = 0;
    c->open = c->in_quotes = c->after_quote = false;
    c->at_field_start = true;
    c->error[0] = '\0';
}

/* Read one line's characters into the record. */
static int scan(br_csv *c, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int r = 0;
        if (c->len > MAX_RECORD) {
            fault(c, "a record longer than %u bytes", MAX_RECORD);
            return 0;
        }
        if (c->in_quotes) {
            if (ch != '"')
                r = put(c, ch);
            else if (i + 1 < n && s[i + 1] == '"')
                r = put(c, s[i++]);
            else {
                c->in_quotes = false;
                c->after_quote = true;
            }
        } else if (ch == ',') {
            r = end_field(c);
        } else if (c->after_quote) {
            fault(c, "character %zu follows a closing quote (expected ',')", i + 1);
        } else if (ch == '"' && c->at_field_start) {
            c->in_quotes = true;
            c->at_field_start = false;
        } else if (ch == '"') {
            fault(c, "character %zu is a quote inside an unquoted field", i + 1);
        } else {
            c->at_field_start = false;
            r = put(c, ch);
        }
        if (r < 0)
            return r;
    }
    return 0;
}

static const char *field(const br_csv *c, size_t i)
{
    return c->buf + c->start[i];
}

/* Find the column named c->name among the record's fields. */
static void use_header(br_csv *c, uint64_t line, br_fmt_result *res)
{
    res->kind = BR_FMT_COMMENT;
    for (size_t i = 0; i < c->nf; i++) {
        const char *f = field(c, i);
        size_t n = strlen(f);
        while (n > 0 && (f[0] == ' ' || f[0] == '\t')) {
            f++;
            n--;
        }
        while (n > 0 && (f[n - 1] == ' ' || f[n - 1] == '\t'))
            n--;
        if (n == strlen(c->name) && strncasecmp(f, c->name, n) == 0) {
            c->column = (long)i;
            return;
        }
    }
    c->column = COL_UNUSABLE;
    c->header_line = line;
    res->kind = BR_FMT_BAD;
    snprintf(res->reason, sizeof(res->reason), "the header line has no '%s' column", c->name);
}

static void take_entry(br_csv *c, br_fmt_result *res)
{
    if (c->column == COL_UNUSABLE) {
        res->kind = BR_FMT_BAD;
        snprintf(res->reason, sizeof(res->reason),
                 "no '%s' column (the header on line %llu has none)", c->name,
                 (unsigned long long)c->header_line);
        return;
    }
    if ((size_t)c->column >= c->nf) {
        res->kind = BR_FMT_BAD;
        snprintf(res->reason, sizeof(res->reason),
                 "the record has %zu field%s; the URL is field %ld", c->nf, c->nf == 1 ? "" : "s",
                 c->column + 1);
        return;
    }
    const char *f = field(c, (size_t)c->column);
    size_t n = strlen(f);
    while (n > 0 && (f[0] == ' ' || f[0] == '\t')) {
        f++;
        n--;
    }
    while (n > 0 && (f[n - 1] == ' ' || f[n - 1] == '\t'))
        n--;
    if (n == 0) {
        res->kind = BR_FMT_BAD;
        snprintf(res->reason, sizeof(res->reason), "field %ld (the URL) is empty", c->column + 1);
        return;
    }
    res->kind = BR_FMT_ENTRIES;
    res->rule = BR_FEED_URLS;
    res->n = 1;
    res->e[0] = (br_fmt_entry){f, n};
}

/* A "# id,dateadded,url,..." comment: URLhaus's header. */
static int urlhaus_comment(br_csv *c, const char *s, size_t n, uint64_t lineno)
{
    size_t i = 1;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (c->column != COL_BY_NAME || !memchr(s, ',', n))
        return 0;
    record_reset(c);
    int r = scan(c, s + i, n - i);
    if (r < 0)
        return r;
    r = end_field(c);
    if (r < 0 || c->error[0])
        return r;
    br_fmt_result ignored;
    use_header(c, lineno, &ignored);
    if (c->column == COL_UNUSABLE)
        c->column = COL_BY_NAME; /* another comment, not the header */
    return 0;
}

int br_csv_line(br_csv *c, const char *s, size_t n, uint64_t lineno, br_fmt_result *res)
{
    if (!c->open) {
        size_t k = 0;
        while (k < n && (s[k] == ' ' || s[k] == '\t'))
            k++;
        if (k == n || s[k] == '#') {
            res->kind = BR_FMT_COMMENT;
            return c->format == BR_FEED_URLHAUS && k < n ? urlhaus_comment(c, s + k, n - k, lineno)
                                                         : 0;
        }
        record_reset(c);
        c->first_line = lineno;
    }
    int r = scan(c, s, n);
    if (r < 0)
        return r;
    if (c->in_quotes && !c->error[0]) { /* a line break inside a quoted field */
        c->open = true;
        res->kind = BR_FMT_PENDING;
        return put(c, '\n');
    }
    c->open = false;
    r = end_field(c);
    if (r < 0)
        return r;
    res->line = c->first_line;
    if (c->error[0]) {
        res->kind = BR_FMT_BAD;
        snprintf(res->reason, sizeof(res->reason), "%s", c->error);
        return 0;
    }
    if (c->column == COL_BY_NAME && c->format == BR_FEED_URLHAUS) {
        /* The first record: a header row (not commented) when a field is
         * named url, the URL's own field never being just that; else data
         * in URLhaus's column order. */
        use_header(c, c->first_line, res);
        if (c->column != COL_UNUSABLE)
            return 0;
        c->column = URLHAUS_URL_FIELD;
        res->reason[0] = '\0';
    }
    if (c->column == COL_BY_NAME) {
        use_header(c, c->first_line, res);
        return 0;
    }
    take_entry(c, res);
    return 0;
}

void br_csv_finish(br_csv *c, br_fmt_result *res)
{
    if (!c->open)
        return;
    res->kind = BR_FMT_BAD;
    res->line = c->first_line;
    snprintf(res->reason, sizeof(res->reason),
             "a quoted field is not closed at the end of the file");
    c->open = false;
}

int br_csv_new(br_feed_format f, const char *column, br_csv **out, br_error *err)
{
    br_csv *c = calloc(1, sizeof(*c));
    if (!c)
        return br_error_set(err, -ENOMEM, "out of memory");
    c->format = f;
    c->column = COL_BY_NAME;
    snprintf(c->name, sizeof(c->name), "url");
    if (f == BR_FEED_CSV) {
        if (!column || !column[0]) {
            free(c);
            return br_error_set(err, -EINVAL,
                                "--format csv needs --column N (1-based) or --column NAME (a "
                                "header name)");
        }
        char *end;
        errno = 0;
        long v = strtol(column, &end, 10);
        if (column[0] >= '0' && column[0] <= '9' && *end == '\0') {
            if (errno || v < 1 || v > MAX_FIELDS) {
                free(c);
                return br_error_set(err, -EINVAL, "--column %s: a field number is 1..%d", column,
                                    MAX_FIELDS);
            }
            c->column = v - 1;
        } else if (strlen(column) > COLUMN_NAME_MAX) {
            free(c);
            return br_error_set(err, -EINVAL, "--column: a name is at most %d characters",
                                COLUMN_NAME_MAX);
        } else {
            snprintf(c->name, sizeof(c->name), "%s", column);
        }
    }
    record_reset(c);
    *out = c;
    return 0;
}

void br_csv_free(br_csv *c)
{
    if (!c)
        return;
    free(c->buf);
    free(c);
}
