/* SPDX-License-Identifier: MIT */
/* Signed filters (docs/filter-format.md, "Signatures"): Ed25519 key pairs
 * in PEM files, and the detached FILE.sig that binds a filter's header and
 * body hashes, kind, generation and build time to a publisher's key.
 * Everything goes through OpenSSL EVP.
 *
 * Key files: the secret key is PKCS#8 PEM ("BEGIN PRIVATE KEY"), written
 * mode 0600 and refused when group or others have any access to it; the
 * public key is SubjectPublicKeyInfo PEM ("BEGIN PUBLIC KEY"). Both are what
 * `openssl genpkey -algorithm ed25519` and `openssl pkey -pubout` write, so
 * keys can be made and inspected with the openssl tool as well. A key is
 * named by its key id: the SHA-256 of its 32 raw public-key bytes. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "filter_file.h"
#include "core/util.h"

#define BR_SIG_MAGIC "BRCHSIG1"
#define BR_SIG_VERSION 1
#define BR_SIG_ALGO_ED25519 1
/* A .sig file: the signed fields (BR_SIG_SIGNED_SIZE bytes), then the
 * 64-byte Ed25519 signature over them. */
#define BR_SIG_SIGNED_SIZE 136
#define BR_SIG_SIZE (BR_SIG_SIGNED_SIZE + 64)
#define BR_KEY_ID_LEN 32

typedef struct br_sign_key br_sign_key;

/* A new Ed25519 key pair. */
int br_sign_key_generate(br_sign_key **out, br_error *err);
/* Write the secret key (mode 0600) and the public key (mode 0644), each to
 * a new file: an existing file is refused (-EEXIST), never overwritten. On
 * failure neither file is left behind. */
int br_sign_key_save(const br_sign_key *key, const char *secret_path, const char *public_path,
                     br_error *err);
/* Read a secret key. Refused (-EPERM) when group or others have any access
 * to the file, or when it is not a regular file; -EINVAL when it holds no
 * Ed25519 private key. */
int br_sign_key_load_secret(const char *path, br_sign_key **out, br_error *err);
/* Read a public key (an Ed25519 SubjectPublicKeyInfo PEM file). */
int br_sign_key_load_public(const char *path, br_sign_key **out, br_error *err);
void br_sign_key_free(br_sign_key *key);
BR_DEFINE_FREEP(br_sign_key, br_sign_key_free)

/* The key id: SHA-256 of the raw public key (also of a secret key's). */
int br_sign_key_id(const br_sign_key *key, uint8_t id[BR_KEY_ID_LEN]);

/* Ed25519 over any bytes (the publisher's manifest, manifest.h): sign with
 * a secret key; verify: 0, or -EKEYREJECTED. */
int br_sign_bytes(const br_sign_key *secret, const void *data, size_t len, uint8_t sig[64],
                  br_error *err);
int br_verify_bytes(const br_sign_key *pub, const void *data, size_t len, const uint8_t sig[64]);

/* The decoded fields of a .sig file. */
typedef struct br_filter_sig {
    uint8_t key_id[BR_KEY_ID_LEN];
    uint32_t kind;
    uint64_t generation;
    int64_t build_time;
    uint8_t header_sha256[32];
    uint8_t body_sha256[32];
    uint8_t signature[64];
} br_filter_sig;

/* Sign the filter whose (verified) header is h with a secret key: out is the
 * complete .sig content. */
int br_filter_sign(const br_sign_key *secret, const br_filter_header *h, uint8_t out[BR_SIG_SIZE],
                   br_error *err);
/* Decode a .sig content: magic, version, algorithm, exact size. */
int br_filter_sig_decode(const uint8_t *raw, size_t len, br_filter_sig *sig, br_error *err);
/* Check a .sig content against a public key and the header of the filter it
 * is meant for: the key id, then the Ed25519 signature, then each signed
 * field against the header. -EINVAL (or -EKEYREJECTED for another key or a
 * bad signature) with the reason: "signed by another key (key id ...)",
 * "signature is for generation 7, the filter is generation 8", ... */
int br_filter_sig_check(const br_sign_key *pub, const br_filter_header *h, const uint8_t *raw,
                        size_t len, br_error *err);

/* PATH.sig, malloc'ed; NULL when out of memory. */
char *br_filter_sig_path(const char *filter_path);
/* Read filter_path.sig (at most a few hundred bytes) and br_filter_sig_check
 * it. A missing .sig is -ENOENT "... has no signature (FILE.sig: ...)". */
int br_filter_sig_verify(const br_sign_key *pub, const char *filter_path, const br_filter_header *h,
                         br_error *err);
/* Write filter_path.sig atomically (temporary file, fsync, rename). */
int br_filter_sig_write(const char *filter_path, const uint8_t sig[BR_SIG_SIZE], br_error *err);
