/* SPDX-License-Identifier: MIT */
/* Similar passwords (similar.h, docs/similar.md): the context, the
 * deduplication and hashing of the variants, and the transformations of
 * similar.h's list that make them, in its order.
 *
 * Every working copy of a transformation is a stack buffer of
 * BR_SIMILAR_MAX_LEN bytes wiped before its function returns; sim_emit
 * copies what it keeps into the context's arena, which is wiped after every
 * call. Only ASCII is folded or read as a look-alike; other bytes (NUL,
 * UTF-8, invalid UTF-8) are kept as they are. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/br_assert.h"
#include "core/util.h"
#include "similar_int.h"

#define ARENA_SIZE ((size_t)(BR_SIMILAR_MAX + 1) * BR_SIMILAR_MAX_LEN)
#define SLOTS_SIZE ((size_t)SIM_SLOTS * sizeof(struct sim_slot))

br_similar *br_similar_new(unsigned flags, br_error *err)
{
    if (!(flags & (BR_SIMILAR_SHA1 | BR_SIMILAR_NT)) ||
        (flags & ~(BR_SIMILAR_SHA1 | BR_SIMILAR_NT))) {
        br_error_set(err, -EINVAL, "similar passwords: flags %#x ask for no known hash", flags);
        return NULL;
    }
    br_similar *s = calloc(1, sizeof(*s));
    if (!s) {
        br_error_set(err, -ENOMEM, "similar passwords: out of memory");
        return NULL;
    }
    s->flags = flags;
    if (flags & BR_SIMILAR_NT) {
        s->nt_hasher = br_nt_hasher_new(err);
        if (!s->nt_hasher) {
            br_similar_free(s);
            return NULL;
        }
    }
    /* Zero from the start, and wiped back to zero after every call; out of
     * core dumps and swap (br_secret_alloc): they hold the variants. */
    s->arena = br_secret_alloc(ARENA_SIZE);
    s->slots = br_secret_alloc(SLOTS_SIZE);
    if (!s->arena || !s->slots) {
        br_similar_free(s);
        br_error_set(err, -ENOMEM, "similar passwords: out of memory");
        return NULL;
    }
    return s;
}

void br_similar_free(br_similar *s)
{
    if (!s)
        return;
    br_nt_hasher_free(s->nt_hasher);
    br_secret_free(s->arena, ARENA_SIZE); /* also wiped at the end of every call */
    br_secret_free(s->slots, SLOTS_SIZE);
    br_wipe(s, sizeof(*s));
    free(s);
}

/* FNV-1a: the table only needs the variants of one password spread. */
static uint32_t fnv1a(const uint8_t *v, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ v[i]) * 16777619u;
    return h;
}

/* Insert v; false if it was there already (or the table is full, which the
 * bound keeps from happening: SIM_SLOTS > 2 * (BR_SIMILAR_MAX + 1)). */
static bool table_insert(br_similar *s, const uint8_t *v, size_t len)
{
    uint32_t h = fnv1a(v, len);
    for (size_t i = 0, at = h; i < SIM_SLOTS; i++, at++) {
        struct sim_slot *sl = &s->slots[at & (SIM_SLOTS - 1)];
        if (sl->off == 0) {
            if (br_fails_assert(s->arena_used + len + 1 <= ARENA_SIZE))
                return false;
            /* Stored with its length first, so that equal bytes of another
             * length never compare equal. */
            uint8_t *dst = s->arena + s->arena_used;
            dst[0] = (uint8_t)len;
            memcpy(dst + 1, v, len);
            sl->off = (uint32_t)s->arena_used + 1;
            sl->hash = h;
            s->arena_used += len + 1;
            return true;
        }
        const uint8_t *old = s->arena + sl->off - 1;
        if (sl->hash == h && old[0] == len && memcmp(old + 1, v, len) == 0)
            return false;
    }
    return false;
}

/* br_similar_hashes's callback (ctx is the context): the variant's hashes
 * into the next slot of the caller's arrays. A variant whose NT hash is
 * the password's own is not counted, and the next one takes its slot. */
