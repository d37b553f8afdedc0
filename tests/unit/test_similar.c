/* SPDX-License-Identifier: MIT */
/* Similar passwords (lib/similar/): the bases that docs/similar.md promises
 * for the usual tweaks, the password itself never among its variants, the
 * bound on adversarial inputs (long, all digits, all look-alikes, NUL,
 * invalid UTF-8), deduplication, the NT hashes lined up with the SHA-1s,
 * and the working memory wiped after a call. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/hash.h"
#include "core/nthash.h"
#include "core/util.h"
#include "similar/similar.h"
#include "similar/similar_int.h"

struct seen {
    char v[BR_SIMILAR_MAX][BR_SIMILAR_MAX_LEN + 1];
    size_t len[BR_SIMILAR_MAX];
    size_t n;
};

static int collect(const uint8_t *v, size_t len, void *ctx)
{
    struct seen *s = ctx;
    assert_true(s->n < BR_SIMILAR_MAX);
    assert_true(len >= BR_SIMILAR_MIN_LEN && len <= BR_SIMILAR_MAX_LEN);
    memcpy(s->v[s->n], v, len);
    s->v[s->n][len] = '\0';
    s->len[s->n++] = len;
    return 0;
}

static struct seen *variants_of(br_similar *sim, const void *pw, size_t len)
{
    struct seen *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    int n = br_similar_each(sim, pw, len, collect, s);
    assert_int_equal(n, (int)s->n);
    return s;
}

static bool has(const struct seen *s, const char *v)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->len[i] == strlen(v) && memcmp(s->v[i], v, s->len[i]) == 0)
            return true;
    return false;
}

static br_similar *new_sim(unsigned flags)
{
    br_error err = {{0}};
    br_similar *sim = br_similar_new(flags, &err);
    if (!sim)
        fail_msg("br_similar_new: %s", err.text);
    return sim;
}

static void test_issue_examples(void **state)
{
    (void)state;
    br_similar *sim = new_sim(BR_SIMILAR_SHA1);
    static const struct {
        const char *pw, *base;
    } ex[] = {
        {"Summer2024!", "summer"},
        {"Summer2025!", "summer"},
        {"P@ssw0rd1", "password"},
        {"Password!!", "password"},
        {"p4ssw0rd", "password"},
        {"1password", "password"},
        {"drowssap", "password"},
        {"monkeymonkey", "monkey"},
        {"PASSWORD123", "password"},
        {"dragons", "dragon"},
        {"passwor", "password"},
        {"paswsord", "password"},
        {"Summer2024", "summer2020"},
        {"pa$$word", "password"},
        {"Password!!", "Password!"},
        {"freD", "fred"},
        {"Derf", "fred"},
        {"iloveyou!!!!", "iloveyou"},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(ex); i++) {
        struct seen *s = variants_of(sim, ex[i].pw, strlen(ex[i].pw));
        if (!has(s, ex[i].base))
            fail_msg("%s: no variant %s among %zu", ex[i].pw, ex[i].base, s->n);
        free(s);
    }
    br_similar_free(sim);
}

/* Two tweaks of one password share its base set's core. */
static void test_tweaks_share_bases(void **state)
{
    (void)state;
    br_similar *sim = new_sim(BR_SIMILAR_SHA1);
    struct seen *a = variants_of(sim, "Summer2024!", 11);
    struct seen *b = variants_of(sim, "Summer2025!", 11);
    size_t common = 0;
    for (size_t i = 0; i < a->n; i++)
        common += has(b, a->v[i]);
    assert_true(has(a, "summer") && has(b, "summer") && has(a, "Summer") && has(b, "Summer"));
    assert_true(common >= 10);
    free(a);
    free(b);
    br_similar_free(sim);
}

/* Edit distance one only from a base cased as people type: a random mix of
 * cases is no tweak, and any large list holds a word one edit from it. */
static void test_ed1_typed_case(void **state)
{
    (void)state;
    br_similar *sim = new_sim(BR_SIMILAR_SHA1);
    static const struct {
        const char *pw;
        bool near;
    } ex[] = {
        {"sbngle", true},  {"SBNGLE", true},  {"Sbngle", true},    {"sbnglE", true},
        {"SbnGLE", false}, {"sBnGle", false}, {"!5sbngle1", true}, {"!5SbnGLE1", false},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(ex); i++) {
        struct seen *s = variants_of(sim, ex[i].pw, strlen(ex[i].pw));
        if (has(s, "single") != ex[i].near)
            fail_msg("%s: \"single\" %s", ex[i].pw, ex[i].near ? "missing" : "made");
        free(s);
    }
    br_similar_free(sim);
}

