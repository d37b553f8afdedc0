/* SPDX-License-Identifier: MIT */
/* E-mail addresses in URLs: folding, the address rule, and the lookup
 * expressions free of addresses (rules in url_secret.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <unistr.h>
#include <uninorm.h>

#include "core/hash.h"
#include "url_canon.h"
#include "url_canon_int.h"
#include "url_secret.h"
#include "core/util.h"

#define FOLD_ROUNDS 8
#define LITERAL_MAX 64
#define FOLD_ROOM 512 /* a string this long is folded on the stack */

/* ---- folding ---- */

/* "%uXXXX" (u in any case, four hex digits) at b[i..n): the code point,
 * or -1. */
static long u_escape_at(const uint8_t *b, size_t i, size_t n)
{
    if (n - i < 6 || (b[i + 1] != 'u' && b[i + 1] != 'U'))
        return -1;
    long v = 0;
    for (size_t k = i + 2; k < i + 6; k++) {
        int h = br_hexval(b[k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* The code point v (< 0x10000) as UTF-8 at o (surrogates too: they are
 * not valid UTF-8, so NFKC leaves them as bytes); the bytes written. */
static size_t put_utf8(uint8_t *o, long v)
{
    if (v < 0x80) {
        o[0] = (uint8_t)v;
        return 1;
    }
    if (v < 0x800) {
        o[0] = (uint8_t)(0xC0 | (v >> 6));
        o[1] = (uint8_t)(0x80 | (v & 0x3F));
        return 2;
    }
    o[0] = (uint8_t)(0xE0 | (v >> 12));
    o[1] = (uint8_t)(0x80 | ((v >> 6) & 0x3F));
    o[2] = (uint8_t)(0x80 | (v & 0x3F));
    return 3;
}

/* Percent-decode b[0..*n) in place until no escape is left: %XX, and the
 * %uXXXX of IIS and JavaScript's escape() (at most 3 bytes of UTF-8 for 6
 * of input: the output never passes the input). True when anything
 * changed. */
static bool decode_all(uint8_t *b, size_t *n)
{
    bool any = false;
    for (bool changed = true; changed;) {
        changed = false;
        size_t o = 0;
        for (size_t i = 0; i < *n; i++) {
            int hi, lo;
            long u;
            if (b[i] == '%' && i + 2 < *n && (hi = br_hexval(b[i + 1])) >= 0 &&
                (lo = br_hexval(b[i + 2])) >= 0) {
                b[o++] = (uint8_t)(hi * 16 + lo);
                i += 2;
                changed = true;
            } else if (b[i] == '%' && (u = u_escape_at(b, i, *n)) >= 0) {
                o += put_utf8(b + o, u);
                i += 5;
                changed = true;
            } else {
                b[o++] = b[i];
            }
        }
        *n = o;
        any |= changed;
    }
    return any;
}

static bool all_ascii(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] >= 0x80)
            return false;
    return true;
}

/* A growable byte buffer, on the heap or starting on a caller's array
 * (stack: moved to the heap when it outgrows it). hw: the bytes ever
 * written, what bb_wipe clears of a caller's array. */
typedef struct bbuf {
    uint8_t *p;
    size_t len, cap, hw;
    uint8_t *stack;
} bbuf;

static int bb_add(bbuf *b, const uint8_t *s, size_t n)
{
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->len < n)
            cap *= 2;
        /* A new block, the old one wiped: not realloc, which would leave
         * the bytes behind in freed memory. */
        uint8_t *p = malloc(cap);
        if (!p)
            return -ENOMEM;
        if (b->p) {
            memcpy(p, b->p, b->len);
            br_wipe(b->p, b->p == b->stack ? b->hw : b->cap);
            if (b->p != b->stack)
                free(b->p);
        }
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    if (b->len > b->hw)
        b->hw = b->len;
    return 0;
}

static void bb_wipe(bbuf *b)
{
    if (b->p)
        br_wipe(b->p, b->p == b->stack ? b->hw : b->cap);
    if (b->p != b->stack)
        free(b->p);
    *b = (bbuf){0};
}

/* Append NFKC(s[0..n)) (valid UTF-8) to out. */
static int nfkc_append(const uint8_t *s, size_t n, bbuf *out)
{
    if (n == 0)
        return 0;
    size_t len = 0;
    uint8_t *r = u8_normalize(UNINORM_NFKC, s, n, NULL, &len);
    if (!r)
        return -ENOMEM;
    int ret = bb_add(out, r, len);
    br_wipe(r, len);
    free(r);
    return ret;
}

/* NFKC over the valid UTF-8 runs of b[0..n), other bytes kept as they are;
 * then the ideographic full stop U+3002 (E3 80 82) becomes '.'. */
static int nfkc_fold(const uint8_t *b, size_t n, bbuf *out)
{
    size_t i = 0;
    while (i < n) {
        const uint8_t *bad = u8_check(b + i, n - i);
        size_t run = bad ? (size_t)(bad - (b + i)) : n - i;
        if (nfkc_append(b + i, run, out) < 0)
            return -ENOMEM;
        i += run;
        if (bad && bb_add(out, b + i++, 1) < 0)
            return -ENOMEM;
    }
    size_t w = 0;
    for (size_t r = 0; r < out->len; r++) {
        if (r + 2 < out->len && out->p[r] == 0xE3 && out->p[r + 1] == 0x80 &&
            out->p[r + 2] == 0x82) {
            out->p[w++] = '.';
            r += 2;
        } else {
            out->p[w++] = out->p[r];
        }
    }
    out->len = w;
    return 0;
}

/* The folded form of s (url_secret.h, "Folding") in *out, or -ENOMEM, or
 * -ELOOP when it still changes after FOLD_ROUNDS rounds. The first copy of
 * s starts on room (cap bytes; ASCII folds there), *out may be there. */
static int fold(const char *s, size_t n, bbuf *out, uint8_t *room, size_t cap)
{
    bbuf b = {.p = room, .cap = cap, .stack = room};
    if (bb_add(&b, (const uint8_t *)s, n) < 0)
        return -ENOMEM;
    for (int round = 0; round < FOLD_ROUNDS; round++) {
        decode_all(b.p, &b.len);
        /* ASCII is its own NFKC, and no escape is left. */
        if (all_ascii(b.p, b.len)) {
            *out = b;
            return 0;
        }
        bbuf f = {0};
        if (nfkc_fold(b.p, b.len, &f) < 0) {
            bb_wipe(&f);
            bb_wipe(&b);
            return -ENOMEM;
        }
        bool same = f.len == b.len && memcmp(f.p, b.p, b.len) == 0;
        bb_wipe(&b);
        b = f;
        /* Without a '%' nothing decodes, and NFKC is idempotent. */
        if (same || !memchr(b.p, '%', b.len)) {
            *out = b;
            return 0;
        }
    }
    bb_wipe(&b);
    return -ELOOP;
}

/* ---- the address rule ---- */

static bool is_alpha(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(uint8_t c)
{
    return c >= '0' && c <= '9';
}

static bool is_local_char(uint8_t c)
{
    return is_alpha(c) || is_digit(c) || c >= 0x80 || (c && strchr("._%+-!$'*^`{|}~\"", c));
}

static bool is_label_char(uint8_t c)
{
    return is_alpha(c) || is_digit(c) || c >= 0x80 || c == '-' || c == '_';
}

/* Blanks and '@' may stand between the local part and the '@' that
 * starts the domain ("alice @x.com", "alice@@x.com"; a no-break or
 * ideographic space is a space once folded). */
static bool is_before_at(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '@';
}

/* A LOCAL ends before the '@' at b[i], past blanks and '@'. */
static bool local_before(const uint8_t *b, size_t i)
{
    while (i > 0 && is_before_at(b[i - 1]))
        i--;
    return i > 0 && is_local_char(b[i - 1]);
}

/* "[" 1..64 of [0-9A-Za-z.:] "]" at b[i..n). */
static bool address_literal_at(const uint8_t *b, size_t i, size_t n)
{
    size_t k = i + 1;
    while (k < n && k - i - 1 < LITERAL_MAX &&
           (is_alpha(b[k]) || is_digit(b[k]) || b[k] == '.' || b[k] == ':'))
        k++;
    return k > i + 1 && k < n && b[k] == ']';
}

/* A DOMAIN (url_secret.h) starting at b[i]; any_host: also one label, or
 * labels without a letter (a whole string's "alice@corp", "a@3232235777"). */
static bool domain_at(const uint8_t *b, size_t i, size_t n, bool any_host)
{
    if (i < n && b[i] == '[')
        return address_literal_at(b, i, n);
    size_t labels = 0;
    bool last_named = false, dotted_quad = true;
    while (i < n && is_label_char(b[i])) {
        size_t start = i;
        bool named = false, digits = true;
        unsigned value = 0;
        for (; i < n && is_label_char(b[i]); i++) {
            named |= is_alpha(b[i]) || b[i] >= 0x80;
            digits &= is_digit(b[i]);
            if (digits && value <= 255)
                value = value * 10 + (unsigned)(b[i] - '0');
        }
        labels++;
        last_named = named;
        dotted_quad &= digits && i - start <= 3 && value <= 255;
        if (i + 1 < n && b[i] == '.' && is_label_char(b[i + 1]))
            i++;
        else
            break;
    }
    if (any_host)
        return labels >= 1;
    return labels >= 2 && (last_named || (dotted_quad && labels == 4));
}

static bool mailto_at(const uint8_t *b, size_t i, size_t n)
{
    return n - i > 7 && strncasecmp((const char *)b + i, "mailto:", 7) == 0 &&
           is_local_char(b[i + 7]);
}

/* An address anywhere in b; after the first '?' (the query, where
 * "?email=" is the usual place an address leaks) its domain may be any
 * host, one label or a number ("?e=alice@corp"), as in a bare address. */
static bool folded_holds(const uint8_t *b, size_t n)
{
    bool query = false;
    for (size_t i = 0; i < n; i++) {
        query |= b[i] == '?';
        if (b[i] == '@' && local_before(b, i) && domain_at(b, i + 1, n, query))
            return true;
        if ((b[i] == 'm' || b[i] == 'M') && mailto_at(b, i, n))
            return true;
    }
    return false;
}

/* The bytes br_url_is_plain stops at, and br_url_may_hold_email once
 * decoded: 1 for '@', '%', '\', controls and bytes >= 0x7f, 2 for ':' (the
 * end of a "mailto:"). A '\' holds no address, but canonicalization turns
 * it into '/' (and drops what the authority then holds before an '@'):
 * not plain, and "check" is always a safe answer. */
static const uint8_t may_hold_stop[256] = {
    [0 ... 0x1f] = 1, ['@'] = 1, ['%'] = 1, ['\\'] = 1, [':'] = 2, [0x7f ... 0xff] = 1,
};

static bool mailto_before(const char *s, size_t i)
{
    return i >= 6 && strncasecmp(s + i - 6, "mailto", 6) == 0;
}

/* The table's answer for s[i..n). */
static bool may_hold_from(const char *s, size_t i, size_t n)
{
    for (; i < n; i++) {
        uint8_t stop = may_hold_stop[(uint8_t)s[i]];
        if (stop == 1 || (stop == 2 && mailto_before(s, i)))
            return true;
    }
    return false;
}

/* The blocks below hand a block with a byte the table stops at (1) to
 * may_hold_from with the rest of the string, and check each ':' of the
 * others themselves: a URL has one after its scheme. A last block that
 * would pass the end is taken ending at the end (overlapping the one
 * before: bytes seen twice give the same answer). */
#if defined(__SSE2__)
#include <emmintrin.h>

#define BLOCK 16

static bool raw_may_hold(const char *s, size_t n)
{
    if (n < BLOCK)
        return may_hold_from(s, 0, n);
    const __m128i c20 = _mm_set1_epi8(0x20), c7f = _mm_set1_epi8(0x7f), at = _mm_set1_epi8('@'),
                  pct = _mm_set1_epi8('%'), bsl = _mm_set1_epi8('\\'), colon = _mm_set1_epi8(':');
    for (size_t i = 0;; i += BLOCK) {
        if (i + BLOCK > n)
            i = n - BLOCK;
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        /* Signed: bytes >= 0x80 are below 0x20 too. */
        __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmplt_epi8(v, c20), _mm_cmpeq_epi8(v, c7f)),
                                    _mm_or_si128(_mm_cmpeq_epi8(v, at), _mm_cmpeq_epi8(v, pct)));
        stop = _mm_or_si128(stop, _mm_cmpeq_epi8(v, bsl));
        if (_mm_movemask_epi8(stop))
            return may_hold_from(s, i, n);
        for (unsigned c = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, colon)); c; c &= c - 1)
            if (mailto_before(s, i + (size_t)__builtin_ctz(c)))
                return true;
        if (i + BLOCK >= n)
            return false;
    }
}
#else
#define BLOCK 8
#define BYTES(c) (0x0101010101010101ull * (uint8_t)(c))
/* Some byte of w below c (c <= 0x80): exact for "some byte" (a borrow only
 * flags more bytes above one that is flagged anyway). */