static int hash_variant(const uint8_t *v, size_t len, void *ctx)
{
    br_similar *s = ctx;
    uint8_t nt[BR_NT_LEN];
    s->uncounted = true;
    if (s->flags & BR_SIMILAR_NT) {
        int rc = br_nt_hasher_digest(s->nt_hasher, v, len, nt);
        if (rc < 0) {
            s->rc = rc;
            return 1;
        }
        bool same = memcmp(nt, s->exact_nt, BR_NT_LEN) == 0;
        memcpy(s->nt[s->n], nt, BR_NT_LEN);
        br_wipe(nt, sizeof(nt));
        if (same)
            return 0; /* the password itself, as Windows reads it */
    }
    if ((s->flags & BR_SIMILAR_SHA1) && br_sha1(v, len, s->sha1[s->n]) < 0) {
        s->rc = -EIO;
        return 1;
    }
    s->uncounted = false;
    return s->n + 1 >= s->hash_cap; /* the caller's bound reached */
}

/* Offer one variant: made unless too short or long, already made, the
 * password itself, or past the bound. */
static void sim_emit(br_similar *s, const uint8_t *v, size_t len)
{
    if (s->done || len < BR_SIMILAR_MIN_LEN || len > BR_SIMILAR_MAX_LEN)
        return;
    if (!table_insert(s, v, len))
        return;
    if (s->fn(v, len, s->fn_ctx) != 0)
        s->done = true;
    if (!s->uncounted)
        s->n++;
    s->uncounted = false;
    if (s->n >= s->cap)
        s->done = true;
}

/* The transformations */

#define MAXL BR_SIMILAR_MAX_LEN
/* At most this many leading or trailing digits and symbols are taken off
 * one at a time (then all of the trailing ones at once). */
#define STRIP_MAX 8
/* Look-alike positions looked at in one core. */
#define LEET_POS 16

static bool is_alpha(uint8_t c)
{
    return (uint8_t)((c | 0x20) - 'a') < 26;
}

static bool is_digit(uint8_t c)
{
    return (uint8_t)(c - '0') < 10;
}

/* Digits, ASCII symbols and the space: what is added around a word. */
static bool is_strip(uint8_t c)
{
    return c >= 0x20 && c < 0x7f && !is_alpha(c);
}

static uint8_t lower(uint8_t c)
{
    return (uint8_t)((c >= 'A' && c <= 'Z') ? c | 0x20 : c);
}

static uint8_t upper(uint8_t c)
{
    return (uint8_t)((c >= 'a' && c <= 'z') ? c & ~0x20 : c);
}

/* The letters a look-alike character is read as, the likelier first. */
static const char *leet_of(uint8_t c)
{
    switch (c) {
    case '@':
    case '4':
        return "a";
    case '0':
        return "o";
    case '1':
    case '!':
        return "il";
    case '|':
        return "li";
    case '3':
        return "e";
    case '$':
    case '5':
        return "s";
    case '7':
    case '+':
        return "t";
    case '8':
        return "b";
    case '6':
        return "bg";
    case '9':
        return "gq";
    case '(':
    case '<':
    case '{':
        return "c";
    case '%':
        return "x";
    default:
        return NULL;
    }
}

static void lower_copy(uint8_t *dst, const uint8_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = lower(src[i]);
}

/* buf (lowercase, n bytes) and its Capitalised form. */
static void emit_lower_cap(br_similar *s, uint8_t *buf, size_t n)
{
    sim_emit(s, buf, n);
    if (n > 0 && is_alpha(buf[0])) {
        buf[0] = upper(buf[0]);
        sim_emit(s, buf, n);
        buf[0] = lower(buf[0]);
    }
}

/* The core c read with look-alikes as letters: combination `combo` of the
 * positions' readings (mixed radix); digits kept when symbols_only. */
static void deleet(uint8_t *out, const uint8_t *c, size_t n, size_t combo, bool symbols_only)
{
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        const char *l = leet_of(c[i]);
        out[i] = lower(c[i]);
        if (!l || seen++ >= LEET_POS || (symbols_only && is_digit(c[i])))
            continue;
        size_t r = strlen(l);
        out[i] = (uint8_t)l[combo % r];
        combo /= r;
    }
}

