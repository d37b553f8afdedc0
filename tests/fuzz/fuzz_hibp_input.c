/* SPDX-License-Identifier: MIT */
/* Fuzz target for the corpus input reader (lib/filter/hibp_input*.c,
 * br_input_read) in every input form: a single file, the same file
 * gzip- or bzip2-compressed (one or two members or streams), a raw file (any
 * bytes, broken gzip and bzip2 included), and a per-prefix directory tree. Files go to a private
 * directory under $TMPDIR, made once and emptied after every input.
 *
 * Input: byte 0 the form (0 file, 1 gzip file, 2 raw file, 3 directory),
 * byte 1 the options (bit 0 plaintext; bits 1-2 min_count 0, 1, 2 or 1000;
 * bit 3 gzip in two members (bzip2 in two streams); bit 4 the directory's
 * .gz files left uncompressed; bit 5 form 1 compresses with bzip2, not
 * gzip), then the file; for a directory: the number of files
 * (1..4), and per file a name byte (which of the layouts below), 3 bytes of
 * prefix, a 16-bit length and the content.
 *
 * Checked against a model of the rules in hibp_input.h, written apart from
 * the code: the keys passed to the callback, in order, and the counts
 * (keys, count-0 and under-min_count lines, lines, files, ignored files);
 * an input the model refuses is -EINVAL (a directory without prefix files
 * -ENOENT) with "NAME:LINE: " naming the line the model stops at, after
 * exactly the keys before it; an accepted one is 0. A gzip or bzip2 file
 * reads as its content does, byte for byte the same result and message. Plaintext
 * input: the message never depends on the passwords' text (the same input
 * with every letter and digit changed gives the same message). A raw file
 * only has to be read or refused cleanly. */
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <bzlib.h>
#include <zlib.h>

#include "core/hash.h"
#include "filter/hibp_input.h"
#include "core/util.h"

#define FUZZ_NAME "fuzz_hibp_input"
#include "fuzz_check.h"
#include "fuzz_bytes.h"
#include "fuzz_hibp_model.h"

static char top[256];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    return ftw->level > 0 ? remove(path) : 0;
}