#define HAS_BELOW(w, c) (((w)-BYTES(c)) & ~(w)&BYTES(0x80))

static bool raw_may_hold(const char *s, size_t n)
{
    if (n < BLOCK)
        return may_hold_from(s, 0, n);
    for (size_t i = 0;; i += BLOCK) {
        if (i + BLOCK > n)
            i = n - BLOCK;
        uint64_t w;
        memcpy(&w, s + i, BLOCK);
        if (HAS_BELOW(w, 0x20) | (((w + BYTES(1)) | w) & BYTES(0x80)) |
            HAS_BELOW(w ^ BYTES('@'), 1) | HAS_BELOW(w ^ BYTES('%'), 1) |
            HAS_BELOW(w ^ BYTES('\\'), 1))
            return may_hold_from(s, i, n);
        if (HAS_BELOW(w ^ BYTES(':'), 1) && may_hold_from(s, i, i + BLOCK))
            return true;
        if (i + BLOCK >= n)
            return false;
    }
}
#endif

bool br_url_is_plain(const char *s, size_t n)
{
    return !raw_may_hold(s, n);
}

/* "mailto", as the last six decoded bytes with 0x20 set in each (which
 * lowercases the ASCII letters and maps no other byte to one). */
#define MAILTO_TAIL 0x6d61696c746full

