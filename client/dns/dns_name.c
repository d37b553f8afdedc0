/* SPDX-License-Identifier: MIT */
/* DNS query name to filter keys (dns_name.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "dns_name.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* "http://" + 253 bytes + "/": what the URL canonicalization is given;
 * and room for lower_scan's last 16-byte store. */
#define URL_ROOM (7 + BR_URL_MAX_HOST + 2 + 16)

static bool host_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

/* One byte of the presentation form at name[*i]: "\DDD" (decimal, at most
 * 255), "\X", or itself. -1 for a bad escape. */
static int next_byte(const char *name, size_t len, size_t *i)
{
    unsigned char c = (unsigned char)name[(*i)++];
    if (c != '\\')
        return c;
    if (*i >= len)
        return -1;
    unsigned char d = (unsigned char)name[*i];
    if (d < '0' || d > '9') {
        (*i)++;
        return d;
    }
    if (len - *i < 3)
        return -1;
    int v = 0;
    for (int k = 0; k < 3; k++) {
        unsigned char x = (unsigned char)name[(*i)++];
        if (x < '0' || x > '9')
            return -1;
        v = v * 10 + (x - '0');
    }
    return v <= 255 ? v : -1;
}

/* The unescaped name into url as "http://NAME/", checked label by label;
 * the escaped dot "\." is a byte of a label, and so refused. */
static int to_url(const char *name, size_t len, char *url, size_t *url_len)
{
    if (len > 0 && name[len - 1] == '.' && !(len >= 2 && name[len - 2] == '\\'))
        len--; /* the root label; "\\." is an escaped dot, refused below */
    memcpy(url, "http://", 7);
    size_t o = 7, label = 0;
    for (size_t i = 0; i < len;) {
        bool dot = name[i] == '.';
        int c = next_byte(name, len, &i);
        if (dot) {
            if (label == 0)
                return -EINVAL; /* empty label */
            label = 0;
        } else if (c < 0 || !host_byte((unsigned char)c) || ++label > BR_URL_MAX_LABEL) {
            return -EINVAL;
        }
        if (o - 7 >= BR_URL_MAX_HOST)
            return -EINVAL;
        url[o++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c); /* canonical hosts are lowercase */
    }
    if (label == 0)
        return -EINVAL; /* empty name, or a name ending in ".." */
    url[o++] = '/';
    *url_len = o;
    return 0;
}

#if !defined(__SSE2__)
/* A host byte lowercased (letters, digits, '-', '_'), or 0: one load. */
#define LC1(c)                                                                                     \
    ((c) >= 'A' && (c) <= 'Z' ? (c) + 32                                                           \
     : ((c) >= 'a' && (c) <= 'z') || ((c) >= '0' && (c) <= '9') || (c) == '-' || (c) == '_' ? (c)  \
                                                                                            : 0)
#define LC4(c) LC1(c), LC1((c) + 1), LC1((c) + 2), LC1((c) + 3)
#define LC16(c) LC4(c), LC4((c) + 4), LC4((c) + 8), LC4((c) + 12)
#define LC64(c) LC16(c), LC16((c) + 16), LC16((c) + 32), LC16((c) + 48)
static const unsigned char host_lower[256] = {LC64(0), LC64(64), LC64(128), LC64(192)};
#endif

/* Where the dots of the host in url are, as to_url_plain finds them. */
typedef struct dots {
    size_t n;
    uint8_t at[BR_URL_MAX_HOST]; /* offsets in the host (< 253) */
} dots;

#if defined(__SSE2__)
/* Bytes of c in [lo, hi] (signed compares: bytes above 0x7f are in none). */
static __m128i in_range(__m128i c, char lo, char hi)
{
    return _mm_and_si128(_mm_cmpgt_epi8(c, _mm_set1_epi8((char)(lo - 1))),
                         _mm_cmplt_epi8(c, _mm_set1_epi8((char)(hi + 1))));
}

/* name[0..len) (len <= 253) lowercased into o[0..len) (16 bytes a step:
 * o has room for 15 more), the dots noted in d, up to the first byte that
 * is neither a host byte nor a dot: its index, or len. */
