/* SPDX-License-Identifier: MIT */
/* Blocklist feeds (rules in url_feed.h): format names, one entry's
 * expression, the set of entries, and reading a feed into the set line by
 * line (br_feedset_read). The formats' own parsers are url_feed_formats.c,
 * url_feed_csv.c and url_feed_json.c (url_feed_formats.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/util.h"
#include "url_canon.h"
#include "url_expr.h"
#include "url_feed.h"
#include "url_feed_formats.h"
#include "url_secret.h"

const char *br_feed_format_name(br_feed_format f)
{
#define NAME_ROW(id, name) [BR_FEED_##id] = name,
    static const char *const names[BR_FEED_FORMAT_COUNT] = {[BR_FEED_AUTO] = "auto",
                                                            BR_FEED_FORMAT_LIST(NAME_ROW)};
#undef NAME_ROW
    return (unsigned)f < BR_FEED_FORMAT_COUNT ? names[f] : "?";
}

int br_feed_format_from_name(const char *name, br_feed_format *out)
{
    for (int f = BR_FEED_AUTO; f <= BR_FEED_FORMAT_LAST; f++) {
        if (strcmp(name, br_feed_format_name((br_feed_format)f)) == 0) {
            *out = (br_feed_format)f;
            return 0;
        }
    }
    return -EINVAL;
}

bool br_feed_category_valid(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > BR_FEED_CATEGORY_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

int br_feed_split_input(const char *arg, char **path_out, char *cat_out, br_feed_format *format_out,
                        br_error *err)
{
    const char *eq = strrchr(arg, '=');
    size_t plen = eq ? (size_t)(eq - arg) : strlen(arg);
    char cat[BR_FEED_CATEGORY_MAX + 2] = BR_FEED_DEFAULT_CATEGORY;
    br_feed_format format = BR_FEED_AUTO;
    if (eq) {
        /* =CATEGORY, =CATEGORY:FORMAT or =:FORMAT (a category never holds ':') */
        const char *colon = strchr(eq + 1, ':');
        size_t clen = colon ? (size_t)(colon - eq - 1) : strlen(eq + 1);
        if (!colon || clen) /* cut past the longest category: refused as such below */
            snprintf(cat, sizeof(cat), "%.*s", (int)BR_MIN(clen, sizeof(cat) - 1), eq + 1);
        if (colon && (!format_out || br_feed_format_from_name(colon + 1, &format) < 0))
            return br_error_set(
                err, -EINVAL,
                format_out ? "'%s': the format after ':' must be one of " BR_FEED_FORMAT_NAMES
                           : "'%s': a :FORMAT is not accepted here",
                arg);
    }
    if (!br_feed_category_valid(cat))
        return br_error_set(err, -EINVAL,
                            "'%s': the category after '=' must match [a-z0-9_-]{1,32} (a path "
                            "containing '=' needs an explicit =CATEGORY)",
                            arg);
    if (plen == 0)
        return br_error_set(err, -EINVAL, "'%s': no file name before '='", arg);
    char *p = strndup(arg, plen);
    if (!p)
        return br_error_set(err, -ENOMEM, "out of memory");
    snprintf(cat_out, BR_FEED_CATEGORY_MAX + 1, "%s", cat);
    *path_out = p;
    if (format_out)
        *format_out = format;
    return 0;
}

/* ---- one entry ---- */

static bool br_feed_is_ip_address(const char *s, size_t n)
{
    char buf[INET6_ADDRSTRLEN + 16];
    if (n == 0 || n >= sizeof(buf))
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    unsigned char addr[16];
    if (inet_pton(AF_INET, buf, addr) == 1)
        return true;
    char *zone = strchr(buf, '%');
    if (zone)
        *zone = '\0';
    return inet_pton(AF_INET6, buf, addr) == 1;
}

/* A canonical host: an IPv6 literal in brackets, or [a-z0-9._-]. */
static bool canonical_host_ok(const char *h, size_t n)
{
    if (n == 0)
        return false;
    if (h[0] == '[')
        return h[n - 1] == ']';
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'))
            return false;
    }
    return true;
}

/* The most specific expression of the URL free of e-mail addresses
 * (url_secret.h): 1 when the URL held one and was cut down to it. */
static int url_expression(const char *entry, size_t len, char **expr, br_error *err)
{
    br_url_exprs ex = {0};
    size_t dropped = 0;
    int r = br_url_lookup_expressions(entry, len, BR_URL_SB_HOST_COMPONENTS, &ex, &dropped, err);
    if (r == -EPERM)
        return br_error_set(err, -EPERM, BR_FEED_SECRET_TEXT);
    if (r < 0)
        return r == -ENOMEM ? br_error_set(err, r, "out of memory") : r;
    char *e = strdup(ex.expr[0]);
    br_url_exprs_clear(&ex);
    if (!e)
        return br_error_set(err, -ENOMEM, "out of memory");
    const char *slash = strchr(e, '/');
    if (!slash || !canonical_host_ok(e, (size_t)(slash - e))) {
        free(e);
        return br_error_set(err, -EINVAL, "the host is not a DNS name or an IP address");
    }
    *expr = e;
    return dropped > 0;
}

