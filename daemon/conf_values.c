/* SPDX-License-Identifier: MIT */
/* breachd.conf values (conf_values.h): the parsers of durations, sizes,
 * numbers, modes, log levels, paths, URL templates, proxy URLs, listen
 * addresses, the [http] listen and allowed_networks lists, the user and group
 * lists (names resolved once at load), and the canonical spellings the dump
 * writes. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>

#include "conf_values.h"

#define MAX_URL 2048
#define MAX_LISTEN 16
#define MAX_NETWORKS 256
#define ITEM_MAX 512

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
        return br_error_set(err, -EINVAL,
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
int bd_conf_parse_duration_s(const char *v, int64_t min_s, int64_t max_s, int64_t *out,
                             br_error *err)
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
        return br_error_set(err, -EINVAL,
                            "bad size %s: the unit must be K, M or G (powers of 1024)", q);
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
        return br_error_set(err, -EINVAL,
                            "bad number %s: expected a whole number %" PRIu32 " .. %" PRIu32, q,
                            min, max);
    if (n < min || n > max)
        return br_error_set(err, -EINVAL, "%s is out of range (%" PRIu32 " .. %" PRIu32 ")", q, min,
                            max);
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
        return br_error_set(err, -EINVAL,
                            "bad mode %s: at most 0777 (no setuid, setgid or sticky bits)", q);
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
        return item[7] == '/'
                   ? 0
                   : br_error_set(err, -EINVAL, "file URL %s must name an absolute path", q);
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
            return br_error_set(err, -EINVAL, "URL template %s holds a blank or control character",
                                q);
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
        return br_error_set(err, -EINVAL,
                            "URL template %s must start with https://, http:// or file://", q);
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
            return br_error_set(err, -EINVAL, "URL template %s: only {prefix} may appear in braces",
                                q);
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

/* ---- [http] lists: listen, allowed_networks ---------------------------------------- */

/* The start of a list for next_item: NULL when v is empty or blank. */
static const char *list_start(const char *v)
{
    for (const char *s = v; *s; s++)
        if (!is_blank(*s))
            return v;
    return NULL;
}

/* The next comma-separated item of *p, blanks trimmed, into item (ITEM_MAX
 * bytes). false at the end of the list; -1 in *bad for an empty (a comma
 * too many) or over-long item. */
static bool next_item(const char **p, char item[ITEM_MAX], int *bad)
{
    const char *s = *p;
    if (!s)
        return false;
    const char *comma = strchr(s, ',');
    const char *end = comma ? comma : s + strlen(s);
    *p = comma ? comma + 1 : NULL;
    while (s < end && is_blank(*s))
        s++;
    while (end > s && is_blank(end[-1]))
        end--;
    if (end == s || (size_t)(end - s) >= ITEM_MAX) {
        *bad = -1;
        return true;
    }
    memcpy(item, s, (size_t)(end - s));
    item[end - s] = '\0';
    return true;
}

/* ---- listen ------------------------------------------------------------------- */