static void emit_leet(br_similar *s, const uint8_t *c, size_t n)
{
    size_t positions = 0, combos = 1, letters = 0;
    for (size_t i = 0; i < n; i++) {
        letters += is_alpha(c[i]);
        const char *l = leet_of(c[i]);
        if (l && positions++ < LEET_POS && combos < BR_SIMILAR_LEET)
            combos *= strlen(l);
    }
    if (positions == 0 || letters == 0)
        return;
    uint8_t buf[MAXL];
    for (size_t k = 0; k < BR_MIN(combos, (size_t)BR_SIMILAR_LEET); k++) {
        deleet(buf, c, n, k, false);
        emit_lower_cap(s, buf, n);
    }
    deleet(buf, c, n, 0, true);
    sim_emit(s, buf, n);
    br_wipe(buf, sizeof(buf));
}

/* Step 2: the forms of one core. */
static void emit_forms(br_similar *s, const uint8_t *c, size_t n)
{
    if (n < BR_SIMILAR_MIN_LEN || n > MAXL || s->done)
        return;
    uint8_t buf[MAXL];
    sim_emit(s, c, n);
    lower_copy(buf, c, n);
    emit_lower_cap(s, buf, n);
    br_wipe(buf, sizeof(buf));
    emit_leet(s, c, n);
}

static size_t tail_run(const uint8_t *q, size_t m)
{
    size_t t = 0;
    while (t < m && is_strip(q[m - 1 - t]))
        t++;
    return t;
}

/* Length of the run of one repeated byte that ends q[0..m). */
static size_t repeat_run(const uint8_t *q, size_t m)
{
    size_t r = m > 0;
    while (r < m && q[m - 1 - r] == q[m - 1])
        r++;
    return r;
}

/* Step 3 for one core: its trailing symbols off, and if it then ends with
 * a digit, that digit changed (lowercase). */
static void emit_last_digit(br_similar *s, const uint8_t *q, size_t m, size_t min)
{
    while (m > 0 && is_strip(q[m - 1]) && !is_digit(q[m - 1]))
        m--;
    if (m < BR_MAX(min, (size_t)BR_SIMILAR_MIN_LEN) || m > MAXL || !is_digit(q[m - 1]))
        return;
    uint8_t buf[MAXL];
    lower_copy(buf, q, m);
    for (uint8_t d = '0'; d <= '9'; d++) {
        buf[m - 1] = d;
        sim_emit(s, buf, m);
    }
    br_wipe(buf, sizeof(buf));
}

/* A core that is shorter than `min` bytes is not used (see sim_generate). */
static void emit_core(br_similar *s, const uint8_t *q, size_t m, size_t min)
{
    if (m >= min)
        emit_forms(s, q, m);
}

/* Step 1 for the password without its first `lead` bytes (whole: lead is
 * 0): the cores and their forms. Returns the length of the stripped head
 * (the base). */
static size_t emit_cores(br_similar *s, const uint8_t *q, size_t m, bool whole, size_t min)
{
    size_t t = tail_run(q, m);
    emit_core(s, q, m, whole ? 0 : min);
    for (size_t k = 1; k <= BR_MIN(t, (size_t)STRIP_MAX); k++)
        emit_core(s, q, m - k, min);
    if (t > STRIP_MAX)
        emit_core(s, q, m - t, min);
    size_t r = repeat_run(q, m);
    if (r >= 2)
        emit_core(s, q, m - r + 1, min);
    size_t h = m - t, rh = repeat_run(q, h);
    if (t > 0 && rh >= 2)
        emit_core(s, q, h - rh + 1, min);
    return h;
}

/* Word endings a mangling rule adds (plural, -ed, -ing, -er), and what the
 * word ended with before. */
static const struct {
    const char *end, *was;
} endings[] = {
    {"s", ""},    {"es", ""},  {"ies", "y"}, {"ves", "f"}, {"ves", "fe"}, {"ed", ""}, {"d", ""},
    {"ied", "y"}, {"ing", ""}, {"ing", "e"}, {"er", ""},   {"ers", ""},   {"'s", ""},
};

