/* SPDX-License-Identifier: MIT */
/* fuzz_hibp_input.c's model of the input rules of lib/filter/hibp_input.h,
 * written from that header (and hibp_input_int.h for directory trees), not
 * from the code. Include after fuzz_check.h. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "filter/hibp_input.h"

#define FZ_MAX_FILES 4

typedef struct fz_keys {
    uint8_t (*v)[BR_SHA1_LEN];
    size_t n, cap;
} fz_keys;

static inline void fz_keys_add(fz_keys *k, const uint8_t *key)
{
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 64;
        k->v = realloc(k->v, k->cap * BR_SHA1_LEN);
        CHECK(k->v);
    }
    memcpy(k->v[k->n++], key, BR_SHA1_LEN);
}

static inline bool fz_keys_equal(const fz_keys *a, const fz_keys *b)
{
    return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, a->n * BR_SHA1_LEN) == 0);
}

static inline void fz_keys_free(fz_keys *k)
{
    free(k->v);
    k->v = NULL;
    k->n = k->cap = 0;
}

typedef struct fz_model {
    int rc;
    fz_keys keys;
    uint64_t skipped_zero, skipped_min, lines, files, ignored;
    uint64_t bad_line;  /* the line a refusal names (0: none) */
    char bad_name[512]; /* its file, when not the input's path */
} fz_model;

static inline void fz_model_free(fz_model *m)
{
    fz_keys_free(&m->keys);
}

