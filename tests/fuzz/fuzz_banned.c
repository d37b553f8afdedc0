/* SPDX-License-Identifier: MIT */
/* Fuzz target for banned terms (lib/banned/banned.h, docs/banned.md): any
 * bytes as terms and as a password, in any script. Byte 0 splits the
 * input: its low 6 bits are the length of a term (the rest is the
 * password), bit 6 adds the password's own text as the user's name.
 *
 * Checked on every input:
 *   - no crash or sanitizer report;
 *   - a term is added or refused with a reason; an added term's
 *     normalised text, checked as a password, is found and refused (1
 *     point: a term alone);
 *   - the result is consistent: score >= terms, refused only with a term
 *     and below the minimum, terms found only of the kinds added;
 *   - an added term's normalised text (what BANNED hands to clients) adds
 *     to a new list as the same text: a client that normalises it again
 *     matches what breachd holds. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "banned/banned.h"

#define FUZZ_NAME "fuzz_banned"
#include "fuzz_check.h"

static void check_result(const br_banned_result *r, unsigned kinds_added)
{
    CHECK(r->score >= 0);
    CHECK((int)r->terms <= r->score);
    CHECK(!r->refused || (r->terms > 0 && r->score < BR_BANNED_MIN_SCORE));
    CHECK((r->kinds & ~kinds_added) == 0);
    CHECK((r->terms == 0) == (r->kinds == 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t tlen = data[0] & 0x3f;
    if (tlen > size - 1)
        tlen = size - 1;
    const char *term = (const char *)data + 1, *pw = term + tlen;
    size_t pwlen = size - 1 - tlen;
    br_banned *b = br_banned_new(), *u = br_banned_new();
    br_error err = {{0}};
    CHECK(b && u);
    int r = br_banned_add(b, BR_BANNED_SITE, term, tlen, &err);
    CHECK(r == 0 || (r < 0 && err.text[0]));
    if ((data[0] & 0x40) && pwlen)
        CHECK(br_banned_add_name(u, pw, pwlen) >= 0);
    const br_banned *lists[] = {b, u};
    unsigned kinds = (br_banned_count(b) ? 1u << BR_BANNED_SITE : 0) |
                     (br_banned_count(u) ? 1u << BR_BANNED_USER : 0);
    br_banned_result res;
    CHECK(br_banned_check(lists, 2, pw, pwlen, 0, &res) == 0);
    check_result(&res, kinds);
    if (r == 0) { /* the term as breachd holds it, as a password: 1 point */
        const char *t = br_banned_term(b, 0, NULL);
        CHECK(br_banned_check(lists, 1, t, strlen(t), 0, &res) == 0);
        check_result(&res, kinds);
        CHECK(res.refused && res.score == 1);
    }
    if (r == 0) {
        br_banned *again = br_banned_new();
        const char *t = br_banned_term(b, 0, NULL);
        CHECK(again && t && br_banned_add(again, BR_BANNED_TERM, t, strlen(t), &err) == 0);
        CHECK(strcmp(br_banned_term(again, 0, NULL), t) == 0);
        br_banned_free(again);
    }
    br_banned_free(b);
    br_banned_free(u);
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
