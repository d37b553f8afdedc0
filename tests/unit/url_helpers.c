/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test_url*.c programs: see url_helpers.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "url/url_canon.h"
#include "url/url_expr.h"
#include "url/url_feed.h"
#include "testutil.h"
#include "url_helpers.h"
#include "core/util.h"

void check_canon_table(const canon_case *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        br_error err = {{0}};
        char *out = NULL;
        size_t len = t[i].len ? t[i].len : strlen(t[i].in);
        int r = br_url_canonicalize(t[i].in, len, &out, &err);
        if (r < 0)
            fail_msg("case %zu (%s): refused: %s", i, t[i].want, err.text);
        if (strcmp(out, t[i].want) != 0)
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, out, t[i].want);
        /* Idempotent on every row. */
        char *again = NULL;
        r = br_url_canonicalize(out, strlen(out), &again, &err);
        if (r < 0)
            fail_msg("case %zu: canonical form refused: %s", i, err.text);
        assert_string_equal(again, out);
        free(again);
        free(out);
    }
}

/* Compare out (most specific first) with want as an ordered list. */
void check_exprs(const char *url, const char *const *want, size_t nwant)
{
    br_error err = {{0}};
    char *canon = NULL;
    if (br_url_canonicalize(url, strlen(url), &canon, &err) < 0)
        fail_msg("%s: refused: %s", url, err.text);
    br_url_exprs ex = {0};
    if (br_url_exprs_of(canon, strlen(canon), BR_URL_SB_HOST_COMPONENTS, &ex, &err) < 0)
        fail_msg("%s: expressions refused: %s", url, err.text);
    for (size_t i = 0; i < ex.n && i < nwant; i++)
        if (strcmp(ex.expr[i], want[i]) != 0)
            fail_msg("%s: expression %zu is \"%s\", want \"%s\"", url, i, ex.expr[i], want[i]);
    if (ex.n != nwant)
        fail_msg("%s: %zu expressions, want %zu", url, ex.n, nwant);
    br_url_exprs_clear(&ex);
    assert_int_equal(ex.n, 0);
    free(canon);
}

int read_feed_path(br_feedset *fs, const char *path, const char *category, const br_feed_opts *o,
                   br_feed_stats *st, br_error *err)
{
    FILE *in = fopen(path, "re");
    if (!in)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    int r = br_feedset_read(fs, in, path, category, o, st, err);
    fclose(in);
    return r;
}

br_pwfilter *open_url_set(const char *const *paths, size_t n, uint8_t body[32])
{
    br_pwfilter *pf = NULL;
    br_error err = {{0}};
    if (br_pwfilter_open_set(paths, n, &pf, body, &err) < 0)
        fail_msg("open %s: %s", paths[n - 1], err.text);
    return pf;
}

void set_key_encoding(br_filter_header *h, uint32_t v)
{
    h->key_encoding_version = v;
}

void set_check_bits(br_filter_header *h, uint32_t v)
{
    h->params[3] = (uint8_t)v; /* BR_PWP_OFF_CHECK_BITS (pwfilter_int.h) */
}

void expect_header_refused(const char *path, const char *out, header_edit edit, uint32_t v,
                           const char *what)
{
    size_t len = 0;
    uint8_t *raw = tu_read_file(path, &len);
    br_filter_header h;
    br_error err = {{0}};
    assert_int_equal(br_filter_header_decode(raw, len, &h, &err), 0);
    edit(&h, v);
    assert_int_equal(br_filter_header_encode(&h, raw), 0);
    assert_int_equal(tu_write_file(out, raw, len), 0);
    free(raw);
    br_pwfilter *pf = NULL;
    assert_int_equal(br_pwfilter_open(out, &pf, &err), -EINVAL);
    if (!strstr(err.text, what))
        fail_msg("refused as '%s', expected '%s'", err.text, what);
}

int lookup_sha256(const br_pwfilter *pf, const uint8_t key[32], const char **category)
{
    br_url_probe p;
    br_url_probe_hashed(&p, key, 0, false);
    return br_pwfilter_lookup_category(pf, &p, category);
}

int lookup_sha256_code(const br_pwfilter *pf, const uint8_t key[32], uint8_t *code)
{
    br_url_probe p;
    br_url_probe_hashed(&p, key, 0, false);
    return br_pwfilter_lookup_code(pf, &p, code);
}

int lookup_expr(const br_pwfilter *pf, const char *expr, const char **category)
{
    br_url_probe p;
    br_url_probe_init(&p, expr, strlen(expr));
    return br_pwfilter_lookup_category(pf, &p, category);
}
