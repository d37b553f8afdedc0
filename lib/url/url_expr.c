/* SPDX-License-Identifier: MIT */
/* Lookup expressions of a canonical URL ("Suffix/Prefix Expressions" of Safe
 * Browsing's "URLs and Hashing"), and their SHA-256. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "url_expr.h"
#include "core/util.h"

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

#if defined(__SSE2__)
/* Bit k set when p[k] == c, for the 16 bytes at p. */
static unsigned eq16(const char *p, char c)
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c)));
}
#endif

typedef struct span {
    const char *p;
    size_t n;
    bool domain_only; /* a host suffix of more than 5 components: "suffix/" alone */
} span;

static void add_span(span *a, size_t *na, span x)
{
    for (size_t i = 0; i < *na; i++)
        if (a[i].n == x.n && memcmp(a[i].p, x.p, x.n) == 0)
            return;
    a[(*na)++] = x;
}

/* Host suffixes: the exact host; then, unless it is an IP address, the
 * suffixes of the last max_comps components, longest first, down to two
 * components (never the bare top-level domain). A suffix (not the exact
 * host) of more than five components can only match a domain entry. */
static size_t host_spans(const char *host, size_t host_len, size_t max_comps, span *hosts)
{
    size_t nh = 0;
    hosts[nh++] = (span){host, host_len, false};
    if (is_ip_host(host, host_len))
        return nh;
    /* start[c]: where the last c components start (past the c-th dot
     * from the end), for c up to max_comps. */
    size_t start[MAX_HOSTS + 1], comps = 1, i = host_len;
#if defined(__SSE2__)
    /* 16 bytes at a time from the end: the dots' bits, highest first. */
    for (; i >= 16 && comps <= max_comps; i -= 16) {
        unsigned m = eq16(host + i - 16, '.');
        for (; m && comps <= max_comps; m &= ~(1u << (31 - __builtin_clz(m))))
            start[comps++] = i - 16 + (size_t)(31 - __builtin_clz(m)) + 1;
    }
#endif
    for (; i > 0 && comps <= max_comps; i--)
        if (host[i - 1] == '.')
            start[comps++] = i;
    for (size_t k = comps - 1; k >= 2; k--)
        add_span(hosts, &nh,
                 (span){host + start[k], host_len - start[k], k > BR_URL_SB_HOST_COMPONENTS});
    return nh;
}

/* Host suffixes of up to host_labels components (below 5: 5; at most 126,
 * never the bare TLD): a canonical host has at most 127 labels, so at most
 * 126 suffixes, and a longer host that is not canonical gets no more, or its
 * expressions would not fit in br_url_exprs.expr. */
static size_t max_comps_of(unsigned host_labels)
{
    return host_labels < BR_URL_SB_HOST_COMPONENTS ? BR_URL_SB_HOST_COMPONENTS
           : host_labels >= BR_URL_MAX_HOST_LABELS ? BR_URL_MAX_HOST_LABELS - 1
                                                   : host_labels;
}

size_t br_url_host_suffixes(const char *host, size_t len, unsigned host_labels,
                            size_t start[BR_URL_MAX_HOST_LABELS])
{
    span hosts[MAX_HOSTS];
    size_t nh = host_spans(host, len, max_comps_of(host_labels), hosts);
    for (size_t i = 0; i < nh; i++)
        start[i] = (size_t)(hosts[i].p - host);
    return nh;
}

/* Every host suffix times its paths, into one allocation: its size first,
 * then the strings. A host suffix ends where the path starts, and a path
 * span starts there: an expression is one piece of the canonical URL. */
