/* SPDX-License-Identifier: MIT */
/* breachd.conf values: the parsers of durations, sizes, numbers, modes, log
 * levels, paths, URL templates, proxy URLs and listen addresses (the user and
 * group lists are in conf_access.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <syslog.h>

#include "conf_int.h"

#define MAX_URL 2048

const bd_conf_choices bd_conf_log_levels = {
    .noun = "log level",
    .n = 5,
    .v = {{"error", LOG_ERR},
          {"warning", LOG_WARNING},
          {"notice", LOG_NOTICE},
          {"info", LOG_INFO},
          {"debug", LOG_DEBUG}},
};

const bd_conf_choices bd_conf_when_stale = {
    .noun = "when_stale value",
    .n = 3,
    .v = {{"filter", BREACHD_WHEN_STALE_FILTER},
          {"upstream", BREACHD_WHEN_STALE_UPSTREAM},
          {"unknown", BREACHD_WHEN_STALE_UNKNOWN}},
};

const bd_conf_choices bd_conf_partition = {
    .noun = "partition value",
    .n = 2,
    .v = {{"uid", BREACHD_PARTITION_UID}, {"none", BREACHD_PARTITION_NONE}},
};

const bd_conf_choices bd_conf_yes_no = {
    .noun = "value",
    .n = 2,
    .v = {{"no", 0}, {"yes", 1}},
};

/* ---- small helpers ------------------------------------------------------------- */

/* Decimal digits from *p into *out, stopping at the first non-digit.
 * false: no digit, or over UINT64_MAX. */
bool bd_conf_take_u64(const char **p, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (*s < '0' || *s > '9')
        return false;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *p = s;
    *out = v;
    return true;
}

/* A value as it may appear in a message: quoted, cut after 80 bytes. */
void bd_conf_quote_value(char *buf, size_t len, const char *value)
{
    if (strlen(value) > 80)
        snprintf(buf, len, "\"%.80s...\"", value);
    else
        snprintf(buf, len, "\"%s\"", value);
}

/* ---- value parsers: 0, or -EINVAL with the reason in err ---------------------- */

/* Duration in milliseconds: INTEGER [ms|s|m|h|d]; bare = seconds. */
int bd_conf_parse_duration_ms(const char *v, uint64_t *out_ms, br_error *err)
{
    char q[100];
    bd_conf_quote_value(q, sizeof(q), v);
    const char *p = v;
    uint64_t n;
    if (!bd_conf_take_u64(&p, &n))
        return br_error_set(
            err, -EINVAL,
            "bad duration %s: expected a whole number with a unit ms, s, m, h or d "
            "(e.g. 45d, 5s)",
            q);
    uint64_t mul;
    if (strcmp(p, "ms") == 0)
        mul = 1;
    else if (strcmp(p, "s") == 0 || *p == '\0')
        mul = 1000;
    else if (strcmp(p, "m") == 0)
        mul = 60 * 1000;
    else if (strcmp(p, "h") == 0)
        mul = 3600 * 1000;
    else if (strcmp(p, "d") == 0)
        mul = 86400 * 1000;
    else
        return br_error_set(err, -EINVAL,
                               "bad duration %s: the unit must be one of ms, s, m, h, d "
                               "(e.g. 45d, 5s)",
                               q);
    if (n > UINT64_MAX / mul)
        return br_error_set(err, -EINVAL, "bad duration %s: too large", q);
    *out_ms = n * mul;
    return 0;
}

/* A duration kept in whole seconds, within [min_s, max_s]. */
int bd_conf_parse_duration_s(const char *v, int64_t min_s, int64_t max_s, int64_t *out, br_error *err)
{
    uint64_t ms;
    int rc = bd_conf_parse_duration_ms(v, &ms, err);
    if (rc < 0)
        return rc;
    char q[100];
    bd_conf_quote_value(q, sizeof(q), v);
    if (ms % 1000)
        return br_error_set(err, -EINVAL, "%s is not a whole number of seconds", q);
    uint64_t s = ms / 1000;
    if (s < (uint64_t)min_s || s > (uint64_t)max_s) {
        char lo[32], hi[32];
        bd_conf_format_duration_s(lo, sizeof(lo), min_s);
        bd_conf_format_duration_s(hi, sizeof(hi), max_s);
        return br_error_set(err, -EINVAL, "%s is out of range (%s .. %s)", q, lo, hi);
    }
    *out = (int64_t)s;
    return 0;
}

