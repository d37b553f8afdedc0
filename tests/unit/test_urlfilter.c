/* SPDX-License-Identifier: MIT */
/* The url-sha256 filter file: round trips at several sizes, the prefix
 * bitmap AND, determinism, every single-byte corruption and every truncation
 * of a small file, parameter checks on re-signed headers, incremental add
 * (old and new keys kept, generation + 1, base recorded), atomic replace,
 * and the old file kept when the save fails. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "builder/urlfilter_save.h"
#include "core/hash.h"
#include "testutil.h"
#include "url/url_canon.h"
#include "url/url_expr.h"
#include "filter/urlfilter.h"
#include "core/util.h"

#define BUILD_TIME 1764460800

static uint8_t (*random_keys(size_t n, uint64_t seed))[32]
{
    uint8_t(*k)[32] = tu_xmalloc((n ? n : 1) * 32);
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < 4; j++) {
            uint64_t v = br_splitmix64(&seed);
            memcpy(k[i] + 8 * j, &v, 8);
        }
    return k;
}

static void build_file(const char *path, uint8_t (*keys)[32], size_t n, uint64_t capacity,
                       double fpr, uint64_t generation)
{
    br_urlfilter_draft *d = NULL;
    br_error err = {{0}};
    if (br_urlfilter_draft_new(capacity ? capacity : n, fpr, &d, &err) < 0)
        fail_msg("draft: %s", err.text);
    for (size_t i = 0; i < n; i++)
        br_urlfilter_draft_add(d, keys[i], true);
    br_urlfilter_save_opts o = {
        .generation = generation, .source = "unit", .build_time = BUILD_TIME};
    if (br_urlfilter_draft_save(d, path, &o, NULL, &err) < 0)
        fail_msg("save: %s", err.text);
    br_urlfilter_draft_free(d);
}

static br_urlfilter *open_ok(const char *path)
{
    br_urlfilter *uf = NULL;
    br_error err = {{0}};
    if (br_urlfilter_open(path, &uf, &err) < 0)
        fail_msg("open %s: %s", path, err.text);
    return uf;
}

static void test_round_trip(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/f", dir);
    static const size_t sizes[] = {0, 1, 100, 10000, 200000};
    for (size_t s = 0; s < BR_ARRAY_SIZE(sizes); s++) {
        size_t n = sizes[s];
        uint8_t(*keys)[32] = random_keys(n, 100 + s);
        build_file(path, keys, n, 0, 1e-5, 9);
        br_urlfilter *uf = open_ok(path);
        const br_filter_header *h = br_urlfilter_header(uf);
        assert_int_equal(h->kind, BR_KIND_URL_SHA256);
        assert_int_equal(h->algorithm, BR_ALGO_BLOCKED_BLOOM);
        assert_int_equal(h->key_encoding, BR_KEYENC_URL_EXPR_SHA256);
        assert_int_equal(h->key_encoding_version, 2);
        assert_int_equal(h->key_count, n);
        assert_int_equal(h->generation, 9);
        assert_int_equal(h->build_time, BUILD_TIME);
        assert_string_equal(h->source, "unit");
        bool *out = tu_xmalloc(n + 1);
        br_urlfilter_maybe_batch(uf, (const uint8_t(*)[32])keys, n, out);
        for (size_t i = 0; i < n; i++) {
            if (!br_urlfilter_maybe(uf, keys[i]) || !out[i])
                fail_msg("false negative: key %zu of %zu", i, n);
            assert_true(br_prefix_bitmap_test(br_urlfilter_prefix_bitmap(uf),
                                              br_urlfilter_prefix_of(keys[i])));
        }
        free(out);
        br_urlfilter_info in;
        br_urlfilter_get_info(uf, &in);
        assert_int_equal(in.key_count, n);
        assert_int_equal(in.capacity, n ? n : 1);
        assert_int_equal(in.base_key_count, n);
        assert_int_equal(in.base_generation, 9);
        assert_true(in.target_fpr == 1e-5);
        assert_true(in.design_fpr <= 1e-5);
        assert_true(in.bloom_fpr_now <= 1e-5);
        assert_true(in.fpr_now <= in.bloom_fpr_now);
        assert_true(in.prefixes_with_entries <= n);
        assert_true(in.file_size == 4096 + BR_URLFILTER_BITMAP_BYTES + in.block_count * 64);
        /* Absent keys: at 200000 keys and 1e-5 (times the prefix fill),
         * 100000 probes give about 0.2 false positives. */
        if (n == 200000) {
            uint8_t(*absent)[32] = random_keys(100000, 999);
            size_t fp = 0;
            for (size_t i = 0; i < 100000; i++)
                fp += br_urlfilter_maybe(uf, absent[i]);
            assert_true(fp <= 5);
            free(absent);
        }
        br_urlfilter_free(uf);
        free(keys);
    }
    free(path);
    tu_rmrf(dir);
    free(dir);
}