/* One left-to-right pass that decodes each %XX escape as folding's first
 * round does (decode_all). When no decoded byte is a stop byte ('%' among
 * them, so that a second round would change nothing, and none >= 0x80, so
 * that NFKC has nothing to do), the decoded text is the folded text, and it
 * holds no '@' and no "mailto:": no address, before or after
 * canonicalization (which removes only controls, the fragment, userinfo
 * and the port, and joins the expressions' pieces with '/'). A '%' that
 * starts no escape may start one once decoding brings hex digits next to
 * it: a stop too. */
static bool decoded_may_hold(const char *s, size_t n)
{
    const uint8_t *b = (const uint8_t *)s;
    uint64_t tail = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = b[i];
        if (c == '%') {
            int hi, lo;
            if (i + 2 >= n || (hi = br_hexval(b[i + 1])) < 0 || (lo = br_hexval(b[i + 2])) < 0)
                return true;
            c = (uint8_t)(hi * 16 + lo);
            i += 2;
        }
        uint8_t stop = may_hold_stop[c];
        if (stop == 1 || (stop == 2 && tail == MAILTO_TAIL))
            return true;
        tail = (tail << 8 | (uint8_t)(c | 0x20)) & 0xffffffffffffull;
    }
    return false;
}

/* A plain string (the block scan above, the usual case) decodes to itself
 * and holds no stop byte; the others are decoded. */
