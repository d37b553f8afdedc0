/* SPDX-License-Identifier: MIT */
/* The URL range mirror: every PREFIX.txt parses with br_range_parse and
 * answers each of its entries with the right category; files are sorted,
 * uppercase, LF; a rebuild with the same set rewrites nothing; stale prefix
 * files are removed and foreign files kept; an incremental update rewrites
 * only the prefixes that gain entries, keeps existing categories, and
 * refuses a directory that does not match the filter; a failure leaves the
 * directory as it was. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "core/hash.h"
#include "range/range.h"
#include "testutil.h"
#include "url/url_feed.h"
#include "url_mirror.h"
#include "filter/urlfilter.h"
#include "core/util.h"

static const char *const cats[] = {"malware", "phishing", "ads"};

/* n random keys; key i gets category cats[i % 3]; every 7th key shares the
 * prefix of the key before it, so files hold several lines. */
static br_feedset *make_set(size_t n, uint64_t seed, uint8_t (**keys_out)[32])
{
    br_feedset *fs = NULL;
    assert_int_equal(br_feedset_new(&fs), 0);
    uint8_t(*k)[32] = tu_xmalloc((n ? n : 1) * 32);
    br_error err;
    for (size_t i = 0; i < n; i++) {
        for (int j = 0; j < 4; j++) {
            uint64_t v = br_splitmix64(&seed);
            memcpy(k[i] + 8 * j, &v, 8);
        }
        if (i % 7 == 6) {
            k[i][0] = k[i - 1][0];
            k[i][1] = k[i - 1][1];
            k[i][2] = (uint8_t)((k[i - 1][2] & 0xF0) | (k[i][2] & 0x0F));
        }
        assert_int_equal(br_feedset_add_key(fs, k[i], cats[i % 3], &err), 0);
    }
    br_feedset_finish(fs, NULL);
    if (keys_out)
        *keys_out = k;
    else
        free(k);
    return fs;
}

static void bitmap_of(const br_feedset *fs, uint8_t *bm)
{
    memset(bm, 0, BR_URLFILTER_BITMAP_BYTES);
    const br_feed_entry *e = br_feedset_entries(fs);
    for (size_t i = 0; i < br_feedset_count(fs); i++) {
        uint32_t p = br_urlfilter_prefix_of(e[i].hash);
        bm[p / 8] |= (uint8_t)(1u << (p % 8));
    }
}

static void write_full(const char *dir, const br_feedset *fs, br_mirror_stats *st)
{
    br_mirror *m = NULL;
    br_error err = {{0}};
    if (br_mirror_prepare_full(dir, fs, &m, &err) < 0 || br_mirror_commit(m, &err) < 0)
        fail_msg("mirror: %s", err.text);
    if (st)
        *st = *br_mirror_get_stats(m);
    br_mirror_free(m);
}

static size_t count_files(const char *dir, size_t *temps)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0, t = 0;
    struct dirent *de;
    bool empty = false;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        if (strcmp(de->d_name, BR_MIRROR_EMPTY) == 0) {
            /* served for prefixes without entries (docs/upstream.md) */
            char *p = tu_path("%s/%s", dir, de->d_name);
            struct stat st;
            assert_int_equal(stat(p, &st), 0);
            assert_int_equal(st.st_size, 0);
            free(p);
            empty = true;
            continue;
        }
        n++;
        t += strstr(de->d_name, ".tmp.") != NULL;
    }
    closedir(d);
    assert_true(empty);
    if (temps)
        *temps = t;
    return n;
}

/* The category the mirror gives for a key: parse its prefix file. */
static int mirror_lookup(const char *dir, const uint8_t key[32],
                         char cat[BR_RANGE_CATEGORY_MAX + 1])
{
    char pfx[6];
    br_range_prefix_hex(br_urlfilter_prefix_of(key), pfx);
    char *path = tu_path("%s/%s.txt", dir, pfx);
    size_t len;
    uint8_t *body = tu_read_file(path, &len);
    free(path);
    if (!body)
        return -ENOENT;
    uint8_t *value = NULL;
    size_t vlen;
    br_error err = {{0}};
    int r = br_range_parse(BR_RANGE_URL_SHA256, (const char *)body, len, 0, &value, &vlen, &err);
    free(body);
    if (r < 0)
        fail_msg("%s.txt: br_range_parse: %s", pfx, err.text);
    r = br_range_lookup(BR_RANGE_URL_SHA256, value, vlen, key, NULL, cat);
    free(value);
    return r;
}

