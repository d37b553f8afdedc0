/* SPDX-License-Identifier: MIT */
/* The password-ntlm inputs of lib/filter/hibp_input.c (docs/corpus.md,
 * "Corpus formats"): the NTLM single file (HASH32:COUNT, a byte order mark
 * before every block, LF or CRLF, gzip), per-prefix directories of 27-hex
 * suffixes in every layout and compression the SHA-1 kind reads, plain
 * 32-hex lists, plaintext hashed to NT; each yields exactly the same keys.
 * A SHA-1 corpus read as password-ntlm is named as such. The golden
 * password-ntlm fixture of data/fixtures/ is read here too. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <zlib.h>

#include "filter/filter_file.h"
#include "core/hash.h"
#include "filter/hibp_input.h"
#include "hibp_input_helpers.h"
#include "core/nthash.h"
#include "filter/pwfilter.h"
#include "core/util.h"

#define NPREFIX 16
#define PER_PREFIX 30
#define SUFFIX 27
#define BOM "\xef\xbb\xbf"

static const br_input_opts NT_OPTS = {.kind = BR_KIND_PASSWORD_NTLM};

/* A generated NTLM corpus: prefix file texts (SUFFIX27:COUNT, LF, a count 0
 * now and then) and the expected keys (32 hex). */
static struct {
    uint32_t prefix[NPREFIX];
    char *text[NPREFIX];
    const char *keys[NPREFIX * PER_PREFIX];
    char key_store[NPREFIX * PER_PREFIX][33];
    size_t nkeys;
} C;

static void make_corpus(void)
{
    uint64_t s = 0x4e54484153480001u;
    for (size_t i = 0; i < NPREFIX; i++) {
        C.prefix[i] = (uint32_t)((i * 65521u + 3u) & 0xFFFFF);
        char *t = xmalloc(PER_PREFIX * 40 + 1);
        size_t len = 0;
        for (size_t j = 0; j < PER_PREFIX; j++) {
            char suffix[SUFFIX + 1];
            for (size_t k = 0; k < SUFFIX; k++)
                suffix[k] = "0123456789ABCDEF"[br_splitmix64(&s) & 15];
            suffix[SUFFIX] = '\0';
            unsigned count = j % 5 == 2 ? 0 : (unsigned)(j + 1);
            len += (size_t)sprintf(t + len, "%s:%u\n", suffix, count);
            if (count) {
                snprintf(C.key_store[C.nkeys], 33, "%05X%s", C.prefix[i], suffix);
                C.keys[C.nkeys] = C.key_store[C.nkeys];
                C.nkeys++;
            }
        }
        C.text[i] = t;
    }
}

static void write_gz(const char *path, const char *text, bool two_members)
{
    gzFile g = gzopen(path, "wb9");
    assert_non_null(g);
    size_t len = strlen(text), half = two_members ? len / 2 : len;
    assert_int_equal(gzwrite(g, text, (unsigned)half), (int)half);
    assert_int_equal(gzclose(g), Z_OK);
    if (two_members) {
        g = gzopen(path, "ab9");
        assert_non_null(g);
        assert_int_equal(gzwrite(g, text + half, (unsigned)(len - half)), (int)(len - half));
        assert_int_equal(gzclose(g), Z_OK);
    }
}

/* t with CRLF line ends, a BOM first when bom. */
static char *dress(const char *t, bool crlf, bool bom)
{
    char *o = xmalloc(2 * strlen(t) + 4), *p = o;
    if (bom)
        p += sprintf(p, BOM);
    for (; *t; t++) {
        if (*t == '\n' && crlf)
            *p++ = '\r';
        *p++ = *t;
    }
    *p = '\0';
    return o;
}

static void read_expect(const char *path, const br_input_opts *o, const char *const *want, size_t n)
{
    collected c = {.hash_len = BR_NT_LEN};
    br_input_stats st = {0};
    br_error err;
    int rc = run(path, o, &c, &st, &err);
    if (rc != 0)
        print_error("%s: %s\n", path, err.text);
    assert_int_equal(rc, 0);
    assert_keys(&c, want, n);
    collected_free(&c);
}

/* The official downloader's NTLM single file: HASH32:COUNT, a BOM before
 * every block; LF, CRLF; plain and gzip in two members. */
