/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test_hibp_input*.c programs: see hibp_input_helpers.h. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

#include "core/hash.h"
#include "filter/hibp_input.h"
#include "hibp_input_helpers.h"
#include "core/util.h"

static char tmpdir[64];

void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    return p;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int group_setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_hibp_input.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

int group_teardown(void **state)
{
    (void)state;
    return nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* path = tmpdir/name */
void tpath(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", tmpdir, name);
}

void write_bytes(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(br_write_all(fd, data, len), 0);
    assert_int_equal(close(fd), 0);
}

void write_str(const char *path, const char *text)
{
    write_bytes(path, text, strlen(text));
}

/* Write a NUL-terminated text to tmpdir/name; the full path goes to out. */
void write_text(char *out, size_t size, const char *name, const char *text)
{
    tpath(out, size, name);
    write_bytes(out, text, strlen(text));
}

void make_dir(char *out, size_t size, const char *name)
{
    tpath(out, size, name);
    assert_int_equal(mkdir(out, 0755), 0);
}

uint64_t file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

int collect(void *ctx, const uint8_t *hash)
{
    collected *c = ctx;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->hex = realloc(c->hex, c->cap * sizeof(*c->hex));
        assert_non_null(c->hex);
    }
    size_t len = c->hash_len ? c->hash_len : BR_SHA1_LEN;
    br_hex_encode_upper(hash, len, c->hex[c->n++]);
    c->sum += br_hash_key64(hash);
    c->xr ^= br_load_be64(hash + len - 8);
    if (c->stop_after && c->n == c->stop_after)
        return -ECANCELED;
    return 0;
}

void collected_free(collected *c)
{
    free(c->hex);
    memset(c, 0, sizeof(*c));
}

static int cmp_hex(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The keys delivered are exactly the expected set (with multiplicity). */
void assert_keys(collected *c, const char *const *want, size_t n)
{
    assert_int_equal(c->n, n);
    size_t hex = 2 * (c->hash_len ? c->hash_len : BR_SHA1_LEN);
    char(*w)[2 * BR_SHA1_LEN + 1] = calloc(n + 1, sizeof(*w));
    assert_non_null(w);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(strlen(want[i]), hex);
        memcpy(w[i], want[i], hex + 1);
    }
    char(*got)[2 * BR_SHA1_LEN + 1] = calloc(n + 1, sizeof(*got));
    assert_non_null(got);
    memcpy(got, c->hex, n * sizeof(*got));
    qsort(w, n, sizeof(*w), cmp_hex);
    qsort(got, n, sizeof(*got), cmp_hex);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(got[i], w[i]);
    free(w);
    free(got);
}

int run(const char *path, const br_input_opts *o, collected *c, br_input_stats *st, br_error *err)
{
    memset(err, 0, sizeof(*err));
    return br_input_read(path, o, collect, c, st, err);
}

/* err is exactly "<path><suffix>". */
void assert_err(const br_error *err, const char *path, const char *suffix)
{
    char want[1024];
    snprintf(want, sizeof(want), "%s%s", path, suffix);
    assert_string_equal(err->text, want);
}

void sha1_hex(const char *s, size_t len, char out[2 * BR_SHA1_LEN + 1])
{
    uint8_t d[BR_SHA1_LEN];
    assert_int_equal(br_sha1(s, len, d), 0);
    br_hex_encode_upper(d, sizeof(d), out);
}
