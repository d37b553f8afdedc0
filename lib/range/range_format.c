/* SPDX-License-Identifier: MIT */
/* Range sets written back out as response bodies; see range_format.h, and
 * range.h for the layout read here. */
#include <errno.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "range_format.h"
#include "core/util.h"

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
    if (value[5] != w || value[6] != COUNT_WIDTH || value[7] != 0 ||
        br_load_le32(value + 12) != 0 || 2 * w - 1 != br_range_suffix_hex(kind))
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

/* "00" .. "FF": two uppercase hex digits per byte value. */
#define HX_ROW(h)                                                                                  \
    h "0" h "1" h "2" h "3" h "4" h "5" h "6" h "7" h "8" h "9" h "A" h "B" h "C" h "D" h "E" h "F"
/* clang-format off */
static const char hex_pairs[] =
    HX_ROW("0") HX_ROW("1") HX_ROW("2") HX_ROW("3") HX_ROW("4") HX_ROW("5") HX_ROW("6") HX_ROW("7")
    HX_ROW("8") HX_ROW("9") HX_ROW("A") HX_ROW("B") HX_ROW("C") HX_ROW("D") HX_ROW("E") HX_ROW("F");
/* clang-format on */

/* "00" .. "99". */
#define DEC_ROW(d) d "0" d "1" d "2" d "3" d "4" d "5" d "6" d "7" d "8" d "9"
/* clang-format off */
static const char dec_pairs[] =
    DEC_ROW("0") DEC_ROW("1") DEC_ROW("2") DEC_ROW("3") DEC_ROW("4")
    DEC_ROW("5") DEC_ROW("6") DEC_ROW("7") DEC_ROW("8") DEC_ROW("9");
/* clang-format on */

/* v in decimal at p by digit pairs, without leading zeros; returns the end. */
static char *put_u32_pairs(char *p, uint32_t v)
{
    size_t n = 1;
    for (uint32_t t = v; t >= 10; t /= 10)
        n++;
    char *end = p + n, *q = end;
    for (; v >= 100; v /= 100) {
        q -= 2;
        memcpy(q, dec_pairs + 2 * (v % 100), 2);
    }
    if (v >= 10)
        memcpy(q - 2, dec_pairs + 2 * v, 2);
    else
        q[-1] = (char)('0' + v);
    return end;
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* The 8 decimal digits of v < 10^8 as they go to memory, most significant
 * first: four-digit halves in 32-bit lanes, split into pairs, then digits,
 * by multiplications. Counts are random: a branch on their size is
 * mispredicted about every other line, and this is faster than that. */
static inline uint64_t dec8(uint32_t v)
{
    uint64_t x = (v / 10000) | (uint64_t)(v % 10000) << 32;
    uint64_t hundreds = ((x * 10486) >> 20) & UINT64_C(0x0000007F0000007F);
    uint64_t y = hundreds | (x - hundreds * 100) << 16;
    uint64_t tens = ((y * 103) >> 10) & UINT64_C(0x000F000F000F000F);
    uint64_t z = tens | (y - tens * 10) << 8;
    return z + UINT64_C(0x3030303030303030);
}

/* v in decimal at p, without leading zeros; returns the end. Below 10^8
 * (nearly every count) it stores 8 bytes at p: a line has room for 10. */
static char *put_u32(char *p, uint32_t v)
{
    static const uint32_t pow10[9] = {1,      10,      100,      1000,     10000,
                                      100000, 1000000, 10000000, 100000000};
    if (__builtin_expect(v >= 100000000, 0))
        return put_u32_pairs(p, v);
    size_t t =
        ((size_t)(32 - __builtin_clz(v | 1)) * 1233) >> 12; /* log10 from log2, or one more */
    size_t n = t + 1 - ((v | 1) < pow10[t]);
    uint64_t z = dec8(v) >> (8 * (8 - n));
    memcpy(p, &z, 8);
    return p + n;
}
#else
#define put_u32 put_u32_pairs
#endif

/* The 8 uppercase hex digits of 4 bytes (most significant first), as they
 * go to memory: one nibble per byte, then '0'..'9' / 'A'..'F' by adding. */
static inline void put_hex4(char *p, const uint8_t *s)
{
    uint64_t x = (uint64_t)s[0] << 24 | (uint64_t)s[1] << 16 | (uint64_t)s[2] << 8 | s[3];
    x = (x | x << 16) & UINT64_C(0x0000FFFF0000FFFF);
    x = (x | x << 8) & UINT64_C(0x00FF00FF00FF00FF);
    x = (x | x << 4) & UINT64_C(0x0F0F0F0F0F0F0F0F);
    uint64_t letters = ((x + UINT64_C(0x0606060606060606)) >> 4) & UINT64_C(0x0101010101010101);
    x += UINT64_C(0x3030303030303030) + letters * 7;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    x = __builtin_bswap64(x); /* the first digit in the lowest address */
#endif
    memcpy(p, &x, 8);
}

#if defined(__SSE2__)
/* The 32 uppercase hex digits of 16 bytes, with SSE2 (every x86-64). */
static inline void put_hex16(char *p, const uint8_t *s)
{
    const __m128i low4 = _mm_set1_epi8(0x0F), nine = _mm_set1_epi8(9);
    const __m128i zero = _mm_set1_epi8('0'), gap = _mm_set1_epi8('A' - '0' - 10);
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
    __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), low4), lo = _mm_and_si128(v, low4);
    __m128i d[2] = {_mm_unpacklo_epi8(hi, lo), _mm_unpackhi_epi8(hi, lo)};
    for (int k = 0; k < 2; k++) {
        __m128i c =
            _mm_add_epi8(_mm_add_epi8(d[k], zero), _mm_and_si128(_mm_cmpgt_epi8(d[k], nine), gap));
        _mm_storeu_si128((__m128i *)(void *)(p + 16 * k), c);
    }
}
#endif

/* The 2w - 1 digits of a suffix: both nibbles of every byte but the first,
 * whose high nibble is the prefix's. */
static char *put_suffix(char *p, const uint8_t *s, size_t w)
{
    *p++ = hex_upper[s[0] & 0xF];
    size_t i = 1;
#if defined(__SSE2__)
    for (; i + 16 <= w; i += 16, p += 32)
        put_hex16(p, s + i);
#endif
    for (; i + 4 <= w; i += 4, p += 8)
        put_hex4(p, s + i);
    for (; i < w; i++, p += 2)
        memcpy(p, hex_pairs + 2 * s[i], 2);
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