static void test_single_file(void **state)
{
    (void)state;
    for (int crlf = 0; crlf < 2; crlf++) {
        size_t cap = NPREFIX * (PER_PREFIX * 48 + 8) + 1, len = 0;
        char *t = xmalloc(cap);
        for (size_t i = 0; i < NPREFIX; i++) {
            len += (size_t)snprintf(t + len, cap - len, BOM);
            for (const char *l = C.text[i]; *l;) {
                const char *e = strchr(l, '\n');
                len += (size_t)snprintf(t + len, cap - len, "%05X%.*s%s", C.prefix[i], (int)(e - l),
                                        l, crlf ? "\r\n" : "\n");
                l = e + 1;
            }
        }
        char p[512], name[32];
        snprintf(name, sizeof(name), "ntlm-single-%d.txt", crlf);
        write_text(p, sizeof(p), name, t);
        read_expect(p, &NT_OPTS, C.keys, C.nkeys);
        snprintf(name, sizeof(name), "ntlm-single-%d.txt.gz", crlf);
        tpath(p, sizeof(p), name);
        write_gz(p, t, true);
        read_expect(p, &NT_OPTS, C.keys, C.nkeys);
        free(t);
    }
}

/* Per-prefix trees: flat .txt, flat .txt.gz/.gz, AB/CD/ABCDE.txt,
 * AB/abcde.gz; CRLF in some files, a BOM at the start of others. */
static void write_layout(const char *dir, int layout)
{
    char p[768];
    for (size_t i = 0; i < NPREFIX; i++) {
        char hex[6];
        snprintf(hex, sizeof(hex), "%05X", C.prefix[i]);
        char *t = dress(C.text[i], i % 2, i % 3 == 0);
        switch (layout) {
        case 0:
            snprintf(p, sizeof(p), "%s/%s.txt", dir, hex);
            write_str(p, t);
            break;
        case 1:
            snprintf(p, sizeof(p), "%s/%s%s", dir, hex, i % 2 ? ".gz" : ".txt.gz");
            write_gz(p, t, i % 4 == 0);
            break;
        case 2:
            snprintf(p, sizeof(p), "%s/%.2s", dir, hex);
            (void)mkdir(p, 0755);
            snprintf(p, sizeof(p), "%s/%.2s/%.2s", dir, hex, hex + 2);
            (void)mkdir(p, 0755);
            snprintf(p, sizeof(p), "%s/%.2s/%.2s/%s.txt", dir, hex, hex + 2, hex);
            write_str(p, t);
            break;
        default:
            for (char *h = hex; *h; h++)
                *h = (char)(*h >= 'A' ? *h + 32 : *h);
            snprintf(p, sizeof(p), "%s/%.2s", dir, hex);
            (void)mkdir(p, 0755);
            snprintf(p, sizeof(p), "%s/%.2s/%s.gz", dir, hex, hex);
            write_gz(p, t, false);
            break;
        }
        free(t);
    }
}

static void test_prefix_layouts(void **state)
{
    (void)state;
    static const char *const names[] = {"nt-flat", "nt-gz", "nt-nested", "nt-nested-gz"};
    for (int layout = 0; layout < 4; layout++) {
        char d[256];
        make_dir(d, sizeof(d), names[layout]);
        write_layout(d, layout);
        read_expect(d, &NT_OPTS, C.keys, C.nkeys);
    }
}

/* A plain list of 32-hex NT hashes, any case. */
static void test_plain_list(void **state)
{
    (void)state;
    size_t cap = C.nkeys * 36 + 1, len = 0;
    char *t = xmalloc(cap);
    for (size_t i = 0; i < C.nkeys; i++) {
        char h[33];
        memcpy(h, C.keys[i], 33);
        if (i % 2)
            for (char *q = h; *q; q++)
                *q = (char)(*q >= 'A' ? *q + 32 : *q);
        len += (size_t)snprintf(t + len, cap - len, "%s%s", h, i % 3 ? "\n" : "\r\n");
    }
    char p[512];
    write_text(p, sizeof(p), "nt-plain.txt", t);
    read_expect(p, &NT_OPTS, C.keys, C.nkeys);
    free(t);
}

/* --plaintext: passwords hashed to NT (nthash.h); a Latin-1 line gets the
 * NT hash of its characters. */
static void test_plaintext(void **state)
{
    (void)state;
    char p[512];
    write_text(p, sizeof(p), "nt-words.txt",
               "password\n123456\r\np\xC3\xA4ssw\xC3\xB6rd\np\xE4ssw\xF6rd\n\nhunter2");
    static const char *const want[] = {
        "8846F7EAEE8FB117AD06BDD830B7586C", "32ED87BDB5FDC5E9CBA88547376818D4",
        "0553152250AC01ADB4213CB9938663E4", "0553152250AC01ADB4213CB9938663E4",
        "6608E4BC7B2B7A5F77CE3573570775AF"};
    br_input_opts o = {.kind = BR_KIND_PASSWORD_NTLM, .plaintext = true};
    read_expect(p, &o, want, BR_ARRAY_SIZE(want));
}