bool br_url_may_hold_email(const char *s, size_t n)
{
    return raw_may_hold(s, n) && decoded_may_hold(s, n);
}

static bool folded_is_email(const uint8_t *b, size_t n)
{
    if (n == 0)
        return false;
    size_t i = 0;
    while (i < n && b[i] <= 0x20)
        i++;
    while (n > i && b[n - 1] <= 0x20)
        n--;
    if (n - i >= 7 && strncasecmp((const char *)b + i, "mailto:", 7) == 0)
        return true;
    const uint8_t *at = memchr(b + i, '@', n - i);
    if (!at || !local_before(b + i, (size_t)(at - (b + i))))
        return false;
    for (const uint8_t *p = b + i; p < at; p++)
        if (*p == ':' || *p == '/' || *p == '?' || *p == '#')
            return false;
    /* The domain starts after the last '@' of the blanks and '@' there. */
    size_t d = (size_t)(at - b) + 1;
    for (size_t k = d; k < n && is_before_at(b[k]); k++)
        if (b[k] == '@')
            d = k + 1;
    return domain_at(b, d, n, true);
}

bool br_url_holds_email_folded(const char *s, size_t n)
{
    uint8_t room[FOLD_ROOM];
    bbuf f;
    if (fold(s, n, &f, room, sizeof(room)) < 0)
        return true;
    /* A whole string that is an address holds one (its domain may be one
     * label: "alice@corp"). */
    bool r = folded_holds(f.p, f.len) || folded_is_email(f.p, f.len);
    bb_wipe(&f);
    return r;
}

