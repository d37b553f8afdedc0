/* SPDX-License-Identifier: MIT */
/* The check: terms found in the normalised password, then the reading of
 * the password with the smallest score (docs/banned.md, "Matching",
 * "Score"), by dynamic programming over its positions: every piece is
 * worth one point, and a reading that holds a term is kept apart from one
 * that holds none. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "banned_int.h"
#include "core/util.h"

/* The normalised password: each character with the letters it may stand
 * for, and whether it is a letter itself. */
typedef struct pw {
    br_banned_cp p[BR_BANNED_PW_MAX];
    uint32_t sig[BR_BANNED_PW_MAX]; /* each character's and its readings' signature bits */
    uint32_t raw[BR_BANNED_PW_MAX];
    bool letter[BR_BANNED_PW_MAX];
    uint16_t symbols[BR_BANNED_PW_MAX + 1]; /* symbols (neither letters nor digits) before i */
    size_t n;
} pw;

/* The best reading of the first i characters: without a term (d0), with
 * at least one (d1, its terms and kinds). */
typedef struct reading {
    int d0[BR_BANNED_PW_MAX + 1], d1[BR_BANNED_PW_MAX + 1];
    unsigned terms[BR_BANNED_PW_MAX + 1], kinds[BR_BANNED_PW_MAX + 1];
} reading;

static inline bool eq(const br_banned_cp *p, uint32_t t)
{
    return p->c == t || p->alt[0] == t || p->alt[1] == t;
}

static bool tail_eq(const br_banned_cp *p, const uint32_t *t, size_t m)
{
    for (size_t i = 0; i < m; i++)
        if (!eq(&p[i], t[i]))
            return false;
    return true;
}

/* The spans from s where term t (m characters) is found: bit 0 one
 * character shorter than t, bit 1 as long, bit 2 one longer. */
static unsigned spans(const pw *w, size_t s, const uint32_t *t, size_t m)
{
    const br_banned_cp *p = w->p + s;
    size_t avail = w->n - s, l = 0;
    unsigned out = 0;
    while (l < m && l < avail && eq(&p[l], t[l]))
        l++;
    if (m < 4) /* whole runs of letters only */
        return l == m && (s == 0 || !w->letter[s - 1]) && (m == avail || !w->letter[s + m]) ? 2 : 0;
    if (l == m)
        return 2;
    if (m <= avail && tail_eq(p + l + 1, t + l + 1, m - l - 1)) /* one changed */
        out |= 2;
    if (m - 1 >= 4 && m - 1 <= avail && tail_eq(p + l, t + l + 1, m - l - 1)) /* one missing */
        out |= 1;
    if (m + 1 <= avail && tail_eq(p + l + 1, t + l, m - l)) /* one added */
        out |= 4;
    if (l + 1 < m && m <= avail && eq(&p[l], t[l + 1]) && eq(&p[l + 1], t[l]) &&
        tail_eq(p + l + 2, t + l + 2, m - l - 2)) /* two swapped */
        out |= 2;
    return out;
}

/* The piece [s, e) read as one point, a term of kind when term. */
static void relax(reading *d, size_t s, size_t e, bool term, unsigned kind)
{
    unsigned bit = term ? 1u << kind : 0;
    if (d->d0[s] < INT_MAX) {
        int *to = term ? &d->d1[e] : &d->d0[e];
        if (d->d0[s] + 1 < *to || (term && d->d0[s] + 1 == *to && d->terms[e] < 1)) {
            *to = d->d0[s] + 1;
            if (term) {
                d->terms[e] = 1;
                d->kinds[e] = bit;
            }
        }
    }
    if (d->d1[s] < INT_MAX) {
        int v = d->d1[s] + 1;
        unsigned nt = d->terms[s] + term;
        if (v < d->d1[e] || (v == d->d1[e] && nt > d->terms[e])) {
            d->d1[e] = v;
            d->terms[e] = nt;
            d->kinds[e] = d->kinds[s] | bit;
        }
    }
}

/* Every term of l found from s, forwards or reversed. win[L]: the
 * signature of the L characters from s (a term of m characters can only
 * be found in the m + 1 from s). */
