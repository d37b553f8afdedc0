/* SPDX-License-Identifier: MIT */
/* Signed filters (lib/filter/filter_sign.h): key files, their modes, and a
 * .sig that verifies only for the key, file and generation it was made for. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "filter/filter_file.h"
#include "filter/filter_sign.h"
#include "core/hash.h"
#include "testutil.h"

typedef struct fx {
    char *dir, *secret, *public;
    br_sign_key *sk, *pk;
    br_filter_header h;
} fx;

static void sample_header(br_filter_header *h)
{
    memset(h, 0, sizeof(*h));
    h->version = 1;
    h->kind = BR_KIND_PASSWORD_SHA1;
    h->generation = 7;
    h->build_time = 1764460800;
    for (int i = 0; i < 32; i++) {
        h->body_sha256[i] = (uint8_t)i;
        h->header_sha256[i] = (uint8_t)(0xA0 + i);
    }
}

static int setup(void **state)
{
    fx *f = tu_xmalloc(sizeof(*f));
    memset(f, 0, sizeof(*f));
    f->dir = tu_mkdtemp();
    f->secret = tu_path("%s/secret.pem", f->dir);
    f->public = tu_path("%s/public.pem", f->dir);
    br_error err = {{0}};
    br_sign_key *k = NULL;
    assert_int_equal(br_sign_key_generate(&k, &err), 0);
    assert_int_equal(br_sign_key_save(k, f->secret, f->public, &err), 0);
    br_sign_key_free(k);
    assert_int_equal(br_sign_key_load_secret(f->secret, &f->sk, &err), 0);
    assert_int_equal(br_sign_key_load_public(f->public, &f->pk, &err), 0);
    sample_header(&f->h);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    br_sign_key_free(f->sk);
    br_sign_key_free(f->pk);
    tu_rmrf(f->dir);
    free(f->dir);
    free(f->secret);
    free(f->public);
    free(f);
    return 0;
}

static void test_key_files(void **state)
{
    fx *f = *state;
    struct stat st;
    assert_int_equal(stat(f->secret, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(stat(f->public, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    size_t len;
    char *text = (char *)tu_read_file(f->public, &len);
    assert_non_null(strstr(text, "-----BEGIN PUBLIC KEY-----"));
    free(text);
    text = (char *)tu_read_file(f->secret, &len);
    assert_non_null(strstr(text, "-----BEGIN PRIVATE KEY-----"));
    free(text);

    /* Public and secret halves have one key id. */
    uint8_t a[BR_KEY_ID_LEN], b[BR_KEY_ID_LEN];
    assert_int_equal(br_sign_key_id(f->sk, a), 0);
    assert_int_equal(br_sign_key_id(f->pk, b), 0);
    assert_memory_equal(a, b, BR_KEY_ID_LEN);

    /* Never overwritten. */
    br_error err = {{0}};
    br_sign_key *k = NULL;
    assert_int_equal(br_sign_key_generate(&k, &err), 0);
    char *other = tu_path("%s/other.pem", f->dir);
    assert_int_equal(br_sign_key_save(k, f->secret, other, &err), -EEXIST);
    assert_int_equal(access(other, F_OK), -1);
    assert_int_equal(br_sign_key_save(k, other, f->public, &err), -EEXIST);
    assert_int_equal(access(other, F_OK), -1); /* the secret half is not left behind */
    br_sign_key_free(k);
    free(other);
}

static void test_secret_mode_refused(void **state)
{
    fx *f = *state;
    static const mode_t bad[] = {0640, 0604, 0660, 0644, 0610};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(chmod(f->secret, bad[i]), 0);
        br_error err = {{0}};
        br_sign_key *k = NULL;
        assert_int_equal(br_sign_key_load_secret(f->secret, &k, &err), -EPERM);
        assert_null(k);
        assert_non_null(strstr(err.text, "accessible to group or others"));
    }
    assert_int_equal(chmod(f->secret, 0400), 0);
    br_error err = {{0}};
    br_sign_key *k = NULL;
    assert_int_equal(br_sign_key_load_secret(f->secret, &k, &err), 0);
    br_sign_key_free(k);
    /* A public key file is not a secret key, and the other way round. */
    assert_int_equal(br_sign_key_load_public(f->secret, &k, &err), -EINVAL);
    assert_int_equal(chmod(f->public, 0600), 0);
    assert_int_equal(br_sign_key_load_secret(f->public, &k, &err), -EINVAL);
}

static void test_not_ed25519(void **state)
{
    fx *f = *state;
    char *path = tu_path("%s/rsa.pem", f->dir);
    char *cmd = tu_path("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 "
                        "-out %s 2>/dev/null && chmod 600 %s",
                        path, path);
    if (system(cmd) != 0) {
        free(cmd);
        free(path);
        skip();
    }
    br_error err = {{0}};
    br_sign_key *k = NULL;
    assert_int_equal(br_sign_key_load_secret(path, &k, &err), -EINVAL);
    assert_non_null(strstr(err.text, "not an Ed25519 key"));
    free(cmd);
    free(path);
}

static void test_sign_verify(void **state)
{
    fx *f = *state;
    uint8_t sig[BR_SIG_SIZE];
    br_error err = {{0}};
    assert_int_equal(br_filter_sign(f->sk, &f->h, sig, &err), 0);
    assert_memory_equal(sig, BR_SIG_MAGIC, 8);
    assert_int_equal(br_filter_sig_check(f->pk, &f->h, sig, sizeof(sig), &err), 0);
    /* The secret key verifies too (it holds the public half). */
    assert_int_equal(br_filter_sig_check(f->sk, &f->h, sig, sizeof(sig), &err), 0);
    /* A public key cannot sign. */
    assert_int_equal(br_filter_sign(f->pk, &f->h, sig, &err), -EINVAL);
}

