/* SPDX-License-Identifier: MIT */
/* Helpers shared by test_range.c and test_range_refused.c (range_helpers.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/hash.h"
#include "range_helpers.h"
#include "core/util.h"

void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = BR_MAX(2 * b->cap, b->len + n + 1024);
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void sb_str(sbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* A full hash with the given 20-bit prefix and a random rest. */
void rand_hash(uint64_t *rng, uint32_t prefix, uint8_t *h, size_t hlen)
{
    for (size_t i = 0; i < hlen; i++)
        h[i] = (uint8_t)br_splitmix64(rng);
    h[0] = (uint8_t)(prefix >> 12);
    h[1] = (uint8_t)(prefix >> 4);
    h[2] = (uint8_t)((prefix & 0xF) << 4 | (h[2] & 0x0F));
}

/* The suffix of h as hex (upper), NUL-terminated. */
void suffix_hex(const uint8_t *h, size_t hlen, char *out)
{
    char full[2 * BR_SHA256_LEN + 1];
    br_hex_encode_upper(h, hlen, full);
    strcpy(out, full + BR_RANGE_PREFIX_HEX);
}

void make_pw_set(pw_set *s, uint64_t seed)
{
    uint64_t rng = seed;
    for (int i = 0; i < NREAL; i++) {
        rand_hash(&rng, 0x5BAA6, s->real[i], BR_SHA1_LEN);
        s->count[i] = (uint32_t)(br_splitmix64(&rng) % 100000) + 1;
    }
    s->count[0] = 1;
    s->count[1] = UINT32_MAX;
    for (int i = 0; i < NPAD; i++)
        rand_hash(&rng, 0x5BAA6, s->pad[i], BR_SHA1_LEN);
}

/* Body of the set: real lines in order perm (or as is), then padding. */
void pw_body(const pw_set *s, sbuf *b, int eol, bool final_eol, bool lower, bool shuffle,
             bool padding)
{
    int order[NREAL];
    for (int i = 0; i < NREAL; i++)
        order[i] = i;
    if (shuffle) {
        uint64_t rng = 99;
        for (int i = NREAL - 1; i > 0; i--) {
            int j = (int)(br_splitmix64(&rng) % (uint64_t)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    int total = NREAL + (padding ? NPAD : 0);
    for (int n = 0; n < total; n++) {
        char sfx[64], line[96];
        if (n < NREAL) {
            suffix_hex(s->real[order[n]], BR_SHA1_LEN, sfx);
            snprintf(line, sizeof(line), "%s:%u", sfx, s->count[order[n]]);
        } else {
            suffix_hex(s->pad[n - NREAL], BR_SHA1_LEN, sfx);
            snprintf(line, sizeof(line), "%s:%s", sfx, n % 2 ? "0" : "000");
        }
        if (lower)
            for (char *c = line; *c; c++)
                if (*c >= 'A' && *c <= 'F')
                    *c = (char)(*c - 'A' + 'a');
        sb_str(b, line);
        if (n < total - 1 || final_eol) {
            bool crlf = eol == EOL_CRLF || (eol == EOL_MIXED && n % 3 == 0);
            sb_str(b, crlf ? "\r\n" : "\n");
        }
    }
}

void check_pw_set(const pw_set *s, const uint8_t *v, size_t len, bool expect_padding_absent)
{
    uint32_t n;
    assert_int_equal(br_range_validate(BR_RANGE_PASSWORD_SHA1, v, len, &n), 0);
    assert_int_equal(n, NREAL);
    assert_int_equal(len, BR_RANGE_HEADER_SIZE + NREAL * 22);
    for (int i = 0; i < NREAL; i++) {
        uint32_t c = 0;
        char cat[BR_RANGE_CATEGORY_MAX + 1] = "x";
        assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, s->real[i], &c, cat), 1);
        assert_int_equal(c, s->count[i]);
        assert_string_equal(cat, "");
        /* Same suffix, other prefix: the prefix is not checked. */
        uint8_t h[BR_SHA1_LEN];
        memcpy(h, s->real[i], sizeof(h));
        h[0] ^= 0xFF;
        h[2] ^= 0xF0;
        assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, h, &c, NULL), 1);
        /* One bit off in the last digit: not found. */
        h[19] ^= 0x01;
        assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, h, &c, NULL), 0);
    }
    if (expect_padding_absent)
        for (int i = 0; i < NPAD; i++)
            assert_int_equal(br_range_lookup(BR_RANGE_PASSWORD_SHA1, v, len, s->pad[i], NULL, NULL),
                             0);
}

void parse_ok(br_range_kind kind, const char *body, size_t len, uint8_t **v, size_t *vlen)
{
    br_error err = {{0}};
    int rc = br_range_parse(kind, body, len, 0, v, vlen, &err);
    if (rc != 0)
        fail_msg("parse failed (%d): %s", rc, err.text);
}
