/* SPDX-License-Identifier: MIT */
/* SHA-1 / SHA-256 through OpenSSL, and hex helpers. A password key is the
 * SHA-1 of the exact UTF-8 bytes of the password, as HIBP computes it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "util.h"

#define BR_SHA1_LEN 20
#define BR_SHA256_LEN 32

typedef struct br_hasher br_hasher;

/* A reusable hashing context (EVP_MD_CTX inside); NULL on allocation failure. */
br_hasher *br_hasher_new_sha1(void);
br_hasher *br_hasher_new_sha256(void);
void br_hasher_free(br_hasher *h);
/* Hash buf into out (20 or 32 bytes). 0 or -EIO. */
int br_hasher_digest(br_hasher *h, const void *buf, size_t len, uint8_t *out);

/* One-shot helpers (br_sha256 of a short message as br_sha256_many). */
int br_sha1(const void *buf, size_t len, uint8_t out[BR_SHA1_LEN]);
int br_sha256(const void *buf, size_t len, uint8_t out[BR_SHA256_LEN]);
/* The SHA-256 of each of n messages, msg[i][0..len[i]), into out[i]: the
 * filter keys of one lookup (a URL's expressions, a name's suffixes), the
 * cheap way for short messages: one context for all, no EVP dispatch or
 * allocation per message (OpenSSL still picks its fastest code: the SHA
 * extensions where the CPU has them). len NULL: the messages are
 * NUL-terminated strings (hashed without the NUL). 0 or -EIO. */
int br_sha256_many(const void *const *msg, const size_t *len, size_t n,
                   uint8_t (*out)[BR_SHA256_LEN]);

/* XXH3-64 (seed 0) of buf[0..len): a fast non-cryptographic hash, the key
 * of an offline URL filter's quick filter (docs/filter-format.md, "The
 * quick filter"). Never a filter key where an adversary's collisions
 * matter: a quick filter only sends lookups on to the SHA-256 keys. */
uint64_t br_xxh3_64(const void *buf, size_t len);

/* Value of one hex digit (any case), or -1. */
static inline int br_hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* 0..15 for a hex digit (any case), 0xF0 for any other byte: OR-ing the
 * values of a run of bytes is >= 16 exactly when one of them is not hex. */
extern const uint8_t br_hex_table[256];

#if defined(__SSE2__)
/* 16 hex digits at s into out[0..8); false if one is not hex. Signed byte
 * compares: a byte >= 0x80 is below '0'. A letter OR 0x20 is 'a'..'f' (no
 * other byte maps there); its value is its low nibble + 9. */
static inline bool br_hex_decode16_sse2_(const char *s, uint8_t out[8])
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
    __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                  _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
    __m128i t = _mm_or_si128(v, _mm_set1_epi8(0x20));
    __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(t, _mm_set1_epi8('a' - 1)),
                                   _mm_cmplt_epi8(t, _mm_set1_epi8('f' + 1)));
    __m128i val = _mm_add_epi8(_mm_and_si128(v, _mm_set1_epi8(0x0f)),
                               _mm_and_si128(letter, _mm_set1_epi8(9)));
    /* each 16-bit lane: digit 2i in its low byte, 2i+1 in its high byte */
    __m128i w = _mm_and_si128(_mm_or_si128(_mm_slli_epi16(val, 4), _mm_srli_epi16(val, 8)),
                              _mm_set1_epi16(0xff));
    _mm_storel_epi64((__m128i *)(void *)out, _mm_packus_epi16(w, w));
    return _mm_movemask_epi8(_mm_or_si128(digit, letter)) == 0xffff;
}
#endif

/* Parse exactly 2*len hex digits (any case) into out. false if any is not
 * hex. Without a branch per digit: it sits on every hot path (inputs,
 * requests). With SSE2, 16 digits at a time, the last 16 overlapping the
 * ones before when len is not a multiple of 8. */
static inline bool br_hex_decode(const char *hex, size_t len, uint8_t *out)
{
#if defined(__SSE2__)
    if (len >= 8) {
        bool ok = true;
        for (size_t i = 0; len - i > 8; i += 8)
            ok &= br_hex_decode16_sse2_(hex + 2 * i, out + i);
        return br_hex_decode16_sse2_(hex + 2 * (len - 8), out + len - 8) && ok;
    }
#endif
    const unsigned char *s = (const unsigned char *)hex;
    unsigned bad = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned hi = br_hex_table[s[2 * i]], lo = br_hex_table[s[2 * i + 1]];
        bad |= hi | lo;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return bad < 16;
}
/* Write 2*len uppercase hex digits and a NUL into out (size 2*len+1). */
void br_hex_encode_upper(const uint8_t *in, size_t len, char *out);

/* The 64-bit filter key of a hash: its first 8 bytes, big-endian, so that the
 * leading hex digits of the hash are the leading bits of the key. */
static inline uint64_t br_hash_key64(const uint8_t *hash)
{
    return __builtin_bswap64(br_load_le64(hash)); /* hash[0] the highest byte */
}
