/* SPDX-License-Identifier: MIT */
/* The directory modules' options (docs/directories.md, "Options"): one
 * table of names and parsers, so the Kerberos profile reader and the
 * ppolicy argument words accept exactly the same set. A new option is a
 * row here and a paragraph in docs/directories.md. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "dirmod.h"

void dm_options_init(dm_options *o)
{
    memset(o, 0, sizeof(*o));
    snprintf(o->socket, sizeof(o->socket), "%s", BREACHD_DEFAULT_SOCKET);
    o->min_count = 1;
    o->on_error = DM_REJECT;
    o->on_unknown = DM_REJECT;
    o->timeout_ms = DM_DEFAULT_TIMEOUT_MS;
    o->similar = DM_SIMILAR_WARN;
    o->similar_min_count = DM_DEFAULT_SIMILAR_MIN_COUNT;
}

static bool eq(const char *s, size_t len, const char *lit)
{
    return strlen(lit) == len && memcmp(s, lit, len) == 0;
}

/* Decimal digits only, no sign, no overflow past max. */
static bool parse_u64(const char *s, size_t len, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t n = 0;
    if (len == 0 || len > 20)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (n > (max - d) / 10)
            return false;
        n = n * 10 + d;
    }
    if (n < min)
        return false;
    *out = n;
    return true;
}

static bool set_socket(dm_options *o, const char *v, size_t len)
{
    if (len == 0 || v[0] != '/' || len >= sizeof(o->socket) || memchr(v, '\0', len))
        return false;
    memcpy(o->socket, v, len);
    o->socket[len] = '\0';
    return true;
}

static bool set_min_count(dm_options *o, const char *v, size_t len)
{
    return parse_u64(v, len, 1, INT64_MAX, &o->min_count);
}

static bool parse_policy(const char *v, size_t len, dm_policy *out)
{
    if (eq(v, len, "allow"))
        *out = DM_ALLOW;
    else if (eq(v, len, "reject") || eq(v, len, "deny"))
        *out = DM_REJECT;
    else
        return false;
    return true;
}

static bool set_on_error(dm_options *o, const char *v, size_t len)
{
    return parse_policy(v, len, &o->on_error);
}

static bool set_on_unknown(dm_options *o, const char *v, size_t len)
{
    return parse_policy(v, len, &o->on_unknown);
}

/* reject | warn | off, as values[0], [1], [2] (similar, banned). */
static bool set_rwo(const char *v, size_t len, const int values[3], int *out)
{
    static const char *const names[] = {"reject", "warn", "off"};
    for (int i = 0; i < 3; i++)
        if (eq(v, len, names[i])) {
            *out = values[i];
            return true;
        }
    return false;
}

static bool set_similar(dm_options *o, const char *v, size_t len)
{
    static const int values[] = {DM_SIMILAR_REJECT, DM_SIMILAR_WARN, DM_SIMILAR_OFF};
    return set_rwo(v, len, values, (int *)&o->similar);
}

static bool set_banned(dm_options *o, const char *v, size_t len)
{
    static const int values[] = {DM_BANNED_REJECT, DM_BANNED_WARN, DM_BANNED_OFF};
    return set_rwo(v, len, values, (int *)&o->banned);
}

static bool set_similar_min_count(dm_options *o, const char *v, size_t len)
{
    return parse_u64(v, len, 1, INT64_MAX, &o->similar_min_count);
}

/* N or Nms: milliseconds; Ns: seconds. */
static bool set_timeout(dm_options *o, const char *v, size_t len)
{
    uint64_t mult = 1, n;
    if (len > 2 && eq(v + len - 2, 2, "ms"))
        len -= 2;
    else if (len > 1 && v[len - 1] == 's')
        len -= 1, mult = 1000;
    if (!parse_u64(v, len, 1, DM_MAX_TIMEOUT_MS, &n) || n * mult > DM_MAX_TIMEOUT_MS)
        return false;
    o->timeout_ms = (int)(n * mult);
    return true;
}

static const struct dm_option_row {
    const char *name;
    bool (*set)(dm_options *o, const char *v, size_t len);
    const char *expect; /* for the error message */
} rows[] = {
    {"socket", set_socket, "an absolute path shorter than 108 bytes"},
    {"min_count", set_min_count, "a count from 1"},
    {"on_error", set_on_error, "allow or reject"},
    {"on_unknown", set_on_unknown, "allow or reject"},
    {"timeout", set_timeout, "milliseconds (N, Nms) or seconds (Ns), at most 60s"},
    {"similar", set_similar, "reject, warn or off"},
    {"similar_min_count", set_similar_min_count, "a count from 1"},
    {"banned", set_banned, "reject, warn or off"},
};

/* Option text for messages: printable ASCII, cut at 40 bytes. */
static void printable(const char *s, size_t len, char *out, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < len && i < 40 && o + 1 < size; i++)
        out[o++] = s[i] > 0x20 && s[i] < 0x7f ? s[i] : '?';
    out[o] = '\0';
}

int dm_option_set(dm_options *o, const char *key, size_t key_len, const char *val, size_t val_len,
                  char *err, size_t err_size)
{
    char k[48];
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (!eq(key, key_len, rows[i].name))
            continue;
        if (rows[i].set(o, val, val_len))
            return 0;
        snprintf(err, err_size, "bad value of option %s: expected %s", rows[i].name,
                 rows[i].expect);
        return -EINVAL;
    }
    printable(key, key_len, k, sizeof(k));
    snprintf(err, err_size, "unknown option '%s'", k);
    return -EINVAL;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int dm_options_parse_words(dm_options *o, const char *s, size_t len, char *err, size_t err_size)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && blank(s[i]))
            i++;
        size_t start = i;
        while (i < len && !blank(s[i]))
            i++;
        if (i == start)
            break;
        const char *eqs = memchr(s + start, '=', i - start);
        if (!eqs) {
            char w[48];
            printable(s + start, i - start, w, sizeof(w));
            snprintf(err, err_size, "option '%s' is not key=value", w);
            return -EINVAL;
        }
        size_t klen = (size_t)(eqs - (s + start));
        int r = dm_option_set(o, s + start, klen, eqs + 1, i - start - klen - 1, err, err_size);
        if (r < 0)
            return r;
    }
    return 0;
}