/* maybe = Bloom AND prefix bit: a key that differs from an inserted one only
 * in its prefix bytes probes the same bits (Bloom says yes) but its prefix
 * holds no entry, so the answer is no. */
static void test_prefix_bitmap_and(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/f", dir);
    uint8_t(*keys)[32] = random_keys(1, 5);
    build_file(path, keys, 1, 0, 1e-5, 1);
    br_urlfilter *uf = open_ok(path);
    uint8_t other[32];
    memcpy(other, keys[0], 32);
    other[0] ^= 0x80;
    assert_true(br_urlfilter_maybe(uf, keys[0]));
    assert_false(
        br_prefix_bitmap_test(br_urlfilter_prefix_bitmap(uf), br_urlfilter_prefix_of(other)));
    assert_false(br_urlfilter_maybe(uf, other));
    /* Only one prefix bit set, the right one. */
    const uint8_t *bm = br_urlfilter_prefix_bitmap(uf);
    assert_int_equal(br_popcount_bytes(bm, BR_URLFILTER_BITMAP_BYTES), 1);
    uint32_t p = br_urlfilter_prefix_of(keys[0]);
    assert_true(bm[p / 8] & (1u << (p % 8)));
    /* The 5 hex digits of the prefix are the 20 leading bits. */
    char hex[65];
    br_hex_encode_upper(keys[0], 32, hex);
    char want[6];
    snprintf(want, sizeof(want), "%05X", p);
    assert_memory_equal(hex, want, 5);
    br_urlfilter_free(uf);
    free(keys);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

static void test_determinism(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *a = tu_path("%s/a", dir), *b = tu_path("%s/b", dir);
    size_t n = 5000;
    uint8_t(*keys)[32] = random_keys(n, 77);
    build_file(a, keys, n, 8000, 1e-4, 3);
    for (size_t i = 0; i < n / 2; i++) { /* reverse the order */
        uint8_t t[32];
        memcpy(t, keys[i], 32);
        memcpy(keys[i], keys[n - 1 - i], 32);
        memcpy(keys[n - 1 - i], t, 32);
    }
    build_file(b, keys, n, 8000, 1e-4, 3);
    size_t la, lb;
    uint8_t *da = tu_read_file(a, &la), *db = tu_read_file(b, &lb);
    assert_non_null(da);
    assert_non_null(db);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
    free(da);
    free(db);
    free(keys);
    free(a);
    free(b);
    tu_rmrf(dir);
    free(dir);
}

static void expect_refused(const char *path, const char *what)
{
    br_urlfilter *uf = NULL;
    br_error err = {{0}};
    if (br_urlfilter_open(path, &uf, &err) == 0)
        fail_msg("%s was not detected", what);
}

/* Every single-byte change (a flip of one bit, and a different value) and
 * every truncation of a small file is refused; so is one byte appended. */
static void test_every_byte_and_length(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/f", dir);
    uint8_t(*keys)[32] = random_keys(50, 11);
    build_file(path, keys, 50, 0, 1e-5, 1);
    size_t len;
    uint8_t *good = tu_read_file(path, &len);
    assert_non_null(good);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    assert_true(fd >= 0);
    char what[64];
    for (size_t i = 0; i < len; i++) {
        uint8_t v = good[i] ^ (uint8_t)(1u << (i % 8));
        assert_int_equal(pwrite(fd, &v, 1, (off_t)i), 1);
        snprintf(what, sizeof(what), "a flipped bit at offset %zu", i);
        expect_refused(path, what);
        assert_int_equal(pwrite(fd, good + i, 1, (off_t)i), 1);
    }
    uint8_t extra = 0;
    assert_int_equal(pwrite(fd, &extra, 1, (off_t)len), 1);
    expect_refused(path, "one byte appended");
    for (size_t l = len; l-- > 0;) {
        assert_int_equal(ftruncate(fd, (off_t)l), 0);
        snprintf(what, sizeof(what), "truncation to %zu bytes", l);
        br_urlfilter *uf = NULL;
        br_error err = {{0}};
        if (br_urlfilter_open(path, &uf, &err) == 0)
            fail_msg("%s was not detected", what);
        if (!strstr(err.text,
                    l < BR_FILTER_HEADER_SIZE ? "not a breachd filter file" : "truncated"))
            fail_msg("%s: reason '%s'", what, err.text);
    }
    close(fd);
    assert_int_equal(tu_write_file(path, good, len), 0);
    br_urlfilter_free(open_ok(path));
    free(good);
    free(keys);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

/* ---- parameters: change a header field, re-sign the header ---- */

enum {
    OFF_KIND = 16,
    OFF_ALGO = 20,
    OFF_KEYENC = 24,
    OFF_GENERATION = 32,
    OFF_KEY_COUNT = 48,
    OFF_PARAMS = 72,
    OFF_HEADER_SHA = 480
};

static void resign(uint8_t *raw)
{
    assert_int_equal(br_sha256(raw, OFF_HEADER_SHA, raw + OFF_HEADER_SHA), 0);
}

typedef struct tamper {
    const char *what;
    size_t off; /* in the file */
    int width;  /* 1, 4 or 8 */
    uint64_t value;
    const char *reason; /* a word the refusal must contain */
} tamper;

static void test_params_checked(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/f", dir), *bad = tu_path("%s/bad", dir);
    uint8_t(*keys)[32] = random_keys(300, 12);
    build_file(path, keys, 300, 0, 1e-5, 5);
    size_t len;
    uint8_t *good = tu_read_file(path, &len);
    assert_non_null(good);
    uint64_t blocks = br_load_le64(good + OFF_PARAMS + 8);
    double half = 0.5, nan = NAN;
    uint64_t half_bits, nan_bits;
    memcpy(&half_bits, &half, 8);
    memcpy(&nan_bits, &nan, 8);
    const tamper cases[] = {
        {"k 0", OFF_PARAMS + 0, 1, 0, "param k"},
        {"k 19", OFF_PARAMS + 0, 1, 19, "param k"},
        {"block bits", OFF_PARAMS + 1, 1, 8, "block_bits_log2"},
        {"prefix bits", OFF_PARAMS + 2, 1, 16, "prefix_bits"},
        {"reserved", OFF_PARAMS + 5, 1, 1, "reserved"},
        {"block count + 1", OFF_PARAMS + 8, 8, blocks + 1, "block_count"},
        {"block count 0", OFF_PARAMS + 8, 8, 0, "block_count"},
        {"capacity 0", OFF_PARAMS + 16, 8, 0, "capacity"},
        {"target 0.5", OFF_PARAMS + 24, 8, half_bits, "target_fpr"},
        {"target NaN", OFF_PARAMS + 24, 8, nan_bits, "target_fpr"},
        {"bitmap offset", OFF_PARAMS + 32, 8, 4096 + 64, "bitmap_offset"},
        {"blocks offset", OFF_PARAMS + 40, 8, 4096 + 64, "blocks_offset"},
        {"base keys", OFF_PARAMS + 48, 8, 301, "base_key_count"},
        {"base generation", OFF_PARAMS + 56, 8, 6, "base_generation"},
        {"key count 0", OFF_KEY_COUNT, 8, 0, "prefix"},
        {"key count too small", OFF_KEY_COUNT, 8, 10, "for 10 keys"},
        {"kind", OFF_KIND, 4, BR_KIND_PASSWORD_SHA1, "kind"},
        {"algorithm", OFF_ALGO, 4, BR_ALGO_BINARY_FUSE, "algorithm"},
        {"key encoding", OFF_KEYENC, 4, BR_KEYENC_HASH_PREFIX64, "key_encoding"},
    };
    for (size_t i = 0; i < BR_ARRAY_SIZE(cases); i++) {
        const tamper *t = &cases[i];
        uint8_t *raw = tu_xmalloc(len);
        memcpy(raw, good, len);
        if (t->width == 1)
            raw[t->off] = (uint8_t)t->value;
        else if (t->width == 4)
            br_store_le32(raw + t->off, (uint32_t)t->value);
        else
            br_store_le64(raw + t->off, t->value);
        if (t->off == OFF_KEY_COUNT) /* keep base_key_count <= key_count */
            br_store_le64(raw + OFF_PARAMS + 48, 0);
        resign(raw);
        assert_int_equal(tu_write_file(bad, raw, len), 0);
        br_urlfilter *uf = NULL;
        br_error err = {{0}};
        if (br_urlfilter_open(bad, &uf, &err) == 0)
            fail_msg("%s was accepted", t->what);
        if (!strstr(err.text, t->reason))
            fail_msg("%s: reason '%s' lacks '%s'", t->what, err.text, t->reason);
        free(raw);
    }
    /* The untouched file re-signed still opens (the re-signing is right). */
    resign(good);
    assert_int_equal(tu_write_file(bad, good, len), 0);
    br_urlfilter_free(open_ok(bad));
    free(good);
    free(keys);
    free(path);
    free(bad);
    tu_rmrf(dir);
    free(dir);
}

/* ---- incremental add ---- */

static size_t count_temps(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += strstr(de->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

static void test_add(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/f", dir);
    size_t na = 1000, nb = 500;
    uint8_t(*a)[32] = random_keys(na, 21);
    uint8_t(*b)[32] = random_keys(nb, 22);
    build_file(path, a, na, 2000, 1e-5, 41);
    struct stat st0;
    assert_int_equal(stat(path, &st0), 0);

    br_urlfilter *old = open_ok(path);
    br_urlfilter_draft *d = NULL;
    br_error err = {{0}};
    assert_int_equal(br_urlfilter_draft_from(old, &d, &err), 0);
    uint64_t fresh = 0;
    for (size_t i = 0; i < nb; i++)
        fresh += br_urlfilter_draft_add(d, b[i], false);
    for (size_t i = 0; i < na; i += 10) /* already there: not counted */
        assert_false(br_urlfilter_draft_add(d, a[i], false));
    assert_true(fresh >= nb - 1);
    br_urlfilter_save_opts o = {
        .generation = 42, .source = "unit add", .build_time = BUILD_TIME + 60};
    assert_int_equal(br_urlfilter_draft_save(d, path, &o, NULL, &err), 0);
    br_urlfilter_draft_free(d);

    /* Atomic replace: a new inode; the old mapping still reads the old one. */
    struct stat st1;
    assert_int_equal(stat(path, &st1), 0);
    assert_true(st1.st_ino != st0.st_ino);
    assert_int_equal(br_urlfilter_header(old)->generation, 41);
    assert_int_equal(br_urlfilter_header(old)->key_count, na);
    for (size_t i = 0; i < na; i++)
        assert_true(br_urlfilter_maybe(old, a[i]));
    assert_int_equal(count_temps(dir), 0);

    br_urlfilter *uf = open_ok(path);
    const br_filter_header *h = br_urlfilter_header(uf);
    assert_int_equal(h->generation, 42);
    assert_int_equal(h->key_count, na + fresh);
    assert_int_equal(h->build_time, BUILD_TIME + 60);
    assert_string_equal(h->source, "unit add");
    for (size_t i = 0; i < na; i++)
        assert_true(br_urlfilter_maybe(uf, a[i]));
    for (size_t i = 0; i < nb; i++)
        assert_true(br_urlfilter_maybe(uf, b[i]));
    br_urlfilter_info in;
    br_urlfilter_get_info(uf, &in);
    assert_int_equal(in.base_key_count, na);
    assert_int_equal(in.base_generation, 41);
    assert_int_equal(in.capacity, 2000);
    assert_true(in.bloom_fpr_now <= 1e-5);
    /* Same parameters, same block count. */
    br_urlfilter_info old_in;
    br_urlfilter_get_info(old, &old_in);
    assert_int_equal(in.block_count, old_in.block_count);
    assert_int_equal(in.k, old_in.k);
    br_urlfilter_free(old);

    /* A second add over capacity: the expected rate now goes over target. */
    uint8_t(*c)[32] = random_keys(3000, 23);
    assert_int_equal(br_urlfilter_draft_from(uf, &d, &err), 0);
    for (size_t i = 0; i < 3000; i++)
        br_urlfilter_draft_add(d, c[i], false);
    o.generation = 43;
    assert_int_equal(br_urlfilter_draft_save(d, path, &o, NULL, &err), 0);
    br_urlfilter_draft_free(d);
    br_urlfilter_free(uf);
    uf = open_ok(path);
    br_urlfilter_get_info(uf, &in);
    assert_true(in.key_count > in.capacity);
    assert_true(in.bloom_fpr_now > in.target_fpr);
    assert_int_equal(in.base_generation, 41);
    for (size_t i = 0; i < na; i++)
        assert_true(br_urlfilter_maybe(uf, a[i]));
    for (size_t i = 0; i < 3000; i++)
        assert_true(br_urlfilter_maybe(uf, c[i]));
    br_urlfilter_free(uf);
    free(a);
    free(b);
    free(c);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

static int fail_commit(void *ctx, br_error *err)
{
    (*(int *)ctx)++;
    return br_error_set(err, -EIO, "injected failure");
}

/* A failure before the rename leaves the old file byte for byte, and no
 * temporary file behind. */
static void test_failed_save_keeps_old(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char *path = tu_path("%s/f", dir);
    uint8_t(*a)[32] = random_keys(100, 31);
    build_file(path, a, 100, 0, 1e-5, 1);
    size_t len;
    uint8_t *before = tu_read_file(path, &len);
    assert_non_null(before);
    br_urlfilter *uf = open_ok(path);
    br_urlfilter_draft *d = NULL;
    br_error err = {{0}};
    assert_int_equal(br_urlfilter_draft_from(uf, &d, &err), 0);
    uint8_t(*b)[32] = random_keys(100, 32);
    for (size_t i = 0; i < 100; i++)
        br_urlfilter_draft_add(d, b[i], false);
    int calls = 0;
    br_urlfilter_save_opts o = {
        .generation = 2, .build_time = BUILD_TIME, .before_commit = fail_commit, .ctx = &calls};
    assert_int_equal(br_urlfilter_draft_save(d, path, &o, NULL, &err), -EIO);
    assert_int_equal(calls, 1);
    assert_non_null(strstr(err.text, "injected"));
    size_t len2;
    uint8_t *after = tu_read_file(path, &len2);
    assert_non_null(after);
    assert_int_equal(len, len2);
    assert_memory_equal(before, after, len);
    assert_int_equal(count_temps(dir), 0);
    /* An unwritable target directory: the same. */
    char *missing = tu_path("%s/no/such/dir/f", dir);
    o.before_commit = NULL;
    assert_true(br_urlfilter_draft_save(d, missing, &o, NULL, &err) < 0);
    br_urlfilter_draft_free(d);
    br_urlfilter_free(uf);
    free(before);
    free(after);
    free(a);
    free(b);
    free(missing);
    free(path);
    tu_rmrf(dir);
    free(dir);
}

/* The golden fixture of format v1 (data/fixtures/make-fixtures): read by
 * every later version. Its feed: even i "breachd-fixture-i.example", odd i
 * "http://breachd-fixture-i.example/p/i?q". */
static void test_golden_fixture(void **state)
{
    (void)state;
    br_urlfilter *uf = open_ok(FIXTURES_DIR "/url-sha256-v1.bbf");
    const br_filter_header *h = br_urlfilter_header(uf);
    assert_int_equal(h->generation, 1);
    assert_int_equal(h->key_count, 1000);
    assert_int_equal(h->build_time, 1764460800);
    assert_string_equal(h->source, "breachd golden fixture, format v1, 1000 URL expressions");
    br_urlfilter_info in;
    br_urlfilter_get_info(uf, &in);
    assert_int_equal(in.k, 14);
    assert_int_equal(in.block_count, 58);
    assert_int_equal(in.capacity, 1000);
    assert_true(in.target_fpr == 1e-5);
    assert_int_equal(in.base_key_count, 1000);
    assert_int_equal(in.base_generation, 1);
    for (int i = 0; i < 1000; i++) {
        char expr[128];
        if (i % 2 == 0)
            snprintf(expr, sizeof(expr), "breachd-fixture-%d.example/", i);
        else
            snprintf(expr, sizeof(expr), "breachd-fixture-%d.example/p/%d?q", i, i);
        uint8_t key[32];
        assert_int_equal(br_sha256(expr, strlen(expr), key), 0);
        if (!br_urlfilter_maybe(uf, key))
            fail_msg("fixture expression '%s' is not in the filter", expr);
        /* A sibling expression is not (the prefix bitmap alone rules out
         * all but about 0.1%). */
        strcat(expr, "x");
        assert_int_equal(br_sha256(expr, strlen(expr), key), 0);
        assert_false(br_urlfilter_maybe(uf, key));
    }
    br_urlfilter_free(uf);
}

/* Key encoding v2 (data/fixtures/make-fixtures): max_domain_labels 9 from
 * "deep.breachd-fixture.a.b.c.d.e.f.example"; the v1 fixture records none
 * and is looked up with Safe Browsing's 5. */
static void test_golden_fixture_keyenc2(void **state)
{
    (void)state;
    br_urlfilter *uf = open_ok(FIXTURES_DIR "/url-sha256-v1-keyenc2.bbf");
    const br_filter_header *h = br_urlfilter_header(uf);
    assert_int_equal(h->key_encoding_version, 2);
    assert_int_equal(h->key_count, 201);
    assert_int_equal(br_urlfilter_max_domain_labels(uf), 9);
    assert_int_equal(br_urlfilter_lookup_labels(uf), 9);
    /* A subdomain of the 9-label entry is found through its suffixes. */
    const char *url = "http://www.x.deep.breachd-fixture.a.b.c.d.e.f.example/p?q";
    char *canon = NULL;
    br_error err;
    assert_int_equal(br_url_canonicalize(url, strlen(url), &canon, &err), 0);
    br_url_exprs ex = {0};
    assert_int_equal(
        br_url_exprs_of(canon, strlen(canon), br_urlfilter_lookup_labels(uf), &ex, &err), 0);
    bool found = false;
    for (size_t i = 0; i < ex.n; i++) {
        uint8_t key[32];
        br_url_expr_hash(ex.expr[i], key);
        found |= br_urlfilter_maybe(uf, key);
    }
    assert_true(found);
    br_url_exprs_clear(&ex);
    /* With Safe Browsing's 5 it is not. */
    assert_int_equal(br_url_exprs_of(canon, strlen(canon), BR_URL_SB_HOST_COMPONENTS, &ex, &err),
                     0);
    for (size_t i = 0; i < ex.n; i++) {
        uint8_t key[32];
        br_url_expr_hash(ex.expr[i], key);
        assert_false(br_urlfilter_maybe(uf, key));
    }
    br_url_exprs_clear(&ex);
    free(canon);
    br_urlfilter_free(uf);
    uf = open_ok(FIXTURES_DIR "/url-sha256-v1.bbf");
    assert_int_equal(br_urlfilter_header(uf)->key_encoding_version, 1);
    assert_int_equal(br_urlfilter_max_domain_labels(uf), 0);
    assert_int_equal(br_urlfilter_lookup_labels(uf), 5);
    br_urlfilter_free(uf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_prefix_bitmap_and),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_every_byte_and_length),
        cmocka_unit_test(test_params_checked),
        cmocka_unit_test(test_add),
        cmocka_unit_test(test_failed_save_keeps_old),
        cmocka_unit_test(test_golden_fixture),
        cmocka_unit_test(test_golden_fixture_keyenc2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
