/* SPDX-License-Identifier: MIT */
/* The range endpoint's fast path reader (http_fast.h): a strict reader of
 * the one request a HIBP client sends again and again on a kept-alive
 * connection, GET /range/{prefix} (RFC 9112 section 3 and 5). It refuses
 * anything it does not know to be answered the same way by evhttp and
 * http_range.c: the endpoint then hands the bytes to evhttp as before. */
#include <string.h>
#include <strings.h>

#include "core/hash.h"
#include "http_fast.h"
#include "http_range.h"
#include "range/range.h"

#define LINE0 "GET /range/"
#define LINE0_LEN (sizeof(LINE0) - 1)
#define VERSION " HTTP/1.1\r\n"
#define VERSION_LEN (sizeof(VERSION) - 1)

static bool is_tchar(unsigned char ch)
{
    return (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* One of the fields the fast path knows (name, len bytes); *ae when it is
 * Accept-Encoding. */
static bool known_field(const char *name, size_t len, bool *ae)
{
    *ae = len == 15 && !strncasecmp(name, "Accept-Encoding", 15);
    return *ae || (len == 4 && !strncasecmp(name, "Host", 4)) ||
           (len == 10 && !strncasecmp(name, "User-Agent", 10)) ||
           (len == 6 && !strncasecmp(name, "Accept", 6));
}

/* An Accept-Encoding value (len bytes, blanks around it trimmed as evhttp
 * trims them) that picks the identity coding. */
static bool identity_value(const char *v, size_t len)
{
    char buf[BD_HTTP_FAST_MAX];
    while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
        len--;
    memcpy(buf, v, len);
    buf[len] = '\0';
    return bd_http_pick_encoding(buf, false) == BD_ENC_IDENTITY;
}

/* One header line at p (up to end): its length with the CRLF, 0 if it is
 * not one the fast path takes. */
static size_t field_line(const char *p, const char *end)
{
    const char *s = p;
    while (p < end && is_tchar((unsigned char)*p))
        p++;
    bool ae;
    if (p == s || p == end || *p != ':' || !known_field(s, (size_t)(p - s), &ae))
        return 0;
    p++;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    const char *v = p;
    while (p < end && ((*p >= 0x20 && *p < 0x7f) || *p == '\t'))
        p++;
    if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
        return 0;
    if (ae && !identity_value(v, (size_t)(p - v)))
        return 0;
    return (size_t)(p + 2 - s);
}

bool bd_http_fast_parse(const char *p, size_t n, uint32_t *prefix20)
{
    if (n > BD_HTTP_FAST_MAX || n < LINE0_LEN + 5 + VERSION_LEN + 2 ||
        memcmp(p, LINE0, LINE0_LEN) != 0 || memcmp(p + LINE0_LEN + 5, VERSION, VERSION_LEN) != 0)
        return false;
    char hex[6];
    uint8_t bytes[3] = {0};
    memcpy(hex, p + LINE0_LEN, 5);
    hex[5] = '0';
    if (!br_hex_decode(hex, 3, bytes))
        return false;
    const char *q = p + LINE0_LEN + 5 + VERSION_LEN, *end = p + n;
    while (end - q > 2) {
        size_t len = field_line(q, end);
        if (!len)
            return false;
        q += len;
    }
    if (end - q != 2 || q[0] != '\r' || q[1] != '\n')
        return false;
    *prefix20 = br_range_prefix20(bytes);
    return true;
}