static size_t lower_scan(const char *name, size_t len, char *o, dots *d)
{
    char buf[BR_URL_MAX_HOST + 16];
    memcpy(buf, name, len);
    memset(buf + len, 0, 16);
    for (size_t i = 0; i < len; i += 16) {
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(buf + i));
        __m128i up = in_range(c, 'A', 'Z'), dot = _mm_cmpeq_epi8(c, _mm_set1_epi8('.'));
        __m128i ok = _mm_or_si128(_mm_or_si128(up, in_range(c, 'a', 'z')),
                                  _mm_or_si128(in_range(c, '0', '9'), dot));
        ok = _mm_or_si128(ok, _mm_or_si128(_mm_cmpeq_epi8(c, _mm_set1_epi8('-')),
                                           _mm_cmpeq_epi8(c, _mm_set1_epi8('_'))));
        _mm_storeu_si128((__m128i *)(void *)(o + i),
                         _mm_add_epi8(c, _mm_and_si128(up, _mm_set1_epi8(0x20))));
        unsigned in = len - i < 16 ? (1u << (len - i)) - 1 : 0xffffu;
        unsigned bad = ~(unsigned)_mm_movemask_epi8(ok) & in;
        unsigned dm = (unsigned)_mm_movemask_epi8(dot) & in;
        if (bad)
            dm &= (1u << __builtin_ctz(bad)) - 1;
        for (; dm; dm &= dm - 1)
            d->at[d->n++] = (uint8_t)(i + (size_t)__builtin_ctz(dm));
        if (bad)
            return i + (size_t)__builtin_ctz(bad);
    }
    return len;
}
#else
/* name[0..len) lowercased into o[0..len), the dots noted in d, up to the
 * first byte that is neither a host byte nor a dot: its index, or len. */
static size_t lower_scan(const char *name, size_t len, char *o, dots *d)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i], v = host_lower[c];
        if (v) {
            o[i] = (char)v;
        } else if (c == '.') {
            o[i] = '.';
            d->at[d->n++] = (uint8_t)i;
        } else {
            return i;
        }
    }
    return len;
}
#endif

/* The label name[start..end) of a plain name: -EINVAL when it is empty or
 * longer than 63 bytes; *a_label set when it starts with "xn--". */
static int plain_label(const char *name, size_t start, size_t end, bool *a_label)
{
    size_t n = end - start;
    if (n == 0 || n > BR_URL_MAX_LABEL)
        return -EINVAL; /* an empty label, or a name ending in ".." */
    if (n >= 4 && (name[start] | 0x20) == 'x' && (name[start + 1] | 0x20) == 'n' &&
        name[start + 2] == '-' && name[start + 3] == '-')
        *a_label = true;
    return 0;
}

/* The usual name, as to_url makes it: 1 and url filled, 0 when the name
 * needs to_url (an escape, or longer than a host once unescaped might be),
 * -EINVAL when it is not a host name. *last: where the last label starts
 * in url; *a_label: whether a label starts with "xn--"; d: the host's
 * dots. A name with an escape is to_url's whole, whatever comes before it
 * (to_url refuses what this would). */
static int to_url_plain(const char *name, size_t len, char *url, size_t *url_len, size_t *last,
                        bool *a_label, dots *d)
{
    d->n = 0;
    if (len > 0 && name[len - 1] == '.')
        len--; /* the root label ("\\." ends in an escape: to_url's) */
    if (len > BR_URL_MAX_HOST)
        return 0;
    memcpy(url, "http://", 7);
    size_t stop = lower_scan(name, len, url + 7, d);
    if (stop < len)
        return name[stop] == '\\' ? 0 : -EINVAL;
    size_t start = 0; /* of each label */
    *a_label = false;
    for (size_t k = 0; k < d->n; k++) {
        if (plain_label(name, start, d->at[k], a_label) < 0)
            return -EINVAL;
        start = (size_t)d->at[k] + 1;
    }
    if (plain_label(name, start, len, a_label) < 0)
        return -EINVAL;
    *last = 7 + start;
    url[7 + len] = '/';
    *url_len = 7 + len + 1;
    return 1;
}

/* Whether a label of host[0..n) is an A-label ("xn--"). */
static bool has_a_label(const char *host, size_t n)
{
    for (size_t i = 0; i + 4 <= n; i++)
        if ((i == 0 || host[i - 1] == '.') && memcmp(host + i, "xn--", 4) == 0)
            return true;
    return false;
}

