/* SPDX-License-Identifier: MIT */
/* The term list and the check (docs/banned.md, "Matching", "Score"). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <unistr.h>

#include "banned_int.h"
#include "core/util.h"

br_banned *br_banned_new(void)
{
    return calloc(1, sizeof(br_banned));
}

void br_banned_free(br_banned *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        free(b->t[i].cp);
        free(b->t[i].rcp);
        free(b->t[i].text);
    }
    free(b->t);
    free(b);
}

size_t br_banned_count(const br_banned *b)
{
    return b ? b->n : 0;
}

const char *br_banned_term(const br_banned *b, size_t i, br_banned_kind *kind)
{
    if (!b || i >= b->n)
        return NULL;
    if (kind)
        *kind = (br_banned_kind)b->t[i].kind;
    return b->t[i].text;
}

/* 0, or -EINVAL with err when term is not text a term may be. */
static int check_text(const char *term, size_t len, br_error *err)
{
    const uint8_t *bad = u8_check((const uint8_t *)term, len);
    if (bad)
        return br_error_set(err, -EINVAL, "invalid UTF-8 at byte %zu",
                            (size_t)(bad - (const uint8_t *)term));
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)term[i] < 0x20 || term[i] == 0x7f)
            return br_error_set(err, -EINVAL, "a control character at byte %zu", i);
    return 0;
}

static bool same(const br_banned_term_ *t, const uint32_t *cp, size_t m)
{
    return t->len == m && memcmp(t->cp, cp, m * sizeof(*cp)) == 0;
}

/* Store cp[0..m) as a new term of kind. */
static int store(br_banned *b, br_banned_kind kind, const uint32_t *cp, size_t m)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        br_banned_term_ *t = realloc(b->t, cap * sizeof(*t));
        if (!t)
            return -ENOMEM;
        b->t = t;
        b->cap = cap;
    }
    size_t tl = 0;
    br_banned_term_ *t = &b->t[b->n];
    t->cp = malloc(m * sizeof(*cp));
    t->rcp = malloc(m * sizeof(*cp));
    t->text = (char *)u32_to_u8(cp, m, NULL, &tl);
    char *z = t->text ? realloc(t->text, tl + 1) : NULL;
    if (!t->cp || !t->rcp || !z) {
        free(t->cp);
        free(t->rcp);
        free(z ? z : t->text);
        return -ENOMEM;
    }
    z[tl] = '\0';
    t->text = z;
    memcpy(t->cp, cp, m * sizeof(*cp));
    t->sig = 0;
    for (size_t i = 0; i < m; i++) {
        t->rcp[i] = cp[m - 1 - i];
        t->sig |= br_banned_sig(cp[i]);
    }
    t->len = (uint8_t)m;
    t->kind = (uint8_t)kind;
    b->n++;
    return 0;
}

int br_banned_add(br_banned *b, br_banned_kind kind, const char *term, size_t len, br_error *err)
{
    uint32_t cp[BR_BANNED_TERM_MAX + 1];
    int r = check_text(term, len, err);
    if (r < 0)
        return r;
    int k = br_banned_norm((const uint8_t *)term, len, cp, BR_ARRAY_SIZE(cp));
    if (k < 0)
        return k;
    size_t m = 0;
    for (int i = 0; i < k; i++) /* blanks inside a term dropped: "new york" */
        if (cp[i] != ' ' && cp[i] != '\t')
            cp[m++] = cp[i];
    if (m < BR_BANNED_TERM_MIN)
        return br_error_set(err, -EINVAL,
                            "too short: %zu characters (at least %d: a shorter term would "
                            "refuse nearly every password)",
                            m, BR_BANNED_TERM_MIN);
    if (m > BR_BANNED_TERM_MAX)
        return br_error_set(err, -EINVAL, "too long: over %d characters", BR_BANNED_TERM_MAX);
    for (size_t i = 0; i < b->n; i++)
        if (same(&b->t[i], cp, m))
            return 1;
    if (b->n >= BR_BANNED_MAX_TERMS)
        return br_error_set(err, -ENOSPC, "more than %d terms", BR_BANNED_MAX_TERMS);
    return store(b, kind, cp, m);
}

int br_banned_add_name(br_banned *b, const char *name, size_t len)
{
    int added = 0, r = br_banned_add(b, BR_BANNED_USER, name, len, NULL);
    if (r == -ENOMEM)
        return r;
    added += r == 0;
    for (size_t i = 0; i < len;) { /* each run of letters (bytes >= 0x80 taken as letters) */
        size_t e = i;
        while (e < len &&
               ((unsigned char)name[e] >= 0x80 || br_banned_is_letter((unsigned char)name[e])))
            e++;
        if (e > i && e - i < len) {
            r = br_banned_add(b, BR_BANNED_USER, name + i, e - i, NULL);
            if (r == -ENOMEM)
                return r;
            added += r == 0;
        }
        i = e > i ? e : i + 1;
    }
    return added;
}

int br_banned_add_gecos(br_banned *b, const char *gecos)
{
    return gecos ? br_banned_add_name(b, gecos, strcspn(gecos, ",")) : 0;
}

int br_banned_take(void *ctx, char kind, const char *term, size_t len)
{
    br_banned **b = ctx;
    if (kind == 0) {
        br_banned_free(*b);
        *b = br_banned_new();
        return *b ? 0 : -ENOMEM;
    }
    int r = br_banned_add(*b, kind == 's' ? BR_BANNED_SITE : BR_BANNED_TERM, term, len, NULL);
    return r == -ENOMEM ? r : 0;
}

const char *br_banned_kinds_text(unsigned kinds)
{
    if (kinds & (1u << BR_BANNED_USER))
        return "the user's own name";
    if (kinds & (1u << BR_BANNED_SITE))
        return "the organisation's name";
    return "a banned term";
}
