/* SPDX-License-Identifier: MIT */
/* Ed25519 keys and filter signatures through OpenSSL EVP (filter_sign.h;
 * the .sig layout is in docs/filter-format.md, "Signatures"). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "filter_sign.h"
#include "core/hash.h"
#include "core/util.h"

/* Byte offsets in a .sig file. */
enum {
    S_MAGIC = 0,
    S_VERSION = 8,
    S_ALGORITHM = 12,
    S_KEY_ID = 16,
    S_KIND = 48,
    S_RESERVED = 52,
    S_GENERATION = 56,
    S_BUILD_TIME = 64,
    S_HEADER_SHA256 = 72,
    S_BODY_SHA256 = 104,
    S_SIGNATURE = 136,
};
_Static_assert(S_SIGNATURE == BR_SIG_SIGNED_SIZE, "signed part");
_Static_assert(S_SIGNATURE + 64 == BR_SIG_SIZE, "sig size");

/* A PEM key file is a few hundred bytes; anything much larger is not one. */
#define KEY_FILE_MAX 16384

struct br_sign_key {
    EVP_PKEY *pkey;
    bool secret;
};

void br_sign_key_free(br_sign_key *key)
{
    if (!key)
        return;
    EVP_PKEY_free(key->pkey);
    free(key);
}

static int wrap_key(EVP_PKEY *pkey, bool secret, br_sign_key **out)
{
    br_sign_key *k = calloc(1, sizeof(*k));
    if (!k) {
        EVP_PKEY_free(pkey);
        return -ENOMEM;
    }
    k->pkey = pkey;
    k->secret = secret;
    *out = k;
    return 0;
}

int br_sign_key_generate(br_sign_key **out, br_error *err)
{
    EVP_PKEY *pkey = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    if (!pkey)
        return br_error_set(err, -EIO, "Ed25519 key generation failed (OpenSSL)");
    return wrap_key(pkey, true, out);
}

int br_sign_key_id(const br_sign_key *key, uint8_t id[BR_KEY_ID_LEN])
{
    uint8_t raw[32];
    size_t len = sizeof(raw);
    if (EVP_PKEY_get_raw_public_key(key->pkey, raw, &len) != 1 || len != sizeof(raw))
        return -EIO;
    return br_sha256(raw, len, id);
}

/* ---- key files ---- */

/* Write a new file (O_EXCL) with mode, fsynced. -EEXIST for an existing one. */
static int write_new_file(const char *path, const void *data, size_t len, mode_t mode,
                          br_error *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) {
        int r = -errno;
        if (r == -EEXIST)
            return br_error_set(err, r, "%s exists: remove it first (keys are never overwritten)",
                                path);
        return br_error_set(err, r, "%s: %s", path, strerror(-r));
    }
    /* The umask may have taken bits away, never added: set exactly mode. */
    int r = fchmod(fd, mode) < 0 ? -errno : br_write_all(fd, data, len);
    if (r == 0 && fsync(fd) < 0)
        r = -errno;
    close(fd);
    if (r < 0) {
        unlink(path);
        return br_error_set(err, r, "%s: %s", path, strerror(-r));
    }
    return 0;
}

/* The PEM text of key (secret: PKCS#8; public: SPKI) in a memory BIO. */
static int key_pem(const br_sign_key *key, bool secret, char **out, size_t *len)
{
    BIO *bio = BIO_new(BIO_s_secmem());
    if (!bio)
        return -ENOMEM;
    int ok = secret ? PEM_write_bio_PrivateKey(bio, key->pkey, NULL, NULL, 0, NULL, NULL)
                    : PEM_write_bio_PUBKEY(bio, key->pkey);
    char *data = NULL;
    long n = BIO_get_mem_data(bio, &data);
    int r = -EIO;
    if (ok == 1 && n > 0 && (*out = malloc((size_t)n))) {
        memcpy(*out, data, (size_t)n);
        *len = (size_t)n;
        r = 0;
    }
    BIO_free(bio); /* secure memory: cleared on free */
    return r;
}

