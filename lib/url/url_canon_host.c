/* SPDX-License-Identifier: MIT */
/* URL canonicalization v1, step 5 (the steps are listed in url_canon.c):
 * the host. IDN labels to punycode (libidn2), leading and trailing dots
 * stripped, runs of dots collapsed, IPv4 in any inet_aton form to dotted
 * decimal, bracketed IPv6 compressed (RFC 5952; IPv4-mapped and NAT64
 * 64:ff9b::/96 become IPv4), lowercased; the length limits of url_canon.h.
 * Error texts never contain the URL. */
#include <arpa/inet.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <errno.h>
#include <idn2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "url_canon.h"
#include "url_canon_int.h"
#include "core/util.h"

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

int br_canon_host(sbuf *out, const char *h, size_t n, br_error *err)
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
