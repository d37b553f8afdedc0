/* SPDX-License-Identifier: MIT */
/* URL canonicalization v1, written from Google Safe Browsing's "URLs and
 * Hashing" (API v4; the IPv6 rules of v5). The steps, in the document's
 * order:
 *
 *   1. remove tab, CR and LF; (leading and trailing spaces and control
 *      characters are trimmed, as the documented example "  http://...  "
 *      requires);
 *   2. drop the fragment (from the first '#');
 *   3. percent-unescape repeatedly until no escape is left;
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

#include "url.h"
#include "url_secret.h"

#define SECRET_TEXT BR_URL_SECRET_TEXT

/* A growable byte string. Failure to grow sets oom and later appends are
 * ignored, so that callers check once at the end. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static bool sb_reserve(sbuf *b, size_t extra)
{
    if (b->oom)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static void sb_add(sbuf *b, const void *s, size_t n)
{
    if (!sb_reserve(b, n))
        return;
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_addc(sbuf *b, char c)
{
    sb_add(b, &c, 1);
}

static void sb_free(sbuf *b)
{
    free(b->p);
    *b = (sbuf){0};
}

static bool is_hex(unsigned char c)
{
    return br_hexval(c) >= 0;
}

static bool is_ascii_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_ascii_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static char ascii_lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
}

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

/* ---- step 5: host ---- */

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
        free(out);
        out = NULL;
        rc = idn2_lookup_u8((const uint8_t *)in, (uint8_t **)&out,
                            IDN2_TRANSITIONAL | IDN2_NFC_INPUT);
    }
    free(in);
    if (rc == IDN2_MALLOC) {
        free(out);
        return -ENOMEM;
    }
    if (rc != IDN2_OK || !out) {
        free(out);
        return br_error_set(err, -EINVAL, "invalid internationalized host name (%s)",
                            idn2_strerror(rc));
    }
    for (const char *p = out; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || is_ascii_digit((unsigned char)c) || c == '-' || c == '.' ||
              c == '_')) {
            free(out);
            return br_error_set(
                err, -EINVAL, "invalid internationalized host name (maps to a reserved character)");
        }
    }
    sb_add(host, out, strlen(out));
    free(out);
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

/* Canonicalize the host (raw bytes h[0..n), userinfo and port already
 * removed) into out. */
static int canon_host(sbuf *out, const char *h, size_t n, br_error *err)
{
    if (n > 0 && h[0] == '[') {
        if (n < 2 || h[n - 1] != ']')
            return br_error_set(err, -EINVAL, "invalid IPv6 address");
        return ipv6_host(out, h + 1, n - 2, err);
    }
    for (size_t i = 0; i < n; i++)
        if (h[i] == ':' || h[i] == '[' || h[i] == ']')
            return br_error_set(err, -EINVAL, "invalid character in host (':', '[' or ']')");

    /* IDN: labels with non-ASCII bytes to A-labels. */
    sbuf idn = {0};
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && h[i] != '.')
            continue;
        bool ascii = true;
        for (size_t j = start; j < i; j++)
            if ((unsigned char)h[j] >= 0x80)
                ascii = false;
        if (ascii) {
            sb_add(&idn, h + start, i - start);
        } else {
            int r = idn_label(&idn, h + start, i - start, err);
            if (r < 0) {
                sb_free(&idn);
                return r;
            }
        }
        if (i < n)
            sb_addc(&idn, '.');
        start = i + 1;
    }
    if (idn.oom) {
        sb_free(&idn);
        return -ENOMEM;
    }

    /* Strip leading and trailing dots, collapse runs of dots, lowercase. */
    size_t hs = out->len;
    const char *p = idn.p ? idn.p : "";
    for (size_t i = 0; i < idn.len; i++) {
        if (p[i] == '.' && (out->len == hs || out->p[out->len - 1] == '.'))
            continue;
        sb_addc(out, ascii_lower(p[i]));
    }
    sb_free(&idn);
    if (out->oom)
        return -ENOMEM;
    if (out->len > hs && out->p[out->len - 1] == '.')
        out->p[--out->len] = '\0';
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
    size_t label = 0;
    for (size_t i = hs; i <= out->len; i++) {
        if (i == out->len || out->p[i] == '.') {
            if (label > BR_URL_MAX_LABEL)
                return br_error_set(err, -EINVAL, "host label longer than %d bytes",
                                    BR_URL_MAX_LABEL);
            label = 0;
        } else {
            label++;
        }
    }
    return 0;
}