/* A signature replayed onto another file or generation names what differs. */
static void test_replay(void **state)
{
    fx *f = *state;
    uint8_t sig[BR_SIG_SIZE];
    br_error err = {{0}};
    assert_int_equal(br_filter_sign(f->sk, &f->h, sig, &err), 0);
    static const struct {
        const char *what;
        const char *says;
    } cases[] = {
        {"kind", "signature is for a password-sha1 filter, the filter is url-sha256"},
        {"generation", "signature is for generation 7, the filter is generation 8"},
        {"build_time",
         "signature is for build time 1764460800, the filter was built at 1764460801"},
        {"header", "signature is for another header"},
        {"body", "signature is for another body"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        br_filter_header h = f->h;
        switch (i) {
        case 0:
            h.kind = BR_KIND_URL_SHA256;
            break;
        case 1:
            h.generation = 8;
            break;
        case 2:
            h.build_time++;
            break;
        case 3:
            h.header_sha256[31] ^= 1;
            break;
        default:
            h.body_sha256[0] ^= 0x80;
            break;
        }
        memset(&err, 0, sizeof(err));
        assert_int_equal(br_filter_sig_check(f->pk, &h, sig, sizeof(sig), &err), -EINVAL);
        if (!strstr(err.text, cases[i].says))
            fail_msg("%s: got \"%s\"", cases[i].what, err.text);
    }
}

static void test_tampered_sig(void **state)
{
    fx *f = *state;
    uint8_t sig[BR_SIG_SIZE];
    br_error err = {{0}};
    assert_int_equal(br_filter_sign(f->sk, &f->h, sig, &err), 0);
    /* Every byte of the signed part and of the signature counts: flip each. */
    for (size_t i = 0; i < BR_SIG_SIZE; i++) {
        uint8_t t[BR_SIG_SIZE];
        memcpy(t, sig, sizeof(t));
        t[i] ^= 0x01;
        memset(&err, 0, sizeof(err));
        int r = br_filter_sig_check(f->pk, &f->h, t, sizeof(t), &err);
        if (r == 0)
            fail_msg("flipping byte %zu went unnoticed", i);
    }
    /* Changing generation in the .sig (to match a replay target) breaks it. */
    br_filter_header h = f->h;
    h.generation = 9;
    uint8_t t[BR_SIG_SIZE];
    memcpy(t, sig, sizeof(t));
    t[56] = 9;
    assert_int_equal(br_filter_sig_check(f->pk, &h, t, sizeof(t), &err), -EKEYREJECTED);
    assert_non_null(strstr(err.text, "bad signature"));
    /* Sizes, versions. */
    assert_int_equal(br_filter_sig_check(f->pk, &f->h, sig, sizeof(sig) - 1, &err), -EINVAL);
    assert_non_null(strstr(err.text, "not a breachd signature file"));
    memcpy(t, sig, sizeof(t));
    t[8] = 2;
    assert_int_equal(br_filter_sig_check(f->pk, &f->h, t, sizeof(t), &err), -EINVAL);
    assert_non_null(strstr(err.text, "unsupported signature version 2"));
}

static void test_other_key(void **state)
{
    fx *f = *state;
    br_error err = {{0}};
    br_sign_key *other = NULL;
    assert_int_equal(br_sign_key_generate(&other, &err), 0);
    uint8_t sig[BR_SIG_SIZE];
    assert_int_equal(br_filter_sign(other, &f->h, sig, &err), 0);
    assert_int_equal(br_filter_sig_check(f->pk, &f->h, sig, sizeof(sig), &err), -EKEYREJECTED);
    assert_non_null(strstr(err.text, "signed by another key"));
    /* The same signature with our key id forged in: the signature fails. */
    uint8_t id[BR_KEY_ID_LEN];
    assert_int_equal(br_sign_key_id(f->pk, id), 0);
    memcpy(sig + 16, id, BR_KEY_ID_LEN);
    assert_int_equal(br_filter_sig_check(f->pk, &f->h, sig, sizeof(sig), &err), -EKEYREJECTED);
    assert_non_null(strstr(err.text, "bad signature"));
    br_sign_key_free(other);
}

static void test_sig_files(void **state)
{
    fx *f = *state;
    char *filter = tu_path("%s/x.bfuse", f->dir);
    br_error err = {{0}};
    assert_int_equal(br_filter_sig_verify(f->pk, filter, &f->h, &err), -ENOENT);
    assert_non_null(strstr(err.text, "has no signature"));
    uint8_t sig[BR_SIG_SIZE];
    assert_int_equal(br_filter_sign(f->sk, &f->h, sig, &err), 0);
    assert_int_equal(br_filter_sig_write(filter, sig, &err), 0);
    assert_int_equal(br_filter_sig_verify(f->pk, filter, &f->h, &err), 0);
    /* A longer file is not a signature. */
    char *path = br_filter_sig_path(filter);
    uint8_t longer[BR_SIG_SIZE + 1] = {0};
    memcpy(longer, sig, sizeof(sig));
    assert_int_equal(tu_write_file(path, longer, sizeof(longer)), 0);
    assert_int_equal(br_filter_sig_verify(f->pk, filter, &f->h, &err), -EINVAL);
    assert_non_null(strstr(err.text, "x.bfuse.sig: not a breachd signature file (201 bytes"));
    free(path);
    free(filter);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_key_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secret_mode_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_ed25519, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sign_verify, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tampered_sig, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sig_files, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
