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
 * Step 5, the host, is the first part of this file; the buffer (sbuf) is in
 * url_canon_int.h, which url_secret.c shares.
 *
 * Error texts never contain the URL: it may be private. */
#include <arpa/inet.h>
#include <errno.h>
#include <idn2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/br_assert.h"
#include "url_canon.h"
#include "url_canon_int.h"
#include "url_secret.h"
#include "core/util.h"

/* Step 5: the host. IDN labels to punycode (libidn2), leading and trailing
 * dots stripped, runs of dots collapsed, IPv4 in any inet_aton form to
 * dotted decimal, bracketed IPv6 compressed (RFC 5952; IPv4-mapped and
 * NAT64 64:ff9b::/96 become IPv4), lowercased; the length limits of
 * url_canon.h. */

static bool valid_utf8(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t k;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            k = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (n - i <= k)
            return false;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += k + 1;
    }
    return true;
}

/* Convert one label holding non-ASCII bytes to its A-label. A label that is
 * not valid UTF-8 is kept as bytes (they are escaped at the end; the
 * document's example http://\x01\x80.com/ needs this). IDNA2008 with UTS #46
 * non-transitional mapping first; symbols that IDNA2008 disallows but UTS #46
 * allows (emoji domains, as browsers resolve them) are retried with
 * transitional processing. The result may only hold [a-z0-9._-]. */
/* Free a string that held (part of) a host name, wiped first. */
static void free_wiped(char *s)
{
    if (s)
        br_wipe(s, strlen(s));
    free(s);
}

static int idn_label(sbuf *host, const char *label, size_t n, br_error *err)
{
    if (!valid_utf8((const unsigned char *)label, n)) {
        sb_add(host, label, n);
        return 0;
    }
    if (memchr(label, '\0', n))
        return br_error_set(err, -EINVAL, "invalid internationalized host name (NUL byte)");
    char *in = strndup(label, n);
    if (!in)
        return -ENOMEM;
    char *out = NULL;
    int rc = idn2_lookup_u8((const uint8_t *)in, (uint8_t **)&out,
                            IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
    if (rc == IDN2_DISALLOWED) {
        free_wiped(out);
        out = NULL;
        rc = idn2_lookup_u8((const uint8_t *)in, (uint8_t **)&out,
                            IDN2_TRANSITIONAL | IDN2_NFC_INPUT);
    }
    free_wiped(in);
    if (rc == IDN2_MALLOC) {
        free_wiped(out);
        return -ENOMEM;
    }
    if (rc != IDN2_OK || !out) {
        free_wiped(out);
        return br_error_set(err, -EINVAL, "invalid internationalized host name (%s)",
                            idn2_strerror(rc));
    }
    for (const char *p = out; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || is_ascii_digit((unsigned char)c) || c == '-' || c == '.' ||
              c == '_')) {
            free_wiped(out);
            return br_error_set(
                err, -EINVAL, "invalid internationalized host name (maps to a reserved character)");
        }
    }
    sb_add(host, out, strlen(out));
    free_wiped(out);
    return 0;
}

/* Parse one inet_aton-style number: 0x hex, leading-0 octal, else decimal. */
static bool ipv4_number(const char *s, size_t n, uint64_t *out)
{
    unsigned base = 10;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
        n -= 2;
    } else if (n >= 2 && s[0] == '0') {
        base = 8;
        s++;
        n--;
    }
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = br_hexval((unsigned char)s[i]);
        if (d < 0 || (unsigned)d >= base)
            return false;
        v = v * base + (unsigned)d;
        if (v > 0xFFFFFFFFu)
            return false;
    }
    *out = v;
    return true;
}

/* "Any legal IP-address encoding, including octal, hex, and fewer than four
 * components": 1 to 4 dot-separated numbers; the last fills the remaining
 * bytes (a.b.c.d, a.b.c16, a.b24, a32), the others are at most 255. */