static void terms_from(const pw *w, reading *d, const br_banned *l, size_t s, const uint32_t *win)
{
    size_t left = w->n - s;
    for (size_t i = 0; i < l->n; i++) {
        const br_banned_term_ *t = &l->t[i];
        uint32_t missing = t->sig & ~win[BR_MIN((size_t)t->len + 1, left)];
        if (missing & (missing - 1)) /* two or more of its characters missing */
            continue;
        unsigned sp = spans(w, s, t->cp, t->len) | spans(w, s, t->rcp, t->len);
        for (unsigned b = 0; b < 3; b++)
            if (sp & (1u << b))
                relax(d, s, s + t->len + b - 1, true, t->kind);
    }
}

/* The pieces that are not terms from s: one character, a run or walk, the
 * leading and trailing runs of digits and symbols (lead, trail long) as
 * far as their first BR_BANNED_AFFIX_SYMBOLS symbols from the password's
 * start or end (what an attacker's rules add: "2024!", not a random
 * string's "\\@.;"). */
#define BR_BANNED_AFFIX_SYMBOLS 2
static void others_from(const pw *w, reading *d, size_t s, size_t lead, size_t trail)
{
    relax(d, s, s + 1, false, 0);
    for (size_t e = s + 3, end = br_banned_run_end(w->raw, w->n, s); e <= end; e++)
        relax(d, s, e, false, 0);
    for (size_t e = 2; s == 0 && e <= lead && w->symbols[e] <= BR_BANNED_AFFIX_SYMBOLS; e++)
        relax(d, 0, e, false, 0);
    if (s + 1 < w->n && s >= w->n - trail &&
        w->symbols[w->n] - w->symbols[s] <= BR_BANNED_AFFIX_SYMBOLS)
        relax(d, s, w->n, false, 0);
}

static void score(const pw *w, reading *d, const br_banned *const *lists, size_t nl,
                  br_banned_result *r)
{
    size_t lead = 0, trail = 0, n = w->n;
    while (lead < n && !w->letter[lead])
        lead++;
    while (trail < n && !w->letter[n - 1 - trail])
        trail++;
    for (size_t i = 0; i <= n; i++)
        d->d0[i] = d->d1[i] = INT_MAX;
    d->d0[0] = 0;
    uint32_t win[BR_BANNED_TERM_MAX + 2];
    for (size_t s = 0; s < n; s++) {
        others_from(w, d, s, lead, trail);
        win[0] = 0;
        for (size_t k = 1; k < BR_ARRAY_SIZE(win) && s + k <= n; k++)
            win[k] = win[k - 1] | w->sig[s + k - 1];
        for (size_t k = 0; k < nl; k++)
            if (lists[k])
                terms_from(w, d, lists[k], s, win);
    }
    if (d->d1[n] < INT_MAX) {
        r->score = d->d1[n];
        r->terms = d->terms[n];
        r->kinds = d->kinds[n];
    } else {
        r->score = d->d0[n];
    }
}

int br_banned_check(const br_banned *const *lists, size_t n, const void *password, size_t len,
                    int min_score, br_banned_result *r)
{
    memset(r, 0, sizeof(*r));
    pw *w = malloc(sizeof(*w));
    reading *d = malloc(sizeof(*d));
    int k = w && d ? br_banned_norm(password, len, w->raw, BR_BANNED_PW_MAX) : -ENOMEM;
    if (k >= 0) {
        w->n = (size_t)k;
        w->symbols[0] = 0;
        for (size_t i = 0; i < w->n; i++) {
            bool digit = w->raw[i] >= '0' && w->raw[i] <= '9';
            br_banned_cp_of(w->raw[i], &w->p[i]);
            w->letter[i] = br_banned_is_letter(w->raw[i]);
            w->symbols[i + 1] = (uint16_t)(w->symbols[i] + (!w->letter[i] && !digit));
            w->sig[i] = br_banned_sig(w->p[i].c) |
                        (w->p[i].alt[0] ? br_banned_sig(w->p[i].alt[0]) : 0) |
                        (w->p[i].alt[1] ? br_banned_sig(w->p[i].alt[1]) : 0);
        }
        score(w, d, lists, n, r);
        r->refused = r->terms > 0 && r->score < (min_score > 0 ? min_score : BR_BANNED_MIN_SCORE);
    }
    if (w)
        br_wipe(w, sizeof(*w));
    if (d)
        br_wipe(d, sizeof(*d));
    free(w);
    free(d);
    return k < 0 ? k : 0;
}
