/* SPDX-License-Identifier: MIT */
/* Fuzz target for URL canonicalization v1 and lookup expressions.
 *
 * Checked on every input: no crash or sanitizer report; a refusal has a
 * reason and the code -EINVAL, -EPERM or -ENOMEM; an accepted URL is in
 * canonical shape, canonicalizes to itself, and gives 1..30 distinct
 * expressions, the first being the URL without its scheme. A violation
 * aborts.
 *
 * Two builds of this one file (see tests/fuzz/README.md):
 *   - with libFuzzer: clang -fsanitize=fuzzer,address,undefined ...
 *   - with -DBR_FUZZ_STANDALONE (what meson builds): a driver whose
 *     arguments are files or directories of inputs, each replayed once. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "url/url_canon.h"
#include "url/url_expr.h"
#include "url/url_secret.h"

#define FUZZ_NAME "fuzz_url"
#include "fuzz_check.h"

static bool upper_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

static void check_shape(const char *u)
{
    size_t n = strlen(u);
    CHECK(n <= BR_URL_MAX_LEN);
    const char *sep = strstr(u, "://");
    CHECK(sep);
    size_t sl = (size_t)(sep - u);
    CHECK((sl == 4 && memcmp(u, "http", 4) == 0) || (sl == 5 && memcmp(u, "https", 5) == 0) ||
          (sl == 3 && memcmp(u, "ftp", 3) == 0) || (sl == 2 && memcmp(u, "ws", 2) == 0) ||
          (sl == 3 && memcmp(u, "wss", 3) == 0));
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)u[i];
        CHECK(c > 0x20 && c < 0x7F && c != '#');
        if (c == '%')
            CHECK(i + 2 < n && upper_hex(u[i + 1]) && upper_hex(u[i + 2]));
    }
    const char *host = sep + 3;
    const char *path = strchr(host, '/');
    CHECK(path && path > host);
    bool ip6 = host[0] == '[';
    for (const char *p = host; p < path; p++) {
        CHECK(*p != '?' && *p != '@');
        if (!ip6)
            CHECK(*p != ':' && *p != '[' && *p != ']');
        if (*p == '.')
            CHECK(p > host && p + 1 < path && p[1] != '.');
    }
    const char *q = strchr(path, '?');
    const char *pe = q ? q : u + n;
    for (const char *p = path; p < pe; p++) {
        if (*p != '/')
            continue;
        CHECK(p + 1 == pe || p[1] != '/');
        const char *e = p + 1;
        while (e < pe && *e != '/')
            e++;
        size_t seg = (size_t)(e - p - 1);
        CHECK(!(seg == 1 && p[1] == '.'));
        CHECK(!(seg == 2 && p[1] == '.' && p[2] == '.'));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    br_error err = {{0}};
    char *out = NULL;
    int r = br_url_canonicalize((const char *)data, size, &out, &err);
    if (r < 0) {
        CHECK(out == NULL);
        CHECK(r == -EINVAL || r == -EPERM || r == -ENOMEM);
        CHECK(err.text[0] != '\0');
        return 0;
    }
    CHECK(out != NULL);
    check_shape(out);
    char *again = NULL;
    r = br_url_canonicalize(out, strlen(out), &again, &err);
    CHECK(r == 0);
    CHECK(strcmp(out, again) == 0);
    free(again);
    br_url_exprs ex = {0};
    r = br_url_exprs_of(out, strlen(out), BR_URL_SB_HOST_COMPONENTS, &ex, &err);
    CHECK(r == 0);
    CHECK(ex.n >= 1 && ex.n <= BR_URL_MAX_EXPRESSIONS);
    /* expr[0] is the URL without its scheme (and without a final '?' of an
     * empty query, which adds no expression). */
    const char *whole = strstr(out, "://") + 3;
    size_t wl = strlen(whole);
    if (wl > 0 && whole[wl - 1] == '?' && strchr(whole, '?')[1] == '\0')
        wl--;
    CHECK(strlen(ex.expr[0]) == wl && memcmp(ex.expr[0], whole, wl) == 0);
    for (size_t i = 0; i < ex.n; i++) {
        CHECK(strchr(ex.expr[i], '/') != NULL);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(ex.expr[i], ex.expr[j]) != 0);
        uint8_t h[BR_SHA256_LEN];
        CHECK(br_url_expr_hash(ex.expr[i], h) == 0);
    }
    br_url_exprs_clear(&ex);
    free(out);
    /* The e-mail rule: what is left to look up never holds an address. */
    size_t dropped;
    if (br_url_lookup_expressions((const char *)data, size, 8, &ex, &dropped, NULL) == 0) {
        for (size_t i = 0; i < ex.n; i++)
            CHECK(!br_url_holds_email(ex.expr[i], strlen(ex.expr[i])));
        br_url_exprs_clear(&ex);
    }
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
