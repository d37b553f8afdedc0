/* SPDX-License-Identifier: MIT */
/* URL canonicalization v1, written from Google Safe Browsing's "URLs and
 * Hashing" (API v4; the IPv6 rules of v5). The steps, in the document's
 * order:
 *
 *   1. remove tab, CR and LF; (leading and trailing spaces and control
 *      characters are trimmed, as the documented example "  http://...  "
 *      requires);
 *   2. drop the fragment (from the first '#');
 *      (as browsers parse these special schemes, the WHATWG URL standard:
 *      '\' before the query is '/', and the userinfo, up to the last '@'
 *      before the first '/' or '?', is dropped before anything is
 *      unescaped, so that "http://x%2F@host/" is host's, as browsers
 *      visit it; docs/filter-format.md, "URL canonicalization")
 *   3. percent-unescape repeatedly until no escape is left (then '\'
 *      before the query is '/' again: "%5C" is one too);
 *   4. split scheme, authority, path and query; no scheme means http://;
 *      userinfo and port are dropped;
 *   5. host: IDN labels to punycode (libidn2), leading/trailing dots
 *      stripped, runs of dots collapsed, IPv4 in any inet_aton form to
 *      dotted decimal, bracketed IPv6 compressed (RFC 5952; IPv4-mapped and
 *      NAT64 64:ff9b::/96 become IPv4), lowercased;
 *   6. path: "/./" and "/../" resolved, runs of slashes collapsed; the query
 *      is left as it is;
 *   7. escape bytes <= 0x20, >= 0x7f, '#' and '%' as %XX (uppercase hex).
 *
 * Step 5 is url_canon_host.c; the two share url_canon_int.h.
 *
 * Error texts never contain the URL: it may be private. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "url_canon.h"
#include "url_canon_int.h"
#include "url_secret.h"

#define SECRET_TEXT BR_URL_SECRET_TEXT

/* ---- step 3: unescape until stable ---- */

/* Repeated left-to-right passes of %XX decoding until nothing changes reach
 * a unique result: two escapes can never overlap ('%' is not a hex digit),
 * so the rewriting is confluent, and every decode shortens the string. That
 * result is reached here in one pass with the output used as a stack: a new
 * escape can only end at the byte just appended, so after each append the
 * last three bytes are decoded while they form one. Linear time, where
 * literal passes over "%25252525..." would be quadratic. Returns the new
 * length (in place: the output never outruns the input). */
static size_t unescape_fixpoint(char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        s[o++] = s[i];
        while (o >= 3 && s[o - 3] == '%' && is_hex((unsigned char)s[o - 2]) &&
               is_hex((unsigned char)s[o - 1])) {
            int v = br_hexval((unsigned char)s[o - 2]) * 16 + br_hexval((unsigned char)s[o - 1]);
            o -= 3;
            s[o++] = (char)v;
        }
    }
    return o;
}

/* ---- step 7 ---- */

static const char hexd[] = "0123456789ABCDEF";

static bool must_escape(unsigned char c)
{
    return c <= 0x20 || c >= 0x7F || c == '#' || c == '%';
}

static size_t escape_byte(char *o, unsigned char c)
{
    if (must_escape(c)) {
        o[0] = '%';
        o[1] = hexd[c >> 4];
        o[2] = hexd[c & 15];
        return 3;
    }
    o[0] = (char)c;
    return 1;
}

/* s[0..n) escaped at d (room for 3n bytes); returns the bytes written. */
static size_t escape_to(char *d, const char *s, size_t n)
{
    size_t o = 0, i = 0;
#if defined(__SSE2__)
    /* 16 bytes at a time while none is escaped. Signed compare: bytes >=
     * 0x80 are below 0x21 too. */
    const __m128i c21 = _mm_set1_epi8(0x21), c7f = _mm_set1_epi8(0x7f), hash = _mm_set1_epi8('#'),
                  pct = _mm_set1_epi8('%');
    while (n - i >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i esc = _mm_or_si128(_mm_or_si128(_mm_cmplt_epi8(v, c21), _mm_cmpeq_epi8(v, c7f)),
                                   _mm_or_si128(_mm_cmpeq_epi8(v, hash), _mm_cmpeq_epi8(v, pct)));
        if (_mm_movemask_epi8(esc)) {
            for (size_t e = i + 16; i < e; i++)
                o += escape_byte(d + o, (unsigned char)s[i]);
        } else {
            _mm_storeu_si128((__m128i *)(void *)(d + o), v);
            o += 16;
            i += 16;
        }
    }
#endif
    for (; i < n; i++)
        o += escape_byte(d + o, (unsigned char)s[i]);
    return o;
}