static inline bool fz_hex(uint8_t c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* One line (its LF and one CR removed) of a hash file: -EINVAL or 0.
 * *mode: 0 undecided, 1 counted, 2 plain. prefix: a prefix file's 5 hex
 * digits (lines are SUFFIX:COUNT), or NULL. */
static inline int fz_model_hash_line(fz_model *m, const br_input_opts *o, const uint8_t *p,
                                     size_t len, int *mode, const char *prefix)
{
    if (len >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) {
        p += 3;
        len -= 3;
    }
    if (len == 0)
        return 0; /* blank */
    if (len > BR_INPUT_MAX_HASH_LINE)
        return -EINVAL;
    size_t hexlen = prefix ? 35 : 40, n = 0;
    while (n < len && fz_hex(p[n]))
        n++;
    bool counted = n < len;
    if (n != hexlen || (counted && p[n] != ':'))
        return -EINVAL;
    if (*mode == 0) {
        *mode = counted ? 1 : 2;
        if (!counted && o->min_count > 1)
            return -EINVAL;
    }
    if ((*mode == 1) != counted)
        return -EINVAL;
    char hex[41];
    if (prefix)
        memcpy(hex, prefix, 5);
    memcpy(hex + (prefix ? 5 : 0), p, hexlen);
    uint8_t key[BR_SHA1_LEN];
    CHECK(br_hex_decode(hex, BR_SHA1_LEN, key));
    if (!counted) {
        fz_keys_add(&m->keys, key);
        return 0;
    }
    if (n + 1 == len || len - n - 1 > 20)
        return -EINVAL;
    unsigned __int128 count = 0;
    for (size_t i = n + 1; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -EINVAL;
        count = count * 10 + (unsigned)(p[i] - '0');
    }
    if (count > UINT64_MAX)
        return -EINVAL;
    if (count == 0)
        m->skipped_zero++;
    else if (count < o->min_count)
        m->skipped_min++;
    else
        fz_keys_add(&m->keys, key);
    return 0;
}

static inline int fz_model_plain_line(fz_model *m, const uint8_t *p, size_t len, uint64_t line)
{
    if (len == 0)
        return 0;
    if (len > BR_INPUT_MAX_PLAIN_LINE || memchr(p, '\0', len))
        return -EINVAL;
    if (line == 1 && len >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF)
        return -EINVAL;
    uint8_t key[BR_SHA1_LEN];
    CHECK(br_sha1(p, len, key) == 0);
    fz_keys_add(&m->keys, key);
    return 0;
}

/* Read one file's text into m (keys and counts added); sets m->rc and the
 * refused line. Returns m->rc. */
static inline int fz_model_read(fz_model *m, const br_input_opts *o, const uint8_t *d, size_t len,
                                const char *prefix, const char *name)
{
    m->files++;
    int mode = prefix ? 1 : 0;
    uint64_t line = 0;
    size_t pos = 0;
    while (pos < len) {
        const uint8_t *lf = memchr(d + pos, '\n', len - pos);
        size_t l = lf ? (size_t)(lf - (d + pos)) : len - pos;
        line++;
        size_t n = l;
        if (n > 0 && d[pos + n - 1] == '\r')
            n--;
        int r = o->plaintext ? fz_model_plain_line(m, d + pos, n, line)
                             : fz_model_hash_line(m, o, d + pos, n, &mode, prefix);
        if (r < 0) {
            m->rc = r;
            m->bad_line = line;
            snprintf(m->bad_name, sizeof(m->bad_name), "%s", name ? name : "");
            return r;
        }
        pos += l + 1;
    }
    m->lines += line;
    return 0;
}

/* A single file (or stdin). */
static inline void fz_model_file(fz_model *m, const br_input_opts *o, const uint8_t *d, size_t len)
{
    memset(m, 0, sizeof(*m));
    if (o->plaintext && o->min_count > 1) {
        m->rc = -EINVAL; /* before reading anything */
        return;
    }
    fz_model_read(m, o, d, len, NULL, NULL);
}

/* ---- directory trees ---- */

typedef struct fz_dir_file {
    const uint8_t *data;
    size_t len;
    char sub[16]; /* subdirectory ("" for the top) */
    char rel[64]; /* path under the top */
    char hex[6];  /* the name's prefix digits, as written */
    uint32_t prefix;
    bool is_prefix, hidden, gz, replaced, gzip_data;
} fz_dir_file;

/* The layouts of a name byte: XXXXX.txt, xxxxx.txt, XXXXX.txt.gz, XXXXX.gz,
 * AB/XXXXX.txt, AB/CD/XXXXX.txt, a file that is not a prefix file, a prefix
 * file in a directory whose name starts with '.'. */
static inline void fz_dir_name(fz_dir_file *f, uint8_t sel, uint32_t prefix)
{
    memset(f->sub, 0, sizeof(f->sub));
    f->prefix = prefix & 0xFFFFF;
    snprintf(f->hex, sizeof(f->hex), sel % 8 == 1 ? "%05x" : "%05X", f->prefix);
    f->is_prefix = true;
    f->hidden = false;
    f->gz = false;
    switch (sel % 8) {
    case 0:
    case 1:
        snprintf(f->rel, sizeof(f->rel), "%s.txt", f->hex);
        break;
    case 2:
    case 3:
        f->gz = true;
        snprintf(f->rel, sizeof(f->rel), "%s%s", f->hex, sel % 8 == 2 ? ".txt.gz" : ".gz");
        break;
    case 4:
        snprintf(f->sub, sizeof(f->sub), "%.2s", f->hex);
        snprintf(f->rel, sizeof(f->rel), "%s/%s.txt", f->sub, f->hex);
        break;
    case 5:
        snprintf(f->sub, sizeof(f->sub), "%.2s/%.2s", f->hex, f->hex + 2);
        snprintf(f->rel, sizeof(f->rel), "%s/%s.txt", f->sub, f->hex);
        break;
    case 6:
        f->is_prefix = false;
        snprintf(f->rel, sizeof(f->rel), "notes-%s.txt", f->hex);
        break;
    default:
        f->hidden = true;
        snprintf(f->sub, sizeof(f->sub), ".old");
        snprintf(f->rel, sizeof(f->rel), "%s/%s.txt", f->sub, f->hex);
        break;
    }
}

static int fz_cmp_file(const void *a, const void *b)
{
    const fz_dir_file *x = *(const fz_dir_file *const *)a, *y = *(const fz_dir_file *const *)b;
    return (x->prefix > y->prefix) - (x->prefix < y->prefix);
}

/* The tree of these files under dir; false when the model cannot say (a
 * file left with gzip-looking bytes that were not compressed here). */
static inline bool fz_model_dir(fz_model *m, const br_input_opts *o, const char *dir,
                                fz_dir_file *files, unsigned n)
{
    memset(m, 0, sizeof(*m));
    const fz_dir_file *list[FZ_MAX_FILES];
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        fz_dir_file *f = &files[i];
        if (f->replaced || f->hidden)
            continue;
        if (!f->is_prefix) {
            m->ignored++;
            continue;
        }
        list[k++] = f;
    }
    if (k == 0) {
        m->rc = -ENOENT;
        return true;
    }
    qsort(list, k, sizeof(list[0]), fz_cmp_file);
    for (unsigned i = 1; i < k; i++)
        if (list[i]->prefix == list[i - 1]->prefix) {
            m->rc = -EINVAL; /* one prefix under two names */
            return true;
        }
    for (unsigned i = 0; i < k; i++)
        if (list[i]->gzip_data && !list[i]->gz)
            return false;
    for (unsigned i = 0; i < k; i++) {
        const fz_dir_file *f = list[i];
        if (f->len >= 2 && f->data[0] == 0x1f && f->data[1] == 0x8b)
            return false; /* gzip-looking text (compressed or not): not modelled */
        char name[600];
        snprintf(name, sizeof(name), "%s/%s", dir, f->rel);
        if (fz_model_read(m, o, f->data, f->len, f->hex, name) < 0)
            return true;
    }
    return true;
}