int br_sign_key_save(const br_sign_key *key, const char *secret_path, const char *public_path,
                     br_error *err)
{
    if (!key->secret)
        return br_error_set(err, -EINVAL, "not a secret key");
    char *sec = NULL, *pub = NULL;
    size_t sec_len = 0, pub_len = 0;
    int r = key_pem(key, true, &sec, &sec_len);
    if (r == 0)
        r = key_pem(key, false, &pub, &pub_len);
    if (r < 0)
        r = br_error_set(err, r, "encoding the key as PEM failed (OpenSSL)");
    if (r == 0)
        r = write_new_file(secret_path, sec, sec_len, 0600, err);
    if (r == 0) {
        r = write_new_file(public_path, pub, pub_len, 0644, err);
        if (r < 0)
            unlink(secret_path);
    }
    if (sec)
        br_wipe(sec, sec_len);
    free(sec);
    free(pub);
    return r;
}

/* Read a whole (small) key file into a memory BIO. For a secret key, the
 * file must give no access to group or others. */
static int read_key_file(const char *path, bool secret, BIO **out, br_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    struct stat st;
    int r = 0;
    if (fstat(fd, &st) < 0)
        r = br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        r = br_error_set(err, secret ? -EPERM : -EINVAL, "%s: not a regular file", path);
    else if (secret && (st.st_mode & 077))
        r = br_error_set(err, -EPERM,
                         "%s: secret key is accessible to group or others (mode %04o): "
                         "chmod 600 %s",
                         path, (unsigned)(st.st_mode & 07777), path);
    else if (st.st_size <= 0 || st.st_size > KEY_FILE_MAX)
        r = br_error_set(err, -EINVAL, "%s: not a PEM key file (%lld bytes)", path,
                         (long long)st.st_size);
    char *buf = r == 0 ? OPENSSL_secure_malloc((size_t)st.st_size) : NULL;
    if (r == 0 && !buf)
        r = -ENOMEM;
    ssize_t n = r == 0 ? pread(fd, buf, (size_t)st.st_size, 0) : 0;
    if (r == 0 && n != st.st_size)
        r = br_error_set(err, -EIO, "%s: short read", path);
    close(fd);
    if (r == 0) {
        *out = BIO_new(BIO_s_secmem());
        if (!*out || BIO_write(*out, buf, (int)n) != (int)n) {
            BIO_free(*out);
            *out = NULL;
            r = -ENOMEM;
        }
    }
    if (buf)
        OPENSSL_secure_clear_free(buf, (size_t)st.st_size);
    return r;
}

static int load_key(const char *path, bool secret, br_sign_key **out, br_error *err)
{
    BIO *bio = NULL;
    int r = read_key_file(path, secret, &bio, err);
    if (r < 0)
        return r;
    EVP_PKEY *pkey = secret ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL)
                            : PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (!pkey)
        return br_error_set(err, -EINVAL, "%s: not a PEM %s key file", path,
                            secret ? "private (BEGIN PRIVATE KEY)" : "public (BEGIN PUBLIC KEY)");
    if (!EVP_PKEY_is_a(pkey, "ED25519")) {
        EVP_PKEY_free(pkey);
        return br_error_set(err, -EINVAL, "%s: not an Ed25519 key", path);
    }
    return wrap_key(pkey, secret, out);
}

int br_sign_key_load_secret(const char *path, br_sign_key **out, br_error *err)
{
    return load_key(path, true, out, err);
}

int br_sign_key_load_public(const char *path, br_sign_key **out, br_error *err)
{
    return load_key(path, false, out, err);
}

/* ---- signatures ---- */

static void sig_encode_signed(const uint8_t key_id[BR_KEY_ID_LEN], const br_filter_header *h,
                              uint8_t raw[BR_SIG_SIZE])
{
    memset(raw, 0, BR_SIG_SIZE);
    memcpy(raw + S_MAGIC, BR_SIG_MAGIC, 8);
    br_store_le32(raw + S_VERSION, BR_SIG_VERSION);
    br_store_le32(raw + S_ALGORITHM, BR_SIG_ALGO_ED25519);
    memcpy(raw + S_KEY_ID, key_id, BR_KEY_ID_LEN);
    br_store_le32(raw + S_KIND, h->kind);
    br_store_le64(raw + S_GENERATION, h->generation);
    br_store_le64(raw + S_BUILD_TIME, (uint64_t)h->build_time);
    memcpy(raw + S_HEADER_SHA256, h->header_sha256, 32);
    memcpy(raw + S_BODY_SHA256, h->body_sha256, 32);
}