static int parse_path_item(const char *item, breachd_listen *l, br_error *err)
{
    char q[100];
    bd_conf_quote_value(q, sizeof(q), item);
    if (strlen(item) >= sizeof(l->path) ||
        strlen(item) >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
        return br_error_set(err, -EINVAL, "socket path %s is too long (at most %zu bytes)", q,
                            sizeof(l->path) - 1);
    l->family = AF_UNIX;
    snprintf(l->path, sizeof(l->path), "%s", item);
    return 0;
}

static int parse_addr_item(const char *item, breachd_listen *l, br_error *err)
{
    char q[100];
    bd_conf_quote_value(q, sizeof(q), item);
    char addr[64];
    const char *port_text;
    if (item[0] == '[') {
        const char *close = strchr(item, ']');
        if (!close || close[1] != ':' || (size_t)(close - item - 1) >= sizeof(addr))
            goto bad;
        memcpy(addr, item + 1, (size_t)(close - item - 1));
        addr[close - item - 1] = '\0';
        port_text = close + 2;
        l->family = AF_INET6;
    } else {
        const char *colon = strrchr(item, ':');
        if (!colon || (size_t)(colon - item) >= sizeof(addr) ||
            memchr(item, ':', (size_t)(colon - item)))
            goto bad;
        memcpy(addr, item, (size_t)(colon - item));
        addr[colon - item] = '\0';
        port_text = colon + 1;
        l->family = AF_INET;
    }
    const char *p = port_text;
    uint64_t pn;
    if (!bd_conf_take_u64(&p, &pn) || *p || pn < 1 || pn > 65535)
        return br_error_set(err, -EINVAL, "bad port in %s: expected 1 .. 65535", q);
    uint8_t bin[16];
    if (inet_pton(l->family, addr, bin) != 1)
        return br_error_set(err, -EINVAL,
                            "%s: not a numeric %s address (names are not resolved), e.g. "
                            "10.0.0.5:8080 or [::1]:8080",
                            q, l->family == AF_INET ? "IPv4" : "IPv6");
    inet_ntop(l->family, bin, l->host, sizeof(l->host));
    l->port = (uint16_t)pn;
    return 0;
bad:
    return br_error_set(err, -EINVAL,
                        "bad listen item %s: expected HOST:PORT with a numeric address "
                        "(10.0.0.5:8080, [::1]:8080) or an absolute Unix socket path",
                        q);
}

int bd_conf_parse_listen_list(const char *v, breachd_listen **out, size_t *n_out, br_error *err)
{
    breachd_listen items[MAX_LISTEN];
    size_t n = 0;
    char item[ITEM_MAX];
    int bad = 0;
    for (const char *p = list_start(v); next_item(&p, item, &bad);) {
        if (bad)
            return br_error_set(err, -EINVAL, "an empty or over-long item in the list");
        if (n == MAX_LISTEN)
            return br_error_set(err, -EINVAL, "more than %d items", MAX_LISTEN);
        breachd_listen *l = &items[n];
        memset(l, 0, sizeof(*l));
        int rc = item[0] == '/' ? parse_path_item(item, l, err) : parse_addr_item(item, l, err);
        if (rc < 0)
            return rc;
        for (size_t i = 0; i < n; i++)
            if (items[i].family == l->family && items[i].port == l->port &&
                !strcmp(items[i].host, l->host) && !strcmp(items[i].path, l->path))
                return br_error_set(err, -EINVAL, "\"%s\" is listed twice", item);
        n++;
    }
    *out = NULL;
    *n_out = n;
    if (n == 0)
        return 0;
    *out = malloc(n * sizeof(**out));
    if (!*out)
        return -ENOMEM;
    memcpy(*out, items, n * sizeof(**out));
    return 0;
}

/* ---- allowed_networks ---------------------------------------------------------------- */

static int parse_network(const char *item, breachd_network *net, br_error *err)
{
    char q[100], addr[64];
    bd_conf_quote_value(q, sizeof(q), item);
    const char *slash = strchr(item, '/');
    size_t alen = slash ? (size_t)(slash - item) : strlen(item);
    if (alen >= sizeof(addr))
        return br_error_set(err, -EINVAL, "bad network %s", q);
    memcpy(addr, item, alen);
    addr[alen] = '\0';
    net->family = strchr(addr, ':') ? AF_INET6 : AF_INET;
    unsigned max_bits = net->family == AF_INET ? 32 : 128;
    memset(net->addr, 0, sizeof(net->addr));
    if (inet_pton(net->family, addr, net->addr) != 1)
        return br_error_set(err, -EINVAL,
                            "bad network %s: expected ADDRESS/BITS with a numeric address, "
                            "e.g. 10.0.0.0/8 or fd00::/8",
                            q);
    uint64_t bits = max_bits;
    if (slash) {
        const char *p = slash + 1;
        if (!bd_conf_take_u64(&p, &bits) || *p || bits > max_bits)
            return br_error_set(err, -EINVAL, "bad prefix length in %s: expected 0 .. %u", q,
                                max_bits);
    }
    net->bits = (uint8_t)bits;
    for (unsigned b = (unsigned)bits; b < max_bits; b++)
        if (net->addr[b / 8] & (0x80 >> (b % 8))) {
            char fixed[64];
            for (unsigned c = (unsigned)bits; c < max_bits; c++)
                net->addr[c / 8] &= (uint8_t) ~(0x80 >> (c % 8));
            inet_ntop(net->family, net->addr, fixed, sizeof(fixed));
            return br_error_set(err, -EINVAL, "network %s has host bits set: did you mean %s/%u?",
                                q, fixed, (unsigned)bits);
        }
    return 0;
}

int bd_conf_parse_networks(const char *v, breachd_network **out, size_t *n_out, br_error *err)
{
    *out = NULL;
    *n_out = 0;
    size_t n = 0, cap = 0;
    breachd_network *nets = NULL;
    char item[ITEM_MAX];
    int bad = 0;
    for (const char *p = list_start(v); next_item(&p, item, &bad);) {
        int rc = 0;
        if (bad)
            rc = br_error_set(err, -EINVAL, "an empty or over-long item in the list");
        else if (n == MAX_NETWORKS)
            rc = br_error_set(err, -EINVAL, "more than %d networks", MAX_NETWORKS);
        if (rc == 0 && n == cap) {
            cap = cap ? 2 * cap : 8;
            breachd_network *grown = realloc(nets, cap * sizeof(*nets));
            if (!grown)
                rc = -ENOMEM;
            else
                nets = grown;
        }
        if (rc == 0)
            rc = parse_network(item, &nets[n++], err);
        if (rc < 0) {
            free(nets);
            return rc;
        }
    }
    *out = nets;
    *n_out = n;
    return 0;
}

/* ---- user and group lists ------------------------------------------------------ */

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Resolve one user or group name. 0: found; -ENOENT: no such name; other
 * negative errno: the lookup failed. */
static int lookup_id(const char *name, bool group, uint32_t *id)
{
    if (strcmp(name, "root") == 0) { /* uid and gid 0 everywhere: no NSS lookup */
        *id = 0;
        return 0;
    }
    long hint = sysconf(group ? _SC_GETGR_R_SIZE_MAX : _SC_GETPW_R_SIZE_MAX);
    size_t len = hint > 0 ? (size_t)hint : 1024;
    for (;;) {
        _cleanup_free_ char *buf = malloc(len);
        if (!buf)
            return -ENOMEM;
        int r;
        bool found;
        if (group) {
            struct group gr, *res = NULL;
            r = getgrnam_r(name, &gr, buf, len, &res);
            found = r == 0 && res;
            if (found)
                *id = (uint32_t)gr.gr_gid;
        } else {
            struct passwd pw, *res = NULL;
            r = getpwnam_r(name, &pw, buf, len, &res);
            found = r == 0 && res;
            if (found)
                *id = (uint32_t)pw.pw_uid;
        }
        if (found)
            return 0;
        if (r == ERANGE && len < (1u << 20)) {
            len *= 2;
            continue;
        }
        /* getpwnam(3): 0, ENOENT, ESRCH, EBADF or EPERM all may mean "not found". */
        if (r == 0 || r == ENOENT || r == ESRCH || r == EBADF || r == EPERM)
            return -ENOENT;
        return -r;
    }
}

/* A comma list of names or numeric ids -> a sorted array without duplicates. */
int bd_conf_parse_id_list(const char *v, bool group, uint32_t **out, size_t *n_out, br_error *err)
{
    const char *what = group ? "group" : "user";
    *out = NULL;
    *n_out = 0;
    if (!*v)
        return 0;
    _cleanup_free_ char *copy = strdup(v);
    size_t cap = 1;
    for (const char *p = v; *p; p++)
        cap += *p == ',';
    if (cap > BREACHD_CONF_MAX_LIST)
        return br_error_set(err, -EINVAL, "more than %d entries", BREACHD_CONF_MAX_LIST);
    _cleanup_free_ uint32_t *ids = calloc(cap, sizeof(*ids));
    if (!copy || !ids)
        return -ENOMEM;
    size_t n = 0;
    char *entry = copy;
    for (;;) {
        char *comma = strchr(entry, ',');
        if (comma)
            *comma = '\0';
        char *name = skip_blanks(entry);
        rstrip_blanks(name);
        if (!*name)
            return br_error_set(err, -EINVAL, "empty entry in the %s list (a stray comma?)", what);
        char q[100];
        bd_conf_quote_value(q, sizeof(q), name);
        if (all_digits(name)) {
            const char *p = name;
            uint64_t id;
            if (!bd_conf_take_u64(&p, &id) || id >= UINT32_MAX)
                return br_error_set(err, -EINVAL, "%s id %s is out of range", what, q);
            ids[n++] = (uint32_t)id;
        } else {
            int rc = lookup_id(name, group, &ids[n]);
            if (rc == -ENOENT)
                return br_error_set(err, -EINVAL, "unknown %s %s", what, q);
            if (rc == -ENOMEM)
                return rc;
            if (rc < 0)
                return br_error_set(err, -EINVAL, "cannot look up %s %s: %s", what, q,
                                    strerror(-rc));
            n++;
        }
        if (!comma)
            break;
        entry = comma + 1;
    }
    qsort(ids, n, sizeof(*ids), cmp_u32);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || ids[m - 1] != ids[i])
            ids[m++] = ids[i];
    *out = BR_TAKE_PTR(ids);
    *n_out = m;
    return 0;
}

