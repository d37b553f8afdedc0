/* SPDX-License-Identifier: MIT */
/* Bodies and validators of the range endpoint (http_int.h): the range set
 * written out with HIBP's padding, entity tags and the conditional checks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include <event2/buffer.h>

#include "hash.h"
#include "http_int.h"
#include "range_format.h"

/* HIBP pads to a random total of 800 to 999 lines, and adds 10 to 209
 * random lines to a range that already holds about that many or more
 * (docs/upstream.md "Serving the range API"). */
size_t bd_http_pad_count(uint32_t n, uint32_t r)
{
    uint32_t extra = r % 200;
    size_t to_total = n < 800 + extra ? 800 + extra - n : 0;
    size_t appended = 10 + extra;
    return to_total > appended ? to_total : appended;
}

/* Padding digits: a xorshift generator seeded from getrandom() once per
 * process. They need not be unpredictable (the lines say count 0); their
 * number is drawn with getrandom() by the caller. */
static uint64_t pad_state;

static void pad_random(uint8_t *out, size_t len)
{
    if (!pad_state && (getrandom(&pad_state, sizeof(pad_state), 0) != (ssize_t)sizeof(pad_state) ||
                       !pad_state))
        pad_state = UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)time(NULL);
    for (size_t i = 0; i < len; i += 8) {
        pad_state ^= pad_state << 13;
        pad_state ^= pad_state >> 7;
        pad_state ^= pad_state << 17;
        uint64_t x = pad_state * UINT64_C(0x2545F4914F6CDD1D);
        memcpy(out + i, &x, len - i < 8 ? len - i : 8);
    }
}

static int add_padding(br_range_kind kind, size_t n_pad, bool body_empty, struct evbuffer *out)
{
    size_t rlen = br_range_pad_random_len(kind), line = 2 + br_range_pad_line_len(kind);
    if (!rlen)
        return -EINVAL;
    enum { CHUNK = 256 };
    uint8_t rnd[CHUNK * 32];
    char text[CHUNK * 72];
    bool first = body_empty;
    while (n_pad > 0) {
        size_t k = n_pad < CHUNK ? n_pad : CHUNK;
        if (rlen > 32 || line > 72)
            return -EINVAL;
        pad_random(rnd, k * rlen);
        size_t w = br_range_format_padding(kind, rnd, k, text, sizeof(text));
        if (w != k * line)
            return -EINVAL;
        /* after an empty body the first line has no CRLF before it */
        size_t skip = first ? 2 : 0;
        if (evbuffer_add(out, text + skip, w - skip) < 0)
            return -ENOMEM;
        first = false;
        n_pad -= k;
    }
    return 0;
}

int bd_http_body(br_range_kind kind, const uint8_t *value, size_t len, size_t n_pad,
                 struct evbuffer *out)
{
    uint32_t n;
    size_t max;
    int rc = br_range_format_size(kind, value, len, &n, &max);
    if (rc < 0)
        return rc;
    size_t written = 0;
    if (max > 0) {
        struct evbuffer_iovec v;
        if (evbuffer_reserve_space(out, (ev_ssize_t)max, &v, 1) < 1 || v.iov_len < max)
            return -ENOMEM;
        rc = br_range_format(kind, value, len, v.iov_base, max, &written);
        if (rc < 0)
            return rc;
        v.iov_len = written;
        if (evbuffer_commit_space(out, &v, 1) < 0)
            return -ENOMEM;
    }
    return n_pad ? add_padding(kind, n_pad, written == 0, out) : 0;
}

int bd_http_etag_core(br_range_kind kind, const uint8_t *value, size_t len, char out[33])
{
    uint8_t d[BR_SHA256_LEN];
    if (br_sha256(value, len, d) < 0)
        return -EIO;
    (void)kind; /* the kind is in the range set's header */
    br_hex_encode_upper(d, 16, out);
    return 0;
}

/* One entity tag of a list (without W/ and quotes, without a coding
 * suffix) against core. */
static bool tag_matches(const char *t, size_t len, const char *core)
{
    if (len >= 2 && (t[0] == 'W' || t[0] == 'w') && t[1] == '/') {
        t += 2;
        len -= 2;
    }
    if (len < 2 || t[0] != '"' || t[len - 1] != '"')
        return false;
    t++;
    len -= 2;
    size_t cl = strlen(core);
    if (len < cl || memcmp(t, core, cl) != 0)
        return false;
    const char *rest = t + cl;
    size_t rl = len - cl;
    return rl == 0 || (rl == 5 && !memcmp(rest, "-gzip", 5)) || (rl == 3 && !memcmp(rest, "-br", 3));
}

bool bd_http_inm_matches(const char *inm, const char *core)
{
    for (const char *p = inm; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *s = p;
        if (*p == '*')
            return true;
        if (p[0] == 'W' && p[1] == '/')
            p += 2;
        if (*p == '"') {
            const char *close = strchr(p + 1, '"');
            p = close ? close + 1 : p + strlen(p);
        } else {
            while (*p && *p != ',')
                p++;
        }
        if (tag_matches(s, (size_t)(p - s), core))
            return true;
    }
    return false;
}

int64_t bd_http_parse_date(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = s ? strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm) : NULL;
    if (!end || *end)
        return -1;
    time_t t = timegm(&tm);
    return t == (time_t)-1 ? -1 : (int64_t)t;
}