static int add_exprs(br_url_exprs *out, const span *hosts, size_t nh, const span *paths, size_t np,
                     span root, br_error *err)
{
    size_t size = 0;
    for (size_t h = 0; h < nh; h++)
        for (size_t p = 0; p < (hosts[h].domain_only ? 1 : np); p++)
            size += hosts[h].n + (hosts[h].domain_only ? root : paths[p]).n + 1;
    char *at = out->block = malloc(size);
    out->block_size = size;
    if (!at)
        return br_error_set(err, -ENOMEM, "out of memory");
    for (size_t h = 0; h < nh; h++) {
        for (size_t p = 0; p < (hosts[h].domain_only ? 1 : np); p++) {
            size_t n = hosts[h].n + (hosts[h].domain_only ? root : paths[p]).n;
            memcpy(at, hosts[h].p, n);
            at[n] = '\0';
            out->len[out->n] = n;
            out->expr[out->n++] = at;
            at += n + 1;
        }
    }
    return 0;
}

/* Where the host starts in canonical[0..len) (past "scheme://"), or an
 * error: the scheme is the ASCII letters, digits, '+', '-' and '.' before
 * the first "://". */
static int skip_scheme(const char *canonical, size_t len, size_t *host, br_error *err)
{
    size_t k = 0;
    while (k < len && ((canonical[k] >= 'a' && canonical[k] <= 'z') ||
                       (canonical[k] >= '0' && canonical[k] <= '9') || canonical[k] == '+' ||
                       canonical[k] == '-' || canonical[k] == '.'))
        k++;
    if (k > 0 && len - k >= 3 && memcmp(canonical + k, "://", 3) == 0) {
        *host = k + 3;
        return 0;
    }
    /* No "://" right after a scheme: the first one is further on (and a
     * byte that is not a scheme's before it), at the start, or nowhere. */
    const char *sep = memmem(canonical, len, "://", 3);
    if (!sep || sep == canonical)
        return br_error_set(err, -EINVAL, "not a canonical URL (no scheme)");
    return br_error_set(err, -EINVAL, "not a canonical URL (scheme)");
}

int br_url_exprs_of(const char *canonical, size_t len, unsigned host_labels, br_url_exprs *out,
                    br_error *err)
{
    out->n = 0;
    out->block = NULL;
    size_t h = 0;
    int r = skip_scheme(canonical, len, &h, err);
    if (r < 0)
        return r;
    const char *host = canonical + h;
    const char *path = memchr(host, '/', len - h);
    if (!path || path == host)
        return br_error_set(err, -EINVAL, "not a canonical URL (no host or no path)");
    size_t host_len = (size_t)(path - host);
    size_t full_len = len - h - host_len;
    const char *q = memchr(path, '?', full_len);
    size_t path_len = q ? (size_t)(q - path) : full_len;

    span hosts[MAX_HOSTS];
    size_t nh = host_spans(host, host_len, max_comps_of(host_labels), hosts);

    /* Paths: with the query (unless it is empty: "/?" adds nothing, as
     * Chromium does), without it, then the prefixes ending at each of the
     * first four slashes, longest first. */
    span paths[MAX_PATHS];
    size_t np = 0;
    if (!(q && path_len + 1 == full_len))
        add_span(paths, &np, (span){path, full_len, false});
    add_span(paths, &np, (span){path, path_len, false});
    size_t slash_end[MAX_PATH_PREFIXES], ns = 0, i = 0;
#if defined(__SSE2__)
    for (; i + 16 <= path_len && ns < MAX_PATH_PREFIXES; i += 16)
        for (unsigned m = eq16(path + i, '/'); m && ns < MAX_PATH_PREFIXES; m &= m - 1)
            slash_end[ns++] = i + (size_t)__builtin_ctz(m) + 1;
#endif
    for (; i < path_len && ns < MAX_PATH_PREFIXES; i++)
        if (path[i] == '/')
            slash_end[ns++] = i + 1;
    while (ns > 0)
        add_span(paths, &np, (span){path, slash_end[--ns], false});

    span root = {path, 1, false};
    return add_exprs(out, hosts, nh, paths, np, root, err);
}

void br_url_exprs_clear(br_url_exprs *e)
{
    /* Pieces of a URL: not left in freed memory. */
    if (e->block)
        br_wipe(e->block, e->block_size);
    free(e->block);
    e->block = NULL;
    e->n = 0;
}

int br_url_expr_hash(const char *expr, uint8_t out[BR_SHA256_LEN])
{
    return br_sha256(expr, strlen(expr), out);
}
