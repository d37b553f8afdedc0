/* SPDX-License-Identifier: MIT */
/* Upstream fetcher: what a transfer keeps of the response headers libcurl
 * hands its header callback, one line at a time: the validators (ETag,
 * Last-Modified), Cache-Control's max-age (br_upstream_response in
 * upstream.h) and Retry-After (docs/upstream.md, "When the upstream asks to
 * slow down"). A pure function of the lines, so that it can be tested and
 * fuzzed alone. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "upstream_int.h"

static bool header_is(const char *line, size_t len, const char *name, const char **value,
                      size_t *vlen)
{
    size_t nl = strlen(name);
    if (len <= nl || line[nl] != ':' || strncasecmp(line, name, nl) != 0)
        return false;
    const char *v = line + nl + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *value = v;
    *vlen = (size_t)(end - v);
    return true;
}

static void copy_validator(char *dst, const char *v, size_t len)
{
    dst[0] = '\0';
    if (len == 0 || len > BR_UPSTREAM_VALIDATOR_MAX)
        return;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] == 0x7f)
            return;
    memcpy(dst, v, len);
    dst[len] = '\0';
}

/* Cache-Control: the max-age directive (seconds), 0 for no-store / no-cache. */
static void parse_cache_control(int64_t *max_age, const char *v, size_t len)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t start = i;
        while (i < len && v[i] != ',')
            i++;
        const char *d = v + start;
        size_t dl = i - start;
        while (dl > 0 && (d[dl - 1] == ' ' || d[dl - 1] == '\t'))
            dl--;
        if ((dl == 8 && strncasecmp(d, "no-store", 8) == 0) ||
            (dl == 8 && strncasecmp(d, "no-cache", 8) == 0)) {
            *max_age = 0;
            return;
        }
        if (dl > 8 && strncasecmp(d, "max-age=", 8) == 0) {
            const char *p = d + 8, *e = d + dl;
            if (p < e && *p == '"')
                p++;
            int64_t val = 0;
            bool any = false;
            while (p < e && *p >= '0' && *p <= '9') {
                if (val < INT64_C(1) << 40)
                    val = val * 10 + (*p - '0');
                any = true;
                p++;
            }
            if (any && (p == e || *p == '"'))
                *max_age = val;
        }
    }
}

/* Retry-After: delta-seconds or an HTTP-date (RFC 9110), as milliseconds
 * from now (0 for a date already past); -1 when unreadable. */
static int64_t parse_retry_after(const char *v, size_t len)
{
    char buf[64];
    if (len == 0 || len >= sizeof(buf))
        return -1;
    memcpy(buf, v, len);
    buf[len] = '\0';
    if (strspn(buf, "0123456789") == len) {
        if (len > 9)
            return INT64_C(999999999) * 1000; /* far beyond any max_pause_ms */
        return (int64_t)strtoll(buf, NULL, 10) * 1000;
    }
    time_t when = curl_getdate(buf, NULL);
    if (when < 0)
        return -1;
    time_t now = time(NULL);
    if (when <= now)
        return 0;
    /* A date centuries ahead would overflow the milliseconds: as far as a
     * long number of seconds. */
    if (when - now > 999999999)
        return INT64_C(999999999) * 1000;
    return (int64_t)(when - now) * 1000;
}

void up_header_line(const char *line, size_t len, char *etag, char *last_modified,
                    int64_t *max_age, int64_t *retry_after_ms)
{
    const char *v;
    size_t vl;
    if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* a new response (after a 100 Continue or a proxy's CONNECT) */
        etag[0] = last_modified[0] = '\0';
        *max_age = -1;
        *retry_after_ms = -1;
    } else if (header_is(line, len, "etag", &v, &vl)) {
        copy_validator(etag, v, vl);
    } else if (header_is(line, len, "last-modified", &v, &vl)) {
        copy_validator(last_modified, v, vl);
    } else if (header_is(line, len, "cache-control", &v, &vl)) {
        parse_cache_control(max_age, v, vl);
    } else if (header_is(line, len, "retry-after", &v, &vl)) {
        *retry_after_ms = parse_retry_after(v, vl);
    }
}