static bool parse_ipv4(const char *h, size_t n, uint8_t out[4])
{
    uint64_t part[4];
    size_t np = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || h[i] == '.') {
            if (np == 4 || !ipv4_number(h + start, i - start, &part[np]))
                return false;
            np++;
            start = i + 1;
        }
    }
    if (np == 0)
        return false;
    for (size_t i = 0; i + 1 < np; i++)
        if (part[i] > 255)
            return false;
    unsigned rest = (unsigned)(5 - np); /* bytes the last part fills */
    if (rest < 4 && part[np - 1] >> (8 * rest))
        return false;
    uint32_t v = 0;
    for (size_t i = 0; i + 1 < np; i++)
        v |= (uint32_t)part[i] << (24 - 8 * i);
    v |= (uint32_t)part[np - 1];
    out[0] = (uint8_t)(v >> 24);
    out[1] = (uint8_t)(v >> 16);
    out[2] = (uint8_t)(v >> 8);
    out[3] = (uint8_t)v;
    return true;
}

static void put_ipv4(sbuf *host, const uint8_t a[4])
{
    char buf[16];
    int k = snprintf(buf, sizeof(buf), "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
    sb_add(host, buf, (size_t)k);
}

/* A bracketed IPv6 literal (without the brackets): RFC 5952 text in
 * brackets, or the IPv4 address of an IPv4-mapped (::ffff:0:0/96) or NAT64
 * (64:ff9b::/96) address. */
static int ipv6_host(sbuf *host, const char *s, size_t n, br_error *err)
{
    char tmp[INET6_ADDRSTRLEN + 8];
    uint8_t a[16];
    if (n == 0 || n >= sizeof(tmp))
        return br_error_set(err, -EINVAL, "invalid IPv6 address");
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    if (memchr(s, '\0', n) || inet_pton(AF_INET6, tmp, a) != 1)
        return br_error_set(err, -EINVAL, "invalid IPv6 address");
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0) {
        put_ipv4(host, a + 12);
        return 0;
    }
    unsigned g[8];
    for (int i = 0; i < 8; i++)
        g[i] = (unsigned)a[2 * i] << 8 | a[2 * i + 1];
    /* The longest run of two or more zero groups becomes "::" (the first
     * one on a tie); a lone zero group stays "0". */
    int best = -1, best_len = 1;
    for (int i = 0; i < 8;) {
        if (g[i] != 0) {
            i++;
            continue;
        }
        int j = i;
        while (j < 8 && g[j] == 0)
            j++;
        if (j - i > best_len) {
            best = i;
            best_len = j - i;
        }
        i = j;
    }
    sb_addc(host, '[');
    for (int i = 0; i < 8; i++) {
        if (i == best) {
            sb_add(host, "::", 2);
            i += best_len - 1;
            continue;
        }
        if (i > 0 && i != best + best_len)
            sb_addc(host, ':');
        char buf[8];
        int k = snprintf(buf, sizeof(buf), "%x", g[i]);
        sb_add(host, buf, (size_t)k);
    }
    sb_addc(host, ']');
    return 0;
}

/* IDN: the labels of h[0..n) with non-ASCII bytes to A-labels, into idn. */
static int idn_host(sbuf *idn, const char *h, size_t n, br_error *err)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && h[i] != '.')
            continue;
        bool ascii = true;
        for (size_t j = start; j < i; j++)
            if ((unsigned char)h[j] >= 0x80)
                ascii = false;
        if (ascii) {
            sb_add(idn, h + start, i - start);
        } else {
            int r = idn_label(idn, h + start, i - start, err);
            if (r < 0)
                return r;
        }
        if (i < n)
            sb_addc(idn, '.');
        start = i + 1;
    }
    return idn->oom ? -ENOMEM : 0;
}

/* Strip leading and trailing dots, collapse runs of dots, lowercase: p[0..n)
 * appended to out; *label gets the length of its longest label. With
 * ascii_only, stops at the first byte that is ':', '[', ']' or >= 0x80 and
 * returns false (out is then unchanged). */
static bool fold_dots(sbuf *out, const char *p, size_t n, bool ascii_only, size_t *label)
{
    *label = 0;
    if (!sb_room(out, n))
        return true;
    size_t hs = out->len, o = hs, cur = 0;
    char *d = out->p;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (ascii_only && (c >= 0x80 || c == ':' || c == '[' || c == ']')) {
            br_wipe(d + hs, o - hs);
            return false;
        }
        if (c == '.') {
            if (o == hs || d[o - 1] == '.')
                continue;
            if (cur > *label)
                *label = cur;
            cur = 0;
        } else {
            cur++;
        }
        d[o++] = ascii_lower((char)c);
    }
    if (cur > *label)
        *label = cur;
    if (o > hs && d[o - 1] == '.')
        o--;
    d[o] = '\0';
    out->len = o;
    sb_wrote(out);
    return true;
}