/* A duration kept in milliseconds, within [min_ms, max_ms]. */
int bd_conf_parse_millis(const char *v, uint32_t min_ms, uint32_t max_ms, uint32_t *out,
                         br_error *err)
{
    uint64_t ms;
    int rc = bd_conf_parse_duration_ms(v, &ms, err);
    if (rc < 0)
        return rc;
    if (ms < min_ms || ms > max_ms) {
        char q[100], lo[32], hi[32];
        bd_conf_quote_value(q, sizeof(q), v);
        /* Bounds in ms or s, as breachd.conf(5) writes them: "100ms .. 300s". */
        snprintf(lo, sizeof(lo), min_ms % 1000 ? "%" PRIu32 "ms" : "%" PRIu32 "s",
                 min_ms % 1000 ? min_ms : min_ms / 1000);
        snprintf(hi, sizeof(hi), max_ms % 1000 ? "%" PRIu32 "ms" : "%" PRIu32 "s",
                 max_ms % 1000 ? max_ms : max_ms / 1000);
        return br_error_set(err, -EINVAL, "%s is out of range (%s .. %s)", q, lo, hi);
    }
    *out = (uint32_t)ms;
    return 0;
}

/* Size in bytes: INTEGER [K|M|G] (powers of 1024, either case). */
int bd_conf_parse_size(const char *v, uint64_t min, uint64_t max, uint64_t *out, br_error *err)
{
    char q[100];
    bd_conf_quote_value(q, sizeof(q), v);
    const char *p = v;
    uint64_t n;
    if (!bd_conf_take_u64(&p, &n))
        return br_error_set(err, -EINVAL,
                               "bad size %s: expected a whole number with an optional unit K, M "
                               "or G (e.g. 512M, 1G)",
                               q);
    unsigned shift;
    if (*p == '\0')
        shift = 0;
    else if ((*p == 'K' || *p == 'k') && p[1] == '\0')
        shift = 10;
    else if ((*p == 'M' || *p == 'm') && p[1] == '\0')
        shift = 20;
    else if ((*p == 'G' || *p == 'g') && p[1] == '\0')
        shift = 30;
    else
        return br_error_set(err, -EINVAL, "bad size %s: the unit must be K, M or G (powers of 1024)", q);
    if (n > (UINT64_MAX >> shift))
        return br_error_set(err, -EINVAL, "bad size %s: too large", q);
    n <<= shift;
    if (n < min || n > max) {
        char lo[32], hi[32];
        bd_conf_format_size(lo, sizeof(lo), min);
        bd_conf_format_size(hi, sizeof(hi), max);
        return br_error_set(err, -EINVAL, "size %s is out of range (%s .. %s)", q, lo, hi);
    }
    *out = n;
    return 0;
}

int bd_conf_parse_uint(const char *v, uint32_t min, uint32_t max, uint32_t *out, br_error *err)
{
    char q[100];
    bd_conf_quote_value(q, sizeof(q), v);
    const char *p = v;
    uint64_t n;
    if (!bd_conf_take_u64(&p, &n) || *p)
        return br_error_set(
            err, -EINVAL, "bad number %s: expected a whole number %" PRIu32 " .. %" PRIu32, q, min, max);
    if (n < min || n > max)
        return br_error_set(err, -EINVAL, "%s is out of range (%" PRIu32 " .. %" PRIu32 ")", q, min, max);
    *out = (uint32_t)n;
    return 0;
}

