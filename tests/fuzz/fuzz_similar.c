/* SPDX-License-Identifier: MIT */
/* Fuzz target for the similar-password variants (lib/similar/similar.h,
 * docs/similar.md): any bytes as a password. Byte 0 picks the caller's
 * buffer size (0, 1, a few, the bound, more); the rest is the password.
 *
 * Checked on every input:
 *   - no crash or sanitizer report;
 *   - br_similar_each hands over at most BR_SIMILAR_MAX variants, each
 *     BR_SIMILAR_MIN_LEN..BR_SIMILAR_MAX_LEN bytes, all distinct, none equal
 *     to the password;
 *   - br_similar_hashes returns min(that count, the buffer), writes nothing
 *     past it, and its SHA-1s are those of the same variants in the same
 *     order; with NT hashes too (when MD4 is available), each NT hash is the
 *     variant's, except the variants left out because their NT hash is the
 *     password's;
 *   - the context's arena is all zero again after either call. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "nthash.h"
#include "similar.h"
#include "similar_int.h"

#define FUZZ_NAME "fuzz_similar"
#include "fuzz_check.h"

struct seen {
    uint8_t v[BR_SIMILAR_MAX][BR_SIMILAR_MAX_LEN];
    size_t len[BR_SIMILAR_MAX];
    size_t n;
    const uint8_t *pw;
    size_t pw_len;
};

static int collect(const uint8_t *v, size_t len, void *ctx)
{
    struct seen *s = ctx;
    CHECK(s->n < BR_SIMILAR_MAX);
    CHECK(len >= BR_SIMILAR_MIN_LEN && len <= BR_SIMILAR_MAX_LEN);
    CHECK(len != s->pw_len || memcmp(v, s->pw, len) != 0);
    memcpy(s->v[s->n], v, len);
    s->len[s->n++] = len;
    return 0;
}

static bool arena_clean(const br_similar *sim)
{
    static const uint8_t zero[BR_SIMILAR_MAX_LEN + 1];
    size_t size = (size_t)(BR_SIMILAR_MAX + 1) * (BR_SIMILAR_MAX_LEN);
    for (size_t off = 0; off + sizeof(zero) <= size; off += sizeof(zero))
        if (memcmp(sim->arena + off, zero, sizeof(zero)) != 0)
            return false;
    return true;
}

static void check_distinct(const struct seen *s)
{
    for (size_t i = 0; i < s->n; i++)
        for (size_t j = i + 1; j < s->n; j++)
            if (s->len[i] == s->len[j] && s->v[i][0] == s->v[j][0])
                CHECK(memcmp(s->v[i], s->v[j], s->len[i]) != 0);
}

static void check_hashes(const struct seen *s, size_t cap, bool nt)
{
    static uint8_t sha1[BR_SIMILAR_MAX + 2][BR_SHA1_LEN];
    static uint8_t nth[BR_SIMILAR_MAX + 2][BR_NT_LEN];
    br_error err = {{0}};
    br_similar *sim = br_similar_new(BR_SIMILAR_SHA1 | (nt ? BR_SIMILAR_NT : 0), &err);
    if (!sim) {
        CHECK(nt); /* only MD4 may be missing */
        return;
    }
    memset(sha1, 0xA5, sizeof(sha1));
    int n = br_similar_hashes(sim, s->pw, s->pw_len, sha1, nt ? nth : NULL, cap);
    CHECK(n >= 0 && (size_t)n <= BR_MIN(cap, (size_t)BR_SIMILAR_MAX));
    CHECK(arena_clean(sim));
    uint8_t pw_nt[BR_NT_LEN], v_nt[BR_NT_LEN], want[BR_SHA1_LEN];
    CHECK(!nt || br_nt_hash(s->pw, s->pw_len, pw_nt) == 0);
    size_t k = 0; /* the variant of sha1[i] */
    for (int i = 0; i < n; i++, k++) {
        for (; nt && k < s->n; k++) { /* skip those left out */
            CHECK(br_nt_hash(s->v[k], s->len[k], v_nt) == 0);
            if (memcmp(v_nt, pw_nt, BR_NT_LEN) != 0)
                break;
        }
        CHECK(k < s->n);
        CHECK(br_sha1(s->v[k], s->len[k], want) == 0);
        CHECK(memcmp(sha1[i], want, BR_SHA1_LEN) == 0);
        CHECK(!nt || memcmp(nth[i], v_nt, BR_NT_LEN) == 0);
    }
    CHECK(nt || (size_t)n == BR_MIN(cap, s->n));
    uint8_t untouched[BR_SHA1_LEN];
    memset(untouched, 0xA5, sizeof(untouched));
    CHECK(memcmp(sha1[n], untouched, BR_SHA1_LEN) == 0);
    br_similar_free(sim);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    static const size_t caps[] = {0, 1, 7, 64, 500, BR_SIMILAR_MAX, BR_SIMILAR_MAX + 1};
    size_t cap = caps[data[0] % (sizeof(caps) / sizeof(caps[0]))];
    static struct seen s;
    s.n = 0;
    s.pw = data + 1;
    s.pw_len = size - 1;
    br_error err = {{0}};
    br_similar *sim = br_similar_new(BR_SIMILAR_SHA1, &err);
    CHECK(sim);
    int n = br_similar_each(sim, s.pw, s.pw_len, collect, &s);
    CHECK(n >= 0 && (size_t)n == s.n);
    CHECK(arena_clean(sim));
    br_similar_free(sim);
    check_distinct(&s);
    check_hashes(&s, cap, false);
    check_hashes(&s, cap, data[0] & 0x80);
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
