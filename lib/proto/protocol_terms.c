/* SPDX-License-Identifier: MIT */
/* The TERMS answer of the BANNED verb: items written and read
 * (protocol_terms.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "protocol_terms.h"

static bool plain(unsigned char c)
{
    return c > 0x20 && c < 0x7f && c != '%' && c != ',';
}

bool br_terms_item_format(char *buf, size_t size, size_t *len, char kind, const char *term)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t need = (*len ? 1 : 0) + 1, o = *len;
    for (const unsigned char *p = (const unsigned char *)term; *p; p++)
        need += plain(*p) ? 1 : 3;
    if (o + need > BR_TERMS_PAGE_BYTES || o + need >= size)
        return false;
    if (o)
        buf[o++] = ',';
    buf[o++] = kind;
    for (const unsigned char *p = (const unsigned char *)term; *p; p++) {
        if (plain(*p)) {
            buf[o++] = (char)*p;
            continue;
        }
        buf[o++] = '%';
        buf[o++] = hex[*p >> 4];
        buf[o++] = hex[*p & 15];
    }
    buf[o] = '\0';
    *len = o;
    return true;
}

/* One item s[0..n) decoded and handed to fn. */
static int one_item(const char *s, size_t n, br_terms_fn fn, void *ctx)
{
    char term[BR_TERMS_PAGE_BYTES];
    size_t k = 0;
    if (n < 2 || (s[0] != 'b' && s[0] != 's'))
        return -EPROTO;
    for (size_t i = 1; i < n; i++) {
        if (s[i] != '%') {
            term[k++] = s[i];
            continue;
        }
        uint8_t byte;
        if (i + 2 >= n || !br_hex_decode(s + i + 1, 1, &byte))
            return -EPROTO;
        term[k++] = (char)byte;
        i += 2;
    }
    return fn ? fn(ctx, s[0], term, k) : 0;
}

int br_terms_answer_parse(const char *s, br_terms_page *page, br_terms_fn fn, void *ctx)
{
    int used = 0;
    memset(page, 0, sizeof(*page));
    if (sscanf(s, "TERMS %" SCNu64 " %u %" SCNu32 " %" SCNu32 "%n", &page->generation,
               &page->min_score, &page->total, &page->next, &used) != 4 ||
        page->next > page->total)
        return -EPROTO;
    s += used;
    if (*s == '\0')
        return 0;
    if (*s++ != ' ')
        return -EPROTO;
    while (*s) {
        size_t n = strcspn(s, ",");
        int r = one_item(s, n, fn, ctx);
        if (r < 0)
            return r;
        s += n;
        if (*s == ',' && *++s == '\0')
            return -EPROTO;
    }
    return 0;
}