bool br_url_holds_email(const char *s, size_t n)
{
    /* Fast path: what cannot fold into an address is not folded. */
    return br_url_may_hold_email(s, n) && br_url_holds_email_folded(s, n);
}

bool br_url_is_email_folded(const char *s, size_t n)
{
    uint8_t room[FOLD_ROOM];
    bbuf f;
    if (fold(s, n, &f, room, sizeof(room)) < 0)
        return true;
    bool r = folded_is_email(f.p, f.len);
    bb_wipe(&f);
    return r;
}

bool br_url_is_email(const char *s, size_t n)
{
    /* Fast path: what cannot fold into an address is not folded. */
    return br_url_may_hold_email(s, n) && br_url_is_email_folded(s, n);
}

/* ---- lookup expressions ---- */

size_t br_url_exprs_drop_email(br_url_exprs *e)
{
    size_t o = 0, dropped = 0;
    for (size_t i = 0; i < e->n; i++) {
        char *x = e->expr[i];
        if (br_url_holds_email(x, e->len[i])) {
            br_wipe(x, e->len[i]); /* wiped now, freed at the clear */
            dropped++;
        } else {
            e->len[o] = e->len[i];
            e->expr[o++] = x;
        }
    }
    for (size_t i = o; i < e->n; i++)
        e->expr[i] = NULL;
    e->n = o;
    return dropped;
}

int br_url_lookup_expressions(const char *url, size_t len, unsigned host_labels, br_url_exprs *out,
                              size_t *dropped, br_error *err)
{
    out->n = 0;
    out->block = NULL;
    if (dropped)
        *dropped = 0;
    /* The canonical URL on the stack for the usual length; wiped after. */
    char room[BR_URL_CANON_ROOM];
    sbuf canon;
    sb_init_on(&canon, room, sizeof(room));
    int r = br_url_canon_into(&canon, url, len, err);
    if (r < 0) {
        sb_wipe(&canon);
        return r;
    }
    r = br_url_exprs_of(canon.p, canon.len, host_labels, out, err);
    /* The expressions are pieces of canon (a host suffix, then a path
     * prefix starting with '/', then the query): none holds an address
     * when canon cannot hold one, and each is checked alone otherwise. */
    bool check = br_url_may_hold_email(canon.p, canon.len);
    sb_wipe(&canon);
    if (r < 0)
        return r;
    size_t d = check ? br_url_exprs_drop_email(out) : 0;
    if (dropped)
        *dropped = d;
    if (out->n == 0)
        return br_error_set(err, -EPERM, BR_URL_ALL_SECRET_TEXT);
    return 0;
}
