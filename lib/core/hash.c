/* SPDX-License-Identifier: MIT */
/* SHA-1 and SHA-256 through OpenSSL, XXH3 through libxxhash, and the hex
 * helpers (hash.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* SHA256_Init and friends (br_sha256_many) */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

/* header-only: XXH3 inlined here, no libxxhash to link */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "hash.h"
#include "util.h"

struct br_hasher {
    EVP_MD_CTX *ctx;
    const EVP_MD *md;
};

static br_hasher *hasher_new(const EVP_MD *md)
{
    br_hasher *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->ctx = EVP_MD_CTX_new();
    h->md = md;
    if (!h->ctx || !md) {
        br_hasher_free(h);
        return NULL;
    }
    return h;
}

br_hasher *br_hasher_new_sha1(void)
{
    return hasher_new(EVP_sha1());
}

br_hasher *br_hasher_new_sha256(void)
{
    return hasher_new(EVP_sha256());
}

void br_hasher_free(br_hasher *h)
{
    if (!h)
        return;
    EVP_MD_CTX_free(h->ctx);
    free(h);
}

int br_hasher_digest(br_hasher *h, const void *buf, size_t len, uint8_t *out)
{
    if (EVP_DigestInit_ex2(h->ctx, h->md, NULL) != 1 || EVP_DigestUpdate(h->ctx, buf, len) != 1 ||
        EVP_DigestFinal_ex(h->ctx, out, NULL) != 1)
        return -EIO;
    return 0;
}

/* The one-shot digests use implementations fetched once: with OpenSSL 3 a
 * legacy EVP_sha256() makes every EVP_Digest() fetch it again from the
 * provider store (260 ns against 93 ns for a 48-byte URL expression, which
 * is hashed for every expression of every URL checked). Kept for the life of
 * the process; EVP_sha1()/EVP_sha256() if the fetch failed. */
static EVP_MD *fetched_sha1, *fetched_sha256;
static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;

static void fetch_mds(void)
{
    fetched_sha1 = EVP_MD_fetch(NULL, "SHA1", NULL);
    fetched_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
}

/* Give them back when the library goes away: the PAM module is loaded and
 * unloaded by every passwd run inside a long-lived process (sshd, login). */
__attribute__((destructor)) static void free_mds(void)
{
    EVP_MD_free(fetched_sha1);
    EVP_MD_free(fetched_sha256);
    fetched_sha1 = fetched_sha256 = NULL;
}

int br_sha1(const void *buf, size_t len, uint8_t out[BR_SHA1_LEN])
{
    pthread_once(&fetch_once, fetch_mds);
    const EVP_MD *md = fetched_sha1 ? fetched_sha1 : EVP_sha1();
    return EVP_Digest(buf, len, out, NULL, md, NULL) == 1 ? 0 : -EIO;
}

static int evp_sha256(const void *buf, size_t len, uint8_t out[BR_SHA256_LEN])
{
    pthread_once(&fetch_once, fetch_mds);
    const EVP_MD *md = fetched_sha256 ? fetched_sha256 : EVP_sha256();
    return EVP_Digest(buf, len, out, NULL, md, NULL) == 1 ? 0 : -EIO;
}

/* Message i of a br_sha256_many call: len NULL means NUL-terminated. */
static size_t msg_len(const void *const *msg, const size_t *len, size_t i)
{
    return len ? len[i] : strlen((const char *)msg[i]);
}

#if OPENSSL_VERSION_MAJOR < 4
/* OpenSSL 3's one-shot SHA256_* functions skip the provider dispatch that
 * every EVP digest init pays (a URL expression is a block or two, so that
 * dispatch is most of its cost). Deprecated, not removed: used while they
 * are there; the EVP path below otherwise. */
static int sha256_many(const void *const *msg, const size_t *len, size_t n,
                       uint8_t (*out)[BR_SHA256_LEN])
{
    /* One context for all: SHA256_Final clears its data block, and each
     * SHA256_Init overwrites the rest; the one wipe at the end takes what
     * is left of the last message (its length, the state that is its
     * digest). */
    SHA256_CTX c;
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++)
        if (SHA256_Init(&c) != 1 || SHA256_Update(&c, msg[i], msg_len(msg, len, i)) != 1 ||
            SHA256_Final(out[i], &c) != 1)
            r = -EIO;
    br_wipe(&c, sizeof(c));
    return r;
}
#else
static int sha256_many(const void *const *msg, const size_t *len, size_t n,
                       uint8_t (*out)[BR_SHA256_LEN])
{
    pthread_once(&fetch_once, fetch_mds);
    const EVP_MD *md = fetched_sha256 ? fetched_sha256 : EVP_sha256();
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx)
        return -ENOMEM;
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++) {
        /* The digest is set once; later inits reuse it (no fetch, no
         * reference taken per message). */
        if (EVP_DigestInit_ex2(ctx, i == 0 ? md : NULL, NULL) != 1 ||
            EVP_DigestUpdate(ctx, msg[i], msg_len(msg, len, i)) != 1 ||
            EVP_DigestFinal_ex(ctx, out[i], NULL) != 1)
            r = -EIO;
    }
    EVP_MD_CTX_free(ctx);
    return r;
}
#endif

/* A short message (a URL expression, a header) the cheap way; a long one
 * (a file) through EVP, which may have faster code for many blocks. */
int br_sha256(const void *buf, size_t len, uint8_t out[BR_SHA256_LEN])
{
    if (len > 1024)
        return evp_sha256(buf, len, out);
    const void *msg[1] = {buf ? buf : ""};
    return sha256_many(msg, &len, 1, (uint8_t(*)[BR_SHA256_LEN])out);
}

int br_sha256_many(const void *const *msg, const size_t *len, size_t n,
                   uint8_t (*out)[BR_SHA256_LEN])
{
    return sha256_many(msg, len, n, out);
}

#define HX(c)                                                                                      \
    ((c) >= '0' && (c) <= '9'   ? (c) - '0'                                                        \
     : (c) >= 'a' && (c) <= 'f' ? (c) - 'a' + 10                                                   \
     : (c) >= 'A' && (c) <= 'F' ? (c) - 'A' + 10                                                   \
                                : 0xF0)
#define HX4(c) HX(c), HX((c) + 1), HX((c) + 2), HX((c) + 3)
#define HX16(c) HX4(c), HX4((c) + 4), HX4((c) + 8), HX4((c) + 12)
#define HX64(c) HX16(c), HX16((c) + 16), HX16((c) + 32), HX16((c) + 48)
const uint8_t br_hex_table[256] = {HX64(0), HX64(64), HX64(128), HX64(192)};

void br_hex_encode_upper(const uint8_t *in, size_t len, char *out)
{
    static const char digits[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * len] = '\0';
}

uint64_t br_xxh3_64(const void *buf, size_t len)
{
    return XXH3_64bits(buf, len);
}
