/* SPDX-License-Identifier: MIT */
/* Fuzz target for the upstream's response header callback
 * (lib/upstream/upstream_transfer.c, up_header_line): the input is a
 * response's header block, handed over one line at a time with its line
 * end, as libcurl does, starting from the state of a new transfer.
 *
 * Checked against a model of the rules in upstream_int.h and
 * br_upstream_response (upstream.h), written apart from the code: a line
 * starting "HTTP/" clears everything; "ETag:" and "Last-Modified:" (any
 * case, no space before the colon) set their validator to the value
 * without leading SP/HT and trailing CR/LF/SP/HT, or to "" when that is
 * empty, longer than BR_UPSTREAM_VALIDATOR_MAX or holds a byte < 0x20 or
 * 0x7F; "Cache-Control:" directives (split at ',', blanks trimmed, any
 * case): no-store or no-cache sets max-age 0 and ends the header, a
 * max-age=N with N digits (an optional '"' before and after) sets it, the
 * digits past 2^40 ignored; "Retry-After:" (docs/upstream.md, "When the
 * upstream asks to slow down") sets the pause in milliseconds: 1..9 digits
 * N give N * 1000, 10 to 63 digits 999999999 * 1000, an HTTP-date (read by
 * curl_getdate, as the code does) the time until then (0 when past, at most
 * 999999999 s, within a second of the model's clock), anything else -1. Also: a validator
 * never holds a control byte (it is sent back in If-None-Match /
 * If-Modified-Since), max-age is -1 or in 0 .. 11 * 2^40. */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "upstream/upstream_int.h"

#define FUZZ_NAME "fuzz_upstream_headers"
#include "fuzz_check.h"

typedef struct model {
    char etag[BR_UPSTREAM_VALIDATOR_MAX + 1];
    char lm[BR_UPSTREAM_VALIDATOR_MAX + 1];
    int64_t max_age;
    int64_t retry_after_ms;
    bool retry_after_date; /* from an HTTP-date: compared within a second */
} model;

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The value of header `name` on this line, trimmed, or false. */
static bool value_of(const char *line, size_t len, const char *name, size_t *from, size_t *to)
{
    size_t nl = strlen(name);
    if (len < nl + 1 || line[nl] != ':')
        return false;
    for (size_t i = 0; i < nl; i++)
        if (tolower((unsigned char)line[i]) != name[i])
            return false;
    size_t a = nl + 1, b = len;
    while (a < b && blank(line[a]))
        a++;
    while (b > a && (blank(line[b - 1]) || line[b - 1] == '\r' || line[b - 1] == '\n'))
        b--;
    *from = a;
    *to = b;
    return true;
}

static void model_validator(char *dst, const char *v, size_t n)
{
    dst[0] = '\0';
    if (n == 0 || n > BR_UPSTREAM_VALIDATOR_MAX)
        return;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
            return;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

static bool word(const char *d, size_t n, const char *w)
{
    return n == strlen(w) && strncasecmp(d, w, n) == 0;
}

static void model_cache_control(model *m, const char *v, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t a = i;
        while (i < n && v[i] != ',')
            i++;
        size_t b = i;
        if (i < n)
            i++; /* the comma */
        while (a < b && (blank(v[a]) || v[a] == ','))
            a++;
        while (b > a && blank(v[b - 1]))
            b--;
        const char *d = v + a;
        size_t dl = b - a;
        if (word(d, dl, "no-store") || word(d, dl, "no-cache")) {
            m->max_age = 0;
            return;
        }
        if (dl <= 8 || strncasecmp(d, "max-age=", 8) != 0)
            continue;
        size_t p = 8;
        if (p < dl && d[p] == '"')
            p++;
        size_t digits = p;
        int64_t val = 0;
        while (p < dl && d[p] >= '0' && d[p] <= '9') {
            if (val < INT64_C(1) << 40)
                val = val * 10 + (d[p] - '0');
            p++;
        }
        if (p > digits && (p == dl || d[p] == '"'))
            m->max_age = val;
    }
}

static void model_retry_after(model *m, const char *v, size_t n)
{
    m->retry_after_ms = -1;
    m->retry_after_date = false;
    if (n == 0 || n >= 64)
        return;
    size_t d = 0;
    while (d < n && v[d] >= '0' && v[d] <= '9')
        d++;
    if (d == n) {
        int64_t x = 0;
        for (size_t i = 0; i < n && i < 9; i++)
            x = x * 10 + (v[i] - '0');
        m->retry_after_ms = n > 9 ? INT64_C(999999999) * 1000 : x * 1000;
        return;
    }
    char buf[64];
    memcpy(buf, v, n);
    buf[n] = '\0';
    time_t when = curl_getdate(buf, NULL);
    if (when < 0)
        return;
    time_t now = time(NULL);
    int64_t ahead = when > now ? (int64_t)(when - now) : 0;
    m->retry_after_ms = (ahead > 999999999 ? 999999999 : ahead) * 1000;
    m->retry_after_date = true;
}

static void model_line(model *m, const char *line, size_t len)
{
    size_t a, b;
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        m->etag[0] = m->lm[0] = '\0';
        m->max_age = -1;
        m->retry_after_ms = -1;
        m->retry_after_date = false;
    } else if (value_of(line, len, "etag", &a, &b)) {
        model_validator(m->etag, line + a, b - a);
    } else if (value_of(line, len, "last-modified", &a, &b)) {
        model_validator(m->lm, line + a, b - a);
    } else if (value_of(line, len, "cache-control", &a, &b)) {
        model_cache_control(m, line + a, b - a);
    } else if (value_of(line, len, "retry-after", &a, &b)) {
        model_retry_after(m, line + a, b - a);
    }
}

static void check_validator(const char *v)
{
    size_t n = strnlen(v, BR_UPSTREAM_VALIDATOR_MAX + 1);
    CHECK(n <= BR_UPSTREAM_VALIDATOR_MAX);
    for (size_t i = 0; i < n; i++)
        CHECK((unsigned char)v[i] >= 0x20 && v[i] != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char etag[BR_UPSTREAM_VALIDATOR_MAX + 1] = "";
    char lm[BR_UPSTREAM_VALIDATOR_MAX + 1] = "";
    int64_t max_age = -1, retry_after_ms = -1;
    model m = {.max_age = -1, .retry_after_ms = -1};
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *lf = memchr(p, '\n', (size_t)(end - p));
        size_t len = lf ? (size_t)(lf - p) + 1 : (size_t)(end - p);
        /* libcurl's buffer is not NUL-terminated: give it exactly the line. */
        char *line = malloc(len);
        CHECK(line);
        memcpy(line, p, len);
        up_header_line(line, len, etag, lm, &max_age, &retry_after_ms);
        model_line(&m, line, len);
        free(line);
        check_validator(etag);
        check_validator(lm);
        CHECK(strcmp(etag, m.etag) == 0 && strcmp(lm, m.lm) == 0);
        CHECK(max_age == m.max_age);
        CHECK(max_age == -1 || (max_age >= 0 && max_age < INT64_C(11) << 40));
        if (m.retry_after_date) /* the two clocks may tick apart */
            CHECK(retry_after_ms >= 0 && retry_after_ms >= m.retry_after_ms - 1000 &&
                  retry_after_ms <= m.retry_after_ms + 1000);
        else
            CHECK(retry_after_ms == m.retry_after_ms);
        p += len;
    }
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
