/* SPDX-License-Identifier: MIT */
/* Reading a blocklist feed into a set (br_feedset_read, url_feed.h): the
 * format asked for or detected from the first lines held back, then line
 * by line (the formats of url_feed_formats.h, or URL lists, hosts files and
 * domain lists here), each entry's expression hashed into the set
 * (url_feed.c, through url_feed_int.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "url_expr.h"
#include "url_feed.h"
#include "url_feed_formats.h"
#include "url_feed_int.h"
#include "url_secret.h"

#define DETECT_SAMPLE 100
#define DETECT_MAX_HELD 100000
#define MAX_FIELDS 64

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

typedef struct field {
    const char *s;
    size_t n;
} field;

/* Split on blanks; returns the number of fields (at most MAX_FIELDS + 1 to
 * say "too many"). */
static size_t split_fields(const char *s, size_t n, field *f)
{
    size_t nf = 0, i = 0;
    while (i < n) {
        while (i < n && is_blank(s[i]))
            i++;
        if (i == n)
            break;
        size_t b = i;
        while (i < n && !is_blank(s[i]))
            i++;
        if (nf == MAX_FIELDS)
            return MAX_FIELDS + 1;
        f[nf].s = s + b;
        f[nf].n = i - b;
        nf++;
    }
    return nf;
}

/* The entry text of a line after its comment is cut off (length 0: a blank
 * or comment line). */
static size_t strip_comment(br_feed_format f, const char *s, size_t n)
{
    if (n > 0 && s[0] == '#')
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '#' && (f == BR_FEED_HOSTS || (i > 0 && is_blank(s[i - 1])))) {
            n = i;
            break;
        }
    }
    while (n > 0 && is_blank(s[n - 1]))
        n--;
    return n;
}

static const char *const ignored_hosts[] = {
    "localhost",     "localhost.localdomain", "local",        "broadcasthost",
    "ip6-localhost", "ip6-loopback",          "ip6-localnet", "ip6-mcastprefix",
    "ip6-allnodes",  "ip6-allrouters",        "ip6-allhosts", "0.0.0.0",
};

static bool is_ignored_host(const char *s, size_t n)
{
    for (size_t i = 0; i < BR_ARRAY_SIZE(ignored_hosts); i++)
        if (strlen(ignored_hosts[i]) == n && strncasecmp(ignored_hosts[i], s, n) == 0)
            return true;
    return false;
}

typedef struct reader {
    br_feedset *fs;
    const char *name;
    uint8_t cat;
    br_feed_format format; /* after detection */
    bool lenient;          /* auto-detected domains: entries read by the urls rule */
    br_fmt_state *fmt;     /* the formats of url_feed_formats.h */
    const br_feed_opts *o;
    br_feed_stats st;
    br_error *err;
} reader;

/* A bad line: error, or counted and reported with skip_bad. */
static int bad_line(reader *rd, uint64_t lineno, int code, const char *reason)
{
    if (code == -EPERM)
        return br_error_set(rd->err, -EPERM, "%s:%llu: %s", rd->name, (unsigned long long)lineno,
                            BR_FEED_SECRET_TEXT);
    if (code == -ENOMEM || !rd->o->skip_bad)
        return br_error_set(rd->err, code == -ENOMEM ? code : -EINVAL, "%s:%llu: %s", rd->name,
                            (unsigned long long)lineno, reason);
    rd->st.bad++;
    if (rd->o->on_bad) {
        char msg[sizeof(rd->err->text)];
        /* A long message is truncated; using the result keeps GCC's
         * -Wformat-truncation (on at -O2/-O3) quiet about that. */
        if (snprintf(msg, sizeof(msg), "%s:%llu: %s", rd->name, (unsigned long long)lineno, reason) < 0)
            msg[0] = '\0';
        rd->o->on_bad(rd->o->ctx, msg);
    }
    return 0;
}

static int add_entry(reader *rd, br_feed_format rule, const char *s, size_t n, uint64_t lineno,
                     bool *bad)
{
    br_error e = {{0}};
    _cleanup_free_ char *expr = NULL;
    int r = br_feed_entry_expression(rule, s, n, &expr, &e);
    if (r < 0) {
        *bad = true;
        return bad_line(rd, lineno, r, e.text[0] ? e.text : strerror(-r));
    }
    if (r == 1) {
        /* Cut down to its longest expression free of an address: say
         * where, never what. */
        rd->st.cut++;
        if (rd->o->on_cut) {
            char msg[sizeof(rd->err->text)];
            if (snprintf(msg, sizeof(msg), "%s:%llu: %s", rd->name, (unsigned long long)lineno,
                         BR_FEED_CUT_TEXT) < 0)
                msg[0] = '\0';
            rd->o->on_cut(rd->o->ctx, msg);
        }
    }
    if (rule == BR_FEED_HOSTS || rule == BR_FEED_DOMAINS || rd->format == BR_FEED_DOMAINS)
        br_feedset_note_domain_labels(rd->fs, expr);
    uint8_t h[BR_SHA256_LEN];
    if (br_url_expr_hash(expr, h) < 0)
        return br_error_set(rd->err, -EIO, "SHA-256 failed");
    r = br_feedset_push(rd->fs, h, rd->cat, rd->err);
    if (r < 0)
        return r;
    rd->st.entries++;
    return 0;
}

