/* SPDX-License-Identifier: MIT */
/* DNS query name to filter keys (dns_name.h). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "dns_name.h"

/* "http://" + 253 bytes + "/": what the URL canonicalization is given. */
#define URL_ROOM (7 + BR_URL_MAX_HOST + 2)

static bool host_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

/* One byte of the presentation form at name[*i]: "\DDD" (decimal, at most
 * 255), "\X", or itself. -1 for a bad escape. */
static int next_byte(const char *name, size_t len, size_t *i)
{
    unsigned char c = (unsigned char)name[(*i)++];
    if (c != '\\')
        return c;
    if (*i >= len)
        return -1;
    unsigned char d = (unsigned char)name[*i];
    if (d < '0' || d > '9') {
        (*i)++;
        return d;
    }
    if (len - *i < 3)
        return -1;
    int v = 0;
    for (int k = 0; k < 3; k++) {
        unsigned char x = (unsigned char)name[(*i)++];
        if (x < '0' || x > '9')
            return -1;
        v = v * 10 + (x - '0');
    }
    return v <= 255 ? v : -1;
}

/* The unescaped name into url as "http://NAME/", checked label by label;
 * the escaped dot "\." is a byte of a label, and so refused. */
static int to_url(const char *name, size_t len, char *url, size_t *url_len)
{
    if (len > 0 && name[len - 1] == '.' && !(len >= 2 && name[len - 2] == '\\'))
        len--; /* the root label; "\\." is an escaped dot, refused below */
    memcpy(url, "http://", 7);
    size_t o = 7, label = 0;
    for (size_t i = 0; i < len;) {
        bool dot = name[i] == '.';
        int c = next_byte(name, len, &i);
        if (dot) {
            if (label == 0)
                return -EINVAL; /* empty label */
            label = 0;
        } else if (c < 0 || !host_byte((unsigned char)c) || ++label > BR_URL_MAX_LABEL) {
            return -EINVAL;
        }
        if (o - 7 >= BR_URL_MAX_HOST)
            return -EINVAL;
        url[o++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c); /* canonical hosts are lowercase */
    }
    if (label == 0)
        return -EINVAL; /* empty name, or a name ending in ".." */
    url[o++] = '/';
    *url_len = o;
    return 0;
}

/* Whether host[0..n) (lowercase letters, digits, '-', '_' and single dots,
 * as to_url leaves it) is already what the URL canonicalization makes of
 * it: true unless its last label could read as part of an IPv4 address
 * (digits, hex "0x..": all of [0-9a-fx]), which the canonicalization
 * rewrites, or a label is an A-label ("xn--"), which it checks. */
static bool canonical_already(const char *host, size_t n)
{
    const char *last = host;
    for (size_t i = 0; i + 1 < n; i++) {
        if (host[i] == '.')
            last = host + i + 1;
        if ((i == 0 || host[i - 1] == '.') && n - i >= 4 && memcmp(host + i, "xn--", 4) == 0)
            return false;
    }
    for (const char *p = last; p < host + n; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || *p == 'x'))
            return true;
    return false;
}

int bdns_name_keys(const char *name, size_t len, unsigned labels, bdns_keys *out)
{
    out->n = 0;
    /* canon: room to spare, as the canonicalization's buffer grows ahead */
    char url[URL_ROOM], canon[1024];
    size_t url_len, canon_len;
    br_error err;
    if (to_url(name, len, url, &url_len) < 0)
        return -EINVAL;
    if (canonical_already(url + 7, url_len - 8)) { /* the usual name: no work to redo */
        memcpy(canon, url, url_len);
        canon_len = url_len;
    } else if (br_url_canonicalize_buf(url, url_len, canon, sizeof(canon), &canon_len, &err) < 0) {
        return -EINVAL;
    }
    /* "http://HOST/": the canonical form of a bare host keeps its one '/' */
    const char *host = canon + 7;
    const char *slash = memchr(host, '/', canon_len - 7);
    if (canon_len < 9 || memcmp(canon, "http://", 7) != 0 || !slash || slash == host ||
        (size_t)(slash - host) > BR_URL_MAX_HOST)
        return -EINVAL;
    out->host_len = (size_t)(slash - host);
    memcpy(out->host, host, out->host_len);
    out->host[out->host_len] = '\0';
    out->n = br_url_host_suffixes(out->host, out->host_len, labels, out->start);
    /* Each suffix's expression "SUFFIX/", hashed (one buffer on the stack:
     * resolvers run hooks on small coroutine stacks). */
    char expr[BR_URL_MAX_HOST + 2];
    const char *list[1] = {expr};
    for (size_t i = 0; i < out->n; i++) {
        size_t n = out->host_len - out->start[i];
        memcpy(expr, out->host + out->start[i], n);
        expr[n] = '/';
        expr[n + 1] = '\0';
        if (br_sha256_strings(list, 1, &out->key[i]) < 0) {
            out->n = 0;
            return -EIO;
        }
    }
    return 0;
}