static void test_hashes_and_exact(void **state)
{
    (void)state;
    br_similar *sim = new_sim(BR_SIMILAR_SHA1);
    static uint8_t h[BR_SIMILAR_MAX][BR_SHA1_LEN];
    uint8_t want[BR_SHA1_LEN], exact[BR_SHA1_LEN];
    const char *pws[] = {"P@ssw0rd1", "password", "summer", "Summer2024!", "aaaa"};
    assert_int_equal(br_sha1("password", 8, want), 0);
    for (size_t k = 0; k < BR_ARRAY_SIZE(pws); k++) {
        int n = br_similar_hashes(sim, pws[k], strlen(pws[k]), h, NULL, BR_SIMILAR_MAX);
        assert_true(n > 0 && n <= BR_SIMILAR_MAX);
        assert_int_equal(br_sha1(pws[k], strlen(pws[k]), exact), 0);
        bool found = false;
        for (int i = 0; i < n; i++) {
            assert_memory_not_equal(h[i], exact, BR_SHA1_LEN); /* never the password */
            found |= memcmp(h[i], want, BR_SHA1_LEN) == 0;
            for (int j = 0; j < i; j++) /* deduplicated */
                assert_memory_not_equal(h[i], h[j], BR_SHA1_LEN);
        }
        assert_true(found == (k == 0));
    }
    /* A smaller buffer is filled and no further. */
    memset(h[3], 0xA5, BR_SHA1_LEN);
    assert_int_equal(br_similar_hashes(sim, "P@ssw0rd1", 9, h, NULL, 3), 3);
    uint8_t untouched[BR_SHA1_LEN];
    memset(untouched, 0xA5, sizeof(untouched));
    assert_memory_equal(h[3], untouched, BR_SHA1_LEN);
    assert_int_equal(br_similar_hashes(sim, "P@ssw0rd1", 9, h, NULL, 0), 0);
    assert_int_equal(br_similar_hashes(sim, "P@ssw0rd1", 9, NULL, NULL, 10), -EINVAL);
    br_similar_free(sim);
}

static void check_bound(br_similar *sim, const uint8_t *pw, size_t len)
{
    static uint8_t h[BR_SIMILAR_MAX + 8][BR_SHA1_LEN];
    static uint8_t nt[BR_SIMILAR_MAX + 8][BR_NT_LEN];
    int n = br_similar_hashes(sim, pw, len, h, nt, BR_SIMILAR_MAX + 8);
    assert_true(n >= 0 && n <= BR_SIMILAR_MAX);
    struct seen *s = variants_of(sim, pw, len);
    assert_true(s->n <= BR_SIMILAR_MAX);
    free(s);
}

/* Adversarial inputs: the bound holds, nothing crashes (ASan in CI). */
static void test_bound(void **state)
{
    (void)state;
    br_similar *sim = new_sim(BR_SIMILAR_SHA1 | BR_SIMILAR_NT);
    static uint8_t buf[8192];
    static const char fill[] = "a1@0134$57!|+89(";
    size_t lens[] = {0, 1, 4, 5, 15, 16, 17, 24, 63, 64, 65, 72, 73, 4096, 8192};
    for (size_t l = 0; l < BR_ARRAY_SIZE(lens); l++) {
        size_t len = lens[l];
        memset(buf, 'a', len); /* one letter repeated */
        check_bound(sim, buf, len);
        memset(buf, '1', len); /* all digits */
        check_bound(sim, buf, len);
        for (size_t i = 0; i < len; i++) /* all look-alikes, and letters between */
            buf[i] = (uint8_t)fill[i % (sizeof(fill) - 1)];
        check_bound(sim, buf, len);
        for (size_t i = 0; i < len; i++) /* every byte value, NUL and invalid UTF-8 */
            buf[i] = (uint8_t)(i * 37 + 11);
        check_bound(sim, buf, len);
        for (size_t i = 0; i < len; i++) /* digits and symbols around a word */
            buf[i] = (uint8_t)(i < 8 || i + 8 >= len ? (size_t) "!1@2#3$4"[i % 8] : 'a' + i % 26);
        check_bound(sim, buf, len);
    }
    /* The worst case reaches the bound exactly and stops there. */
    const char *worst = "|||0bi1|s!al$al$!abb1!1!1!1";
    struct seen *s = variants_of(sim, worst, strlen(worst));
    assert_int_equal(s->n, BR_SIMILAR_MAX);
    free(s);
    br_similar_free(sim);
}