/* ---- step 6: path ---- */

/* Resolve "." and ".." segments ("/./" -> "/", "/x/../" -> "/"; also at
 * the end: "/x/.." -> "/"), then collapse runs of slashes. p starts with '/'. */
static void canon_path(sbuf *out, const char *p, size_t n)
{
    /* Segment boundaries of the output, to pop on "..". */
    size_t base = out->len;
    size_t i = 1; /* past the leading '/' */
    sb_addc(out, '/');
    while (i <= n) {
        size_t j = i;
        while (j < n && p[j] != '/')
            j++;
        size_t sl = j - i;
        bool last = j >= n;
        if (sl == 1 && p[i] == '.') {
            /* "/./": nothing; the output already ends in '/'. */
        } else if (sl == 2 && p[i] == '.' && p[i + 1] == '.') {
            /* Remove the preceding segment (which may be empty). */
            if (out->len > base + 1 && !out->oom) {
                size_t k = out->len - 1; /* the '/' ending the previous segment */
                while (k > base && out->p[k - 1] != '/')
                    k--;
                out->len = k;
                out->p[k] = '\0';
            }
        } else {
            sb_add(out, p + i, sl);
            if (!last)
                sb_addc(out, '/');
        }
        i = j + 1;
    }
    if (out->oom)
        return;
    /* Collapse runs of slashes. */
    size_t o = base;
    for (size_t k = base; k < out->len; k++) {
        if (out->p[k] == '/' && o > base && out->p[o - 1] == '/')
            continue;
        out->p[o++] = out->p[k];
    }
    out->len = o;
    out->p[o] = '\0';
}

/* ---- step 7 ---- */

static void escape_into(sbuf *out, const char *s, size_t n)
{
    static const char hexd[] = "0123456789ABCDEF";
    if (!sb_reserve(out, 3 * n))
        return;
    char *o = out->p + out->len;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7F || c == '#' || c == '%') {
            *o++ = '%';
            *o++ = hexd[c >> 4];
            *o++ = hexd[c & 15];
        } else {
            *o++ = (char)c;
        }
    }
    out->len = (size_t)(o - out->p);
    out->p[out->len] = '\0';
}

/* ---- the whole ---- */

static const char *const schemes[] = {"http", "https", "ftp", "ws", "wss"};