/* Counts and --min-count work as for SHA-1 inputs. */
static void test_min_count(void **state)
{
    (void)state;
    char p[512];
    write_text(p, sizeof(p), "nt-counts.txt",
               "8846F7EAEE8FB117AD06BDD830B7586C:10\n32ED87BDB5FDC5E9CBA88547376818D4:2\n"
               "6608E4BC7B2B7A5F77CE3573570775AF:0\n");
    static const char *const want[] = {"8846F7EAEE8FB117AD06BDD830B7586C"};
    br_input_opts o = {.kind = BR_KIND_PASSWORD_NTLM, .min_count = 3};
    read_expect(p, &o, want, 1);
}

/* SHA-1 data read as password-ntlm, and a kind that is not a password kind. */
static void test_wrong_kind(void **state)
{
    (void)state;
    char p[512], d[256];
    collected c = {.hash_len = BR_NT_LEN};
    br_input_stats st = {0};
    br_error err;
    write_text(p, sizeof(p), "sha1-as-nt.txt", H_PASSWORD ":3\n");
    assert_int_equal(run(p, &NT_OPTS, &c, &st, &err), -EINVAL);
    assert_err(&err, p,
               ":1: the hash has 40 hex digits: this is a SHA-1 corpus; use --kind password-sha1");
    make_dir(d, sizeof(d), "sha1-ranges-as-nt");
    snprintf(p, sizeof(p), "%s/5BAA6.txt", d);
    write_str(p, "1E4C9B93F3F0682250B6CF8331B7EE68FD8:3\r\n");
    assert_int_equal(run(d, &NT_OPTS, &c, &st, &err), -EINVAL);
    assert_err(&err, p,
               ":1: the hash has 35 hex digits: this is a SHA-1 corpus; use --kind password-sha1");
    /* a length of neither kind */
    write_text(p, sizeof(p), "nt-short.txt", "8846F7EAEE8FB117AD06BDD830B7586:3\n");
    assert_int_equal(run(p, &NT_OPTS, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ":1: the hash has 31 hex digits, expected 32");
    br_input_opts url = {.kind = BR_KIND_URL_SHA256};
    assert_int_equal(run(p, &url, &c, &st, &err), -EINVAL);
    assert_err(&err, p, ": kind url-sha256 is not a password kind");
    assert_int_equal(c.n, 0);
    collected_free(&c);
}

/* The golden password-ntlm filter (data/fixtures/make-fixtures): its keys
 * are the NT hashes OpenSSL's command line made of breachd-fixture-N, each
 * one is in the filter, and the header says password-ntlm. */
static void test_fixture(void **state)
{
    (void)state;
    br_pwfilter *pf = NULL;
    br_error err = {{0}};
    assert_int_equal(br_pwfilter_open(FIXTURES_DIR "/password-ntlm-v1-fp16.bfuse", &pf, &err), 0);
    const br_filter_header *h = br_pwfilter_header(pf);
    assert_int_equal(h->kind, BR_KIND_PASSWORD_NTLM);
    assert_int_equal(h->key_count, 1000);
    assert_int_equal(h->build_time, 1764460800);
    assert_int_equal(br_pwfilter_shard_count(pf), 16);
    FILE *f = fopen(FIXTURES_DIR "/password-ntlm-v1.keys", "r");
    assert_non_null(f);
    char line[64];
    size_t n = 0;
    while (fgets(line, sizeof(line), f)) {
        uint8_t nt[BR_NT_LEN], mine[BR_NT_LEN];
        assert_int_equal(strlen(line), 33);
        assert_true(br_hex_decode(line, BR_NT_LEN, nt));
        char pw[32];
        int len = snprintf(pw, sizeof(pw), "breachd-fixture-%zu", n);
        assert_int_equal(br_nt_hash(pw, (size_t)len, mine), 0);
        assert_memory_equal(nt, mine, BR_NT_LEN);
        if (!br_pwfilter_maybe(pf, nt))
            fail_msg("fixture key %zu not found", n + 1);
        n++;
    }
    fclose(f);
    assert_int_equal(n, 1000);
    br_pwfilter_free(pf);
}

int main(void)
{
    make_corpus();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_file), cmocka_unit_test(test_prefix_layouts),
        cmocka_unit_test(test_plain_list),  cmocka_unit_test(test_plaintext),
        cmocka_unit_test(test_min_count),   cmocka_unit_test(test_wrong_kind),
        cmocka_unit_test(test_fixture),
    };
    int rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
    for (size_t i = 0; i < NPREFIX; i++)
        free(C.text[i]);
    return rc;
}