static int host_expression(const char *entry, size_t len, char **expr, br_error *err)
{
    /* A name: letters, digits, '-', '.', '_', or UTF-8 (IDN); an IPv6
     * address gets its brackets. Anything else (a path, a port, a wildcard,
     * userinfo) is not a host. */
    _cleanup_free_ char *url = NULL;
    if (memchr(entry, ':', len)) {
        const char *s = entry;
        size_t n = len;
        if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
            s++;
            n -= 2;
        }
        if (!br_feed_is_ip_address(s, n) || memchr(s, '%', n))
            return br_error_set(err, -EINVAL,
                                "not a host name (a domain entry has no scheme, "
                                "port or path)");
        if (asprintf(&url, "http://[%.*s]/", (int)n, s) < 0)
            return br_error_set(err, -ENOMEM, "out of memory");
    } else {
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)entry[i];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.' || c == '_' || c >= 0x80))
                return br_error_set(err, -EINVAL,
                                    c == '/' ? "a domain entry has no path (use --format urls)"
                                             : "not a host name");
        }
        if (asprintf(&url, "http://%.*s/", (int)len, entry) < 0)
            return br_error_set(err, -ENOMEM, "out of memory");
    }
    _cleanup_free_ char *canon = NULL;
    int r = br_url_canonicalize(url, strlen(url), &canon, err);
    if (r == -EPERM)
        return br_error_set(err, -EPERM, BR_FEED_SECRET_TEXT);
    if (r < 0)
        return r == -ENOMEM ? br_error_set(err, r, "out of memory") : r;
    const char *h = strstr(canon, "://");
    h = h ? h + 3 : canon;
    const char *slash = strchr(h, '/');
    size_t hlen = slash ? (size_t)(slash - h) : strlen(h);
    if (!canonical_host_ok(h, hlen))
        return br_error_set(err, -EINVAL, "not a host name");
    if (asprintf(expr, "%.*s/", (int)hlen, h) < 0)
        return br_error_set(err, -ENOMEM, "out of memory");
    return 0;
}

int br_feed_entry_expression(br_feed_format format, const char *entry, size_t len, char **expr,
                             br_error *err)
{
    if (len == 0)
        return br_error_set(err, -EINVAL, "empty entry");
    if (br_url_is_email(entry, len))
        return br_error_set(err, -EPERM, BR_FEED_SECRET_TEXT);
    if (memchr(entry, '\0', len))
        return br_error_set(err, -EINVAL, "NUL byte in the entry");
    if (format == BR_FEED_HOSTS || format == BR_FEED_DOMAINS)
        return host_expression(entry, len, expr, err);
    return url_expression(entry, len, expr, err);
}

/* ---- the set ---- */

struct br_feedset {
    br_feed_entry *e;
    size_t n, cap;
    unsigned max_domain_labels;
    char cats[BR_FEED_MAX_CATEGORIES][BR_FEED_CATEGORY_MAX + 1];
    unsigned ncats;
    bool keys_only; /* br_feedset_add_key added an entry without its text */
};

int br_feedset_new(br_feedset **out)
{
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : -ENOMEM;
}

void br_feedset_free(br_feedset *fs)
{
    if (!fs)
        return;
    free(fs->e);
    free(fs);
}

/* The index of category in the set, added when new: 0, or -EINVAL for a
 * name that does not match [a-z0-9_-]{1,32}, -E2BIG past
 * BR_FEED_MAX_CATEGORIES. */
static int br_feedset_category_index(br_feedset *fs, const char *category, uint8_t *idx,
                                     br_error *err)
{
    if (!br_feed_category_valid(category))
        return br_error_set(err, -EINVAL, "category '%s' does not match [a-z0-9_-]{1,32}",
                            category);
    for (unsigned i = 0; i < fs->ncats; i++) {
        if (strcmp(fs->cats[i], category) == 0) {
            *idx = (uint8_t)i;
            return 0;
        }
    }
    if (fs->ncats == BR_FEED_MAX_CATEGORIES)
        return br_error_set(err, -E2BIG,
                            "category %s is one more than the %d categories a filter's code holds",
                            category, BR_FEED_MAX_CATEGORIES);
    snprintf(fs->cats[fs->ncats], sizeof(fs->cats[0]), "%s", category);
    *idx = (uint8_t)fs->ncats++;
    return 0;
}

/* Append one entry (its expression's hash, the category index): 0, -E2BIG
 * or -ENOMEM. */