static void empty_top(void)
{
    nftw(top, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void remove_top(void)
{
    empty_top();
    rmdir(top);
}

static void setup(void)
{
    if (top[0])
        return;
    const char *tmp = getenv("TMPDIR");
    snprintf(top, sizeof(top), "%s/fuzz-hibp-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(top));
    atexit(remove_top);
}

/* ---- what the reader did ---- */

typedef struct got {
    fz_keys keys;
    br_input_stats st;
    int rc;
    br_error err;
} got;

static int on_key(void *ctx, const uint8_t sha1[BR_SHA1_LEN])
{
    fz_keys_add(ctx, sha1);
    return 0;
}

static void run(const char *path, const br_input_opts *o, got *g)
{
    memset(g, 0, sizeof(*g));
    g->rc = br_input_read(path, o, on_key, &g->keys, &g->st, &g->err);
    CHECK(g->rc <= 0);
    CHECK(g->rc == 0 || g->err.text[0] != '\0');
}

static void write_gz(const char *path, const void *data, size_t len, bool two_members)
{
    size_t half = two_members ? len / 2 : len;
    gzFile g = gzopen(path, "wb");
    CHECK(g);
    CHECK(half == 0 || gzwrite(g, data, (unsigned)half) == (int)half);
    CHECK(gzclose(g) == Z_OK);
    if (!two_members)
        return;
    g = gzopen(path, "ab");
    CHECK(g);
    CHECK(len == half ||
          gzwrite(g, (const uint8_t *)data + half, (unsigned)(len - half)) == (int)(len - half));
    CHECK(gzclose(g) == Z_OK);
}

/* data bzip2-compressed into path: one stream, or two (as pbzip2 writes). */
static void write_bz2(const char *path, const void *data, size_t len, bool two_streams)
{
    size_t half = two_streams ? len / 2 : len, cap = 2 * len + 1200, out_len = 0;
    char *out = malloc(cap);
    CHECK(out);
    for (int part = 0; part < (two_streams ? 2 : 1); part++) {
        const char *src = (const char *)data + (part ? half : 0);
        unsigned n = (unsigned)(part ? len - half : half), dn = (unsigned)(cap - out_len);
        CHECK(BZ2_bzBuffToBuffCompress(out + out_len, &dn, (char *)src, n, 1, 0, 0) == BZ_OK);
        out_len += dn;
    }
    fz_write_file(path, out, out_len);
    free(out);
}

/* Compressed-looking bytes: gzip's magic, or bzip2's ("BZh1".."BZh9"). */
static bool looks_compressed(const uint8_t *d, size_t len)
{
    return (len >= 2 && d[0] == 0x1f && d[1] == 0x8b) ||
           (len >= 4 && d[0] == 'B' && d[1] == 'Z' && d[2] == 'h' && d[3] >= '1' && d[3] <= '9');
}

/* The reader's result is the model's. */
static void check_model(const got *g, const fz_model *m, const char *name)
{
    CHECK(g->rc == m->rc);
    CHECK(fz_keys_equal(&g->keys, &m->keys));
    CHECK(g->st.keys == m->keys.n);
    CHECK(g->st.skipped_zero == m->skipped_zero && g->st.skipped_min == m->skipped_min);
    CHECK(g->st.files == m->files && g->st.ignored_files == m->ignored);
    if (m->rc == 0)
        CHECK(g->st.lines == m->lines);
    if (m->rc == -EINVAL && m->bad_line) {
        char where[600];
        snprintf(where, sizeof(where), "%s:%llu: ", m->bad_name[0] ? m->bad_name : name,
                 (unsigned long long)m->bad_line);
        CHECK(strncmp(g->err.text, where, strlen(where)) == 0);
    }
}

static void same(const got *a, const got *b)
{
    CHECK(a->rc == b->rc && strcmp(a->err.text, b->err.text) == 0);
    CHECK(fz_keys_equal(&a->keys, &b->keys));
    CHECK(a->st.keys == b->st.keys && a->st.lines == b->st.lines);
    CHECK(a->st.skipped_zero == b->st.skipped_zero && a->st.skipped_min == b->st.skipped_min);
}

/* Every ASCII letter and digit changed (a-y to b-z, z to a, the same for
 * upper case and digits): what plaintext messages may not depend on. */
static void disguise(uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        uint8_t c = p[i];
        if (c >= 'a' && c <= 'z')
            p[i] = c == 'z' ? 'a' : c + 1;
        else if (c >= 'A' && c <= 'Z')
            p[i] = c == 'Z' ? 'A' : c + 1;
        else if (c >= '0' && c <= '9')
            p[i] = c == '9' ? '0' : c + 1;
    }
}

static void one_file(unsigned form, const br_input_opts *o, bool two_members, bool bzip2,
                     const uint8_t *d, size_t len)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/in.txt", top);
    got g, gz;
    if (form == 2) { /* raw: any bytes, read or refused cleanly */
        fz_write_file(path, d, len);
        run(path, o, &g);
        CHECK(g.rc == 0 || g.rc == -EINVAL);
        fz_keys_free(&g.keys);
        return;
    }
    /* A file whose content starts like gzip or bzip2 data is read as such:
     * the model covers what the rules say about text. */
    if (looks_compressed(d, len))
        return;
    fz_model m;
    fz_model_file(&m, o, d, len);
    fz_write_file(path, d, len);
    run(path, o, &g);
    check_model(&g, &m, path);
    if (form == 1) {
        if (bzip2)
            write_bz2(path, d, len, two_members);
        else
            write_gz(path, d, len, two_members);
        run(path, o, &gz);
        same(&g, &gz);
        fz_keys_free(&gz.keys);
    }
    if (o->plaintext && g.rc < 0) {
        uint8_t *copy = malloc(len ? len : 1);
        CHECK(copy);
        memcpy(copy, d, len);
        disguise(copy, len);
        fz_write_file(path, copy, len);
        run(path, o, &gz);
        CHECK(gz.rc == g.rc && strcmp(gz.err.text, g.err.text) == 0);
        fz_keys_free(&gz.keys);
        free(copy);
    }
    fz_keys_free(&g.keys);
    fz_model_free(&m);
}

static void directory(const br_input_opts *o, fz_bytes *in, bool two_members, bool raw_gz)
{
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/d", top);
    CHECK(mkdir(dir, 0700) == 0);
    fz_dir_file files[FZ_MAX_FILES];
    unsigned n = 1 + fz_u8(in) % FZ_MAX_FILES;
    for (unsigned i = 0; i < n; i++) {
        fz_dir_file *f = &files[i];
        uint8_t name = fz_u8(in);
        uint32_t prefix = (uint32_t)fz_u8(in) << 12 | (uint32_t)fz_u8(in) << 4 | fz_u8(in) >> 4;
        size_t want = fz_u16(in);
        f->data = fz_take(in, want, &f->len);
        fz_dir_name(f, name, prefix);
        char path[600];
        for (size_t c = 1; f->sub[0] && c <= strlen(f->sub); c++) {
            if (f->sub[c] != '/' && f->sub[c] != '\0')
                continue;
            snprintf(path, sizeof(path), "%s/%.*s", dir, (int)c, f->sub); /* each level */
            if (mkdir(path, 0700) < 0)
                CHECK(errno == EEXIST);
        }
        snprintf(path, sizeof(path), "%s/%s", dir, f->rel);
        /* Two files of one name: the later replaces the earlier. */
        for (unsigned j = 0; j < i; j++)
            if (strcmp(files[j].rel, f->rel) == 0)
                files[j].replaced = true;
        f->replaced = false;
        if (f->gz && !raw_gz)
            write_gz(path, f->data, f->len, two_members);
        else
            fz_write_file(path, f->data, f->len);
        /* bzip2-looking data too: read as bzip2, not modelled either */
        f->gzip_data = (f->gz && !raw_gz) || looks_compressed(f->data, f->len);
    }
    got g;
    run(dir, o, &g);
    fz_model m;
    if (fz_model_dir(&m, o, dir, files, n))
        check_model(&g, &m, dir);
    else
        CHECK(g.rc == 0 || g.rc == -EINVAL || g.rc == -ENOENT);
    fz_model_free(&m);
    fz_keys_free(&g.keys);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    fz_bytes in = {data, size};
    unsigned form = fz_u8(&in) & 3;
    uint8_t flags = fz_u8(&in);
    static const uint64_t min_counts[] = {0, 1, 2, 1000};
    br_input_opts o = {.plaintext = flags & 1, .min_count = min_counts[flags >> 1 & 3]};
    if (form == 3) {
        o.plaintext = false; /* a directory of passwords is refused: the model knows no more */
        directory(&o, &in, flags & 8, flags & 16);
    } else {
        one_file(form, &o, flags & 8, flags & 32, in.p, in.n);
    }
    empty_top();
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
