/* SPDX-License-Identifier: MIT */
/* SHA-1 / SHA-256 through OpenSSL, and hex helpers. A password key is the
 * SHA-1 of the exact UTF-8 bytes of the password, as HIBP computes it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
 * extensions where the CPU has them). 0 or -EIO. */
int br_sha256_many(const void *const *msg, const size_t *len, size_t n,
                   uint8_t (*out)[BR_SHA256_LEN]);
/* br_sha256_many of n NUL-terminated strings (without the NUL). */
int br_sha256_strings(const char *const *s, size_t n, uint8_t (*out)[BR_SHA256_LEN]);

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

/* Parse exactly 2*len hex digits (any case) into out. false if any is not
 * hex. Branch-free per digit: it sits on every hot path (inputs, requests). */
static inline bool br_hex_decode(const char *hex, size_t len, uint8_t *out)
{
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
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | hash[i];
    return v;
}
