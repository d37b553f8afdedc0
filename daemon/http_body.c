/* SPDX-License-Identifier: MIT */
/* Bodies and validators of the range endpoint (http_int.h): the range set
 * written out with HIBP's padding, entity tags and the conditional checks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>

#include "core/hash.h"
#include "http_int.h"
#include "range/range_format.h"
#include "core/random.h"

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

/* Padding digits, from the one source of randomness (core/random.h)
 * through a buffer refilled 4 KiB at a time (the loop's thread only): one
 * getrandom call for some hundred padding lines. Their number is drawn by
 * the caller. */
static uint8_t pad_pool[4096];
static size_t pad_left;

static void pad_random(uint8_t *out, size_t len)
{
    while (len > 0) {
        if (pad_left == 0) {
            if (br_random_bytes(pad_pool, sizeof(pad_pool)) < 0) {
                memset(out, 0, len); /* count-0 lines of zeros: still ignored */
                return;
            }
            pad_left = sizeof(pad_pool);
        }
        size_t n = len < pad_left ? len : pad_left;
        memcpy(out, pad_pool + sizeof(pad_pool) - pad_left, n);
        pad_left -= n;
        out += n;
        len -= n;
    }
}

/* ---- the body pool ----
 * Bodies are some 80 KB: a fresh malloc of that size is a fresh mmap, page
 * faults and an munmap per answer. Buffers are kept instead (the loop's
 * thread only), handed to evbuffers by reference and taken back when the
 * evbuffer is done with them. */

#define POOL_MAX 32
#define POOL_MIN_CAP ((size_t)128 << 10)

typedef struct pool_hdr {
    struct pool_hdr *next;
    size_t cap;
} pool_hdr;

static pool_hdr *pool_free;
static unsigned pool_count;

static pool_hdr *hdr_of(char *p)
{
    return (pool_hdr *)(void *)p - 1;
}

int bd_http_buf_get(size_t cap, bd_http_buf *b)
{
    pool_hdr **pp = &pool_free;
    while (*pp && (*pp)->cap < cap)
        pp = &(*pp)->next;
    pool_hdr *h = *pp;
    if (h) {
        *pp = h->next;
        pool_count--;
    } else {
        size_t want = cap < POOL_MIN_CAP ? POOL_MIN_CAP : (cap + 0xFFFF) & ~(size_t)0xFFFF;
        h = malloc(sizeof(*h) + want);
        if (!h)
            return -ENOMEM;
        h->cap = want;
    }
    h->next = NULL;
    b->p = (char *)(h + 1);
    b->cap = h->cap;
    b->len = 0;
    return 0;
}

static void pool_put_hdr(pool_hdr *h)
{
    if (pool_count >= POOL_MAX) {
        free(h);
        return;
    }
    h->next = pool_free;
    pool_free = h;
    pool_count++;
}

void bd_http_buf_put(bd_http_buf *b)
{
    if (b->p)
        pool_put_hdr(hdr_of(b->p));
    memset(b, 0, sizeof(*b));
}

static void buf_done(const void *data, size_t datalen, void *extra)
{
    (void)data;
    (void)datalen;
    pool_put_hdr(extra);
}

int bd_http_buf_give(bd_http_buf *b, struct evbuffer *out)
{
    int rc = 0;
    if (b->len == 0)
        bd_http_buf_put(b);
    else if (evbuffer_add_reference(out, b->p, b->len, buf_done, hdr_of(b->p)) < 0) {
        bd_http_buf_put(b);
        rc = -ENOMEM;
    }
    memset(b, 0, sizeof(*b));
    return rc;
}

/* ---- bodies ---- */

/* n_pad padding lines at out (room checked by the caller). */
static int put_padding(br_range_kind kind, size_t n_pad, bool body_empty, char *out, size_t *len)
{
    size_t rlen = br_range_pad_random_len(kind), line = 2 + br_range_pad_line_len(kind);
    enum { CHUNK = 256, RAND_MAX_LEN = 32 };
    uint8_t rnd[CHUNK * RAND_MAX_LEN];
    if (!rlen || rlen > RAND_MAX_LEN)
        return -EINVAL;
    char *p = out;
    for (size_t left = n_pad; left > 0;) {
        size_t k = left < CHUNK ? left : CHUNK;
        pad_random(rnd, k * rlen);
        size_t w = br_range_format_padding(kind, rnd, k, p, k * line);
        if (w != k * line)
            return -EINVAL;
        p += w;
        left -= k;
    }
    *len = (size_t)(p - out);
    /* after an empty body the first line has no CRLF before it */
    if (body_empty && *len >= 2) {
        memmove(out, out + 2, *len - 2);
        *len -= 2;
    }
    return 0;
}

int bd_http_body(br_range_kind kind, const uint8_t *value, size_t len, size_t n_pad, bd_http_buf *b)
{
    uint32_t n;
    size_t max;
    int rc = br_range_format_size(kind, value, len, &n, &max);
    if (rc < 0)
        return rc;
    size_t pad_bytes = n_pad * (2 + br_range_pad_line_len(kind));
    if ((rc = bd_http_buf_get(max + pad_bytes, b)) < 0)
        return rc;
    size_t written = 0, padded = 0;
    rc = br_range_format(kind, value, len, b->p, b->cap, &written);
    if (rc == 0 && n_pad)
        rc = put_padding(kind, n_pad, written == 0, b->p + written, &padded);
    if (rc < 0) {
        bd_http_buf_put(b);
        return rc;
    }
    b->len = written + padded;
    return 0;
}

/* SHA-256 through a kept context: EVP's set-up per call costs more than
 * hashing the few bytes of validators. */
static int digest(const void *buf, size_t len, uint8_t out[BR_SHA256_LEN])
{
    static br_hasher *hasher;
    if (!hasher && !(hasher = br_hasher_new_sha256()))
        return br_sha256(buf, len, out);
    return br_hasher_digest(hasher, buf, len, out);
}

/* The entity tag core: the upstream's validators stand for the content
 * (the resolver revalidates with them and keeps the body on a 304), with the
 * resource and the range's size; without validators, the content itself. */
int bd_http_etag_core(br_range_kind kind, uint32_t prefix20, const br_range_answer *a, char out[33])
{
    uint8_t d[BR_SHA256_LEN];
    int rc;
    if (a->etag[0] || a->last_modified[0]) {
        char text[BR_RANGE_CACHE_VALIDATOR_MAX * 2 + 96];
        int n = snprintf(text, sizeof(text), "breachd-range-1 %d %05X %zu\n%s\n%s", (int)kind,
                         prefix20, a->len, a->etag, a->last_modified);
        size_t used = n < 0 ? 0 : (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1;
        rc = n < 0 ? -EIO : digest(text, used, d);
    } else {
        rc = digest(a->value, a->len, d);
    }
    if (rc < 0)
        return -EIO;
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
    return rl == 0 || (rl == 5 && !memcmp(rest, "-gzip", 5)) ||
           (rl == 3 && !memcmp(rest, "-br", 3));
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