#if defined(__SSE2__)
/* fold_dots for the usual host, 16 bytes at a time: n >= 16, ASCII without
 * ':', '[' or ']', no dot first or last, no two dots in a row (so nothing
 * to strip or collapse): lowercased into out. False, with out unchanged,
 * for any other host. */
static bool fold_plain16(sbuf *out, const char *p, size_t n, size_t *label)
{
    if (n < 16 || p[0] == '.' || p[n - 1] == '.' || !sb_room(out, n))
        return false;
    char *d = out->p + out->len;
    const __m128i colon = _mm_set1_epi8(':'), lb = _mm_set1_epi8('['), rb = _mm_set1_epi8(']'),
                  dot = _mm_set1_epi8('.'), a1 = _mm_set1_epi8('A' - 1),
                  z1 = _mm_set1_epi8('Z' + 1), x20 = _mm_set1_epi8(0x20);
    size_t last = (size_t)-1, longest = 0; /* the last dot seen; -1: none */
    bool prev_dot = false;
    for (size_t i = 0, done = 0; done < n; i += 16) {
        if (i + 16 > n)
            i = n - 16; /* the last block overlaps the one before */
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i bad = _mm_or_si128(
            _mm_or_si128(_mm_cmplt_epi8(v, _mm_setzero_si128()), _mm_cmpeq_epi8(v, colon)),
            _mm_or_si128(_mm_cmpeq_epi8(v, lb), _mm_cmpeq_epi8(v, rb)));
        unsigned dots = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, dot)) >> (done - i);
        if (_mm_movemask_epi8(bad) || (dots & (dots >> 1)) || (prev_dot && (dots & 1))) {
            br_wipe(d, done); /* what the blocks before wrote */
            return false;
        }
        __m128i upper = _mm_and_si128(_mm_cmpgt_epi8(v, a1), _mm_cmplt_epi8(v, z1));
        _mm_storeu_si128((__m128i *)(void *)(d + i), _mm_add_epi8(v, _mm_and_si128(upper, x20)));
        for (unsigned m = dots; m; m &= m - 1) {
            size_t at = done + (size_t)__builtin_ctz(m);
            longest = at - last - 1 > longest ? at - last - 1 : longest;
            last = at;
        }
        prev_dot = (dots >> (i + 15 - done)) & 1;
        done = i + 16;
    }
    *label = n - last - 1 > longest ? n - last - 1 : longest;
    out->len += n;
    out->p[out->len] = '\0';
    sb_wrote(out);
    return true;
}
#endif

/* The host's bytes other than ASCII, and ':', '[' and ']' (refused): out
 * gets the host, IDN labels as A-labels, its dots folded. */
static int slow_host(sbuf *out, const char *h, size_t n, size_t *label, br_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (h[i] == ':' || h[i] == '[' || h[i] == ']')
            return br_error_set(err, -EINVAL, "invalid character in host (':', '[' or ']')");
    char idn_room[BR_URL_MAX_HOST + 3];
    sbuf idn;
    sb_init_on(&idn, idn_room, sizeof(idn_room));
    int r = idn_host(&idn, h, n, err);
    if (r == 0)
        fold_dots(out, idn.p, idn.len, false, label);
    sb_wipe(&idn);
    return r;
}

/* Canonicalize the host (raw bytes h[0..n), userinfo and port already
 * removed) and append it to out: 0, -EINVAL with the reason in err, or
 * -ENOMEM. */