static int canonicalize(char *s, size_t n, char **result, br_error *err)
{
    /* 1: tabs, CR, LF out; trim spaces and controls at both ends. */
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
            s[o++] = s[i];
    n = o;
    size_t b = 0;
    while (b < n && (unsigned char)s[b] <= 0x20)
        b++;
    while (n > b && (unsigned char)s[n - 1] <= 0x20)
        n--;
    s += b;
    n -= b;
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

    /* 3: unescape until stable. */
    n = unescape_fixpoint(s, n);

    /* 4: scheme. A leading RFC 3986 scheme name and ':' is the scheme when
     * the name is one we accept ("http:x.com", "http:///x.com" too). Another
     * name is a refused scheme when "//" follows; a host and port when
     * digits (or nothing) and then the end, '/' or '?' follow
     * ("localhost:8080"); a host when it has a dot ("x.com:abc", refused
     * later for its port); else a refused scheme ("javascript:x"). */
    const char *scheme = "http";
    size_t i = 0;
    if (n > 0 && is_ascii_alpha((unsigned char)s[0])) {
        size_t k = 1;
        bool dot = false;
        while (k < n &&
               (is_ascii_alpha((unsigned char)s[k]) || is_ascii_digit((unsigned char)s[k]) ||
                s[k] == '+' || s[k] == '-' || s[k] == '.')) {
            dot |= s[k] == '.';
            k++;
        }
        if (k < n && s[k] == ':') {
            const char *known = NULL;
            for (size_t m = 0; m < sizeof(schemes) / sizeof(schemes[0]); m++)
                if (strlen(schemes[m]) == k && strncasecmp(s, schemes[m], k) == 0)
                    known = schemes[m];
            bool slashes = k + 2 < n && s[k + 1] == '/' && s[k + 2] == '/';
            size_t d = k + 1;
            while (d < n && is_ascii_digit((unsigned char)s[d]))
                d++;
            bool port = d == n || s[d] == '/' || s[d] == '?';
            if (known) {
                scheme = known;
                i = k + 1;
                while (i < n && s[i] == '/')
                    i++;
            } else if (slashes || (!port && !dot)) {
                if (k == 6 && strncasecmp(s, "mailto", 6) == 0)
                    return br_error_set(err, -EPERM, SECRET_TEXT);
                return br_error_set(err, -EINVAL, "scheme is not http, https, ftp, ws or wss");
            }
        }
    }

    /* Authority: up to the first '/' or '?'; userinfo up to its last '@'. */
    size_t a = i;
    while (i < n && s[i] != '/' && s[i] != '?')
        i++;
    size_t ae = i;
    for (size_t k = ae; k > a; k--)
        if (s[k - 1] == '@') {
            a = k;
            break;
        }
    /* Port: ":digits" (or a bare ':') at the end, after any "[...]". */
    size_t he = ae;
    size_t colon = ae;
    if (a < ae && s[a] == '[') {
        const char *rb = memchr(s + a, ']', ae - a);
        if (!rb)
            return br_error_set(err, -EINVAL, "invalid IPv6 address");
        he = (size_t)(rb - s) + 1;
        if (he < ae && s[he] != ':')
            return br_error_set(err, -EINVAL, "invalid IPv6 address");
        colon = he;
    } else {
        for (size_t k = ae; k > a; k--)
            if (s[k - 1] == ':') {
                colon = he = k - 1;
                break;
            }
    }
    for (size_t d = colon + 1; d < ae; d++)
        if (!is_ascii_digit((unsigned char)s[d]))
            return br_error_set(err, -EINVAL, "invalid port");
    /* An address the userinfo split did not see: a fullwidth or small '@'
     * (U+FF20, U+FE6B) in the host. */
    if (br_url_holds_email(s + a, he - a))
        return br_error_set(err, -EPERM, SECRET_TEXT);

    sbuf host = {0};
    int r = canon_host(&host, s + a, he - a, err);
    if (r < 0) {
        sb_free(&host);
        return r == -ENOMEM ? br_error_set(err, -ENOMEM, "out of memory") : r;
    }

    /* 6: path and query. */
    const char *q = memchr(s + ae, '?', n - ae);
    size_t pe = q ? (size_t)(q - s) : n;
    sbuf path = {0};
    if (pe > ae)
        canon_path(&path, s + ae, pe - ae);
    else
        sb_addc(&path, '/');

    /* 7: assemble and escape. */
    sbuf res = {0};
    sb_add(&res, scheme, strlen(scheme));
    sb_add(&res, "://", 3);
    escape_into(&res, host.p, host.len);
    escape_into(&res, path.p, path.len);
    if (q) {
        sb_addc(&res, '?');
        escape_into(&res, q + 1, n - pe - 1);
    }
    bool oom = host.oom || path.oom || res.oom;
    sb_free(&host);
    sb_free(&path);
    if (oom) {
        sb_free(&res);
        return br_error_set(err, -ENOMEM, "out of memory");
    }
    if (res.len > BR_URL_MAX_LEN) {
        sb_free(&res);
        return br_error_set(err, -EINVAL, "canonical URL longer than %d bytes", BR_URL_MAX_LEN);
    }
    *result = res.p;
    return 0;
}

int br_url_canonicalize(const char *url, size_t len, char **out, br_error *err)
{
    *out = NULL;
    if (len > BR_URL_MAX_LEN)
        return br_error_set(err, -EINVAL, "URL longer than %d bytes", BR_URL_MAX_LEN);
    char *work = malloc(len + 1);
    if (!work)
        return br_error_set(err, -ENOMEM, "out of memory");
    if (len)
        memcpy(work, url, len);
    work[len] = '\0';
    int r = canonicalize(work, len, out, err);
    free(work);
    return r;
}