int bd_conf_parse_percent(const char *v, uint32_t min, uint32_t max, uint32_t *out, br_error *err)
{
    char q[100];
    bd_conf_quote_value(q, sizeof(q), v);
    const char *p = v;
    uint64_t n;
    if (!bd_conf_take_u64(&p, &n) || (*p && strcmp(p, "%") != 0))
        return br_error_set(err, -EINVAL,
                            "bad percentage %s: expected a whole number %" PRIu32 "%% .. %" PRIu32
                            "%%, e.g. 50%%",
                            q, min, max);
    if (n < min || n > max)
        return br_error_set(err, -EINVAL, "%s is out of range (%" PRIu32 "%% .. %" PRIu32 "%%)", q,
                            min, max);
    *out = (uint32_t)n;
    return 0;
}

int bd_conf_parse_mode(const char *v, mode_t *out, br_error *err)
{
    char q[100];
    bd_conf_quote_value(q, sizeof(q), v);
    size_t len = strlen(v);
    if (len == 0 || len > 4 || strspn(v, "01234567") != len)
        return br_error_set(err, -EINVAL, "bad mode %s: expected octal digits, e.g. 0660", q);
    unsigned long m = strtoul(v, NULL, 8);
    if (m > 0777)
        return br_error_set(err, -EINVAL, "bad mode %s: at most 0777 (no setuid, setgid or sticky bits)",
                               q);
    *out = (mode_t)m;
    return 0;
}

/* One of ch's names, any case. */
int bd_conf_parse_choice(const char *v, const bd_conf_choices *ch, int *out, br_error *err)
{
    char names[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < ch->n; i++) {
        if (strcasecmp(v, ch->v[i].name) == 0) {
            *out = ch->v[i].value;
            return 0;
        }
        const char *sep = i == 0 ? "" : i + 1 == ch->n ? " or " : ", ";
        int w = snprintf(names + used, sizeof(names) - used, "%s%s", sep, ch->v[i].name);
        if (w > 0 && (size_t)w < sizeof(names) - used)
            used += (size_t)w;
    }
    char q[100];
    bd_conf_quote_value(q, sizeof(q), v);
    return br_error_set(err, -EINVAL, "bad %s %s: expected %s", ch->noun, q, names);
}

/* "" or absolute. */
int bd_conf_check_path(const char *v, bool allow_empty, size_t max_len, br_error *err)
{
    char q[100];
    bd_conf_quote_value(q, sizeof(q), v);
    if (!*v)
        return allow_empty ? 0 : br_error_set(err, -EINVAL, "must not be empty");
    if (v[0] != '/')
        return br_error_set(err, -EINVAL, "%s is not an absolute path", q);
    if (strlen(v) > max_len)
        return br_error_set(err, -EINVAL, "path %s is too long (at most %zu bytes)", q, max_len);
    return 0;
}

int breachd_config_list_split(const char *v, char ***items, size_t *n)
{
    *items = NULL;
    *n = 0;
    char **out = NULL;
    size_t k = 0;
    for (const char *p = v;;) {
        while (is_blank(*p))
            p++;
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len > 0 && is_blank(p[len - 1]))
            len--;
        if (len > 0) {
            char **grown = realloc(out, (k + 1) * sizeof(*out));
            char *item = grown ? strndup(p, len) : NULL;
            if (grown)
                out = grown;
            if (!item) {
                breachd_config_list_free(out, k);
                return -ENOMEM;
            }
            out[k++] = item;
        }
        if (!end)
            break;
        p = end + 1;
    }
    *items = out;
    *n = k;
    return 0;
}

void breachd_config_list_free(char **items, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(items[i]);
    free(items);
}

/* Each item of a list by check; an empty item (",,") is an error. */
static int check_list(const char *v, const char *noun, size_t max_len,
                      int (*check)(const char *item, size_t max_len, br_error *err), br_error *err)
{
    char **items;
    size_t n;
    if (breachd_config_list_split(v, &items, &n) < 0)
        return -ENOMEM;
    size_t commas = 0;
    for (const char *p = v; *p; p++)
        commas += *p == ',';
    int rc = 0;
    if (n != commas + 1)
        rc = br_error_set(err, -EINVAL, "an empty item in the list of %ss", noun);
    else if (n > BREACHD_CONF_MAX_FILES)
        rc = br_error_set(err, -EINVAL, "more than %d %ss", BREACHD_CONF_MAX_FILES, noun);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = check(items[i], max_len, err);
    breachd_config_list_free(items, n);
    return rc;
}