int br_filter_sign(const br_sign_key *secret, const br_filter_header *h, uint8_t out[BR_SIG_SIZE],
                   br_error *err)
{
    if (!secret->secret)
        return br_error_set(err, -EINVAL, "signing needs the secret key");
    uint8_t id[BR_KEY_ID_LEN];
    if (br_sign_key_id(secret, id) < 0)
        return br_error_set(err, -EIO, "reading the public half of the key failed (OpenSSL)");
    sig_encode_signed(id, h, out);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t siglen = 64;
    int ok = ctx && EVP_DigestSignInit_ex(ctx, NULL, NULL, NULL, NULL, secret->pkey, NULL) == 1 &&
             EVP_DigestSign(ctx, out + S_SIGNATURE, &siglen, out, BR_SIG_SIGNED_SIZE) == 1 &&
             siglen == 64;
    EVP_MD_CTX_free(ctx);
    return ok ? 0 : br_error_set(err, -EIO, "Ed25519 signing failed (OpenSSL)");
}

int br_sign_bytes(const br_sign_key *secret, const void *data, size_t len, uint8_t sig[64],
                  br_error *err)
{
    if (!secret->secret)
        return br_error_set(err, -EINVAL, "signing needs the secret key");
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t siglen = 64;
    int ok = ctx && EVP_DigestSignInit_ex(ctx, NULL, NULL, NULL, NULL, secret->pkey, NULL) == 1 &&
             EVP_DigestSign(ctx, sig, &siglen, data, len) == 1 && siglen == 64;
    EVP_MD_CTX_free(ctx);
    return ok ? 0 : br_error_set(err, -EIO, "Ed25519 signing failed (OpenSSL)");
}

int br_verify_bytes(const br_sign_key *pub, const void *data, size_t len, const uint8_t sig[64])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestVerifyInit_ex(ctx, NULL, NULL, NULL, NULL, pub->pkey, NULL) == 1 &&
             EVP_DigestVerify(ctx, sig, 64, data, len) == 1;
    EVP_MD_CTX_free(ctx);
    return ok ? 0 : -EKEYREJECTED;
}

int br_filter_sig_decode(const uint8_t *raw, size_t len, br_filter_sig *sig, br_error *err)
{
    if (len != BR_SIG_SIZE || memcmp(raw + S_MAGIC, BR_SIG_MAGIC, 8) != 0)
        return br_error_set(err, -EINVAL, "not a breachd signature file (%zu bytes%s)", len,
                            len >= 8 && memcmp(raw, BR_SIG_MAGIC, 8) == 0 ? "" : ", bad magic");
    uint32_t version = br_load_le32(raw + S_VERSION);
    if (version != BR_SIG_VERSION)
        return br_error_set(err, -EINVAL,
                            "unsupported signature version %u (this build reads version %d)",
                            version, BR_SIG_VERSION);
    uint32_t algo = br_load_le32(raw + S_ALGORITHM);
    if (algo != BR_SIG_ALGO_ED25519)
        return br_error_set(err, -EINVAL, "unknown signature algorithm %u", algo);
    if (br_load_le32(raw + S_RESERVED) != 0)
        return br_error_set(err, -EINVAL, "reserved signature bytes are not zero");
    memcpy(sig->key_id, raw + S_KEY_ID, BR_KEY_ID_LEN);
    sig->kind = br_load_le32(raw + S_KIND);
    sig->generation = br_load_le64(raw + S_GENERATION);
    sig->build_time = (int64_t)br_load_le64(raw + S_BUILD_TIME);
    memcpy(sig->header_sha256, raw + S_HEADER_SHA256, 32);
    memcpy(sig->body_sha256, raw + S_BODY_SHA256, 32);
    memcpy(sig->signature, raw + S_SIGNATURE, 64);
    return 0;
}

static int ed25519_verify(const br_sign_key *pub, const uint8_t *raw)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestVerifyInit_ex(ctx, NULL, NULL, NULL, NULL, pub->pkey, NULL) == 1 &&
             EVP_DigestVerify(ctx, raw + S_SIGNATURE, 64, raw, BR_SIG_SIGNED_SIZE) == 1;
    EVP_MD_CTX_free(ctx);
    return ok ? 0 : -EKEYREJECTED;
}