/* Whether host[i..n) (lowercase letters, digits, '-', '_' and single dots,
 * as to_url leaves it; i where its last label starts; a_label: whether a
 * label is an A-label) is already what the URL canonicalization makes of
 * it: true unless its last label could read as part of an IPv4 address
 * (digits, hex "0x..": all of [0-9a-fx]), which the canonicalization
 * rewrites, or a label is an A-label, which it checks. */
static bool canonical_already(const char *host, size_t n, size_t i, bool a_label)
{
    if (a_label)
        return false;
    for (; i < n; i++)
        if (!((host[i] >= '0' && host[i] <= '9') || (host[i] >= 'a' && host[i] <= 'f') ||
              host[i] == 'x'))
            return true;
    return false;
}

/* The last label's start in host[0..n). */
static size_t last_label(const char *host, size_t n)
{
    const char *dot = memrchr(host, '.', n);
    return dot ? (size_t)(dot - host) + 1 : 0;
}

/* The host's length in the canonical URL cu[0..len), "http://HOST/": the
 * canonical form of a bare host keeps its one '/'. */
static int canonical_host(const char *cu, size_t len, size_t *host_len)
{
    const char *host = cu + 7;
    const char *slash = len >= 9 ? memchr(host, '/', len - 7) : NULL;
    if (!slash || memcmp(cu, "http://", 7) != 0 || slash == host ||
        (size_t)(slash - host) > BR_URL_MAX_HOST)
        return -EINVAL;
    *host_len = (size_t)(slash - host);
    return 0;
}

/* br_url_host_suffixes of a host that is not an IP address, from its dots
 * (url_expr.h): the host, then its parents of up to max(5, labels)
 * components (at most 126), longest first, down to two (never the bare
 * top-level domain). */
static size_t suffixes_of_dots(const dots *d, unsigned labels, size_t *start)
{
    size_t max = labels < BR_URL_SB_HOST_COMPONENTS ? BR_URL_SB_HOST_COMPONENTS
                 : labels >= BR_URL_MAX_HOST_LABELS ? BR_URL_MAX_HOST_LABELS - 1
                                                    : labels;
    size_t comps = d->n < max ? d->n : max, n = 0;
    start[n++] = 0;
    for (size_t k = comps; k >= 2; k--)
        start[n++] = (size_t)d->at[d->n - k] + 1; /* past the k-th dot from the end */
    return n;
}

/* A probe of each suffix i's expression host[start[i]..host_len], its
 * "SUFFIX/" (host is followed by its '/'). */
static void probe_suffixes(bdns_keys *out)
{
    for (size_t i = 0; i < out->n; i++)
        br_url_probe_init(&out->probe[i], out->host + out->start[i],
                          out->host_len - out->start[i] + 1);
}

int bdns_name_keys(const char *name, size_t len, unsigned labels, bdns_keys *out)
{
    out->n = 0;
    /* canon: room to spare, as the canonicalization's buffer grows ahead */
    char url[URL_ROOM], canon[1024];
    size_t url_len, canon_len, last;
    br_error err;
    bool a_label;
    dots d;
    int plain = to_url_plain(name, len, url, &url_len, &last, &a_label, &d);
    if (plain < 0 || (plain == 0 && to_url(name, len, url, &url_len) < 0))
        return -EINVAL;
    if (plain == 0) {
        last = 7 + last_label(url + 7, url_len - 8);
        a_label = has_a_label(url + 7, url_len - 8);
    }
    const char *cu = url; /* the canonical URL "http://HOST/" */
    bool same = canonical_already(url + 7, url_len - 8, last - 7, a_label);
    if (!same) {
        if (br_url_canonicalize_buf(url, url_len, canon, sizeof(canon), &canon_len, &err) < 0)
            return -EINVAL;
        cu = canon;
        url_len = canon_len;
    }
    const char *host = cu + 7;
    if (same) /* "http://HOST/" as to_url made it */
        out->host_len = url_len - 8;
    else if (canonical_host(cu, url_len, &out->host_len) < 0)
        return -EINVAL;
    memcpy(out->host, host, out->host_len);
    out->host[out->host_len] = '/';
    out->host[out->host_len + 1] = '\0';
    /* a plain name already canonical is no IP address (its last label is
     * not all hex): its dots give the suffixes */
    out->n = plain == 1 && same
                 ? suffixes_of_dots(&d, labels, out->start)
                 : br_url_host_suffixes(out->host, out->host_len, labels, out->start);
    probe_suffixes(out);
    return 0;
}