static void emit_unended(br_similar *s, const uint8_t *b, size_t h)
{
    uint8_t buf[MAXL];
    for (size_t i = 0; i < BR_ARRAY_SIZE(endings); i++) {
        size_t el = strlen(endings[i].end), wl = strlen(endings[i].was);
        if (h <= el || memcmp(b + h - el, endings[i].end, el) != 0 || h - el + wl > MAXL)
            continue;
        size_t r = h - el;
        memcpy(buf, b, r);
        memcpy(buf + r, endings[i].was, wl);
        emit_lower_cap(s, buf, r + wl);
        /* stopped -> stopp -> stop */
        if (wl == 0 && r >= 2 && buf[r - 1] == buf[r - 2])
            emit_lower_cap(s, buf, r - 1);
    }
    br_wipe(buf, sizeof(buf));
}

/* Step 4 on a lowercase base b[0..h): reversed, halved, endings undone. */
static void emit_unmangled(br_similar *s, const uint8_t *b, size_t h)
{
    if (h < BR_SIMILAR_MIN_LEN || h > MAXL)
        return;
    uint8_t buf[MAXL] = {0};
    for (size_t i = 0; i < h; i++)
        buf[i] = b[h - 1 - i];
    emit_lower_cap(s, buf, h);
    br_wipe(buf, sizeof(buf));
    size_t half = h / 2;
    if (h % 2 == 0) {
        bool twice = memcmp(b, b + half, half) == 0, mirrored = true;
        for (size_t i = 0; i < half && mirrored; i++)
            mirrored = b[half + i] == b[half - 1 - i];
        if (twice || mirrored)
            emit_forms(s, b, half);
    }
    emit_unended(s, b, h);
}

/* Step 5 on a lowercase base b[0..h). */
static void emit_ed1(br_similar *s, const uint8_t *b, size_t h)
{
    if (h < BR_SIMILAR_ED1_MIN || h > BR_SIMILAR_ED1_MAX)
        return;
    uint8_t buf[BR_SIMILAR_ED1_MAX + 1];
    for (size_t i = 0; i < h && !s->done; i++) { /* deleted */
        memcpy(buf, b, i);
        memcpy(buf + i, b + i + 1, h - i - 1);
        sim_emit(s, buf, h - 1);
    }
    memcpy(buf, b, h);
    for (size_t i = 0; i + 1 < h && !s->done; i++) { /* swapped */
        buf[i] = b[i + 1];
        buf[i + 1] = b[i];
        sim_emit(s, buf, h);
        buf[i] = b[i];
        buf[i + 1] = b[i + 1];
    }
    for (size_t i = 0; i < h && !s->done; i++) { /* changed */
        for (uint8_t c = 'a'; c <= 'z'; c++) {
            buf[i] = c;
            sim_emit(s, buf, h);
        }
        buf[i] = b[i];
    }
    for (size_t i = 0; i <= h && !s->done; i++) { /* inserted */
        memcpy(buf, b, i);
        memcpy(buf + i + 1, b + i, h - i);
        for (uint8_t c = 'a'; c <= 'z'; c++) {
            buf[i] = c;
            sim_emit(s, buf, h + 1);
        }
    }
    br_wipe(buf, sizeof(buf));
}

/* The lowercase base of one lead and its first look-alike reading. */
struct bases {
    uint8_t plain[MAXL], read[MAXL];
    size_t len;
    bool has_read, typed_case;
};

/* Letters cased as people type a word: all lower, all upper, or a capital
 * first (or last: John's "freD"). A random mix ("SbnGLE") is not a tweak
 * of a popular password, and the edit-distance step would find a word
 * near it ("single") in any large list. */
static bool typed_case(const uint8_t *q, size_t h)
{
    size_t up = 0, low = 0, first = h, last = h;
    for (size_t i = 0; i < h; i++) {
        if (!is_alpha(q[i]))
            continue;
        if (first == h)
            first = i;
        last = i;
        if (q[i] >= 'a')
            low++;
        else
            up++;
    }
    return up == 0 || low == 0 || (up == 1 && (q[first] < 'a' || q[last] < 'a'));
}

static void make_bases(struct bases *b, const uint8_t *q, size_t h, size_t min)
{
    b->len = h <= MAXL && h >= min ? h : 0;
    lower_copy(b->plain, q, b->len);
    deleet(b->read, q, b->len, 0, false);
    b->has_read = memcmp(b->plain, b->read, b->len) != 0;
    b->typed_case = typed_case(q, b->len);
}

