/* SPDX-License-Identifier: MIT */
/* Decoy prefixes: a keyed, deterministic draw from a population. See decoys.h. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <openssl/evp.h>

#include "decoys.h"
#include "core/br_assert.h"
#include "core/util.h"

#define CHUNK 1024                         /* keystream bytes per round: 256 candidates */
#define MAX_CANDIDATES (UINT32_C(1) << 23) /* bound for tiny populations */

uint32_t br_decoy_population(const uint8_t *bitmap)
{
    uint32_t n = 0;
    for (size_t i = 0; i < BR_DECOY_BITMAP_BYTES; i++)
        n += (uint32_t)__builtin_popcount(bitmap[i]);
    return n;
}

static bool in_population(const uint8_t *bitmap, uint32_t p)
{
    return !bitmap || ((bitmap[p >> 3] >> (p & 7)) & 1);
}

static bool taken(const uint32_t *out, int n, uint32_t p)
{
    for (int i = 0; i < n; i++)
        if (out[i] == p)
            return true;
    return false;
}

int br_decoy_pick(const uint8_t key[BR_DECOY_KEY_LEN], br_range_kind kind, uint32_t real_prefix,
                  const uint8_t *bitmap, uint32_t pop_count, uint32_t n, uint32_t *out)
{
    if (!key || !br_range_hash_len(kind) || real_prefix >= BR_DECOY_PREFIXES || (n && !out))
        return -EINVAL;
    uint32_t pop = bitmap ? pop_count : BR_DECOY_PREFIXES;
    if (pop > BR_DECOY_PREFIXES)
        return -EINVAL;
    uint32_t others = pop - (pop && in_population(bitmap, real_prefix) ? 1 : 0);
    if (n > others)
        n = others;
    if (n == 0)
        return 0;

    /* IV: "decoy" tag, kind, real prefix; the counter runs in the low bytes. */
    uint8_t iv[16] = {'d',
                      'e',
                      'c',
                      'o',
                      'y',
                      0,
                      0,
                      (uint8_t)kind,
                      (uint8_t)(real_prefix >> 16),
                      (uint8_t)(real_prefix >> 8),
                      (uint8_t)real_prefix};
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (!ctx)
        return br_trace(-ENOMEM);
    static const uint8_t zeros[CHUNK];
    uint8_t ks[CHUNK];
    int rc = 0, got = 0;
    if (EVP_EncryptInit_ex(ctx, EVP_aes_128_ctr(), NULL, key, iv) != 1) {
        rc = -EIO;
        goto out;
    }
    for (uint32_t tried = 0; got < (int)n && tried < MAX_CANDIDATES; tried += CHUNK / 4) {
        int len = 0;
        if (EVP_EncryptUpdate(ctx, ks, &len, zeros, CHUNK) != 1 || len != CHUNK) {
            rc = -EIO;
            goto out;
        }
        for (size_t i = 0; i < CHUNK && got < (int)n; i += 4) {
            uint32_t p = (((uint32_t)ks[i] << 16) | ((uint32_t)ks[i + 1] << 8) | ks[i + 2]) &
                         (BR_DECOY_PREFIXES - 1);
            if (p != real_prefix && in_population(bitmap, p) && !taken(out, got, p))
                out[got++] = p;
        }
    }
    rc = got;
out:
    br_wipe(ks, sizeof(ks));
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}
