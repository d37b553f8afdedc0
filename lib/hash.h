/* SPDX-License-Identifier: MIT */
/* SHA-1 / SHA-256 through OpenSSL EVP, and hex helpers. A password key is the
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

/* One-shot helpers. */
int br_sha1(const void *buf, size_t len, uint8_t out[BR_SHA1_LEN]);
int br_sha256(const void *buf, size_t len, uint8_t out[BR_SHA256_LEN]);

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

/* Parse exactly 2*len hex digits (any case) into out. false if any is not hex. */
bool br_hex_decode(const char *hex, size_t len, uint8_t *out);
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