/* Lines sorted, uppercase hex, LF only, final LF. */
static void check_file_form(const char *dir, const char *name)
{
    char *path = tu_path("%s/%s", dir, name);
    size_t len;
    uint8_t *b = tu_read_file(path, &len);
    assert_non_null(b);
    assert_true(len > 0 && b[len - 1] == '\n');
    assert_null(memchr(b, '\r', len));
    const char *prev = NULL;
    for (size_t i = 0; i < len;) {
        const char *line = (const char *)b + i;
        const char *nl = memchr(line, '\n', len - i);
        assert_non_null(nl);
        assert_true(nl - line > 60 && line[59] == ':');
        for (int k = 0; k < 59; k++)
            assert_true((line[k] >= '0' && line[k] <= '9') || (line[k] >= 'A' && line[k] <= 'F'));
        if (prev)
            assert_true(memcmp(prev, line, 59) < 0);
        prev = line;
        i = (size_t)(nl - (const char *)b) + 1;
    }
    free(b);
    free(path);
}

static void test_full_mirror(void **state)
{
    (void)state;
    char *base = tu_mkdtemp();
    char *dir = tu_path("%s/ranges", base); /* created by the writer */
    uint8_t(*keys)[32] = NULL;
    size_t n = 2000;
    br_feedset *fs = make_set(n, 1, &keys);
    uint8_t *bm = tu_xmalloc(BR_URLFILTER_BITMAP_BYTES);
    bitmap_of(fs, bm);
    uint64_t prefixes = br_popcount_bytes(bm, BR_URLFILTER_BITMAP_BYTES);
    br_mirror_stats st;
    write_full(dir, fs, &st);
    assert_int_equal(st.prefixes, prefixes);
    assert_int_equal(st.written, prefixes);
    assert_int_equal(st.unchanged, 0);
    assert_int_equal(st.entries_new, n);
    size_t temps;
    assert_int_equal(count_files(dir, &temps), prefixes);
    assert_int_equal(temps, 0);
    char cat[BR_RANGE_CATEGORY_MAX + 1];
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(mirror_lookup(dir, keys[i], cat), 1);
        assert_string_equal(cat, cats[i % 3]);
        uint8_t absent[32];
        memcpy(absent, keys[i], 32);
        absent[31] ^= 1; /* same prefix, not listed */
        assert_int_equal(mirror_lookup(dir, absent, cat), 0);
    }
    DIR *d = opendir(dir);
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.' && strcmp(de->d_name, BR_MIRROR_EMPTY) != 0)
            check_file_form(dir, de->d_name);
    closedir(d);

    /* The same set again: nothing rewritten (same inode, same mtime). */
    char pfx[6];
    br_range_prefix_hex(br_urlfilter_prefix_of(keys[0]), pfx);
    char *one = tu_path("%s/%s.txt", dir, pfx);
    struct stat s0, s1;
    assert_int_equal(stat(one, &s0), 0);
    write_full(dir, fs, &st);
    assert_int_equal(st.written, 0);
    assert_int_equal(st.unchanged, prefixes);
    assert_int_equal(stat(one, &s1), 0);
    assert_int_equal(s0.st_ino, s1.st_ino);
    assert_int_equal(s0.st_mtim.tv_nsec, s1.st_mtim.tv_nsec);

    /* A smaller rebuild: stale prefix files go, foreign files stay. */
    char *foreign1 = tu_path("%s/README", dir), *foreign2 = tu_path("%s/abcde.txt", dir);
    assert_int_equal(tu_write_file(foreign1, "x", 1), 0);
    assert_int_equal(tu_write_file(foreign2, "x", 1), 0);
    br_feedset *small = make_set(100, 1, NULL); /* the first 100 keys of the same stream */
    write_full(dir, small, &st);
    bitmap_of(small, bm);
    uint64_t removed = 0;
    br_error err = {{0}};
    assert_int_equal(br_mirror_remove_stale(dir, bm, &removed, &err), 0);
    uint64_t small_prefixes = br_popcount_bytes(bm, BR_URLFILTER_BITMAP_BYTES);
    assert_int_equal(removed, prefixes - small_prefixes);
    assert_int_equal(count_files(dir, NULL), small_prefixes + 2);
    struct stat sf;
    assert_int_equal(stat(foreign1, &sf), 0);
    assert_int_equal(stat(foreign2, &sf), 0);
    for (size_t i = 0; i < 100; i++)
        assert_int_equal(mirror_lookup(dir, keys[i], cat), 1);
    br_feedset_free(small);
    br_feedset_free(fs);
    free(foreign1);
    free(foreign2);
    free(one);
    free(bm);
    free(keys);
    free(dir);
    tu_rmrf(base);
    free(base);
}