static int br_feedset_push(br_feedset *fs, const uint8_t hash[BR_SHA256_LEN], uint64_t quick,
                           uint8_t cat, br_error *err)
{
    if (fs->n == fs->cap) {
        if (fs->cap >= UINT32_MAX / 2)
            return br_error_set(err, -E2BIG, "too many entries");
        size_t cap = fs->cap ? 2 * fs->cap : 1024;
        br_feed_entry *e = realloc(fs->e, cap * sizeof(*e));
        if (!e)
            return br_error_set(err, -ENOMEM, "out of memory");
        fs->e = e;
        fs->cap = cap;
    }
    br_feed_entry *x = &fs->e[fs->n];
    memcpy(x->hash, hash, BR_SHA256_LEN);
    x->quick = quick;
    x->seq = (uint32_t)fs->n;
    x->category = cat;
    fs->n++;
    return 0;
}

int br_feedset_add_key(br_feedset *fs, const uint8_t hash[BR_SHA256_LEN], const char *category,
                       br_error *err)
{
    uint8_t cat;
    int r = br_feedset_category_index(fs, category, &cat, err);
    fs->keys_only = true;
    return r < 0 ? r : br_feedset_push(fs, hash, 0, cat, err);
}

bool br_feedset_has_quick(const br_feedset *fs)
{
    return !fs->keys_only;
}

static int cmp_entry(const void *a, const void *b)
{
    const br_feed_entry *x = a, *y = b;
    int c = memcmp(x->hash, y->hash, BR_SHA256_LEN);
    if (c)
        return c;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void br_feedset_finish(br_feedset *fs, br_feedset_stats *st)
{
    br_feedset_stats s = {0};
    if (fs->n)
        qsort(fs->e, fs->n, sizeof(*fs->e), cmp_entry);
    size_t o = 0;
    for (size_t i = 0; i < fs->n; i++) {
        if (o > 0 && memcmp(fs->e[o - 1].hash, fs->e[i].hash, BR_SHA256_LEN) == 0) {
            if (fs->e[o - 1].category == fs->e[i].category)
                s.duplicates++;
            else
                s.conflicts++;
            continue;
        }
        fs->e[o++] = fs->e[i];
    }
    fs->n = o;
    s.distinct = o;
    if (st)
        *st = s;
}

/* A domain entry "host/" blocks its subdomains: lookups must try host
 * suffixes of as many labels as it has (an IP address has no suffixes). */
static void br_feedset_note_domain_labels(br_feedset *fs, const char *expr)
{
    if (expr[0] == '[')
        return;
    unsigned labels = 1;
    for (const char *p = expr; *p && *p != '/'; p++)
        labels += *p == '.';
    if (labels > fs->max_domain_labels)
        fs->max_domain_labels = labels;
}

unsigned br_feedset_max_domain_labels(const br_feedset *fs)
{
    return fs->max_domain_labels;
}

size_t br_feedset_count(const br_feedset *fs)
{
    return fs->n;
}

const br_feed_entry *br_feedset_entries(const br_feedset *fs)
{
    return fs->e;
}

const char *br_feedset_category(const br_feedset *fs, unsigned index)
{
    return index < fs->ncats ? fs->cats[index] : NULL;
}

unsigned br_feedset_category_count(const br_feedset *fs)
{
    return fs->ncats;
}

/* ---- reading a feed ---- */

/* The format asked for or detected from the first lines held back, then
 * line by line (the formats of url_feed_formats.h, or URL lists, hosts
 * files and domain lists here), each entry's expression hashed into the
 * set. */
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
        if (snprintf(msg, sizeof(msg), "%s:%llu: %s", rd->name, (unsigned long long)lineno,
                     reason) < 0)
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
    r = br_feedset_push(rd->fs, h, br_xxh3_64(expr, strlen(expr)), rd->cat, rd->err);
    if (r < 0)
        return r;
    if (rd->o->on_entry && (r = rd->o->on_entry(rd->o->entry_ctx, expr, rd->cat)) < 0)
        return br_error_set(rd->err, r, "%s:%llu: %s", rd->name, (unsigned long long)lineno,
                            strerror(-r));
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
    br_feed_format rule =
        rd->format == BR_FEED_DOMAINS && !rd->lenient ? BR_FEED_DOMAINS : BR_FEED_URLS;
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

int br_feedset_read(br_feedset *fs, FILE *in, const char *name, const char *category,
                    const br_feed_opts *opts, br_feed_stats *st, br_error *err)
{
    static const br_feed_opts defaults = {0};
    reader rd = {.fs = fs, .o = opts ? opts : &defaults, .err = err, .name = name};
    int r =
        br_feedset_category_index(fs, category ? category : BR_FEED_DEFAULT_CATEGORY, &rd.cat, err);
    if (r < 0) /* the feed that brought one category too many, by name */
        return br_error_prefix(err, r, "%s", name);
    r = read_stream(&rd, in);
    br_fmt_state_free(rd.fmt);
    if (st) {
        *st = rd.st;
        st->format = rd.format;
    }
    return r;
}
