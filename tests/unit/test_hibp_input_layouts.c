/* SPDX-License-Identifier: MIT */
/* Tests of the password-input readers (lib/filter/hibp_input.c) on the
 * corpus layouts other downloaders write (docs/corpus.md, "Corpus formats"):
 * the official downloader's single file with a byte order mark before every
 * block of lines (LF and CRLF), gzip-compressed prefix files and single files,
 * nested directory trees; every layout yields exactly the keys of the flat
 * per-prefix directory. Also: corrupt gzip data, duplicates across a tree,
 * NTLM corpora read as password-sha1 named as such (test_hibp_input_ntlm.c
 * reads them as password-ntlm). */
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
#include <zlib.h>

#include "core/hash.h"
#include "filter/hibp_input.h"
#include "hibp_input_helpers.h"
#include "core/util.h"

#define NPREFIX 24
#define PER_PREFIX 40
#define BOM "\xef\xbb\xbf"

/* A generated corpus: NPREFIX prefixes, PER_PREFIX suffixes each; counts
 * 0 (padding) now and then. The prefix file texts (SUFFIX:COUNT lines, LF)
 * and the expected keys. */
typedef struct corpus {
    uint32_t prefix[NPREFIX];
    char *text[NPREFIX];
    const char *keys[NPREFIX * PER_PREFIX];
    char key_store[NPREFIX * PER_PREFIX][41];
    size_t nkeys;
} corpus;

static corpus C;

static void make_corpus(void)
{
    uint64_t s = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < NPREFIX; i++) {
        C.prefix[i] = (uint32_t)((i * 43691u + 17u) & 0xFFFFF);
        char *t = xmalloc(PER_PREFIX * 48 + 1);
        size_t len = 0;
        for (size_t j = 0; j < PER_PREFIX; j++) {
            char suffix[36];
            for (size_t k = 0; k < 35; k++)
                suffix[k] = "0123456789ABCDEF"[br_splitmix64(&s) & 15];
            suffix[35] = '\0';
            unsigned count = j % 7 == 3 ? 0 : (unsigned)(j + 1);
            len += (size_t)sprintf(t + len, "%s:%u\n", suffix, count);
            if (count) {
                snprintf(C.key_store[C.nkeys], 41, "%05X%s", C.prefix[i], suffix);
                C.keys[C.nkeys] = C.key_store[C.nkeys];
                C.nkeys++;
            }
        }
        C.text[i] = t;
    }
}

/* The prefix file text i with CRLF line ends. */
static char *crlf(const char *t)
{
    char *o = xmalloc(2 * strlen(t) + 1), *p = o;
    for (; *t; t++) {
        if (*t == '\n')
            *p++ = '\r';
        *p++ = *t;
    }
    *p = '\0';
    return o;
}

static void write_gz(const char *path, const char *text, bool two_members)
{
    gzFile g = gzopen(path, "wb9");
    assert_non_null(g);
    size_t len = strlen(text), half = two_members ? len / 2 : len;
    assert_int_equal(gzwrite(g, text, (unsigned)half), (int)half);
    assert_int_equal(gzclose(g), Z_OK);
    if (two_members) { /* a second gzip member appended: read as one stream */
        g = gzopen(path, "ab9");
        assert_non_null(g);
        assert_int_equal(gzwrite(g, text + half, (unsigned)(len - half)), (int)(len - half));
        assert_int_equal(gzclose(g), Z_OK);
    }
}

static void read_expect_corpus(const char *path)
{
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    int rc = run(path, NULL, &c, &st, &err);
    if (rc != 0)
        print_error("%s: %s\n", path, err.text);
    assert_int_equal(rc, 0);
    assert_keys(&c, C.keys, C.nkeys);
    collected_free(&c);
}

/* The official downloader's single file: "HASH:COUNT" lines, a BOM before
 * every block of lines (one block per prefix here), LF or CRLF. */