/* ---- the canonical spellings ---------------------------------------------------- */

void bd_conf_format_duration_s(char *buf, size_t len, int64_t s)
{
    if (s != 0 && s % 86400 == 0)
        snprintf(buf, len, "%" PRId64 "d", s / 86400);
    else if (s != 0 && s % 3600 == 0)
        snprintf(buf, len, "%" PRId64 "h", s / 3600);
    else if (s != 0 && s % 60 == 0)
        snprintf(buf, len, "%" PRId64 "m", s / 60);
    else
        snprintf(buf, len, "%" PRId64 "s", s);
}

void bd_conf_format_duration_ms(char *buf, size_t len, uint64_t ms)
{
    if (ms % 1000)
        snprintf(buf, len, "%" PRIu64 "ms", ms);
    else
        bd_conf_format_duration_s(buf, len, (int64_t)(ms / 1000));
}

void bd_conf_format_size(char *buf, size_t len, uint64_t n)
{
    if (n != 0 && n % (1u << 30) == 0)
        snprintf(buf, len, "%" PRIu64 "G", n >> 30);
    else if (n != 0 && n % (1u << 20) == 0)
        snprintf(buf, len, "%" PRIu64 "M", n >> 20);
    else if (n != 0 && n % (1u << 10) == 0)
        snprintf(buf, len, "%" PRIu64 "K", n >> 10);
    else
        snprintf(buf, len, "%" PRIu64, n);
}