static int canon_host(sbuf *out, const char *h, size_t n, br_error *err)
{
    if (n > 0 && h[0] == '[') {
        if (n < 2 || h[n - 1] != ']')
            return br_error_set(err, -EINVAL, "invalid IPv6 address");
        return ipv6_host(out, h + 1, n - 2, err);
    }
    /* Usually every byte is ASCII and none refused: IDN would copy h as it
     * is, and its dots are folded straight into out. */
    size_t hs = out->len, label = 0;
#if defined(__SSE2__)
    if (fold_plain16(out, h, n, &label)) {
        /* done */
    } else
#endif
        if (!fold_dots(out, h, n, true, &label)) {
        int r = slow_host(out, h, n, &label, err);
        if (r < 0)
            return r;
    }
    if (out->oom)
        return -ENOMEM;
    size_t hn = out->len - hs;
    if (hn == 0)
        return br_error_set(err, -EINVAL, "no host");

    uint8_t a4[4];
    if (parse_ipv4(out->p + hs, hn, a4)) {
        out->len = hs;
        put_ipv4(out, a4);
        return out->oom ? -ENOMEM : 0;
    }
    if (hn > BR_URL_MAX_HOST)
        return br_error_set(err, -EINVAL, "host longer than %d bytes", BR_URL_MAX_HOST);
    if (label > BR_URL_MAX_LABEL)
        return br_error_set(err, -EINVAL, "host label longer than %d bytes", BR_URL_MAX_LABEL);
    return 0;
}

/* Steps 1 to 4, 6 and 7, and the whole. */

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

/* How many bytes of s[0..n) must_escape takes. */
static size_t escape_count(const char *s, size_t n)
{
    size_t e = 0, i = 0;
#if defined(__SSE2__)
    const __m128i c21 = _mm_set1_epi8(0x21), c7f = _mm_set1_epi8(0x7f), hash = _mm_set1_epi8('#'),
                  pct = _mm_set1_epi8('%');
    for (; n - i >= 16; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i esc = _mm_or_si128(_mm_or_si128(_mm_cmplt_epi8(v, c21), _mm_cmpeq_epi8(v, c7f)),
                                   _mm_or_si128(_mm_cmpeq_epi8(v, hash), _mm_cmpeq_epi8(v, pct)));
        e += (size_t)__builtin_popcount((unsigned)_mm_movemask_epi8(esc));
    }
#endif
    for (; i < n; i++)
        e += must_escape((unsigned char)s[i]);
    return e;
}

/* Escape out->p[from..out->len) where it is, from the end (what is written
 * never passes what is read). */
static void escape_tail(sbuf *out, size_t from)
{
    size_t e = escape_count(out->p + from, out->len - from);
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

/* Whether d[0..n) holds a '/' followed by '.' or '/': a path that
 * resolve_path changes (or may). */
static bool path_resolves(const char *d, size_t n)
{
    size_t k = 0;
#if defined(__SSE2__)
    /* The pairs starting at k..k+15: bytes k..k+16, all before n. */
    const __m128i sl = _mm_set1_epi8('/'), dot = _mm_set1_epi8('.');
    for (; k + 17 <= n; k += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(d + k));
        __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(d + k + 1));
        __m128i m = _mm_and_si128(_mm_cmpeq_epi8(v, sl),
                                  _mm_or_si128(_mm_cmpeq_epi8(w, sl), _mm_cmpeq_epi8(w, dot)));
        if (_mm_movemask_epi8(m))
            return true;
    }
#endif
    for (; k + 1 < n; k++)
        if (d[k] == '/' && (d[k + 1] == '.' || d[k + 1] == '/'))
            return true;
    return false;
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
    if (out->oom || !path_resolves(out->p + base, out->len - base))
        return;
    out->len = resolve_path(out->p, base, out->len);
    out->p[out->len] = '\0';
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
static int split_scheme(const char *s, size_t n, const char **scheme, size_t *rest, br_error *err)
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
    r = canon_host(out, s + a, he - a, err);
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
    br_wipe(work, len + 1);
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

int br_url_canonicalize_buf(const char *url, size_t len, char *buf, size_t cap, size_t *out_len,
                            br_error *err)
{
    *out_len = 0;
    if (br_fails_assert(cap > 0))
        return br_error_set(err, -EINVAL, "internal error: no room");
    sbuf res;
    sb_init_on(&res, buf, cap);
    int r = br_url_canon_into(&res, url, len, err);
    if (r == 0 && res.p != buf)
        r = br_error_set(err, -ENAMETOOLONG, "canonical URL longer than %zu bytes", cap - 1);
    if (r == 0) {
        *out_len = res.len;
        return 0;
    }
    sb_wipe(&res); /* wipes buf too, frees a heap copy */
    return r;
}