/* What a parser of url_feed_formats.h made of a line. */
static int fmt_result(reader *rd, const br_fmt_result *res)
{
    switch (res->kind) {
    case BR_FMT_COMMENT:
        rd->st.comments++;
        return 0;
    case BR_FMT_PENDING:
        return 0;
    case BR_FMT_SKIP:
        if (!rd->st.skipped[res->skip]++)
            rd->st.first_skipped[res->skip] = res->line;
        return 0;
    case BR_FMT_BAD:
        return bad_line(rd, res->line, -EINVAL, res->reason);
    case BR_FMT_ENTRIES:
        break;
    }
    bool bad = false;
    for (size_t i = 0; i < res->n && !bad; i++) {
        int r = add_entry(rd, res->rule, res->e[i].s, res->e[i].n, res->line, &bad);
        if (r < 0)
            return r;
    }
    return 0;
}

/* The hint for a line with blanks in a one-field format. */
static const char *fields_hint(const char *s, size_t n, const field *f)
{
    if (memchr(s, ',', n) || memchr(s, '"', n))
        return "more than one field (a CSV file? use --format csv --column N|NAME, urlhaus or "
               "phishtank)";
    if (br_feed_is_ip_address(f[0].s, f[0].n))
        return "more than one field (a hosts file? use --format hosts)";
    return "more than one field (an entry has no blanks)";
}

static int process_line(reader *rd, const char *s, size_t n, uint64_t lineno)
{
    if (rd->fmt) {
        br_fmt_result res;
        int r = br_fmt_line(rd->fmt, s, n, lineno, &res);
        return r < 0 ? br_error_set(rd->err, r, "out of memory") : fmt_result(rd, &res);
    }
    br_fmt_trim(&s, &n);
    n = strip_comment(rd->format, s, n);
    if (n == 0) {
        rd->st.comments++;
        return 0;
    }
    if (memchr(s, '\0', n))
        return bad_line(rd, lineno, -EINVAL, "NUL byte in the line");
    /* Secret-class data in any field refuses the whole read, even where the
     * line would be bad anyway. */
    for (size_t i = 0; i < n;) {
        while (i < n && is_blank(s[i]))
            i++;
        size_t b = i;
        while (i < n && !is_blank(s[i]))
            i++;
        if (i > b && br_url_is_email(s + b, i - b))
            return bad_line(rd, lineno, -EPERM, NULL);
    }
    field f[MAX_FIELDS] = {{0}};
    size_t nf = split_fields(s, n, f);
    if (nf > MAX_FIELDS)
        return bad_line(rd, lineno, -EINVAL, "too many fields");
    bool bad = false;
    if (rd->format == BR_FEED_HOSTS) {
        if (!br_feed_is_ip_address(f[0].s, f[0].n))
            return bad_line(rd, lineno, -EINVAL,
                            "not a hosts line: the first field is not an IP address");
        if (nf < 2)
            return bad_line(rd, lineno, -EINVAL, "hosts line without a host name");
        for (size_t i = 1; i < nf; i++) {
            if (is_ignored_host(f[i].s, f[i].n)) {
                rd->st.ignored++;
                continue;
            }
            int r = add_entry(rd, BR_FEED_HOSTS, f[i].s, f[i].n, lineno, &bad);
            if (r < 0)
                return r;
            if (bad)
                break; /* one report per line */
        }
        return 0;
    }
    if (nf > 1)
        return bad_line(rd, lineno, -EINVAL, fields_hint(s, n, f));
    br_feed_format rule = rd->format == BR_FEED_DOMAINS && !rd->lenient ? BR_FEED_DOMAINS
                                                                         : BR_FEED_URLS;
    return add_entry(rd, rule, s, n, lineno, &bad);
}

typedef struct held {
    char *text;
    size_t len;
    uint64_t lineno;
} held;

/* hosts, domains or urls for the held lines; BR_FEED_AUTO when most of
 * them do not look like URLs either. */