/* ---- secrets in URLs, as --check-config prints them ---------------------------- */

typedef struct redact_out {
    char *p;
    size_t len, cap; /* cap: size - 1, room for the NUL */
} redact_out;

static void put(redact_out *o, const char *s, size_t n)
{
    n = BR_MIN(n, o->cap - o->len);
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

/* A query parameter name that names a secret; a name too long to look at is
 * taken for one. */
static bool secret_param(const char *name, size_t n)
{
    static const char *const parts[] = {"key",  "token",      "secret",  "pass", "pwd",
                                        "auth", "credential", "session", "sig"};
    char low[64];
    if (n >= sizeof(low))
        return true;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[n] = '\0';
    for (size_t i = 0; i < BR_ARRAY_SIZE(parts); i++)
        if (strstr(low, parts[i]))
            return true;
    return false;
}

/* The authority at v: its userinfo redacted. Returns the bytes read. */
static size_t redact_authority(const char *v, redact_out *o)
{
    size_t n = strcspn(v, "/?#, ");
    const char *at = memrchr(v, '@', n);
    if (!at)
        return 0;
    const char *colon = memchr(v, ':', (size_t)(at - v));
    if (colon)
        put(o, v, (size_t)(colon + 1 - v));
    put(o, "REDACTED", 8);
    return (size_t)(at - v);
}

/* The query at v (after its '?'): secret values redacted. Returns the
 * bytes read. */
static size_t redact_query(const char *v, redact_out *o)
{
    size_t i = 0;
    for (;;) {
        size_t name = strcspn(v + i, "=&;#, ");
        put(o, v + i, name);
        bool secret = secret_param(v + i, name);
        i += name;
        if (v[i] == '=') {
            size_t value = strcspn(v + i + 1, "&;#, ");
            put(o, "=", 1);
            put(o, secret ? "REDACTED" : v + i + 1, secret ? 8 : value);
            i += 1 + value;
        }
        if (v[i] != '&' && v[i] != ';')
            return i;
        put(o, v + i, 1);
        i++;
    }
}

const char *bd_conf_redact_urls(const char *v, char *buf, size_t size)
{
    if (size == 0)
        return "";
    redact_out o = {.p = buf, .cap = size - 1};
    for (const char *s; (s = strstr(v, "://"));) {
        put(&o, v, (size_t)(s + 3 - v));
        v = s + 3;
        v += redact_authority(v, &o);
        size_t path = strcspn(v, "?#, ");
        put(&o, v, path);
        v += path;
        if (*v == '?') {
            put(&o, "?", 1);
            v += 1 + redact_query(v + 1, &o);
        }
    }
    put(&o, v, strlen(v));
    buf[o.len] = '\0';
    return buf;
}