/* The signed fields against the filter's header, the most telling first. */
static int sig_matches(const br_filter_sig *s, const br_filter_header *h, br_error *err)
{
    if (s->kind != h->kind) {
        const char *sk = br_filter_kind_name(s->kind);
        return br_error_set(err, -EINVAL, "signature is for a %s filter, the filter is %s",
                            sk ? sk : "unknown-kind", br_filter_kind_name(h->kind));
    }
    if (s->generation != h->generation)
        return br_error_set(err, -EINVAL,
                            "signature is for generation %llu, the filter is generation %llu",
                            (unsigned long long)s->generation, (unsigned long long)h->generation);
    if (s->build_time != h->build_time)
        return br_error_set(err, -EINVAL,
                            "signature is for build time %lld, the filter was built at %lld",
                            (long long)s->build_time, (long long)h->build_time);
    if (memcmp(s->header_sha256, h->header_sha256, 32) != 0)
        return br_error_set(err, -EINVAL,
                            "signature is for another header (header_sha256 differs)");
    if (memcmp(s->body_sha256, h->body_sha256, 32) != 0)
        return br_error_set(err, -EINVAL, "signature is for another body (body_sha256 differs)");
    return 0;
}

int br_filter_sig_check(const br_sign_key *pub, const br_filter_header *h, const uint8_t *raw,
                        size_t len, br_error *err)
{
    br_filter_sig s;
    int r = br_filter_sig_decode(raw, len, &s, err);
    if (r < 0)
        return r;
    uint8_t id[BR_KEY_ID_LEN];
    if (br_sign_key_id(pub, id) < 0)
        return br_error_set(err, -EIO, "reading the public key failed (OpenSSL)");
    if (memcmp(id, s.key_id, BR_KEY_ID_LEN) != 0) {
        char got[17], want[17];
        br_hex_encode_upper(s.key_id, 8, got);
        br_hex_encode_upper(id, 8, want);
        return br_error_set(err, -EKEYREJECTED,
                            "signed by another key (key id %s..., expected %s...)", got, want);
    }
    if (ed25519_verify(pub, raw) < 0)
        return br_error_set(err, -EKEYREJECTED, "bad signature (the .sig file was altered)");
    return sig_matches(&s, h, err);
}

char *br_filter_sig_path(const char *filter_path)
{
    char *p = NULL;
    return asprintf(&p, "%s.sig", filter_path) < 0 ? NULL : p;
}

int br_filter_sig_verify(const br_sign_key *pub, const char *filter_path, const br_filter_header *h,
                         br_error *err)
{
    _cleanup_free_ char *path = br_filter_sig_path(filter_path);
    if (!path)
        return -ENOMEM;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int r = -errno;
        if (r == -ENOENT)
            return br_error_set(err, r, "%s has no signature (%s: %s)", filter_path, path,
                                strerror(-r));
        return br_error_set(err, r, "%s: %s", path, strerror(-r));
    }
    /* One byte more than a signature: a longer file is reported as such. */
    uint8_t raw[BR_SIG_SIZE + 1];
    ssize_t n = read(fd, raw, sizeof(raw));
    if (n < 0)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    int r = br_filter_sig_check(pub, h, raw, (size_t)n, err);
    if (r < 0)
        return br_error_prefix(err, r, "%s", path);
    return 0;
}

int br_filter_sig_write(const char *filter_path, const uint8_t sig[BR_SIG_SIZE], br_error *err)
{
    _cleanup_free_ char *path = br_filter_sig_path(filter_path);
    _cleanup_free_ char *tmp = NULL;
    if (!path || asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0) {
        tmp = NULL;
        return -ENOMEM;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return br_error_set(err, -errno, "%s: cannot create a temporary file beside it: %s", path,
                            strerror(errno));
    int r = br_write_all(fd, sig, BR_SIG_SIZE);
    if (r == 0 && (fchmod(fd, 0644) < 0 || fsync(fd) < 0))
        r = -errno;
    close(fd);
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0) {
        unlink(tmp);
        return br_error_set(err, r, "%s: %s", path, strerror(-r));
    }
    _cleanup_free_ char *dir = strdup(path);
    _cleanup_close_ int dfd = dir ? open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0 && fsync(dfd) < 0)
        return br_error_set(err, -errno, "%s: fsync of its directory: %s", path, strerror(errno));
    return 0;
}
