/* SPDX-License-Identifier: MIT */
/* Fuzz target for DNS query names as filter keys (client/dns/dns_name.c,
 * docs/dns.md "Which names match"): any bytes, as a resolver may hand
 * them over (binary labels, escapes, names over 253 bytes, empty and '_'
 * labels).
 *
 * Checked on every input: no crash or sanitizer report; a refusal is
 * -EINVAL; an accepted name gives a canonical host (the URL
 * canonicalization gives it back unchanged, also when the fast path for
 * plain names skipped it) of lowercase letters, digits, '-', '_' and
 * single dots, at most 253 bytes, whose suffixes are exactly
 * the domain-entry expressions ("SUFFIX/") br_url_exprs_of forms for
 * "http://HOST/" (never the bare TLD), each key their SHA-256.
 *
 * Built as fuzz_url is (tests/fuzz/README.md). */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dns_name.h"

#define FUZZ_NAME "fuzz_dns"
#include "fuzz_check.h"

static void check_host(const bdns_keys *k)
{
    /* canonical: the URL canonicalization gives it back unchanged */
    char url[BR_URL_MAX_HOST + 16], canon[1024];
    size_t canon_len = 0;
    br_error err = {{0}};
    int n = snprintf(url, sizeof(url), "http://%s", k->host); /* host, then its '/' */
    CHECK(br_url_canonicalize_buf(url, (size_t)n, canon, sizeof(canon), &canon_len, &err) == 0);
    CHECK(canon_len == (size_t)n && memcmp(canon, url, canon_len) == 0);
    CHECK(k->host_len >= 1 && k->host_len <= BR_URL_MAX_HOST);
    CHECK(strlen(k->host) == k->host_len + 1 && k->host[k->host_len] == '/');
    CHECK(k->host[0] != '.' && k->host[k->host_len - 1] != '.');
    for (size_t i = 0; i < k->host_len; i++) {
        char c = k->host[i];
        CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.');
        CHECK(!(c == '.' && k->host[i + 1] == '.'));
    }
}

/* The suffixes are br_url_exprs_of's "SUFFIX/" expressions of the host. */
static void check_suffixes(const bdns_keys *k, unsigned labels)
{
    char url[BR_URL_MAX_HOST + 16];
    snprintf(url, sizeof(url), "http://%s", k->host);
    br_url_exprs ex = {0};
    br_error err = {{0}};
    CHECK(br_url_exprs_of(url, strlen(url), labels, &ex, &err) == 0);
    size_t n = 0;
    for (size_t i = 0; i < ex.n; i++) {
        size_t len = strlen(ex.expr[i]);
        if (ex.expr[i][len - 1] != '/' || memchr(ex.expr[i], '/', len - 1))
            continue; /* a path expression: none for "/" but the host's */
        CHECK(n < k->n);
        const char *suffix = k->host + k->start[n]; /* "SUFFIX/" */
        CHECK(len == strlen(suffix) && memcmp(ex.expr[i], suffix, len) == 0);
        CHECK(n == 0 || memchr(suffix, '.', len) != NULL); /* never the bare TLD */
        const br_url_probe *p = &k->probe[n];
        CHECK(p->expr == suffix && p->len == len && p->has_xxh3 && !p->hashed);
        CHECK(p->xxh3 == br_xxh3_64(ex.expr[i], len));
        n++;
    }
    CHECK(n == k->n);
    br_url_exprs_clear(&ex);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the first byte picks the filter's label count, the rest is the name */
    unsigned labels = size ? data[0] % 130 : 0;
    const char *name = size ? (const char *)data + 1 : "";
    size_t len = size ? size - 1 : 0;
    bdns_keys k;
    int r = bdns_name_keys(name, len, labels, &k);
    if (r < 0) {
        CHECK(r == -EINVAL);
        CHECK(k.n == 0);
        return 0;
    }
    CHECK(r == 0);
    check_host(&k);
    check_suffixes(&k, labels);
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