/* What is taken off the ends keeps at least half of the password (its
 * trailing repeats counted once): "Summer2024!!!" keeps "summer", but a
 * random "7#&qlx%$!2@9" does not shrink to a 3-letter word that a large
 * filter of popular passwords would hold. */
static size_t core_min(const uint8_t *p, size_t n)
{
    size_t eff = n - (n > 0 ? repeat_run(p, n) - 1 : 0);
    return BR_MAX((eff + 1) / 2, (size_t)BR_SIMILAR_MIN_LEN);
}

static void sim_generate(br_similar *s, const uint8_t *p, size_t n)
{
    size_t lead = 0, min = core_min(p, n);
    while (lead < n && is_strip(p[lead]))
        lead++;
    size_t leads[2] = {0, lead}, nleads = (lead > 0 && lead <= STRIP_MAX && lead < n) ? 2 : 1;
    struct bases b[2];
    for (size_t i = 0; i < nleads; i++) {
        size_t h = emit_cores(s, p + leads[i], n - leads[i], i == 0, min);
        make_bases(&b[i], p + leads[i], h, min);
    }
    for (size_t i = 0; i < nleads; i++)
        emit_last_digit(s, p + leads[i], n - leads[i], min);
    for (size_t i = 0; i < nleads; i++) {
        emit_unmangled(s, b[i].plain, b[i].len);
        if (b[i].has_read)
            emit_unmangled(s, b[i].read, b[i].len);
    }
    /* Edit distance one from the most stripped base only, read with its
     * look-alikes as letters when it has any: each of its up to 900
     * variants is one more chance of a filter's false positive. */
    struct bases *last = &b[nleads - 1];
    if (last->typed_case)
        emit_ed1(s, last->has_read ? last->read : last->plain, last->len);
    br_wipe(b, sizeof(b));
}

/* One password through the rules, then everything it left wiped. */
static int run(br_similar *s, const void *password, size_t len)
{
    const uint8_t *p = password;
    s->n = 0;
    s->rc = 0;
    s->done = false;
    s->uncounted = false;
    s->arena_used = 0;
    /* The password itself goes in first: no variant equals it. */
    if (len <= BR_SIMILAR_MAX_LEN)
        table_insert(s, p, len);
    sim_generate(s, p, len);
    br_wipe(s->arena, s->arena_used);
    br_wipe(s->slots, SIM_SLOTS * sizeof(*s->slots));
    s->arena_used = 0;
    return s->rc < 0 ? s->rc : (int)s->n;
}

/* The variants through br_similar_each, each hashed by hash_variant. */
int br_similar_hashes(br_similar *s, const void *password, size_t len, uint8_t (*sha1)[BR_SHA1_LEN],
                      uint8_t (*nt)[BR_NT_LEN], size_t cap)
{
    if (((s->flags & BR_SIMILAR_SHA1) && !sha1) || ((s->flags & BR_SIMILAR_NT) && !nt))
        return -EINVAL;
    s->hash_cap = BR_MIN(cap, (size_t)BR_SIMILAR_MAX);
    int rc = 0;
    if (s->flags & BR_SIMILAR_NT)
        rc = br_nt_hasher_digest(s->nt_hasher, password, len, s->exact_nt);
    if (rc == 0 && s->hash_cap > 0) {
        s->sha1 = sha1;
        s->nt = nt;
        rc = br_similar_each(s, password, len, hash_variant, s);
    }
    br_wipe(s->exact_nt, sizeof(s->exact_nt));
    if (rc < 0) {
        if (sha1)
            br_wipe(sha1, s->hash_cap * BR_SHA1_LEN);
        if (nt)
            br_wipe(nt, s->hash_cap * BR_NT_LEN);
    }
    s->sha1 = NULL;
    s->nt = NULL;
    return rc;
}

int br_similar_each(br_similar *s, const void *password, size_t len, br_similar_fn fn, void *ctx)
{
    s->fn = fn;
    s->fn_ctx = ctx;
    s->cap = BR_SIMILAR_MAX;
    int rc = run(s, password, len);
    s->fn = NULL;
    s->fn_ctx = NULL;
    return rc;
}