static int check_one_path(const char *item, size_t max_len, br_error *err)
{
    return bd_conf_check_path(item, false, max_len, err);
}

int bd_conf_check_paths(const char *v, bool allow_empty, size_t max_len, br_error *err)
{
    if (!*v)
        return allow_empty ? 0 : br_error_set(err, -EINVAL, "must not be empty");
    return check_list(v, "path", max_len, check_one_path, err);
}

/* A filter's URL: http://HOST..., https://HOST... or file:///PATH. */
static int check_one_url(const char *item, size_t max_len, br_error *err)
{
    char q[100];
    bd_conf_quote_value(q, sizeof(q), item);
    if (strlen(item) > max_len)
        return br_error_set(err, -EINVAL, "URL %s is too long (at most %zu bytes)", q, max_len);
    for (const char *p = item; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return br_error_set(err, -EINVAL, "URL %s holds a blank or control character", q);
    const char *rest = NULL;
    if (strncasecmp(item, "https://", 8) == 0)
        rest = item + 8;
    else if (strncasecmp(item, "http://", 7) == 0)
        rest = item + 7;
    else if (strncasecmp(item, "file://", 7) == 0)
        return item[7] == '/' ? 0
                              : br_error_set(err, -EINVAL, "file URL %s must name an absolute path",
                                             q);
    if (!rest)
        return br_error_set(err, -EINVAL, "URL %s must start with https://, http:// or file://", q);
    if (*rest == '/' || *rest == '\0')
        return br_error_set(err, -EINVAL, "URL %s has no host", q);
    return 0;
}

int bd_conf_check_urls(const char *v, br_error *err)
{
    return *v ? check_list(v, "URL", MAX_URL, check_one_url, err) : 0;
}

/* A range API URL template (docs/upstream.md); "" allowed (none). */
int bd_conf_check_url_template(const char *v, br_error *err)
{
    char q[100];
    bd_conf_quote_value(q, sizeof(q), v);
    if (!*v || strcmp(v, "none") == 0) /* none: no range API (breachd.conf(5)) */
        return 0;
    if (strlen(v) > MAX_URL)
        return br_error_set(err, -EINVAL, "URL template is too long (at most %d bytes)", MAX_URL);
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return br_error_set(err, -EINVAL, "URL template %s holds a blank or control character", q);
    const char *rest;
    bool is_file = false;
    if (strncasecmp(v, "https://", 8) == 0)
        rest = v + 8;
    else if (strncasecmp(v, "http://", 7) == 0)
        rest = v + 7;
    else if (strncasecmp(v, "file://", 7) == 0) {
        rest = v + 7;
        is_file = true;
    } else
        return br_error_set(err, -EINVAL, "URL template %s must start with https://, http:// or file://",
                               q);
    if (is_file && *rest != '/')
        return br_error_set(err, -EINVAL,
                               "file URL %s must name an absolute path, e.g. "
                               "file:///srv/mirror/{prefix}.txt",
                               q);
    if (!is_file && (*rest == '/' || *rest == '\0' || *rest == '{'))
        return br_error_set(err, -EINVAL, "URL template %s has no host", q);
    if (!strstr(v, "{prefix}"))
        return br_error_set(err, -EINVAL, "URL template %s has no {prefix}", q);
    /* Braces only as {prefix}: catches {Prefix}, {hash}, a lost brace. */
    for (const char *p = v; *p; p++) {
        if (strncmp(p, "{prefix}", 8) == 0)
            p += 7;
        else if (*p == '{' || *p == '}')
            return br_error_set(err, -EINVAL, "URL template %s: only {prefix} may appear in braces", q);
    }
    return 0;
}

int bd_conf_check_proxy(const char *v, br_error *err)
{
    static const char *const schemes[] = {"http://",    "https://",  "socks4://",
                                          "socks4a://", "socks5://", "socks5h://"};
    char q[100];
    bd_conf_quote_value(q, sizeof(q), v);
    if (!*v)
        return 0;
    if (strlen(v) > MAX_URL)
        return br_error_set(err, -EINVAL, "proxy URL is too long (at most %d bytes)", MAX_URL);
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return br_error_set(err, -EINVAL, "proxy URL %s holds a blank or control character", q);
    for (size_t i = 0; i < BR_ARRAY_SIZE(schemes); i++) {
        size_t n = strlen(schemes[i]);
        if (strncasecmp(v, schemes[i], n) == 0) {
            if (v[n] == '\0' || v[n] == '/')
                return br_error_set(err, -EINVAL, "proxy URL %s has no host", q);
            return 0;
        }
    }
    return br_error_set(err, -EINVAL,
                           "proxy URL %s must start with http://, https://, socks4://, socks4a://, "
                           "socks5:// or socks5h://",
                           q);
}

/* HOST:PORT, HOST = an IPv4 address in 127.0.0.0/8 or [::1]. */
int bd_conf_parse_listen(const char *v, char host[48], uint16_t *port, br_error *err)
{
    char q[100];
    bd_conf_quote_value(q, sizeof(q), v);
    if (!*v) {
        host[0] = '\0';
        *port = 0;
        return 0;
    }
    char addr[64];
    const char *port_text;
    bool v6 = false;
    if (v[0] == '[') {
        const char *close = strchr(v, ']');
        if (!close || close[1] != ':' || (size_t)(close - v - 1) >= sizeof(addr))
            return br_error_set(err, -EINVAL,
                                   "bad address %s: expected HOST:PORT, e.g. 127.0.0.1:9750 or "
                                   "[::1]:9750",
                                   q);
        memcpy(addr, v + 1, (size_t)(close - v - 1));
        addr[close - v - 1] = '\0';
        port_text = close + 2;
        v6 = true;
    } else {
        const char *colon = strrchr(v, ':');
        if (!colon || (size_t)(colon - v) >= sizeof(addr))
            return br_error_set(err, -EINVAL,
                                   "bad address %s: expected HOST:PORT, e.g. 127.0.0.1:9750 or "
                                   "[::1]:9750",
                                   q);
        memcpy(addr, v, (size_t)(colon - v));
        addr[colon - v] = '\0';
        port_text = colon + 1;
        if (strchr(addr, ':'))
            return br_error_set(err, -EINVAL,
                                   "bad address %s: write an IPv6 address in brackets, e.g. "
                                   "[::1]:9750",
                                   q);
    }
    const char *p = port_text;
    uint64_t pn;
    if (!bd_conf_take_u64(&p, &pn) || *p || pn < 1 || pn > 65535)
        return br_error_set(err, -EINVAL, "bad port in %s: expected 1 .. 65535", q);

    static const char loopback_only[] =
        "the metrics are served without authentication, so only a loopback address "
        "(127.0.0.0/8 or [::1]) is allowed";
    if (v6) {
        struct in6_addr a6;
        if (inet_pton(AF_INET6, addr, &a6) != 1)
            return br_error_set(err, -EINVAL, "bad address %s: not an IPv6 address", q);
        if (!IN6_IS_ADDR_LOOPBACK(&a6))
            return br_error_set(err, -EINVAL, "%s is not a loopback address: %s", q, loopback_only);
        inet_ntop(AF_INET6, &a6, host, 48);
    } else {
        struct in_addr a4;
        if (inet_pton(AF_INET, addr, &a4) != 1)
            return br_error_set(err, -EINVAL, "%s is not a numeric loopback address: %s", q,
                                   loopback_only);
        if ((ntohl(a4.s_addr) >> 24) != 127)
            return br_error_set(err, -EINVAL, "%s is not a loopback address: %s", q, loopback_only);
        inet_ntop(AF_INET, &a4, host, 48);
    }
    *port = (uint16_t)pn;
    return 0;
}

const char *breachd_log_level_name(int level)
{
    for (size_t i = 0; i < bd_conf_log_levels.n; i++)
        if (bd_conf_log_levels.v[i].value == level)
            return bd_conf_log_levels.v[i].name;
    return NULL;
}
