/* SPDX-License-Identifier: MIT */
/* Lookup expressions of a canonical URL ("Suffix/Prefix Expressions" of Safe
 * Browsing's "URLs and Hashing"), and their SHA-256. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "url_expr.h"

#define MAX_HOSTS BR_URL_MAX_HOST_LABELS
#define MAX_PATHS 6
#define MAX_PATH_PREFIXES 4

/* A canonical IP host: "[...]" (IPv6) or dotted-quad decimal. Canonical
 * hostnames never look like an IPv4 address: canonicalization converted
 * every such form. */
static bool is_ip_host(const char *h, size_t n)
{
    if (n > 0 && h[0] == '[')
        return true;
    int dots = 0, digits = 0;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (h[i] == '.') {
            if (digits == 0)
                return false;
            dots++;
            digits = 0;
            v = 0;
        } else if (h[i] >= '0' && h[i] <= '9') {
            v = v * 10 + (unsigned)(h[i] - '0');
            if (++digits > 3 || v > 255)
                return false;
        } else {
            return false;
        }
    }
    return dots == 3 && digits > 0;
}

typedef struct span {
    const char *p;
    size_t n;
} span;

static void add_span(span *a, size_t *na, const char *p, size_t n)
{
    for (size_t i = 0; i < *na; i++)
        if (a[i].n == n && memcmp(a[i].p, p, n) == 0)
            return;
    a[(*na)++] = (span){p, n};
}

/* Host suffixes: the exact host; then, unless it is an IP address, the
 * suffixes of the last max_comps components, longest first, down to two
 * components (never the bare top-level domain). */
static size_t host_spans(const char *host, size_t host_len, size_t max_comps, span *hosts)
{
    size_t nh = 0;
    hosts[nh++] = (span){host, host_len};
    if (is_ip_host(host, host_len))
        return nh;
    size_t comps = 1;
    for (size_t i = 0; i < host_len; i++)
        comps += host[i] == '.';
    size_t k = comps - 1 < max_comps ? comps - 1 : max_comps;
    for (; k >= 2; k--) {
        /* Start of the last k components. */
        size_t seen = 0, start = host_len;
        while (start > 0) {
            if (host[start - 1] == '.' && ++seen == k)
                break;
            start--;
        }
        add_span(hosts, &nh, host + start, host_len - start);
    }
    return nh;
}

/* How many components a host suffix has. */
static size_t components(span h)
{
    size_t c = 1;
    for (size_t i = 0; i < h.n; i++)
        c += h.p[i] == '.';
    return c;
}

/* The expression h + p at *at in out's block. */
static void add_expr(br_url_exprs *out, char **at, span h, span p)
{
    char *e = *at;
    memcpy(e, h.p, h.n);
    memcpy(e + h.n, p.p, p.n);
    e[h.n + p.n] = '\0';
    out->expr[out->n++] = e;
    *at = e + h.n + p.n + 1;
}

/* Every host suffix times its paths (a suffix of more than five components,
 * not the exact host, can only match a domain entry: "suffix/" alone), into
 * one allocation: its size first, then the strings. */
static int add_exprs(br_url_exprs *out, const span *hosts, size_t nh, const span *paths, size_t np,
                     span root, br_error *err)
{
    bool domain_only[MAX_HOSTS];
    size_t size = 0;
    for (size_t h = 0; h < nh; h++) {
        domain_only[h] = h > 0 && components(hosts[h]) > BR_URL_SB_HOST_COMPONENTS;
        for (size_t p = 0; p < (domain_only[h] ? 1 : np); p++)
            size += hosts[h].n + (domain_only[h] ? root : paths[p]).n + 1;
    }
    char *at = out->block = malloc(size);
    if (!at)
        return br_error_set(err, -ENOMEM, "out of memory");
    for (size_t h = 0; h < nh; h++)
        for (size_t p = 0; p < (domain_only[h] ? 1 : np); p++)
            add_expr(out, &at, hosts[h], domain_only[h] ? root : paths[p]);
    return 0;
}

int br_url_expressions_labels(const char *canonical, unsigned host_labels, br_url_exprs *out,
                              br_error *err)
{
    out->n = 0;
    out->block = NULL;
    const char *sep = strstr(canonical, "://");
    if (!sep || sep == canonical)
        return br_error_set(err, -EINVAL, "not a canonical URL (no scheme)");
    for (const char *p = canonical; p < sep; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '+' || *p == '-' ||
              *p == '.'))
            return br_error_set(err, -EINVAL, "not a canonical URL (scheme)");
    const char *host = sep + 3;
    const char *path = strchr(host, '/');
    if (!path || path == host)
        return br_error_set(err, -EINVAL, "not a canonical URL (no host or no path)");
    size_t host_len = (size_t)(path - host);
    size_t full_len = strlen(path);
    const char *q = strchr(path, '?');
    size_t path_len = q ? (size_t)(q - path) : full_len;

    size_t max_comps = host_labels < BR_URL_SB_HOST_COMPONENTS ? BR_URL_SB_HOST_COMPONENTS
                       : host_labels > BR_URL_MAX_HOST_LABELS ? BR_URL_MAX_HOST_LABELS
                                                              : host_labels;
    span hosts[MAX_HOSTS];
    size_t nh = host_spans(host, host_len, max_comps, hosts);

    /* Paths: with the query (unless it is empty: "/?" adds nothing, as
     * Chromium does), without it, then the prefixes ending at each of the
     * first four slashes, longest first. */
    span paths[MAX_PATHS];
    size_t np = 0;
    if (!(q && q[1] == '\0'))
        add_span(paths, &np, path, full_len);
    add_span(paths, &np, path, path_len);
    size_t slash_end[MAX_PATH_PREFIXES], ns = 0;
    for (size_t i = 0; i < path_len && ns < MAX_PATH_PREFIXES; i++)
        if (path[i] == '/')
            slash_end[ns++] = i + 1;
    while (ns > 0)
        add_span(paths, &np, path, slash_end[--ns]);

    span root = {path, 1};
    return add_exprs(out, hosts, nh, paths, np, root, err);
}

int br_url_expressions(const char *canonical, br_url_exprs *out, br_error *err)
{
    return br_url_expressions_labels(canonical, BR_URL_SB_HOST_COMPONENTS, out, err);
}

void br_url_exprs_clear(br_url_exprs *e)
{
    free(e->block);
    e->block = NULL;
    e->n = 0;
}

int br_url_expr_hash(const char *expr, uint8_t out[BR_SHA256_LEN])
{
    return br_sha256(expr, strlen(expr), out);
}