static char *single_file_text(bool use_crlf, bool bom_lines_alone)
{
    size_t cap = NPREFIX * (PER_PREFIX * 56 + 16) + 1, len = 0;
    char *o = xmalloc(cap);
    const char *nl = use_crlf ? "\r\n" : "\n";
    for (size_t i = 0; i < NPREFIX; i++) {
        len += (size_t)snprintf(o + len, cap - len, "%s%s", BOM, bom_lines_alone ? nl : "");
        for (const char *l = C.text[i]; *l;) {
            const char *e = strchr(l, '\n');
            len += (size_t)snprintf(o + len, cap - len, "%05X%.*s%s", C.prefix[i], (int)(e - l), l,
                                    nl);
            l = e + 1;
        }
    }
    return o;
}

static void test_official_single_file_boms(void **state)
{
    (void)state;
    char p[512];
    for (int variant = 0; variant < 3; variant++) {
        char *t = single_file_text(variant != 0, variant == 2);
        char name[32];
        snprintf(name, sizeof(name), "official-%d.txt", variant);
        write_text(p, sizeof(p), name, t);
        read_expect_corpus(p);
        /* the same, gzip-compressed, two gzip members */
        snprintf(name, sizeof(name), "official-%d.txt.gz", variant);
        tpath(p, sizeof(p), name);
        write_gz(p, t, true);
        read_expect_corpus(p);
        free(t);
    }
}

static void write_layout(const char *dir, int layout)
{
    char p[768];
    for (size_t i = 0; i < NPREFIX; i++) {
        char hex[6];
        snprintf(hex, sizeof(hex), "%05X", C.prefix[i]);
        char *t = i % 2 ? crlf(C.text[i]) : strdup(C.text[i]);
        if (i % 3 == 0) { /* a BOM at the start, as .NET writes it */
            char *b = xmalloc(strlen(t) + 4);
            sprintf(b, BOM "%s", t);
            free(t);
            t = b;
        }
        switch (layout) {
        case 0: /* flat XXXXX.txt.gz and XXXXX.gz */
            snprintf(p, sizeof(p), "%s/%s%s", dir, hex, i % 2 ? ".gz" : ".txt.gz");
            write_gz(p, t, i % 4 == 0);
            break;
        case 1: /* AB/CD/ABCDE.txt */
            snprintf(p, sizeof(p), "%s/%.2s", dir, hex);
            (void)mkdir(p, 0755);
            snprintf(p, sizeof(p), "%s/%.2s/%.2s", dir, hex, hex + 2);
            (void)mkdir(p, 0755);
            snprintf(p, sizeof(p), "%s/%.2s/%.2s/%s.txt", dir, hex, hex + 2, hex);
            write_str(p, t);
            break;
        default: /* AB/ABCDE.gz, lower-case names, some plain */
            for (char *h = hex; *h; h++)
                *h = (char)(*h >= 'A' ? *h + 32 : *h);
            snprintf(p, sizeof(p), "%s/%.2s", dir, hex);
            (void)mkdir(p, 0755);
            snprintf(p, sizeof(p), "%s/%.2s/%s%s", dir, hex, hex, i % 2 ? ".gz" : ".txt");
            if (i % 2)
                write_gz(p, t, false);
            else
                write_str(p, t);
            break;
        }
        free(t);
    }
}