static void escape_into(sbuf *out, const char *s, size_t n)
{
    if (!sb_room(out, 3 * n))
        return;
    out->len += escape_to(out->p + out->len, s, n);
    out->p[out->len] = '\0';
    sb_wrote(out);
}

/* Escape out->p[from..out->len) where it is, from the end (what is written
 * never passes what is read). */
static void escape_tail(sbuf *out, size_t from)
{
    size_t e = 0;
    for (size_t k = from; k < out->len; k++)
        e += must_escape((unsigned char)out->p[k]);
    if (e == 0 || !sb_room(out, 2 * e))
        return;
    char *d = out->p;
    size_t r = out->len, w = out->len + 2 * e;
    d[w] = '\0';
    while (r > from) {
        unsigned char c = (unsigned char)d[--r];
        if (must_escape(c)) {
            d[--w] = hexd[c & 15];
            d[--w] = hexd[c >> 4];
            d[--w] = '%';
        } else {
            d[--w] = (char)c;
        }
    }
    out->len += 2 * e;
    sb_wrote(out);
}

/* ---- step 6: path ---- */

/* Resolve "." and ".." segments ("/./" -> "/", "/x/../" -> "/"; also at
 * the end: "/x/.." -> "/"), then collapse runs of slashes: d[base..end),
 * starting with '/', in place (what is written never passes what is read);
 * returns the new end. */
static size_t resolve_path(char *d, size_t base, size_t end)
{
    size_t w = base + 1, i = base + 1; /* past the leading '/' */
    while (i <= end) {
        const char *slash = memchr(d + i, '/', end - i);
        size_t j = slash ? (size_t)(slash - d) : end;
        size_t sl = j - i;
        if (sl == 1 && d[i] == '.') {
            /* "/./": nothing; the output already ends in '/'. */
        } else if (sl == 2 && d[i] == '.' && d[i + 1] == '.') {
            /* Remove the preceding segment (which may be empty). */
            if (w > base + 1) {
                size_t k = w - 1; /* the '/' ending the previous segment */
                while (k > base && d[k - 1] != '/')
                    k--;
                w = k;
            }
        } else {
            memmove(d + w, d + i, sl);
            w += sl;
            if (j < end)
                d[w++] = '/';
        }
        i = j + 1;
    }
    size_t o = base;
    for (size_t k = base; k < w; k++) {
        if (d[k] == '/' && o > base && d[o - 1] == '/')
            continue;
        d[o++] = d[k];
    }
    return o;
}

/* Step 6 and 7 of the path p[0..n) (starting with '/'), appended to out.
 * It is escaped first: escaping maps each byte on its own and never makes
 * or takes a '/' or a '.', so resolving the escaped path is escaping the
 * resolved one. Only a segment starting with '.' and an empty one ("//")
 * can change anything. */
static void canon_path(sbuf *out, const char *p, size_t n)
{
    size_t base = out->len;
    escape_into(out, p, n);
    if (out->oom)
        return;
    char *d = out->p;
    for (size_t k = base; k + 1 < out->len; k++) {
        if (d[k] == '/' && (d[k + 1] == '.' || d[k + 1] == '/')) {
            out->len = resolve_path(d, base, out->len);
            d[out->len] = '\0';
            return;
        }
    }
}

/* ---- the whole ---- */

static const char *const schemes[] = {"http", "https", "ftp", "ws", "wss"};

