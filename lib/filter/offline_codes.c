/* SPDX-License-Identifier: MIT */
/* The code tables of offline filters (offline_codes.h): counts and
 * categories to 8-bit codes and back. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "offline_codes.h"
#include "core/util.h"

#define RATIO_ONE (UINT64_C(1) << 32)
/* 1.1 in 32.32 fixed point, rounded down. */
#define RATIO_MAX (RATIO_ONE + RATIO_ONE / 10)

/* bound[c+1] = max(bound[c] + 1, floor(bound[c] * R / 2^32)): integers
 * only, so that every reader and writer gets the same table. */
static void fill(uint64_t ratio, br_count_codes *t)
{
    t->bound[101] = 101;
    for (unsigned c = 101; c < 256; c++) {
        uint64_t b = t->bound[c];
        uint64_t next = (uint64_t)(((unsigned __int128)b * ratio) >> 32);
        t->bound[c + 1] = next > b ? next : b + 1;
    }
    t->ratio_ppm = (uint32_t)((((unsigned __int128)ratio * 1000000) + RATIO_ONE - 1) >> 32);
}

uint64_t br_count_codes_limit(void)
{
    br_count_codes t;
    fill(RATIO_MAX, &t);
    return t.bound[256] - 1;
}

int br_count_codes_make(uint64_t max_count, br_count_codes *t)
{
    if (max_count > br_count_codes_limit())
        return -ERANGE;
    /* the smallest ratio whose table holds max_count */
    uint64_t lo = RATIO_ONE, hi = RATIO_MAX;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        fill(mid, t);
        if (t->bound[256] > max_count)
            hi = mid;
        else
            lo = mid + 1;
    }
    fill(lo, t);
    return 0;
}

uint8_t br_count_code(const br_count_codes *t, uint64_t count)
{
    if (count <= BR_COUNT_EXACT_MAX)
        return (uint8_t)count;
    unsigned lo = 101, hi = 255; /* the largest c with bound[c] <= count */
    while (lo < hi) {
        unsigned mid = (lo + hi + 1) / 2;
        if (t->bound[mid] <= count)
            lo = mid;
        else
            hi = mid - 1;
    }
    return (uint8_t)lo;
}

uint64_t br_count_of_code(const br_count_codes *t, uint8_t code)
{
    return code <= BR_COUNT_EXACT_MAX ? code : t->bound[code];
}

void br_count_codes_encode(const br_count_codes *t, uint8_t raw[BR_COUNT_TABLE_BYTES])
{
    for (unsigned c = 101; c <= 256; c++)
        br_store_le64(raw + (c - 101) * 8, t->bound[c]);
}

int br_count_codes_decode(const uint8_t raw[BR_COUNT_TABLE_BYTES], br_count_codes *t, br_error *err)
{
    memset(t, 0, sizeof(*t));
    for (unsigned c = 101; c <= 256; c++)
        t->bound[c] = br_load_le64(raw + (c - 101) * 8);
    if (t->bound[101] != 101)
        return br_error_set(err, -EINVAL, "count table: bound of code 101 is %llu, expected 101",
                            (unsigned long long)t->bound[101]);
    for (unsigned c = 101; c < 256; c++) {
        uint64_t b = t->bound[c], n = t->bound[c + 1];
        /* n <= 1.1 b (or b + 1), in integers: 10 n <= 11 b; b < 2^59 keeps it exact */
        if (n <= b || b >= (UINT64_C(1) << 59) || (n != b + 1 && 10 * n > 11 * b))
            return br_error_set(err, -EINVAL,
                                "count table: bound of code %u (%llu) after %llu is not an "
                                "increase of at most 10%%",
                                c + 1, (unsigned long long)n, (unsigned long long)b);
    }
    t->ratio_ppm = 0; /* the header records it */
    return 0;
}

/* ---- categories ---- */

static bool category_name_ok(const char *s, size_t len)
{
    if (len == 0 || len > BR_CATEGORY_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

int br_category_code(br_category_table *t, const char *name)
{
    for (unsigned i = 0; i < t->count; i++)
        if (!strcmp(t->names[i], name))
            return (int)i + 1;
    if (!category_name_ok(name, strlen(name)))
        return -EINVAL;
    if (t->count >= BR_CATEGORY_MAX)
        return -E2BIG;
    snprintf(t->names[t->count], sizeof(t->names[0]), "%s", name);
    return (int)++t->count;
}

const char *br_category_name(const br_category_table *t, uint8_t code)
{
    return code >= 1 && code <= t->count ? t->names[code - 1] : NULL;
}

void br_category_table_encode(const br_category_table *t, uint8_t *raw)
{
    memset(raw, 0, (size_t)t->count * BR_CATEGORY_ENTRY_BYTES);
    for (unsigned i = 0; i < t->count; i++)
        memcpy(raw + (size_t)i * BR_CATEGORY_ENTRY_BYTES, t->names[i], strlen(t->names[i]));
}

int br_category_table_decode(const uint8_t *raw, unsigned count, br_category_table *t,
                             br_error *err)
{
    memset(t, 0, sizeof(*t));
    if (count == 0 || count > BR_CATEGORY_MAX)
        return br_error_set(err, -EINVAL, "category table: %u categories, expected 1..%d", count,
                            BR_CATEGORY_MAX);
    for (unsigned i = 0; i < count; i++) {
        const uint8_t *e = raw + (size_t)i * BR_CATEGORY_ENTRY_BYTES;
        size_t len = strnlen((const char *)e, BR_CATEGORY_ENTRY_BYTES);
        for (size_t j = len; j < BR_CATEGORY_ENTRY_BYTES; j++)
            if (e[j])
                return br_error_set(err, -EINVAL, "category table: entry %u is not NUL-padded",
                                    i + 1);
        if (!category_name_ok((const char *)e, len))
            return br_error_set(err, -EINVAL, "category table: entry %u is not a category name",
                                i + 1);
        memcpy(t->names[i], e, len);
        for (unsigned k = 0; k < i; k++)
            if (!strcmp(t->names[k], t->names[i]))
                return br_error_set(err, -EINVAL, "category table: entry %u repeats entry %u",
                                    i + 1, k + 1);
    }
    t->count = count;
    return 0;
}
