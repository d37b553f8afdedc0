/* SPDX-License-Identifier: MIT */
/* Range sets written back out as response bodies; see range_format.h, and
 * range.h for the layout read here. */
#include <errno.h>
#include <string.h>

#include "range_format.h"
#include "util.h"

#define COUNT_WIDTH 4 /* a count value: u32 little-endian */
#define COUNT_DIGITS_MAX 10

static const char hex_upper[] = "0123456789ABCDEF";

size_t br_range_pad_line_len(br_range_kind kind)
{
    size_t s = br_range_suffix_hex(kind);
    return s ? s + 2 : 0; /* ":0" */
}

size_t br_range_pad_random_len(br_range_kind kind)
{
    return (br_range_suffix_hex(kind) + 1) / 2;
}

/* The header of a count-valued range set of kind whose sizes add up:
 * entries start at value + BR_RANGE_HEADER_SIZE, *width suffix bytes each
 * followed by a count. */
static int count_set_open(br_range_kind kind, const uint8_t *value, size_t len, size_t *width,
                          uint32_t *n)
{
    static const uint8_t magic[4] = {'B', 'R', 'S', 0x01};
    size_t hash_len = br_range_hash_len(kind);
    if (hash_len < 3 || !value || len < BR_RANGE_HEADER_SIZE)
        return -EINVAL;
    if (memcmp(value, magic, 4) != 0 || value[4] != (uint8_t)kind)
        return -EINVAL;
    size_t w = hash_len - 2;
    /* 2w - 1 digits per suffix: the first nibble belongs to the prefix. */
    if (value[5] != w || value[6] != COUNT_WIDTH || value[7] != 0 || br_load_le32(value + 12) != 0 ||
        2 * w - 1 != br_range_suffix_hex(kind))
        return -EINVAL;
    uint32_t count = br_load_le32(value + 8);
    size_t body = len - BR_RANGE_HEADER_SIZE;
    if (body % (w + COUNT_WIDTH) != 0 || body / (w + COUNT_WIDTH) != count)
        return -EINVAL;
    *width = w;
    *n = count;
    return 0;
}

int br_range_format_size(br_range_kind kind, const uint8_t *value, size_t len, uint32_t *n_entries,
                         size_t *max_body)
{
    size_t w;
    uint32_t n;
    int rc = count_set_open(kind, value, len, &w, &n);
    if (rc < 0)
        return rc;
    if (n_entries)
        *n_entries = n;
    if (max_body) /* suffix, ':', count, CRLF */
        *max_body = (size_t)n * (2 * w - 1 + 1 + COUNT_DIGITS_MAX + 2);
    return 0;
}

/* v in decimal at p, without leading zeros; returns the end. */
static char *put_u32(char *p, uint32_t v)
{
    char tmp[COUNT_DIGITS_MAX];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    memcpy(p, tmp + i, sizeof(tmp) - i);
    return p + (sizeof(tmp) - i);
}

/* The 2w - 1 digits of a suffix: both nibbles of every byte but the first,
 * whose high nibble is the prefix's. */
static char *put_suffix(char *p, const uint8_t *s, size_t w)
{
    *p++ = hex_upper[s[0] & 0xF];
    for (size_t i = 1; i < w; i++) {
        *p++ = hex_upper[s[i] >> 4];
        *p++ = hex_upper[s[i] & 0xF];
    }
    return p;
}

int br_range_format(br_range_kind kind, const uint8_t *value, size_t len, char *out, size_t cap,
                    size_t *out_len)
{
    size_t w;
    uint32_t n;
    if (count_set_open(kind, value, len, &w, &n) < 0 || !out || !out_len)
        return -EINVAL;
    if (cap / (2 * w - 1 + 1 + COUNT_DIGITS_MAX + 2) < n)
        return -ENOBUFS;
    const uint8_t *e = value + BR_RANGE_HEADER_SIZE;
    char *p = out;
    for (uint32_t i = 0; i < n; i++, e += w + COUNT_WIDTH) {
        if (i) {
            *p++ = '\r';
            *p++ = '\n';
        }
        p = put_suffix(p, e, w);
        *p++ = ':';
        p = put_u32(p, br_load_le32(e + w));
    }
    *out_len = (size_t)(p - out);
    return 0;
}

size_t br_range_format_padding(br_range_kind kind, const uint8_t *random, size_t n, char *out,
                               size_t cap)
{
    size_t digits = br_range_suffix_hex(kind), rlen = br_range_pad_random_len(kind);
    if (!digits || !out || (n && !random))
        return 0;
    size_t line = 2 + br_range_pad_line_len(kind);
    if (n > cap / line)
        return 0;
    char *p = out;
    for (size_t i = 0; i < n; i++, random += rlen) {
        *p++ = '\r';
        *p++ = '\n';
        for (size_t d = 0; d < digits; d++)
            *p++ = hex_upper[(d & 1 ? random[d / 2] >> 4 : random[d / 2]) & 0xF];
        *p++ = ':';
        *p++ = '0';
    }
    return (size_t)(p - out);
}