static void test_nul_and_invalid_utf8(void **state)
{
    (void)state;
    br_similar *sim = new_sim(BR_SIMILAR_SHA1 | BR_SIMILAR_NT);
    static const struct {
        const char *pw;
        size_t len;
    } in[] = {
        {"pass\0word1", 10},
        {"\0\0\0\0\0\0\0\0", 8},
        {"\xff\xfe\xc3(P@ss", 9},
        {"Sommer\xc3\xa9t\xe9"
         "2024!",
         15},
        {"\xed\xa0\x80pass1", 8},
        {"\xc3", 1},
    };
    static uint8_t h[BR_SIMILAR_MAX][BR_SHA1_LEN], nt[BR_SIMILAR_MAX][BR_NT_LEN];
    for (size_t k = 0; k < BR_ARRAY_SIZE(in); k++) {
        int n = br_similar_hashes(sim, in[k].pw, in[k].len, h, nt, BR_SIMILAR_MAX);
        assert_true(n >= 0 && n <= BR_SIMILAR_MAX);
    }
    struct seen *s = variants_of(sim, "pass\0word1", 10);
    assert_true(has(s, "pass") == false); /* a NUL is kept, never a cut */
    bool kept = false;
    for (size_t i = 0; i < s->n; i++)
        kept |= s->len[i] == 9 && memcmp(s->v[i], "pass\0word", 9) == 0;
    assert_true(kept);
    free(s);
    br_similar_free(sim);
}

/* nt[i] is the NT hash of the variant whose SHA-1 is sha1[i]. */
static void test_nt_lined_up(void **state)
{
    (void)state;
    br_similar *sim = new_sim(BR_SIMILAR_SHA1 | BR_SIMILAR_NT);
    static uint8_t h[BR_SIMILAR_MAX][BR_SHA1_LEN], nt[BR_SIMILAR_MAX][BR_NT_LEN];
    uint8_t want_sha1[BR_SHA1_LEN], want_nt[BR_NT_LEN];
    assert_int_equal(br_sha1("password", 8, want_sha1), 0);
    assert_int_equal(br_nt_hash("password", 8, want_nt), 0);
    int n = br_similar_hashes(sim, "P@ssw0rd1", 9, h, nt, BR_SIMILAR_MAX);
    int at = -1;
    for (int i = 0; i < n; i++)
        if (memcmp(h[i], want_sha1, BR_SHA1_LEN) == 0)
            at = i;
    assert_true(at >= 0);
    assert_memory_equal(nt[at], want_nt, BR_NT_LEN);
    br_similar_free(sim);
    /* NT alone. */
    sim = new_sim(BR_SIMILAR_NT);
    int m = br_similar_hashes(sim, "P@ssw0rd1", 9, NULL, nt, BR_SIMILAR_MAX);
    assert_int_equal(m, n);
    assert_memory_equal(nt[at], want_nt, BR_NT_LEN);
    br_similar_free(sim);
    br_error err = {{0}};
    assert_null(br_similar_new(0, &err));
    assert_non_null(strstr(err.text, "similar passwords"));
}

/* The hashes are those of the variants br_similar_each hands over, in its
 * order, less (with NT hashes) a variant that Windows reads as the password
 * itself: "ab\xc3\x83cd" (UTF-8 for U+00C3) loses a byte in the edit
 * distance step and becomes "ab\xc3cd", whose lone 0xC3 is read as Latin-1
 * U+00C3 too: the same NT hash. A cap keeps the first ones. */
static void check_hashes_match_each(const char *pw, size_t *skipped)
{
    static uint8_t h[BR_SIMILAR_MAX][BR_SHA1_LEN], nt[BR_SIMILAR_MAX][BR_NT_LEN];
    br_similar *sim = new_sim(BR_SIMILAR_SHA1 | BR_SIMILAR_NT);
    struct seen *s = variants_of(sim, pw, strlen(pw));
    uint8_t own[BR_NT_LEN];
    assert_int_equal(br_nt_hash(pw, strlen(pw), own), 0);
    int n = br_similar_hashes(sim, pw, strlen(pw), h, nt, BR_SIMILAR_MAX);
    size_t k = 0;
    *skipped = 0;
    for (size_t i = 0; i < s->n; i++) {
        uint8_t want_sha1[BR_SHA1_LEN], want_nt[BR_NT_LEN];
        assert_int_equal(br_nt_hash(s->v[i], s->len[i], want_nt), 0);
        if (memcmp(want_nt, own, BR_NT_LEN) == 0) {
            (*skipped)++;
            continue;
        }
        assert_int_equal(br_sha1(s->v[i], s->len[i], want_sha1), 0);
        assert_true(k < (size_t)n);
        assert_memory_equal(h[k], want_sha1, BR_SHA1_LEN);
        assert_memory_equal(nt[k], want_nt, BR_NT_LEN);
        k++;
    }
    assert_int_equal(n, (int)k);
    /* SHA-1 alone: nothing is left out. A cap: the first ones. */
    br_similar_free(sim);
    sim = new_sim(BR_SIMILAR_SHA1);
    assert_int_equal(br_similar_hashes(sim, pw, strlen(pw), h, NULL, BR_SIMILAR_MAX), (int)s->n);
    if (s->n > 2) {
        assert_int_equal(br_similar_hashes(sim, pw, strlen(pw), h, NULL, 2), 2);
        uint8_t first[BR_SHA1_LEN];
        assert_int_equal(br_sha1(s->v[1], s->len[1], first), 0);
        assert_memory_equal(h[1], first, BR_SHA1_LEN);
    }
    free(s);
    br_similar_free(sim);
}

