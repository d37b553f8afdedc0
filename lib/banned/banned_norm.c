/* SPDX-License-Identifier: MIT */
/* Normalisation of terms and passwords, look-alike characters and walks
 * (docs/banned.md, "Normalisation"). libunistring does the Unicode part:
 * case folding with NFKD, then NFKC once combining marks are dropped. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <unicase.h>
#include <unictype.h>
#include <uninorm.h>
#include <unistr.h>

#include "banned_int.h"
#include "core/util.h"

/* Letters of other scripts that look like a Latin letter, after case
 * folding: read as that letter on both sides (docs/banned.md). */
static const uint32_t confusable[][2] = {
    {0x0131, 'i'},
    {0x0142, 'l'},
    {0x00f8, 'o'},
    {0x0111, 'd'},
    {0x0127, 'h'},
    /* Cyrillic */
    {0x0430, 'a'},
    {0x0435, 'e'},
    {0x043e, 'o'},
    {0x0440, 'p'},
    {0x0441, 'c'},
    {0x0443, 'y'},
    {0x0445, 'x'},
    {0x0456, 'i'},
    {0x0458, 'j'},
    {0x0455, 's'},
    {0x0501, 'd'},
    {0x04bb, 'h'},
    {0x051b, 'q'},
    {0x051d, 'w'},
    {0x043a, 'k'},
    {0x043c, 'm'},
    {0x0442, 't'},
    /* Greek */
    {0x03b1, 'a'},
    {0x03b2, 'b'},
    {0x03b5, 'e'},
    {0x03b9, 'i'},
    {0x03ba, 'k'},
    {0x03bd, 'v'},
    {0x03bf, 'o'},
    {0x03c1, 'p'},
    {0x03c4, 't'},
    {0x03c5, 'u'},
    {0x03c7, 'x'},
    {0x03bc, 'u'},
};

/* A password's digits and symbols, after normalisation, and the letters
 * they may stand for: Entra's 0 1 $ @, the ones its critics list (4 € 6 7
 * 8 9 §), and more (docs/banned.md, the table). */
static const struct {
    uint32_t c;
    uint32_t alt[2];
} leet[] = {
    {'0', {'o'}},    {'1', {'l', 'i'}}, {'!', {'i', 'l'}}, {'|', {'l', 'i'}},    {'$', {'s'}},
    {'5', {'s'}},    {0x00a7, {'s'}},   {'@', {'a'}},      {'4', {'a'}},         {'3', {'e'}},
    {0x20ac, {'e'}}, {'6', {'g', 'b'}}, {'9', {'g', 'q'}}, {'7', {'t'}},         {'+', {'t'}},
    {'8', {'b'}},    {'2', {'z'}},      {'(', {'c'}},      {'<', {'c'}},         {'{', {'c'}},
    {'[', {'c'}},    {'%', {'x'}},      {'#', {'h'}},      {0x00a3, {'l', 'e'}}, {0x00a5, {'y'}},
    {0x00a2, {'c'}}, {0x00a9, {'c'}},   {0x00ae, {'r'}},
};

/* Keyboard rows and the alphabet: a walk steps along one of them. */
static const char *const rows[] = {
    "1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm", "abcdefghijklmnopqrstuvwxyz", "0123456789",
};

bool br_banned_is_letter(uint32_t c)
{
    if (c < 0x80)
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    return uc_is_general_category(c, UC_LETTER);
}

void br_banned_cp_of(uint32_t c, br_banned_cp *out)
{
    memset(out, 0, sizeof(*out));
    out->c = c;
    for (size_t i = 0; i < BR_ARRAY_SIZE(leet); i++)
        if (leet[i].c == c) {
            memcpy(out->alt, leet[i].alt, sizeof(out->alt));
            return;
        }
}

static uint32_t unconfuse(uint32_t c)
{
    if (c < 0x80)
        return c;
    for (size_t i = 0; i < BR_ARRAY_SIZE(confusable); i++)
        if (confusable[i][0] == c)
            return confusable[i][1];
    return c;
}

/* The bytes as code points, an invalid sequence as U+FFFD; at most cap. */
static size_t decode(const uint8_t *s, size_t n, uint32_t *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < cap;) {
        ucs4_t uc;
        int l = u8_mbtouc(&uc, s + i, n - i);
        out[k++] = uc;
        i += (size_t)(l > 0 ? l : 1);
    }
    return k;
}

/* libunistring's result: in buf when it fits, else allocated. */
static void drop(uint32_t *r, const uint32_t *buf, size_t len)
{
    if (!r)
        return;
    br_wipe(r, len * sizeof(*r));
    if (r != buf)
        free(r);
}

int br_banned_norm(const uint8_t *s, size_t n, uint32_t *out, size_t cap)
{
    uint32_t in[2 * BR_BANNED_PW_MAX], folded[4 * BR_BANNED_PW_MAX], comp[4 * BR_BANNED_PW_MAX];
    size_t k = decode(s, n, in, BR_MIN(cap, BR_ARRAY_SIZE(in))), flen = BR_ARRAY_SIZE(folded);
    size_t clen = BR_ARRAY_SIZE(comp), m = 0;
    uint32_t *f = u32_casefold(in, k, NULL, UNINORM_NFKD, folded, &flen);
    br_wipe(in, sizeof(in));
    if (!f)
        return -ENOMEM;
    for (size_t i = 0; i < flen; i++) /* combining marks dropped: é reads as e */
        if (!uc_is_general_category(f[i], UC_NON_SPACING_MARK))
            f[m++] = f[i];
    uint32_t *c = u32_normalize(UNINORM_NFKC, f, m, comp, &clen);
    drop(f, folded, flen);
    if (!c)
        return -ENOMEM;
    m = BR_MIN(clen, cap);
    for (size_t i = 0; i < m; i++)
        out[i] = unconfuse(c[i]);
    drop(c, comp, clen);
    br_wipe(folded, sizeof(folded));
    return (int)m;
}

/* The walk along row r from p[s], in the direction p[s] -> p[s+1]: its
 * end, or s when p[s], p[s+1] are not neighbours there. */
static size_t walk_end(const char *row, const uint32_t *p, size_t n, size_t s)
{
    if (s + 1 >= n || !p[s] || !p[s + 1] || p[s] >= 0x80 || p[s + 1] >= 0x80)
        return s;
    const char *a = strchr(row, (int)p[s]), *b = strchr(row, (int)p[s + 1]);
    if (!a || !b || (b - a != 1 && a - b != 1))
        return s;
    ptrdiff_t d = b - a, at = b - row, len = (ptrdiff_t)strlen(row);
    size_t e = s + 2;
    for (at += d; e < n && at >= 0 && at < len && (uint32_t)(unsigned char)row[at] == p[e]; at += d)
        e++;
    return e;
}

size_t br_banned_run_end(const uint32_t *p, size_t n, size_t s)
{
    size_t best = s, e = s + 1;
    while (e < n && p[e] == p[s])
        e++;
    if (e - s >= 3)
        best = e;
    for (size_t r = 0; r < BR_ARRAY_SIZE(rows); r++) {
        e = walk_end(rows[r], p, n, s);
        if (e - s >= 3 && e > best)
            best = e;
    }
    return best;
}