static br_feed_format detect_plain(const held *h, size_t n)
{
    size_t sample = 0, hosts = 0, bare = 0, url_like = 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = h[i].text;
        size_t len = h[i].len;
        br_fmt_trim(&s, &len);
        len = strip_comment(BR_FEED_HOSTS, s, len);
        if (len == 0)
            continue;
        field f[MAX_FIELDS];
        size_t nf = split_fields(s, len, f);
        sample++;
        if (nf >= 2 && nf <= MAX_FIELDS && br_feed_is_ip_address(f[0].s, f[0].n))
            hosts++;
        else if (nf == 1 && !memchr(s, '/', len) && !memchr(s, ':', len) && !memchr(s, '?', len))
            bare++;
        if (nf == 1 && !memchr(s, ',', len) && !memchr(s, '"', len))
            url_like++;
    }
    if (sample > 0 && 2 * hosts > sample)
        return BR_FEED_HOSTS;
    if (sample > 0 && bare == sample)
        return BR_FEED_DOMAINS;
    if (2 * url_like < sample)
        return BR_FEED_AUTO;
    return BR_FEED_URLS;
}

static int cannot_tell(reader *rd)
{
    char tried[256];
    br_fmt_tried(tried, sizeof(tried));
    return br_error_set(rd->err, -EINVAL,
                        "%s: cannot tell the format of this feed (tried %s); name it with "
                        "--format: " BR_FEED_FORMAT_NAMES,
                        rd->name, tried);
}

