/* SPDX-License-Identifier: MIT */
/* Lookup expressions of a canonical URL ("Suffix/Prefix Expressions" of Safe
 * Browsing's "URLs and Hashing"), and their SHA-256. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "url.h"

#define MAX_HOSTS 5
#define MAX_PATHS 6
#define MAX_HOST_COMPONENTS 5 /* suffixes start from the last five */
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

int br_url_expressions(const char *canonical, br_url_exprs *out, br_error *err)
{
    out->n = 0;
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

    /* Hosts: the exact host; then, unless it is an IP address, the suffixes
     * of the last five components, longest first, down to two components
     * (never the bare top-level domain). */
    span hosts[MAX_HOSTS];
    size_t nh = 0;
    hosts[nh++] = (span){host, host_len};
    if (!is_ip_host(host, host_len)) {
        size_t comps = 1;
        for (size_t i = 0; i < host_len; i++)
            comps += host[i] == '.';
        size_t k = comps - 1 < MAX_HOST_COMPONENTS ? comps - 1 : MAX_HOST_COMPONENTS;
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
    }

    /* Paths: with the query, without it, then the prefixes ending at each of
     * the first four slashes, longest first. */
    span paths[MAX_PATHS];
    size_t np = 0;
    add_span(paths, &np, path, full_len);
    add_span(paths, &np, path, path_len);
    size_t slash_end[MAX_PATH_PREFIXES], ns = 0;
    for (size_t i = 0; i < path_len && ns < MAX_PATH_PREFIXES; i++)
        if (path[i] == '/')
            slash_end[ns++] = i + 1;
    while (ns > 0)
        add_span(paths, &np, path, slash_end[--ns]);

    for (size_t h = 0; h < nh; h++) {
        for (size_t p = 0; p < np; p++) {
            char *e = malloc(hosts[h].n + paths[p].n + 1);
            if (!e) {
                br_url_exprs_clear(out);
                return br_error_set(err, -ENOMEM, "out of memory");
            }
            memcpy(e, hosts[h].p, hosts[h].n);
            memcpy(e + hosts[h].n, paths[p].p, paths[p].n);
            e[hosts[h].n + paths[p].n] = '\0';
            out->expr[out->n++] = e;
        }
    }
    return 0;
}

void br_url_exprs_clear(br_url_exprs *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->expr[i]);
    e->n = 0;
}

int br_url_expr_hash(const char *expr, uint8_t out[BR_SHA256_LEN])
{
    return br_sha256(expr, strlen(expr), out);
}
