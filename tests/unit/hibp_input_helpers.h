/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test_hibp_input*.c programs (tests of
 * lib/filter/hibp_input.c): a temporary directory for the group, files written into
 * it, a callback that collects the delivered keys, and assertions on keys and
 * error texts. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/hash.h"
#include "filter/hibp_input.h"

#define H_PASSWORD "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8" /* SHA-1("password") */
#define H_123456 "7C4A8D09CA3762AF61E59520943DC26494F8941B"   /* SHA-1("123456") */
#define H_ZEROS "000000005AD76BD555C1D6D771DE417A4B87E4B4"
#define H_ONES "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
#define H_SEQ "0123456789ABCDEF0123456789ABCDEF01234567"

/* cmocka group setup/teardown: a fresh temporary directory, removed with
 * everything in it at the end. */
int group_setup(void **state);
int group_teardown(void **state);

/* malloc that aborts on failure. */
void *xmalloc(size_t n);
/* path = tmpdir/name */
void tpath(char *out, size_t size, const char *name);
void write_bytes(const char *path, const void *data, size_t len);
void write_str(const char *path, const char *text);
/* Write a NUL-terminated text to tmpdir/name; the full path goes to out. */
void write_text(char *out, size_t size, const char *name, const char *text);
/* Make the directory tmpdir/name; the full path goes to out. */
void make_dir(char *out, size_t size, const char *name);
uint64_t file_size(const char *path);

typedef struct collected {
    char (*hex)[2 * BR_SHA1_LEN + 1];
    size_t n, cap;
    size_t hash_len;   /* bytes of a key: 0 is BR_SHA1_LEN; BR_NT_LEN for password-ntlm */
    size_t stop_after; /* 0: never stop */
    /* summary of every key, for big inputs */
    uint64_t sum, xr;
} collected;

/* The br_input_read callback: appends the key (upper-case hex) to ctx, a
 * collected; -ECANCELED after stop_after keys. */
int collect(void *ctx, const uint8_t *hash);
void collected_free(collected *c);
/* The keys delivered are exactly the expected set (with multiplicity). */
void assert_keys(collected *c, const char *const *want, size_t n);
/* br_input_read(path, o) into c, with err cleared first. */
int run(const char *path, const br_input_opts *o, collected *c, br_input_stats *st, br_error *err);
/* err is exactly "<path><suffix>". */
void assert_err(const br_error *err, const char *path, const char *suffix);
/* out = upper-case hex of SHA-1(s[0 .. len)). */
void sha1_hex(const char *s, size_t len, char out[2 * BR_SHA1_LEN + 1]);