/* Step 1: tabs, CR, LF out; spaces and controls trimmed at both ends. */
static void strip_controls(char **s, size_t *n)
{
    char *p = *s;
    size_t o = 0;
    for (size_t i = 0; i < *n; i++)
        if (p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
            p[o++] = p[i];
    size_t len = o, b = 0;
    while (b < len && (unsigned char)p[b] <= 0x20)
        b++;
    while (len > b && (unsigned char)p[len - 1] <= 0x20)
        len--;
    *s = p + b;
    *n = len - b;
}

/* Step 4, the scheme. A leading RFC 3986 scheme name and ':' is the scheme
 * when the name is one we accept ("http:x.com", "http:///x.com" too).
 * Another name is a refused scheme when "//" follows; a host and port when
 * digits (or nothing) and then the end, '/' or '?' follow
 * ("localhost:8080"); a host when it has a dot ("x.com:abc", refused later
 * for its port); else a refused scheme ("javascript:x"). *scheme is
 * "http" without one; *rest the index after it and its slashes. */
static int split_scheme(const char *s, size_t n, const char **scheme, size_t *rest,
                        br_error *err)
{
    *scheme = "http";
    *rest = 0;
    if (n == 0 || !is_ascii_alpha((unsigned char)s[0]))
        return 0;
    size_t k = 1;
    bool dot = false;
    while (k < n && (is_ascii_alpha((unsigned char)s[k]) || is_ascii_digit((unsigned char)s[k]) ||
                     s[k] == '+' || s[k] == '-' || s[k] == '.')) {
        dot |= s[k] == '.';
        k++;
    }
    if (k == n || s[k] != ':')
        return 0;
    const char *known = NULL;
    char low[5];
    for (size_t m = 0; m < k && m < sizeof(low); m++)
        low[m] = ascii_lower(s[m]);
    for (size_t m = 0; m < sizeof(schemes) / sizeof(schemes[0]) && k <= sizeof(low); m++)
        if (strlen(schemes[m]) == k && memcmp(low, schemes[m], k) == 0)
            known = schemes[m];
    bool slashes = k + 2 < n && s[k + 1] == '/' && s[k + 2] == '/';
    size_t d = k + 1;
    while (d < n && is_ascii_digit((unsigned char)s[d]))
        d++;
    bool port = d == n || s[d] == '/' || s[d] == '?';
    if (known) {
        *scheme = known;
        size_t i = k + 1;
        while (i < n && s[i] == '/')
            i++;
        *rest = i;
    } else if (slashes || (!port && !dot)) {
        if (k == 6 && strncasecmp(s, "mailto", 6) == 0)
            return br_error_set(err, -EPERM, SECRET_TEXT);
        return br_error_set(err, -EINVAL, "scheme is not http, https, ftp, ws or wss");
    }
    return 0;
}

/* The authority from s[i]: up to the first '/' or '?' (*end), userinfo up
 * to its last '@' (the host starts at *host), a port ":digits" (or a bare
 * ':') at the end, after any "[...]" (the host ends at *host_end). */
static int split_authority(const char *s, size_t n, size_t i, size_t *host, size_t *host_end,
                           size_t *end, br_error *err)
{
    /* One pass: the end, the last '@' and the last ':' after it. */
    size_t a = i, last_colon = SIZE_MAX;
    for (; i < n && s[i] != '/' && s[i] != '?'; i++) {
        if (s[i] == '@') {
            a = i + 1;
            last_colon = SIZE_MAX;
        } else if (s[i] == ':') {
            last_colon = i;
        }
    }
    size_t ae = i;
    size_t he = ae, colon = ae;
    if (a < ae && s[a] == '[') {
        const char *rb = memchr(s + a, ']', ae - a);
        if (!rb)
            return br_error_set(err, -EINVAL, "invalid IPv6 address");
        he = (size_t)(rb - s) + 1;
        if (he < ae && s[he] != ':')
            return br_error_set(err, -EINVAL, "invalid IPv6 address");
        colon = he;
    } else if (last_colon != SIZE_MAX) {
        colon = he = last_colon;
    }
    for (size_t d = colon + 1; d < ae; d++)
        if (!is_ascii_digit((unsigned char)s[d]))
            return br_error_set(err, -EINVAL, "invalid port");
    *host = a;
    *host_end = he;
    *end = ae;
    return 0;
}

/* Steps 4 to 7 on s[0..n) (controls stripped, no fragment, unescaped):
 * scheme://host/path[?query], escaped, appended to out. check_host: s may
 * hold an address that the userinfo split does not see (a fullwidth or
 * small '@', U+FF20 or U+FE6B, in the host); false when s has no byte that
 * br_url_is_plain stops at, so that no part of it can hold one. */
static int canon_parts(const char *s, size_t n, bool check_host, sbuf *out, br_error *err)
{
    const char *scheme;
    size_t i = 0, a = 0, he = 0, ae = 0;
    int r = split_scheme(s, n, &scheme, &i, err);
    if (r < 0 || (r = split_authority(s, n, i, &a, &he, &ae, err)) < 0)
        return r;
    if (check_host && br_url_holds_email(s + a, he - a))
        return br_error_set(err, -EPERM, SECRET_TEXT);
    /* 5: the host, then escaped where it is (7). */
    sb_add(out, scheme, strlen(scheme));
    sb_add(out, "://", 3);
    size_t hs = out->len;
    r = br_canon_host(out, s + a, he - a, err);
    if (r < 0)
        return r == -ENOMEM ? br_error_set(err, -ENOMEM, "out of memory") : r;
    escape_tail(out, hs);
    /* 6 and 7: path and query, escaped. */
    const char *q = memchr(s + ae, '?', n - ae);
    size_t pe = q ? (size_t)(q - s) : n;
    if (pe > ae)
        canon_path(out, s + ae, pe - ae);
    else
        sb_addc(out, '/');
    if (q) {
        sb_addc(out, '?');
        escape_into(out, q + 1, n - pe - 1);
    }
    if (out->oom)
        return br_error_set(err, -ENOMEM, "out of memory");
    if (out->len > BR_URL_MAX_LEN)
        return br_error_set(err, -EINVAL, "canonical URL longer than %d bytes", BR_URL_MAX_LEN);
    return 0;
}

/* '\' is '/' in s[0..n) up to the first '?': the WHATWG URL standard's
 * rule for the special schemes, which are all the schemes accepted here. */
static void backslashes_to_slashes(char *s, size_t n)
{
    char *q = memchr(s, '?', n);
    char *e = q ? q : s + n;
    for (char *b = memchr(s, '\\', (size_t)(e - s)); b; b = memchr(b, '\\', (size_t)(e - b)))
        *b++ = '/';
}

/* The userinfo as browsers split it, before anything is unescaped: up to
 * the last '@' of the authority, which ends at the first '/' or '?' (the
 * '\' are '/' already). An escaped '/', '?' or '@' in it stays userinfo.
 * Removed from s (what is left behind is wiped with the work copy). */
static void drop_raw_userinfo(char *s, size_t *n)
{
    const char *scheme;
    size_t i, at = SIZE_MAX, k;
    br_error ignored;
    if (split_scheme(s, *n, &scheme, &i, &ignored) < 0)
        return; /* refused again, with the reason, by canon_parts */
    for (k = i; k < *n && s[k] != '/' && s[k] != '?'; k++)
        if (s[k] == '@')
            at = k;
    if (at == SIZE_MAX || at + 1 == k)
        return; /* none, or no host after it: "no host" in canon_parts */
    memmove(s + i, s + at + 1, *n - at - 1);
    *n -= at + 1 - i;
}

/* Steps 1 to 3 on a copy of the input (work, NUL-terminated), then the
 * rest. */
static int canon_work(char *s, size_t n, sbuf *out, br_error *err)
{
    strip_controls(&s, &n);
    if (n == 0)
        return br_error_set(err, -EINVAL, "empty URL");
    /* 2: the fragment. */
    char *hash = memchr(s, '#', n);
    if (hash)
        n = (size_t)(hash - s);
    /* 3 and 4: a mailto: URL or a bare address, in any spelling
     * (url_secret.h folds escapes and NFKC itself). */
    if (br_url_is_email(s, n))
        return br_error_set(err, -EPERM, SECRET_TEXT);
    /* The authority as browsers see it. */
    backslashes_to_slashes(s, n);
    drop_raw_userinfo(s, &n);
    /* 3: unescape until stable. */
    n = unescape_fixpoint(s, n);
    backslashes_to_slashes(s, n);
    return canon_parts(s, n, true, out, err);
}

int br_url_canon_into(sbuf *out, const char *url, size_t len, br_error *err)
{
    if (len > BR_URL_MAX_LEN)
        return br_error_set(err, -EINVAL, "URL longer than %d bytes", BR_URL_MAX_LEN);
    if (br_url_is_plain(url, len)) {
        /* No control byte, '%', '@', '\', non-ASCII byte nor "mailto:":
         * step 1 only trims spaces, step 3 decodes nothing, no userinfo or
         * '\' is there to drop or turn into '/', and neither the input
         * nor any part of it can hold an address (br_url_is_email and
         * br_url_holds_email are false), so the input is used as it is. */
        size_t b = 0, n = len;
        while (b < n && url[b] == ' ')
            b++;
        while (n > b && url[n - 1] == ' ')
            n--;
        if (n == b)
            return br_error_set(err, -EINVAL, "empty URL");
        const char *hash = memchr(url + b, '#', n - b);
        return canon_parts(url + b, hash ? (size_t)(hash - url) - b : n - b, false, out, err);
    }
    /* The work copy (unescaped in place): on the stack for the usual
     * length, so a URL costs no allocation for it; wiped after. */
    char small[512];
    char *work = len < sizeof(small) ? small : malloc(len + 1);
    if (!work)
        return br_error_set(err, -ENOMEM, "out of memory");
    if (len)
        memcpy(work, url, len);
    work[len] = '\0';
    int r = canon_work(work, len, out, err);
    OPENSSL_cleanse(work, len + 1);
    if (work != small)
        free(work);
    return r;
}

int br_url_canonicalize(const char *url, size_t len, char **out, br_error *err)
{
    *out = NULL;
    char room[BR_URL_CANON_ROOM];
    sbuf res;
    sb_init_on(&res, room, sizeof(room));
    int r = br_url_canon_into(&res, url, len, err);
    if (r == 0 && res.p != room) {
        /* Outgrew the stack: the heap copy is the result. */
        *out = res.p;
        return 0;
    }
    if (r == 0) {
        *out = malloc(res.len + 1);
        if (*out)
            memcpy(*out, res.p, res.len + 1);
        else
            r = br_error_set(err, -ENOMEM, "out of memory");
    }
    sb_wipe(&res);
    return r;
}
