/* SPDX-License-Identifier: MIT */
/* Helpers shared by test_range_cache.c and test_range_cache_limits.c
 * (range_cache_helpers.h). */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "core/hash.h"
#include "range_cache_helpers.h"
#include "core/util.h"

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int fixture_setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    strcpy(f->dir, "/tmp/breachd-range-cache-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->cache, sizeof(f->cache), "%s/cache", f->dir);
    *state = f;
    return 0;
}

int fixture_teardown(void **state)
{
    fixture *f = *state;
    int rc = nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return rc;
}

void gen_make(gen *g, br_range_kind kind, uint32_t prefix, uint64_t seed, size_t min_n,
              size_t max_n)
{
    uint64_t rng = seed * UINT64_C(0x100000001B3) ^ ((uint64_t)prefix << 8) ^ (uint64_t)kind;
    size_t hl = br_range_hash_len(kind);
    g->n = min_n + (size_t)(br_splitmix64(&rng) % (max_n - min_n + 1));
    for (size_t i = 0; i < g->n; i++) {
        for (size_t k = 0; k < hl; k++)
            g->hash[i][k] = (uint8_t)br_splitmix64(&rng);
        g->hash[i][0] = (uint8_t)(prefix >> 12);
        g->hash[i][1] = (uint8_t)(prefix >> 4);
        g->hash[i][2] = (uint8_t)((prefix & 0xF) << 4 | (g->hash[i][2] & 0xF));
        g->count[i] = (uint32_t)(br_splitmix64(&rng) % 1000000) + 1;
        snprintf(g->cat[i], sizeof(g->cat[i]), "cat%u", (unsigned)(br_splitmix64(&rng) % 5));
    }
}

void gen_value(const gen *g, br_range_kind kind, uint8_t **v, size_t *len)
{
    size_t hl = br_range_hash_len(kind);
    size_t cap = g->n * 100 + 1;
    char *body = malloc(cap);
    assert_non_null(body);
    size_t off = 0;
    for (size_t i = 0; i < g->n; i++) {
        char hex[2 * BR_SHA256_LEN + 1];
        br_hex_encode_upper(g->hash[i], hl, hex);
        if (kind == BR_RANGE_PASSWORD_SHA1)
            off += (size_t)snprintf(body + off, cap - off, "%s:%u\r\n", hex + 5, g->count[i]);
        else
            off += (size_t)snprintf(body + off, cap - off, "%s:%s\n", hex + 5, g->cat[i]);
    }
    br_error err = {{0}};
    int rc = br_range_parse(kind, body, off, 0, v, len, &err);
    if (rc)
        fail_msg("parse: %s", err.text);
    free(body);
}

void put_gen(br_range_cache *c, br_range_kind kind, uint32_t prefix, uint64_t seed, size_t min_n,
             size_t max_n, int64_t fetched, int64_t expires, const char *etag, const char *lm)
{
    gen *g = malloc(sizeof(*g));
    assert_non_null(g);
    gen_make(g, kind, prefix, seed, min_n, max_n);
    uint8_t *v;
    size_t len;
    gen_value(g, kind, &v, &len);
    assert_int_equal(br_range_cache_put(c, 0, kind, prefix, v, len, fetched, expires, etag, lm), 0);
    free(v);
    free(g);
}

/* Check that (kind, prefix) answers exactly like generation seed. */
void check_gen(br_range_cache *c, br_range_kind kind, uint32_t prefix, uint64_t seed, size_t min_n,
               size_t max_n, int64_t now, br_range_cache_state want_state)
{
    gen *g = malloc(sizeof(*g));
    assert_non_null(g);
    gen_make(g, kind, prefix, seed, min_n, max_n);
    for (size_t i = 0; i < g->n; i++) {
        br_range_cache_result r;
        assert_int_equal(br_range_cache_lookup(c, 0, kind, g->hash[i], now, 1000, &r), 0);
        assert_int_equal(r.state, want_state);
        assert_true(r.found);
        if (kind == BR_RANGE_PASSWORD_SHA1)
            assert_int_equal(r.count, g->count[i]);
        else
            assert_string_equal(r.category, g->cat[i]);
        g->hash[i][br_range_hash_len(kind) - 1] ^= 0x5A;
        assert_int_equal(br_range_cache_lookup(c, 0, kind, g->hash[i], now, 1000, &r), 0);
        assert_int_equal(r.state, want_state);
        assert_false(r.found);
    }
    free(g);
}

br_range_cache *open_cache(const fixture *f, uint64_t max_size)
{
    br_range_cache *c = NULL;
    br_error err = {{0}};
    int rc = br_range_cache_open(f->cache, max_size, &c, &err);
    if (rc)
        fail_msg("open: %d %s", rc, err.text);
    return c;
}

void hash_for(uint32_t prefix, uint8_t *h, size_t hl)
{
    memset(h, 0x77, hl);
    h[0] = (uint8_t)(prefix >> 12);
    h[1] = (uint8_t)(prefix >> 4);
    h[2] = (uint8_t)((prefix & 0xF) << 4 | 7);
}