static void test_hashes_match_each(void **state)
{
    (void)state;
    static const char *const pws[] = {"P@ssw0rd1", "Summer2024!",
                                      "ab\xc3\x83"
                                      "cd",
                                      "x"};
    size_t skipped;
    for (size_t i = 0; i < BR_ARRAY_SIZE(pws); i++) {
        check_hashes_match_each(pws[i], &skipped);
        if (i == 2)
            assert_true(skipped >= 1); /* the Latin-1 reading of the cut U+00C3 */
    }
}

/* No variant is left in the context's memory after a call. */
/* Whether [p, p + n) lies in mappings that /proc/self/smaps marks "dd"
 * (MADV_DONTDUMP: left out of core dumps). */
static bool dontdump(const void *p, size_t n)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    assert_non_null(f);
    char line[512];
    uintptr_t lo = 0, hi = 0, a = (uintptr_t)p, covered = a;
    bool in = false, ok = true;
    while (fgets(line, sizeof(line), f)) {
        unsigned long l, h;
        if (sscanf(line, "%lx-%lx ", &l, &h) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            lo = l;
            hi = h;
            in = lo < a + n && hi > a;
        } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            ok &= strstr(line, " dd") != NULL;
            covered = hi > covered ? hi : covered;
        }
    }
    fclose(f);
    return ok && covered >= a + n;
}

/* The attack: a core dump of a process checking a password (a crashing
 * passwd, slapd, kadmind) would hold the variants made of it and their
 * hashes. The context's buffers, and those br_secret_alloc gives the
 * clients for the hashes, are left out of core dumps. */
static void test_buffers_not_dumped(void **state)
{
    (void)state;
    br_similar *s = br_similar_new(BR_SIMILAR_SHA1 | BR_SIMILAR_NT, NULL);
    assert_non_null(s);
    assert_true(dontdump(s->arena, (size_t)(BR_SIMILAR_MAX + 1) * BR_SIMILAR_MAX_LEN));
    assert_true(dontdump(s->slots, sizeof(*s->slots)));
    br_similar_free(s);
    size_t n = (size_t)BR_SIMILAR_MAX * BR_SHA1_LEN;
    uint8_t *h = br_secret_alloc(n);
    assert_non_null(h);
    assert_true(dontdump(h, n));
    for (size_t i = 0; i < n; i++)
        assert_int_equal(h[i], 0);
    br_secret_free(h, n);
    br_secret_free(NULL, n);
}

static void test_wiped(void **state)
{
    (void)state;
    br_similar *sim = new_sim(BR_SIMILAR_SHA1);
    static uint8_t h[BR_SIMILAR_MAX][BR_SHA1_LEN];
    const char *pw = "Zebracorn2024!";
    assert_true(br_similar_hashes(sim, pw, strlen(pw), h, NULL, BR_SIMILAR_MAX) > 0);
    size_t size = (size_t)(BR_SIMILAR_MAX + 1) * BR_SIMILAR_MAX_LEN;
    assert_null(memmem(sim->arena, size, "ebracorn", 8));
    assert_null(memmem(sim->arena, size, "EBRACORN", 8));
    for (size_t i = 0; i < size; i++)
        assert_int_equal(sim->arena[i], 0);
    for (size_t i = 0; i < SIM_SLOTS; i++)
        assert_true(sim->slots[i].off == 0 && sim->slots[i].hash == 0);
    br_similar_free(sim);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue_examples),
        cmocka_unit_test(test_tweaks_share_bases),
        cmocka_unit_test(test_ed1_typed_case),
        cmocka_unit_test(test_hashes_and_exact),
        cmocka_unit_test(test_bound),
        cmocka_unit_test(test_nul_and_invalid_utf8),
        cmocka_unit_test(test_nt_lined_up),
        cmocka_unit_test(test_wiped),
        cmocka_unit_test(test_buffers_not_dumped),
        cmocka_unit_test(test_hashes_match_each),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