typedef struct fstate {
    char name[256];
    ino_t ino;
    long mtime_ns;
    time_t mtime;
} fstate;

static size_t snapshot(const char *dir, fstate *out, size_t max)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        assert_true(n < max);
        char *p = tu_path("%s/%s", dir, de->d_name);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        free(p);
        snprintf(out[n].name, sizeof(out[n].name), "%s", de->d_name);
        out[n].ino = st.st_ino;
        out[n].mtime = st.st_mtim.tv_sec;
        out[n].mtime_ns = st.st_mtim.tv_nsec;
        n++;
    }
    closedir(d);
    return n;
}

static void test_update(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    uint8_t(*keys)[32] = NULL;
    size_t n = 500;
    br_feedset *fs = make_set(n, 2, &keys);
    write_full(dir, fs, NULL);
    uint8_t *bm = tu_xmalloc(BR_URLFILTER_BITMAP_BYTES);
    bitmap_of(fs, bm);
    enum { MAXF = 1000 };
    fstate *before = tu_xmalloc(MAXF * sizeof(fstate)), *after = tu_xmalloc(MAXF * sizeof(fstate));
    size_t nb = snapshot(dir, before, MAXF);

    /* The delta: a key in a new prefix (chosen absent), a key in the prefix
     * of keys[10], keys[20] again (same category), keys[30] under another
     * category. */
    br_feedset *delta = NULL;
    assert_int_equal(br_feedset_new(&delta), 0);
    br_error err = {{0}};
    uint8_t fresh[32], near[32];
    uint64_t seed = 99;
    do {
        for (int j = 0; j < 4; j++) {
            uint64_t v = br_splitmix64(&seed);
            memcpy(fresh + 8 * j, &v, 8);
        }
    } while (br_prefix_bitmap_test(bm, br_urlfilter_prefix_of(fresh)));
    memcpy(near, keys[10], 32);
    near[31] ^= 0x5A;
    assert_int_equal(br_feedset_add_key(delta, fresh, "phishing", &err), 0);
    assert_int_equal(br_feedset_add_key(delta, near, "ads", &err), 0);
    assert_int_equal(br_feedset_add_key(delta, keys[20], cats[20 % 3], &err), 0);
    assert_int_equal(br_feedset_add_key(delta, keys[30], "other", &err), 0);
    br_feedset_finish(delta, NULL);

    br_mirror *m = NULL;
    assert_int_equal(br_mirror_prepare_update(dir, delta, bm, &m, &err), 0);
    assert_int_equal(br_mirror_commit(m, &err), 0);
    const br_mirror_stats *st = br_mirror_get_stats(m);
    assert_int_equal(st->prefixes, 4);
    assert_int_equal(st->written, 2);
    assert_int_equal(st->unchanged, 2);
    assert_int_equal(st->entries_new, 2);
    assert_int_equal(st->entries_present, 1);
    assert_int_equal(st->conflicts, 1);
    br_mirror_free(m);

    size_t na = snapshot(dir, after, MAXF);
    assert_int_equal(na, nb + 1);
    char pfx_near[6], pfx_fresh[6];
    br_range_prefix_hex(br_urlfilter_prefix_of(near), pfx_near);
    br_range_prefix_hex(br_urlfilter_prefix_of(fresh), pfx_fresh);
    for (size_t i = 0; i < na; i++) {
        size_t j = 0;
        while (j < nb && strcmp(before[j].name, after[i].name) != 0)
            j++;
        bool changed = j == nb || before[j].ino != after[i].ino ||
                       before[j].mtime != after[i].mtime || before[j].mtime_ns != after[i].mtime_ns;
        bool expect =
            strncmp(after[i].name, pfx_near, 5) == 0 || strncmp(after[i].name, pfx_fresh, 5) == 0;
        if (changed != expect)
            fail_msg("%s: changed %d, expected %d", after[i].name, changed, expect);
        if (strcmp(after[i].name, BR_MIRROR_EMPTY) != 0)
            check_file_form(dir, after[i].name);
    }
    char cat[BR_RANGE_CATEGORY_MAX + 1];
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(mirror_lookup(dir, keys[i], cat), 1);
        assert_string_equal(cat, cats[i % 3]); /* keys[30] kept its category */
    }
    assert_int_equal(mirror_lookup(dir, fresh, cat), 1);
    assert_string_equal(cat, "phishing");
    assert_int_equal(mirror_lookup(dir, near, cat), 1);
    assert_string_equal(cat, "ads");

    /* The same delta again: nothing to write. */
    assert_int_equal(br_mirror_prepare_update(dir, delta, bm, &m, &err), 0);
    assert_int_equal(br_mirror_get_stats(m)->written, 0);
    assert_int_equal(br_mirror_commit(m, &err), 0);
    br_mirror_free(m);

    /* A missing file for a prefix the filter has entries in: refused, and
     * nothing written (the other prefix's temporary removed). */
    char *near_file = tu_path("%s/%s.txt", dir, pfx_near);
    assert_int_equal(remove(near_file), 0);
    bm[br_urlfilter_prefix_of(fresh) / 8] |= (uint8_t)(1u << (br_urlfilter_prefix_of(fresh) % 8));
    br_feedset *delta2 = NULL;
    assert_int_equal(br_feedset_new(&delta2), 0);
    uint8_t fresh2[32];
    memcpy(fresh2, fresh, 32);
    fresh2[31] ^= 1;
    assert_int_equal(br_feedset_add_key(delta2, fresh2, "ads", &err), 0);
    near[30] ^= 1;
    assert_int_equal(br_feedset_add_key(delta2, near, "ads", &err), 0);
    br_feedset_finish(delta2, NULL);
    snapshot(dir, before, MAXF);
    assert_int_equal(br_mirror_prepare_update(dir, delta2, bm, &m, &err), -ENOENT);
    assert_non_null(strstr(err.text, "does not belong to this filter"));
    size_t temps;
    count_files(dir, &temps);
    assert_int_equal(temps, 0);
    /* Without the bitmap (a new prefix) it is simply created. */
    assert_int_equal(br_mirror_prepare_update(dir, delta2, NULL, &m, &err), 0);
    /* Prepared but never committed: freed, the temporaries go. */
    br_mirror_free(m);
    count_files(dir, &temps);
    assert_int_equal(temps, 0);
    char pfx_fresh2[6];
    br_range_prefix_hex(br_urlfilter_prefix_of(fresh2), pfx_fresh2);
    assert_int_equal(mirror_lookup(dir, fresh2, cat), 0); /* not written */

    /* A malformed existing file is an error naming FILE:LINE. */
    char *fresh_file = tu_path("%s/%s.txt", dir, pfx_fresh);
    assert_int_equal(tu_write_file(fresh_file, "NOT A LINE\n", 11), 0);
    assert_int_equal(br_mirror_prepare_update(dir, delta2, NULL, &m, &err), -EINVAL);
    assert_non_null(strstr(err.text, ".txt:1: "));
    /* CRLF and lowercase in an existing file are read (and normalized). */
    char line[128];
    char hex[65];
    br_hex_encode_upper(fresh, 32, hex);
    for (char *p = hex; *p; p++)
        if (*p >= 'A' && *p <= 'F')
            *p = (char)(*p + 32);
    int ll = snprintf(line, sizeof(line), "%s:phishing\r\n", hex + 5);
    assert_int_equal(tu_write_file(fresh_file, line, (size_t)ll), 0);
    assert_int_equal(br_mirror_prepare_update(dir, delta2, NULL, &m, &err), 0);
    assert_int_equal(br_mirror_commit(m, &err), 0);
    br_mirror_free(m);
    char fresh_name[16];
    snprintf(fresh_name, sizeof(fresh_name), "%s.txt", pfx_fresh);
    check_file_form(dir, fresh_name);
    assert_int_equal(mirror_lookup(dir, fresh, cat), 1);
    assert_string_equal(cat, "phishing");
    assert_int_equal(mirror_lookup(dir, fresh2, cat), 1);
    assert_string_equal(cat, "ads");

    free(fresh_file);
    free(near_file);
    br_feedset_free(delta2);
    br_feedset_free(delta);
    br_feedset_free(fs);
    free(before);
    free(after);
    free(bm);
    free(keys);
    tu_rmrf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_mirror),
        cmocka_unit_test(test_update),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