static void test_layouts_same_keys(void **state)
{
    (void)state;
    char d[256];
    static const char *const names[] = {"layout-gz", "layout-nested", "layout-nested-gz"};
    for (int layout = 0; layout < 3; layout++) {
        make_dir(d, sizeof(d), names[layout]);
        write_layout(d, layout);
        read_expect_corpus(d);
        assert_true(br_input_size(d) > 0);
    }
    /* a hidden directory is not searched; other files are ignored */
    char p[512];
    snprintf(p, sizeof(p), "%s/.cache", d);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/.cache/00000.txt", d);
    write_str(p, "not a range\n");
    snprintf(p, sizeof(p), "%s/README.md", d);
    write_str(p, "hello\n");
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(d, NULL, &c, &st, &err), 0);
    assert_int_equal(st.files, NPREFIX);
    assert_int_equal(st.ignored_files, 1);
    collected_free(&c);

    /* one prefix twice in the tree */
    snprintf(p, sizeof(p), "%s/%05X.txt", d, C.prefix[0]);
    write_str(p, C.text[0]);
    assert_int_equal(run(d, NULL, &c, &st, &err), -EINVAL);
    char want[64];
    snprintf(want, sizeof(want), ": prefix %05X is there twice (", C.prefix[0]);
    assert_non_null(strstr(err.text, want));
    collected_free(&c);
}

static void test_bad_gzip(void **state)
{
    (void)state;
    char p[512];
    char *t = single_file_text(true, false);
    tpath(p, sizeof(p), "cut.txt.gz");
    write_gz(p, t, false);
    free(t);
    /* cut the compressed file short */
    uint64_t size = file_size(p);
    assert_int_equal(truncate(p, (off_t)(size / 2)), 0);
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    assert_int_equal(run(p, NULL, &c, &st, &err), -EINVAL);
    assert_non_null(strstr(err.text, ": not valid gzip data after line "));
    assert_int_equal(strncmp(err.text, p, strlen(p)), 0);
    collected_free(&c);

    /* corrupt bytes inside the deflate stream */
    static const unsigned char junk[] = {0x1f, 0x8b, 8,    0,    0,    0,    0,    0,    0,
                                         3,    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    tpath(p, sizeof(p), "junk.gz");
    write_bytes(p, junk, sizeof(junk));
    assert_int_equal(run(p, NULL, &c, &st, &err), -EINVAL);
    assert_non_null(strstr(err.text, ": not valid gzip data after line 0 ("));
    collected_free(&c);

    /* a malformed line inside a gzip file keeps its FILE:LINE */
    tpath(p, sizeof(p), "badline.gz");
    write_gz(p, H_PASSWORD ":1\n" BOM H_123456 ":2\r\nnot a hash\n", false);
    assert_int_equal(run(p, NULL, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ":3: character 1 is not a hex digit");
    collected_free(&c);
}

static void test_ntlm_inputs(void **state)
{
    (void)state;
    char p[512], d[256];
    collected c = {0};
    br_input_stats st = {0};
    br_error err;
    /* single file of NT hashes, a BOM first */
    write_text(p, sizeof(p), "ntlm.txt",
               BOM "8846F7EAEE8FB117AD06BDD830B7586C:10\r\n"
                   "32ED87BDB5FDC5E9CBA88547376818D4:5\r\n");
    assert_int_equal(run(p, NULL, &c, &st, &err), -EINVAL);
    assert_err(&err, p,
               ":1: the hash has 32 hex digits: this is an NTLM corpus; use --kind password-ntlm");
    collected_free(&c);
    /* a per-prefix directory of NTLM ranges: 27-hex suffixes */
    make_dir(d, sizeof(d), "ntlm-ranges");
    snprintf(p, sizeof(p), "%s/8846F.txt", d);
    write_str(p, "7EAEE8FB117AD06BDD830B7586C:10\r\n");
    assert_int_equal(run(d, NULL, &c, &st, &err), -EINVAL);
    assert_err(&err, p,
               ":1: the hash has 27 hex digits: this is an NTLM corpus; use --kind password-ntlm");
    collected_free(&c);
}

int main(void)
{
    make_corpus();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_official_single_file_boms),
        cmocka_unit_test(test_layouts_same_keys),
        cmocka_unit_test(test_bad_gzip),
        cmocka_unit_test(test_ntlm_inputs),
    };
    int rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
    for (size_t i = 0; i < NPREFIX; i++)
        free(C.text[i]);
    return rc;
}
