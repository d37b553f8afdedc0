/* SPDX-License-Identifier: MIT */
/* Blocklist feeds (rules in url_feed.h): format names, one entry's
 * expression, and the set of entries. Reading a feed line by line is
 * url_feed_read.c; the two share url_feed_int.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "url_canon.h"
#include "url_expr.h"
#include "url_feed.h"
#include "url_feed_int.h"
#include "url_secret.h"

const char *br_feed_format_name(br_feed_format f)
{
#define NAME_ROW(id, name) [BR_FEED_##id] = name,
    static const char *const names[BR_FEED_FORMAT_COUNT] = {
        [BR_FEED_AUTO] = "auto",
        BR_FEED_FORMAT_LIST(NAME_ROW)
    };
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

int br_feed_split_arg(const char *arg, char **path_out, char *cat_out, br_error *err)
{
    const char *eq = strrchr(arg, '=');
    size_t plen = eq ? (size_t)(eq - arg) : strlen(arg);
    const char *cat = eq ? eq + 1 : BR_FEED_DEFAULT_CATEGORY;
    if (!br_feed_category_valid(cat))
        return br_error_set(err, -EINVAL,
                            "'%s': the category after '=' must match [a-z0-9_-]{1,32} (a path "
                            "containing '=' needs an explicit =CATEGORY)", arg);
    if (plen == 0)
        return br_error_set(err, -EINVAL, "'%s': no file name before '='", arg);
    char *p = strndup(arg, plen);
    if (!p)
        return br_error_set(err, -ENOMEM, "out of memory");
    snprintf(cat_out, BR_FEED_CATEGORY_MAX + 1, "%s", cat);
    *path_out = p;
    return 0;
}

/* ---- one entry ---- */

bool br_feed_is_ip_address(const char *s, size_t n)
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
            return br_error_set(err, -EINVAL, "not a host name (a domain entry has no scheme, "
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

int br_feedset_category_index(br_feedset *fs, const char *category, uint8_t *idx, br_error *err)
{
    if (!br_feed_category_valid(category))
        return br_error_set(err, -EINVAL, "category '%s' does not match [a-z0-9_-]{1,32}", category);
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

int br_feedset_push(br_feedset *fs, const uint8_t hash[BR_SHA256_LEN], uint8_t cat, br_error *err)
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
    x->seq = (uint32_t)fs->n;
    x->category = cat;
    fs->n++;
    return 0;
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

void br_feedset_note_domain_labels(br_feedset *fs, const char *expr)
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
