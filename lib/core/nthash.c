/* SPDX-License-Identifier: MIT */
/* NT hashes: UTF-8 to UTF-16LE and MD4 through OpenSSL's legacy provider;
 * the contract is in nthash.h. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

#include "nthash.h"
#include "util.h"

#define CHUNK 512 /* bytes of UTF-16LE hashed at a time */

/* ---- UTF-8 to UTF-16LE ---------------------------------------------------------- */

static inline bool cont(uint8_t b)
{
    return (b & 0xC0) == 0x80;
}

/* The code point of the well-formed UTF-8 sequence at in[0..avail), its
 * length in *n; else the byte itself (Latin-1), *n = 1. Ranges of RFC 3629,
 * section 4. */
static uint32_t decode_one(const uint8_t *in, size_t avail, size_t *n)
{
    uint8_t b = in[0];
    *n = 1;
    if (b < 0x80)
        return b;
    if (b >= 0xC2 && b <= 0xDF && avail >= 2 && cont(in[1])) {
        *n = 2;
        return (uint32_t)(b & 0x1F) << 6 | (in[1] & 0x3F);
    }
    if (b >= 0xE0 && b <= 0xEF && avail >= 3 && cont(in[1]) && cont(in[2])) {
        uint8_t lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
        if (in[1] >= lo && in[1] <= hi) {
            *n = 3;
            return (uint32_t)(b & 0x0F) << 12 | (uint32_t)(in[1] & 0x3F) << 6 | (in[2] & 0x3F);
        }
    }
    if (b >= 0xF0 && b <= 0xF4 && avail >= 4 && cont(in[1]) && cont(in[2]) && cont(in[3])) {
        uint8_t lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
        if (in[1] >= lo && in[1] <= hi) {
            *n = 4;
            return (uint32_t)(b & 0x07) << 18 | (uint32_t)(in[1] & 0x3F) << 12 |
                   (uint32_t)(in[2] & 0x3F) << 6 | (in[3] & 0x3F);
        }
    }
    return b; /* not well-formed: the byte as Latin-1 */
}

static inline void put16(uint8_t *out, uint32_t u)
{
    out[0] = (uint8_t)(u & 0xFF);
    out[1] = (uint8_t)(u >> 8);
}

size_t br_utf16le_encode(const uint8_t *in, size_t len, size_t *pos, uint8_t *out, size_t cap)
{
    size_t o = 0, i = *pos;
    while (i < len) {
        size_t n;
        uint32_t cp = decode_one(in + i, len - i, &n);
        if (cp < 0x10000) {
            if (o + 2 > cap)
                break;
            put16(out + o, cp);
            o += 2;
        } else {
            if (o + 4 > cap)
                break;
            cp -= 0x10000;
            put16(out + o, 0xD800 | (cp >> 10));
            put16(out + o + 2, 0xDC00 | (cp & 0x3FF));
            o += 4;
        }
        i += n;
    }
    *pos = i;
    return o;
}

/* ---- MD4 ----------------------------------------------------------------------- */

/* A library context of our own holds the legacy provider: loading it into
 * the default context would also stop OpenSSL from loading the default
 * provider by itself there, for everything else in the process. */
static OSSL_LIB_CTX *md4_libctx;
static OSSL_PROVIDER *md4_legacy;
static EVP_MD *md4_md;
static pthread_once_t md4_once = PTHREAD_ONCE_INIT;

static void md4_fetch(void)
{
    md4_libctx = OSSL_LIB_CTX_new();
    if (md4_libctx) {
        md4_legacy = OSSL_PROVIDER_load(md4_libctx, "legacy");
        if (md4_legacy)
            md4_md = EVP_MD_fetch(md4_libctx, "MD4", NULL);
    }
    ERR_clear_error(); /* a failed load leaves its reasons on this thread's queue */
}

/* The PAM module may be unloaded inside a long-lived process. */
__attribute__((destructor)) static void md4_release(void)
{
    EVP_MD_free(md4_md);
    if (md4_legacy)
        OSSL_PROVIDER_unload(md4_legacy);
    OSSL_LIB_CTX_free(md4_libctx);
    md4_md = NULL;
    md4_legacy = NULL;
    md4_libctx = NULL;
}

static const EVP_MD *md4(void)
{
    pthread_once(&md4_once, md4_fetch);
    return md4_md;
}

int br_md4_check(br_error *err)
{
    if (md4())
        return 0;
    return br_error_set(err, -ENOSYS,
                        "MD4 (for NT hashes) is not available: OpenSSL's legacy provider could "
                        "not be loaded (legacy.so in OpenSSL's MODULESDIR, see `openssl version "
                        "-m`, or in $OPENSSL_MODULES)");
}

struct br_nt_hasher {
    EVP_MD_CTX *ctx;
};

br_nt_hasher *br_nt_hasher_new(br_error *err)
{
    if (br_md4_check(err) < 0)
        return NULL;
    br_nt_hasher *h = calloc(1, sizeof(*h));
    if (h)
        h->ctx = EVP_MD_CTX_new();
    if (!h || !h->ctx) {
        br_nt_hasher_free(h);
        br_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    return h;
}

void br_nt_hasher_free(br_nt_hasher *h)
{
    if (!h)
        return;
    EVP_MD_CTX_free(h->ctx);
    free(h);
}

static int nt_digest(EVP_MD_CTX *ctx, const void *password, size_t len, uint8_t out[BR_NT_LEN])
{
    const EVP_MD *md = md4();
    if (!md)
        return -ENOSYS;
    uint8_t buf[CHUNK];
    size_t pos = 0;
    int rc = EVP_DigestInit_ex2(ctx, md, NULL) == 1 ? 0 : -EIO;
    while (rc == 0 && pos < len) {
        size_t n = br_utf16le_encode(password, len, &pos, buf, sizeof(buf));
        if (EVP_DigestUpdate(ctx, buf, n) != 1)
            rc = -EIO;
    }
    if (rc == 0 && EVP_DigestFinal_ex(ctx, out, NULL) != 1)
        rc = -EIO;
    br_wipe(buf, sizeof(buf));
    return rc;
}

int br_nt_hasher_digest(br_nt_hasher *h, const void *password, size_t len, uint8_t out[BR_NT_LEN])
{
    return nt_digest(h->ctx, password, len, out);
}

int br_nt_hash(const void *password, size_t len, uint8_t out[BR_NT_LEN])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx)
        return -ENOMEM;
    int rc = nt_digest(ctx, password, len, out);
    EVP_MD_CTX_free(ctx);
    return rc;
}