/* Settle the format: the one asked for, or the one the held lines show. */
static int decide(reader *rd, const held *h, size_t n, bool *json)
{
    br_feed_format f = rd->o->format;
    *json = false;
    if (f == BR_FEED_AUTO || f == BR_FEED_PHISHTANK) {
        const char **lines = calloc(n + 1, sizeof(*lines));
        size_t *lens = calloc(n + 1, sizeof(*lens));
        if (!lines || !lens) {
            free(lines);
            free(lens);
            return br_error_set(rd->err, -ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < n; i++) {
            lines[i] = h[i].text;
            lens[i] = h[i].len;
        }
        bool j;
        br_feed_format d = br_fmt_detect(lines, lens, n, &j);
        free(lines);
        free(lens);
        if (f == BR_FEED_PHISHTANK)
            *json = j;
        else if (d != BR_FEED_AUTO)
            f = d, *json = j;
        else if ((f = detect_plain(h, n)) == BR_FEED_AUTO)
            return cannot_tell(rd);
        else
            rd->lenient = f == BR_FEED_DOMAINS;
    }
    rd->format = f;
    switch (br_fmt_reader_of(f)) {
    case BR_FMT_READER_PLAIN:
        return 0;
    case BR_FMT_READER_LINES:
        return *json ? 0 : br_fmt_state_new(f, rd->o->column, &rd->fmt, rd->err);
    case BR_FMT_READER_NONE:
        break;
    }
    return br_error_set(rd->err, -EINVAL, "%s: no reader for the format '%s'", rd->name,
                        br_feed_format_name(f));
}

static int json_entry(void *ctx, const char *s, size_t n, uint64_t line)
{
    bool bad = false;
    return add_entry(ctx, BR_FEED_URLS, s, n, line, &bad);
}

static int json_bad(void *ctx, uint64_t line, const char *reason)
{
    return bad_line(ctx, line, -EINVAL, reason);
}

/* The JSON form: the held lines and the rest of in, parsed as a whole. */
static int read_json(reader *rd, const held *h, size_t n, FILE *in, uint64_t *lines)
{
    size_t len = 0, cap = 1 << 16;
    _cleanup_free_ char *buf = malloc(cap);
    for (size_t i = 0; buf && i < n; i++) {
        if (len + h[i].len + 1 >= cap) {
            cap = 2 * (len + h[i].len + 1);
            char *b = realloc(buf, cap);
            if (!b)
                break;
            buf = b;
        }
        memcpy(buf + len, h[i].text, h[i].len);
        len += h[i].len;
        buf[len++] = '\n';
    }
    while (buf) {
        if (len == cap) {
            char *b = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
            if (!b)
                break;
            buf = b;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, in);
        len += got;
        if (got == 0)
            break;
    }
    if (!buf || len == cap)
        return br_error_set(rd->err, -ENOMEM, "%s: out of memory", rd->name);
    *lines = 0;
    for (size_t i = 0; i < len; i++)
        *lines += buf[i] == '\n';
    if (len > 0 && buf[len - 1] != '\n')
        ++*lines;
    return br_fmt_json_read(rd->name, buf, len, json_entry, json_bad, rd, rd->err);
}

/* Strip the line end; a BOM on line 1. */
static void line_bounds(char *line, ssize_t len, uint64_t lineno, const char **s, size_t *n)
{
    size_t l = (size_t)len;
    if (l > 0 && line[l - 1] == '\n')
        l--;
    if (l > 0 && line[l - 1] == '\r')
        l--;
    const char *p = line;
    if (lineno == 1 && l >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) {
        p += 3;
        l -= 3;
    }
    *s = p;
    *n = l;
}

static int hold_line(held **hold, size_t *nheld, size_t *cap, const char *s, size_t n,
                     uint64_t lineno, br_error *err)
{
    if (*nheld == *cap) {
        size_t c = *cap ? 2 * *cap : 128;
        held *h = realloc(*hold, c * sizeof(*h));
        if (!h)
            return br_error_set(err, -ENOMEM, "out of memory");
        *hold = h;
        *cap = c;
    }
    char *copy = malloc(n + 1);
    if (!copy)
        return br_error_set(err, -ENOMEM, "out of memory");
    memcpy(copy, s, n);
    copy[n] = '\0';
    (*hold)[(*nheld)++] = (held){copy, n, lineno};
    return 0;
}

/* Settle the format, then read what was held back (and, for JSON, the rest). */
static int settle(reader *rd, held *hold, size_t *nheld, FILE *in, uint64_t *lineno)
{
    bool json = false;
    int r = decide(rd, hold, *nheld, &json);
    if (r >= 0 && json)
        r = read_json(rd, hold, *nheld, in, lineno);
    for (size_t i = 0; i < *nheld; i++) {
        if (r >= 0 && !json)
            r = process_line(rd, hold[i].text, hold[i].len, hold[i].lineno);
        free(hold[i].text);
    }
    *nheld = 0;
    return r;
}

static int read_stream(reader *rd, FILE *in)
{
    _cleanup_free_ char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    uint64_t lineno = 0;
    /* Lines held back until the format is known: up to DETECT_SAMPLE entry
     * lines (1 to tell PhishTank's CSV from its JSON), and whatever comments
     * come before them (bounded too). */
    held *hold = NULL;
    size_t nheld = 0, held_cap = 0, meaningful = 0;
    size_t need = rd->o->format == BR_FEED_AUTO        ? DETECT_SAMPLE
                  : rd->o->format == BR_FEED_PHISHTANK ? 1
                                                       : 0;
    bool deciding = true;
    int r = 0;
    rd->format = BR_FEED_URLS;
    if (need == 0) {
        deciding = false;
        r = settle(rd, NULL, &nheld, in, &lineno);
    }
    while (r >= 0 && deciding && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        const char *s;
        size_t n;
        line_bounds(line, len, lineno, &s, &n);
        r = hold_line(&hold, &nheld, &held_cap, s, n, lineno, rd->err);
        const char *t = s;
        size_t tn = n;
        br_fmt_trim(&t, &tn);
        if (tn > 0 && t[0] != '#')
            meaningful++;
        if (r >= 0 && (meaningful >= need || nheld >= DETECT_MAX_HELD)) {
            deciding = false;
            r = settle(rd, hold, &nheld, in, &lineno);
        }
    }
    if (r >= 0 && deciding) {
        deciding = false;
        r = settle(rd, hold, &nheld, in, &lineno);
    }
    while (r >= 0 && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        const char *s;
        size_t n;
        line_bounds(line, len, lineno, &s, &n);
        r = process_line(rd, s, n, lineno);
    }
    if (r >= 0 && ferror(in))
        r = br_error_set(rd->err, -EIO, "%s: read error", rd->name);
    for (size_t i = 0; i < nheld; i++)
        free(hold[i].text);
    free(hold);
    if (r >= 0 && rd->fmt) {
        br_fmt_result res;
        br_fmt_finish(rd->fmt, &res);
        r = fmt_result(rd, &res);
    }
    rd->st.lines = lineno;
    return r;
}

int br_feedset_read(br_feedset *fs, const char *path, const char *category,
                    const br_feed_opts *opts, br_feed_stats *st, br_error *err)
{
    static const br_feed_opts defaults = {0};
    reader rd = {.fs = fs, .o = opts ? opts : &defaults, .err = err};
    int r = br_feedset_category_index(fs, category ? category : BR_FEED_DEFAULT_CATEGORY, &rd.cat,
                                      err);
    if (r < 0) /* the feed that brought one category too many, by name */
        return br_error_prefix(err, r, "%s", strcmp(path, "-") == 0 ? "<stdin>" : path);
    bool is_stdin = strcmp(path, "-") == 0;
    rd.name = is_stdin ? "<stdin>" : path;
    FILE *in = is_stdin ? stdin : fopen(path, "re");
    if (!in)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    r = read_stream(&rd, in);
    br_fmt_state_free(rd.fmt);
    if (!is_stdin)
        fclose(in);
    if (st) {
        *st = rd.st;
        st->format = rd.format;
    }
    return r;
}
