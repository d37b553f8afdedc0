/* SPDX-License-Identifier: MIT */
/* breachd.conf: libinih does the structure, a line reader of ours keeps the
 * line numbers and the raw text.
 *
 * Why a reader (ini_parse_stream) instead of ini_parse_file: libinih's
 * handler is not told the line number (INI_HANDLER_LINENO is fixed when the
 * library is built, and Debian's libinih1 is built without it, so defining
 * it here would change the callback ABI), and its other build-time choices
 * would silently change what a line means. Measured on Debian 12's libinih
 * r55:
 *   - "k = 5s ; note" gives the value "5s" (inline ';' comments are on);
 *   - an indented line after a key continues that key's value (multi-line
 *     values are on);
 *   - a line over 199 bytes is cut, the handler gets the cut value, and the
 *     rest is parsed as a line of its own;
 *   - "[section] junk" is taken as "[section]".
 * DESIGN.md says a comment is a whole line, so the reader hands libinih only
 * what cannot be misread: blank lines for blank and comment lines, a checked
 * "[section]", and "key=" for a key line, whose value the handler then takes
 * verbatim from the raw line the reader kept. libinih tracks the section and
 * calls the handler; the line number is the reader's count at that moment
 * (libinih calls the handler before it reads the next line). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <grp.h>
#include <ini.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>

#include "conf.h"

/* uid_t and gid_t lists share the uint32_t helpers below. */
_Static_assert(__builtin_types_compatible_p(uid_t, uint32_t), "uid_t is not uint32_t");
_Static_assert(__builtin_types_compatible_p(gid_t, uint32_t), "gid_t is not uint32_t");

#define MAX_RAW_LINE 16384
#define MAX_URL 2048
#define WHY_MAX 320

/* ---- the keys ------------------------------------------------------------------ */

typedef enum key_id {
    K_SOCKET,
    K_SOCKET_MODE,
    K_ALLOWED_USERS,
    K_ALLOWED_GROUPS,
    K_ADMIN_USERS,
    K_LOG_LEVEL,
    K_METRICS_LISTEN,
    K_PW_FILTER,
    K_PW_UPSTREAM,
    K_PW_MAX_FILTER_AGE,
    K_URL_FILTER,
    K_URL_UPSTREAM,
    K_URL_MAX_FILTER_AGE,
    K_CACHE_PATH,
    K_CACHE_MAX_SIZE,
    K_CACHE_TTL,
    K_CACHE_MAX_STALE,
    K_UP_TIMEOUT,
    K_UP_MAX_INFLIGHT,
    K_UP_RATE,
    K_UP_PROXY,
    K_UP_CA_FILE,
    K_UP_DECOYS,
    K_COUNT,
} key_id;

static const struct key_def {
    const char *section;
    const char *name;
} keys[K_COUNT] = {
    [K_SOCKET] = {"daemon", "socket"},
    [K_SOCKET_MODE] = {"daemon", "socket_mode"},
    [K_ALLOWED_USERS] = {"daemon", "allowed_users"},
    [K_ALLOWED_GROUPS] = {"daemon", "allowed_groups"},
    [K_ADMIN_USERS] = {"daemon", "admin_users"},
    [K_LOG_LEVEL] = {"daemon", "log_level"},
    [K_METRICS_LISTEN] = {"daemon", "metrics_listen"},
    [K_PW_FILTER] = {"passwords", "filter"},
    [K_PW_UPSTREAM] = {"passwords", "upstream"},
    [K_PW_MAX_FILTER_AGE] = {"passwords", "max_filter_age"},
    [K_URL_FILTER] = {"urls", "filter"},
    [K_URL_UPSTREAM] = {"urls", "upstream"},
    [K_URL_MAX_FILTER_AGE] = {"urls", "max_filter_age"},
    [K_CACHE_PATH] = {"cache", "path"},
    [K_CACHE_MAX_SIZE] = {"cache", "max_size"},
    [K_CACHE_TTL] = {"cache", "ttl"},
    [K_CACHE_MAX_STALE] = {"cache", "max_stale"},
    [K_UP_TIMEOUT] = {"upstream", "timeout"},
    [K_UP_MAX_INFLIGHT] = {"upstream", "max_inflight"},
    [K_UP_RATE] = {"upstream", "rate"},
    [K_UP_PROXY] = {"upstream", "proxy"},
    [K_UP_CA_FILE] = {"upstream", "ca_file"},
    [K_UP_DECOYS] = {"upstream", "decoys"},
};

static const char *const sections[] = {"daemon", "passwords", "urls", "cache", "upstream"};

static const struct {
    const char *name;
    int level;
} log_levels[] = {
    {"error", LOG_ERR}, {"warning", LOG_WARNING}, {"notice", LOG_NOTICE},
    {"info", LOG_INFO}, {"debug", LOG_DEBUG},
};

/* ---- small helpers ------------------------------------------------------------- */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static char *skip_blanks(char *s)
{
    while (is_blank(*s))
        s++;
    return s;
}

static void rstrip_blanks(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && is_blank(s[n - 1]))
        s[--n] = '\0';
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* Decimal digits from *p into *out, stopping at the first non-digit.
 * false: no digit, or over UINT64_MAX. */
static bool take_u64(const char **p, uint64_t *out)
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

static int set_str(char **dst, const char *value)
{
    char *s = strdup(value);
    if (!s)
        return -ENOMEM;
    free(*dst);
    *dst = s;
    return 0;
}

/* A value as it may appear in a message: quoted, cut after 80 bytes. */
static void quote_value(char *buf, size_t len, const char *value)
{
    if (strlen(value) > 80)
        snprintf(buf, len, "\"%.80s...\"", value);
    else
        snprintf(buf, len, "\"%s\"", value);
}

/* ---- value parsers: 0, or -EINVAL with the reason in why ---------------------- */

static int why_set(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int why_set(char *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, WHY_MAX, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

/* Duration in milliseconds: INTEGER [ms|s|m|h|d]; bare = seconds. */
static int parse_duration_ms(const char *v, uint64_t *out_ms, char *why)
{
    char q[100];
    quote_value(q, sizeof(q), v);
    const char *p = v;
    uint64_t n;
    if (!take_u64(&p, &n))
        return why_set(why,
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
        return why_set(why,
                       "bad duration %s: the unit must be one of ms, s, m, h, d "
                       "(e.g. 45d, 5s)",
                       q);
    if (n > UINT64_MAX / mul)
        return why_set(why, "bad duration %s: too large", q);
    *out_ms = n * mul;
    return 0;
}

static void format_duration_s(char *buf, size_t len, int64_t s);

/* A duration kept in whole seconds, within [min_s, max_s]. */
static int parse_duration_s(const char *v, int64_t min_s, int64_t max_s, int64_t *out, char *why)
{
    uint64_t ms;
    int rc = parse_duration_ms(v, &ms, why);
    if (rc < 0)
        return rc;
    char q[100];
    quote_value(q, sizeof(q), v);
    if (ms % 1000)
        return why_set(why, "%s is not a whole number of seconds", q);
    uint64_t s = ms / 1000;
    if (s < (uint64_t)min_s || s > (uint64_t)max_s) {
        char lo[32], hi[32];
        format_duration_s(lo, sizeof(lo), min_s);
        format_duration_s(hi, sizeof(hi), max_s);
        return why_set(why, "%s is out of range (%s .. %s)", q, lo, hi);
    }
    *out = (int64_t)s;
    return 0;
}

/* Size in bytes: INTEGER [K|M|G] (powers of 1024, either case). */
static int parse_size(const char *v, uint64_t min, uint64_t max, uint64_t *out, char *why)
{
    char q[100];
    quote_value(q, sizeof(q), v);
    const char *p = v;
    uint64_t n;
    if (!take_u64(&p, &n))
        return why_set(why,
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
        return why_set(why, "bad size %s: the unit must be K, M or G (powers of 1024)", q);
    if (n > (UINT64_MAX >> shift))
        return why_set(why, "bad size %s: too large", q);
    n <<= shift;
    if (n < min || n > max)
        return why_set(why, "size %s is out of range (%" PRIu64 "M .. %" PRIu64 "G)", q, min >> 20,
                       max >> 30);
    *out = n;
    return 0;
}

static int parse_uint(const char *v, uint32_t min, uint32_t max, uint32_t *out, char *why)
{
    char q[100];
    quote_value(q, sizeof(q), v);
    const char *p = v;
    uint64_t n;
    if (!take_u64(&p, &n) || *p)
        return why_set(why, "bad number %s: expected a whole number %" PRIu32 " .. %" PRIu32, q,
                       min, max);
    if (n < min || n > max)
        return why_set(why, "%s is out of range (%" PRIu32 " .. %" PRIu32 ")", q, min, max);
    *out = (uint32_t)n;
    return 0;
}

static int parse_mode(const char *v, mode_t *out, char *why)
{
    char q[100];
    quote_value(q, sizeof(q), v);
    size_t len = strlen(v);
    if (len == 0 || len > 4 || strspn(v, "01234567") != len)
        return why_set(why, "bad mode %s: expected octal digits, e.g. 0660", q);
    unsigned long m = strtoul(v, NULL, 8);
    if (m > 0777)
        return why_set(why, "bad mode %s: at most 0777 (no setuid, setgid or sticky bits)", q);
    *out = (mode_t)m;
    return 0;
}

static int parse_log_level(const char *v, int *out, char *why)
{
    for (size_t i = 0; i < BR_ARRAY_SIZE(log_levels); i++)
        if (strcasecmp(v, log_levels[i].name) == 0) {
            *out = log_levels[i].level;
            return 0;
        }
    char q[100];
    quote_value(q, sizeof(q), v);
    return why_set(why, "bad log level %s: expected error, warning, notice, info or debug", q);
}

/* "" or absolute. */
static int check_path(const char *v, bool allow_empty, size_t max_len, char *why)
{
    char q[100];
    quote_value(q, sizeof(q), v);
    if (!*v)
        return allow_empty ? 0 : why_set(why, "must not be empty");
    if (v[0] != '/')
        return why_set(why, "%s is not an absolute path", q);
    if (strlen(v) > max_len)
        return why_set(why, "path %s is too long (at most %zu bytes)", q, max_len);
    return 0;
}

/* A range API URL template (DESIGN.md section 7); "" allowed (none). */
static int check_url_template(const char *v, char *why)
{
    char q[100];
    quote_value(q, sizeof(q), v);
    if (!*v)
        return 0;
    if (strlen(v) > MAX_URL)
        return why_set(why, "URL template is too long (at most %d bytes)", MAX_URL);
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return why_set(why, "URL template %s holds a blank or control character", q);
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
        return why_set(why, "URL template %s must start with https://, http:// or file://", q);
    if (is_file && *rest != '/')
        return why_set(why,
                       "file URL %s must name an absolute path, e.g. "
                       "file:///srv/mirror/{prefix}.txt",
                       q);
    if (!is_file && (*rest == '/' || *rest == '\0' || *rest == '{'))
        return why_set(why, "URL template %s has no host", q);
    if (!strstr(v, "{prefix}"))
        return why_set(why, "URL template %s has no {prefix}", q);
    /* Braces only as {prefix}: catches {Prefix}, {hash}, a lost brace. */
    for (const char *p = v; *p; p++) {
        if (strncmp(p, "{prefix}", 8) == 0)
            p += 7;
        else if (*p == '{' || *p == '}')
            return why_set(why, "URL template %s: only {prefix} may appear in braces", q);
    }
    return 0;
}

static int check_proxy(const char *v, char *why)
{
    static const char *const schemes[] = {"http://",    "https://",  "socks4://",
                                          "socks4a://", "socks5://", "socks5h://"};
    char q[100];
    quote_value(q, sizeof(q), v);
    if (!*v)
        return 0;
    if (strlen(v) > MAX_URL)
        return why_set(why, "proxy URL is too long (at most %d bytes)", MAX_URL);
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return why_set(why, "proxy URL %s holds a blank or control character", q);
    for (size_t i = 0; i < BR_ARRAY_SIZE(schemes); i++) {
        size_t n = strlen(schemes[i]);
        if (strncasecmp(v, schemes[i], n) == 0) {
            if (v[n] == '\0' || v[n] == '/')
                return why_set(why, "proxy URL %s has no host", q);
            return 0;
        }
    }
    return why_set(why,
                   "proxy URL %s must start with http://, https://, socks4://, socks4a://, "
                   "socks5:// or socks5h://",
                   q);
}

/* HOST:PORT, HOST = an IPv4 address in 127.0.0.0/8 or [::1]. */
static int parse_listen(const char *v, char host[48], uint16_t *port, char *why)
{
    char q[100];
    quote_value(q, sizeof(q), v);
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
            return why_set(why,
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
            return why_set(why,
                           "bad address %s: expected HOST:PORT, e.g. 127.0.0.1:9750 or "
                           "[::1]:9750",
                           q);
        memcpy(addr, v, (size_t)(colon - v));
        addr[colon - v] = '\0';
        port_text = colon + 1;
        if (strchr(addr, ':'))
            return why_set(why,
                           "bad address %s: write an IPv6 address in brackets, e.g. "
                           "[::1]:9750",
                           q);
    }
    const char *p = port_text;
    uint64_t pn;
    if (!take_u64(&p, &pn) || *p || pn < 1 || pn > 65535)
        return why_set(why, "bad port in %s: expected 1 .. 65535", q);

    static const char loopback_only[] =
        "the metrics are served without authentication, so only a loopback address "
        "(127.0.0.0/8 or [::1]) is allowed";
    if (v6) {
        struct in6_addr a6;
        if (inet_pton(AF_INET6, addr, &a6) != 1)
            return why_set(why, "bad address %s: not an IPv6 address", q);
        if (!IN6_IS_ADDR_LOOPBACK(&a6))
            return why_set(why, "%s is not a loopback address: %s", q, loopback_only);
        inet_ntop(AF_INET6, &a6, host, 48);
    } else {
        struct in_addr a4;
        if (inet_pton(AF_INET, addr, &a4) != 1)
            return why_set(why, "%s is not a numeric loopback address: %s", q, loopback_only);
        if ((ntohl(a4.s_addr) >> 24) != 127)
            return why_set(why, "%s is not a loopback address: %s", q, loopback_only);
        inet_ntop(AF_INET, &a4, host, 48);
    }
    *port = (uint16_t)pn;
    return 0;
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
static int parse_id_list(const char *v, bool group, uint32_t **out, size_t *n_out, char *why)
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
        return why_set(why, "more than %d entries", BREACHD_CONF_MAX_LIST);
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
            return why_set(why, "empty entry in the %s list (a stray comma?)", what);
        char q[100];
        quote_value(q, sizeof(q), name);
        if (all_digits(name)) {
            const char *p = name;
            uint64_t id;
            if (!take_u64(&p, &id) || id >= UINT32_MAX)
                return why_set(why, "%s id %s is out of range", what, q);
            ids[n++] = (uint32_t)id;
        } else {
            int rc = lookup_id(name, group, &ids[n]);
            if (rc == -ENOENT)
                return why_set(why, "unknown %s %s", what, q);
            if (rc == -ENOMEM)
                return rc;
            if (rc < 0)
                return why_set(why, "cannot look up %s %s: %s", what, q, strerror(-rc));
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

/* ---- applying one key ---------------------------------------------------------- */

static int set_id_list(char **text, uint32_t **ids, size_t *n, const char *v, bool group, char *why)
{
    uint32_t *new_ids;
    size_t new_n;
    int rc = parse_id_list(v, group, &new_ids, &new_n, why);
    if (rc < 0)
        return rc;
    if (set_str(text, v) < 0) {
        free(new_ids);
        return -ENOMEM;
    }
    free(*ids);
    *ids = new_ids;
    *n = new_n;
    return 0;
}

/* 0, -EINVAL with why, or -ENOMEM. */
static int apply_key(breachd_config *c, key_id k, const char *v, char *why)
{
    int rc;
    switch (k) {
    case K_SOCKET:
        rc = check_path(v, false, sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1, why);
        return rc < 0 ? rc : set_str(&c->daemon.socket, v);
    case K_SOCKET_MODE:
        return parse_mode(v, &c->daemon.socket_mode, why);
    case K_ALLOWED_USERS:
        return set_id_list(&c->daemon.allowed_users_text, &c->daemon.allowed_users,
                           &c->daemon.n_allowed_users, v, false, why);
    case K_ALLOWED_GROUPS:
        return set_id_list(&c->daemon.allowed_groups_text, &c->daemon.allowed_groups,
                           &c->daemon.n_allowed_groups, v, true, why);
    case K_ADMIN_USERS:
        return set_id_list(&c->daemon.admin_users_text, &c->daemon.admin_users,
                           &c->daemon.n_admin_users, v, false, why);
    case K_LOG_LEVEL:
        return parse_log_level(v, &c->daemon.log_level, why);
    case K_METRICS_LISTEN:
        rc = parse_listen(v, c->daemon.metrics_host, &c->daemon.metrics_port, why);
        return rc < 0 ? rc : set_str(&c->daemon.metrics_listen, v);
    case K_PW_FILTER:
        rc = check_path(v, true, PATH_MAX - 1, why);
        return rc < 0 ? rc : set_str(&c->passwords.filter, v);
    case K_PW_UPSTREAM:
        rc = check_url_template(v, why);
        return rc < 0 ? rc : set_str(&c->passwords.upstream, v);
    case K_PW_MAX_FILTER_AGE:
        return parse_duration_s(v, BREACHD_CONF_MIN_FILTER_AGE_S, BREACHD_CONF_MAX_FILTER_AGE_S,
                                &c->passwords.max_filter_age_s, why);
    case K_URL_FILTER:
        rc = check_path(v, true, PATH_MAX - 1, why);
        return rc < 0 ? rc : set_str(&c->urls.filter, v);
    case K_URL_UPSTREAM:
        rc = check_url_template(v, why);
        return rc < 0 ? rc : set_str(&c->urls.upstream, v);
    case K_URL_MAX_FILTER_AGE:
        return parse_duration_s(v, BREACHD_CONF_MIN_FILTER_AGE_S, BREACHD_CONF_MAX_FILTER_AGE_S,
                                &c->urls.max_filter_age_s, why);
    case K_CACHE_PATH:
        rc = check_path(v, false, PATH_MAX - 1, why);
        return rc < 0 ? rc : set_str(&c->cache.path, v);
    case K_CACHE_MAX_SIZE:
        return parse_size(v, BREACHD_CONF_MIN_CACHE_SIZE, BREACHD_CONF_MAX_CACHE_SIZE,
                          &c->cache.max_size, why);
    case K_CACHE_TTL:
        return parse_duration_s(v, BREACHD_CONF_MIN_TTL_S, BREACHD_CONF_MAX_TTL_S, &c->cache.ttl_s,
                                why);
    case K_CACHE_MAX_STALE:
        return parse_duration_s(v, 0, BREACHD_CONF_MAX_STALE_S, &c->cache.max_stale_s, why);
    case K_UP_TIMEOUT: {
        uint64_t ms;
        rc = parse_duration_ms(v, &ms, why);
        if (rc < 0)
            return rc;
        if (ms < BREACHD_CONF_MIN_TIMEOUT_MS || ms > BREACHD_CONF_MAX_TIMEOUT_MS) {
            char q[100];
            quote_value(q, sizeof(q), v);
            return why_set(why, "%s is out of range (%dms .. %ds)", q, BREACHD_CONF_MIN_TIMEOUT_MS,
                           BREACHD_CONF_MAX_TIMEOUT_MS / 1000);
        }
        c->upstream.timeout_ms = (uint32_t)ms;
        return 0;
    }
    case K_UP_MAX_INFLIGHT:
        return parse_uint(v, 1, BREACHD_CONF_MAX_INFLIGHT, &c->upstream.max_inflight, why);
    case K_UP_RATE:
        return parse_uint(v, 1, BREACHD_CONF_MAX_RATE, &c->upstream.rate, why);
    case K_UP_PROXY:
        rc = check_proxy(v, why);
        return rc < 0 ? rc : set_str(&c->upstream.proxy, v);
    case K_UP_CA_FILE:
        rc = check_path(v, true, PATH_MAX - 1, why);
        return rc < 0 ? rc : set_str(&c->upstream.ca_file, v);
    case K_UP_DECOYS:
        return parse_uint(v, 0, BREACHD_CONF_MAX_DECOYS, &c->upstream.decoys, why);
    case K_COUNT:
        break;
    }
    return why_set(why, "internal error: unhandled key");
}

/* ---- defaults, free ------------------------------------------------------------ */

void breachd_config_free(breachd_config *c)
{
    if (!c)
        return;
    free(c->path);
    free(c->daemon.socket);
    free(c->daemon.allowed_users_text);
    free(c->daemon.allowed_users);
    free(c->daemon.allowed_groups_text);
    free(c->daemon.allowed_groups);
    free(c->daemon.admin_users_text);
    free(c->daemon.admin_users);
    free(c->daemon.metrics_listen);
    free(c->passwords.filter);
    free(c->passwords.upstream);
    free(c->urls.filter);
    free(c->urls.upstream);
    free(c->cache.path);
    free(c->upstream.proxy);
    free(c->upstream.ca_file);
    free(c);
}

int breachd_config_defaults(breachd_config **out)
{
    *out = NULL;
    _cleanup_(breachd_config_freep) breachd_config *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->path = strdup("");
    c->daemon.socket = strdup("/run/breachd/breachd.sock");
    c->daemon.socket_mode = 0660;
    c->daemon.allowed_users_text = strdup("");
    c->daemon.allowed_groups_text = strdup("");
    c->daemon.admin_users_text = strdup("root");
    c->daemon.admin_users = calloc(1, sizeof(uid_t)); /* root is uid 0 everywhere */
    c->daemon.n_admin_users = 1;
    c->daemon.log_level = LOG_INFO;
    c->daemon.metrics_listen = strdup("");
    c->passwords.filter = strdup("/var/lib/breachd/passwords.bfuse");
    c->passwords.upstream = strdup("https://api.pwnedpasswords.com/range/{prefix}");
    c->passwords.max_filter_age_s = 45 * 86400;
    c->urls.filter = strdup("");
    c->urls.upstream = strdup("");
    c->urls.max_filter_age_s = 2 * 86400;
    c->cache.path = strdup("/var/cache/breachd");
    c->cache.max_size = (uint64_t)1 << 30;
    c->cache.ttl_s = 7 * 86400;
    c->cache.max_stale_s = 30 * 86400;
    c->upstream.timeout_ms = 5000;
    c->upstream.max_inflight = 16;
    c->upstream.rate = 50;
    c->upstream.proxy = strdup("");
    c->upstream.ca_file = strdup("");
    c->upstream.decoys = 0;
    if (!c->path || !c->daemon.socket || !c->daemon.allowed_users_text ||
        !c->daemon.allowed_groups_text || !c->daemon.admin_users_text || !c->daemon.admin_users ||
        !c->daemon.metrics_listen || !c->passwords.filter || !c->passwords.upstream ||
        !c->urls.filter || !c->urls.upstream || !c->cache.path || !c->upstream.proxy ||
        !c->upstream.ca_file)
        return -ENOMEM;
    *out = BR_TAKE_PTR(c);
    return 0;
}

/* ---- the parse ----------------------------------------------------------------- */

typedef struct parse_state {
    FILE *f;
    const char *name; /* file name for messages */
    breachd_config *cfg;
    br_error *err;
    char *raw; /* the current line as read (getline buffer) */
    size_t raw_cap;
    unsigned lineno;        /* of the line in raw */
    const char *value;      /* key line: its value, trimmed, inside raw */
    unsigned seen[K_COUNT]; /* line where each key was set, 0 = not yet */
    int rc;                 /* first failure, 0 while none */
    int read_errno;
} parse_state;

static int fail_line(parse_state *st, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail_line(parse_state *st, int code, const char *fmt, ...)
{
    char msg[WHY_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    st->rc = code;
    return br_error_set(st->err, code, "%s:%u: %s", st->name, st->lineno, msg);
}

static bool known_section(const char *s, size_t len)
{
    for (size_t i = 0; i < BR_ARRAY_SIZE(sections); i++)
        if (strlen(sections[i]) == len && memcmp(sections[i], s, len) == 0)
            return true;
    return false;
}

/* Classify the raw line and put what libinih may see into buf (num bytes). */
static int feed_line(parse_state *st, char *buf, int num)
{
    char *line = st->raw;
    st->value = NULL;
    if (st->lineno == 1 && strncmp(line, "\xEF\xBB\xBF", 3) == 0)
        line += 3;
    char *s = skip_blanks(line);

    if (*s == '\0' || *s == '#' || *s == ';') {
        snprintf(buf, (size_t)num, "\n");
        return 0;
    }
    if (*s == '[') {
        rstrip_blanks(s);
        size_t len = strlen(s);
        char *close = strchr(s, ']');
        if (!close)
            return fail_line(st, -EINVAL, "section line without a closing ]");
        if (close != s + len - 1)
            return fail_line(st, -EINVAL,
                             "text after the section's ] (a comment must be on a "
                             "line of its own)");
        *close = '\0';
        if (!known_section(s + 1, len - 2))
            return fail_line(st, -EINVAL,
                             "unknown section [%.64s]: expected [daemon], "
                             "[passwords], [urls], [cache] or [upstream]",
                             s + 1);
        snprintf(buf, (size_t)num, "[%s]\n", s + 1);
        return 0;
    }

    char *eq = strchr(s, '=');
    char *colon = strchr(s, ':');
    if (!eq || (colon && colon < eq))
        return fail_line(st, -EINVAL,
                         "expected \"key = value\", \"[section]\" or a comment "
                         "line starting with # or ;");
    *eq = '\0';
    rstrip_blanks(s);
    if (!*s)
        return fail_line(st, -EINVAL, "missing key name before =");
    size_t name_len = strlen(s);
    if (name_len > 64 || strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789_.-") != name_len) {
        char q[100];
        quote_value(q, sizeof(q), s);
        return fail_line(st, -EINVAL, "bad key name %s", q);
    }
    char *value = skip_blanks(eq + 1);
    rstrip_blanks(value);
    st->value = value;
    /* Only "key=" goes to libinih: the value comes from st->value. */
    if (name_len + 3 > (size_t)num)
        return fail_line(st, -EINVAL, "key name too long");
    snprintf(buf, (size_t)num, "%s=\n", s);
    return 0;
}

static char *ini_reader_fn(char *buf, int num, void *stream)
{
    parse_state *st = stream;
    if (st->rc < 0)
        return NULL;
    if (num < 80) { /* libinih's buffer is INI_MAX_LINE, 200 unless built otherwise */
        fail_line(st, -EINVAL, "internal error: libinih's line buffer is too small");
        return NULL;
    }
    errno = 0;
    ssize_t n = getline(&st->raw, &st->raw_cap, st->f);
    if (n < 0) {
        if (ferror(st->f))
            st->read_errno = errno ? errno : EIO;
        return NULL;
    }
    st->lineno++;
    if (memchr(st->raw, '\0', (size_t)n)) {
        fail_line(st, -EINVAL, "NUL byte in the line");
        return NULL;
    }
    if (n > 0 && st->raw[n - 1] == '\n')
        st->raw[--n] = '\0';
    if (n > 0 && st->raw[n - 1] == '\r')
        st->raw[--n] = '\0';
    if (n > MAX_RAW_LINE) {
        fail_line(st, -EINVAL, "line too long (more than %d bytes)", MAX_RAW_LINE);
        return NULL;
    }
    if (feed_line(st, buf, num) < 0)
        return NULL;
    return buf;
}

static int ini_handler_fn(void *user, const char *section, const char *name, const char *ignored)
{
    parse_state *st = user;
    (void)ignored;
    if (st->rc < 0)
        return 0;
    if (!st->value) {
        fail_line(st, -EINVAL, "internal error: libinih and the reader disagree");
        return 0;
    }
    if (!*section) {
        fail_line(st, -EINVAL, "%s: key outside a section (put it under its [section])", name);
        return 0;
    }
    key_id k = K_COUNT;
    for (size_t i = 0; i < K_COUNT; i++)
        if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, name) == 0) {
            k = (key_id)i;
            break;
        }
    if (k == K_COUNT) {
        const char *elsewhere = NULL;
        for (size_t i = 0; i < K_COUNT; i++)
            if (strcmp(keys[i].name, name) == 0) {
                elsewhere = keys[i].section;
                break;
            }
        if (elsewhere)
            fail_line(st, -EINVAL, "[%s] %s: unknown key (%s is a key of [%s])", section, name,
                      name, elsewhere);
        else
            fail_line(st, -EINVAL, "[%s] %s: unknown key", section, name);
        return 0;
    }
    if (st->seen[k]) {
        fail_line(st, -EINVAL, "[%s] %s: duplicate key (first set on line %u)", section, name,
                  st->seen[k]);
        return 0;
    }
    st->seen[k] = st->lineno;

    const char *v = st->value;
    for (const char *p = v; *p; p++)
        if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f) {
            fail_line(st, -EINVAL, "[%s] %s: control character in the value", section, name);
            return 0;
        }
    char why[WHY_MAX];
    why[0] = '\0';
    int rc = apply_key(st->cfg, k, v, why);
    if (rc == -ENOMEM) {
        st->rc = rc;
        br_error_set(st->err, rc, "%s: out of memory", st->name);
        return 0;
    }
    if (rc < 0) {
        /* An inline comment is part of the value (DESIGN.md section 8): say so. */
        bool inline_comment = false;
        for (const char *p = v; *p && !inline_comment; p++)
            inline_comment = is_blank(p[0]) && (p[1] == '#' || p[1] == ';');
        fail_line(st, -EINVAL, "[%s] %s: %s%s", section, name, why,
                  inline_comment ? " (a comment must be on a line of its own)" : "");
        return 0;
    }
    return 1;
}

int breachd_config_load_stream(FILE *f, const char *name, breachd_config **out, br_error *err)
{
    *out = NULL;
    _cleanup_(breachd_config_freep) breachd_config *c = NULL;
    int rc = breachd_config_defaults(&c);
    if (rc < 0)
        return br_error_set(err, rc, "%s: out of memory", name);
    if (set_str(&c->path, name) < 0)
        return br_error_set(err, -ENOMEM, "%s: out of memory", name);

    parse_state st = {.f = f, .name = name, .cfg = c, .err = err};
    int r = ini_parse_stream(ini_reader_fn, &st, ini_handler_fn, &st);
    free(st.raw);
    if (st.rc < 0)
        return st.rc;
    if (st.read_errno)
        return br_error_set(err, -st.read_errno, "%s: read error: %s", name,
                            strerror(st.read_errno));
    if (r == -2)
        return br_error_set(err, -ENOMEM, "%s: out of memory", name);
    if (r != 0)
        return br_error_set(err, -EINVAL, "%s:%d: cannot parse this line", name, r);
    *out = BR_TAKE_PTR(c);
    return 0;
}

static void fclosep(FILE **f)
{
    if (*f)
        fclose(*f);
}

int breachd_config_load(const char *path, breachd_config **out, br_error *err)
{
    *out = NULL;
    _cleanup_(fclosep) FILE *f = fopen(path, "re");
    if (!f)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) < 0)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return br_error_set(err, -EISDIR, "%s: is a directory", path);
    return breachd_config_load_stream(f, path, out, err);
}

/* ---- dump and helpers ---------------------------------------------------------- */

static void format_duration_s(char *buf, size_t len, int64_t s)
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

static void format_duration_ms(char *buf, size_t len, uint64_t ms)
{
    if (ms % 1000)
        snprintf(buf, len, "%" PRIu64 "ms", ms);
    else
        format_duration_s(buf, len, (int64_t)(ms / 1000));
}

static void format_size(char *buf, size_t len, uint64_t n)
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

static void dump_kv(FILE *out, const char *key, const char *value)
{
    if (*value)
        fprintf(out, "%s = %s\n", key, value);
    else
        fprintf(out, "%s =\n", key);
}

static void dump_ids(FILE *out, const char *key, const char *what, const uint32_t *ids, size_t n)
{
    if (n == 0)
        return;
    fprintf(out, "# %s: %s", key, what);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s%" PRIu32, i ? ", " : " ", ids[i]);
    fputc('\n', out);
}

void breachd_config_dump(const breachd_config *c, FILE *out)
{
    char b[64];
    fprintf(out, "# breachd effective configuration%s%s\n", *c->path ? " from " : " (defaults)",
            c->path);
    fprintf(out, "\n[daemon]\n");
    dump_kv(out, "socket", c->daemon.socket);
    fprintf(out, "socket_mode = %04o\n", (unsigned)c->daemon.socket_mode);
    dump_kv(out, "allowed_users", c->daemon.allowed_users_text);
    dump_ids(out, "allowed_users", "uids", c->daemon.allowed_users, c->daemon.n_allowed_users);
    dump_kv(out, "allowed_groups", c->daemon.allowed_groups_text);
    dump_ids(out, "allowed_groups", "gids", c->daemon.allowed_groups, c->daemon.n_allowed_groups);
    dump_kv(out, "admin_users", c->daemon.admin_users_text);
    dump_ids(out, "admin_users", "uids", c->daemon.admin_users, c->daemon.n_admin_users);
    const char *lvl = breachd_log_level_name(c->daemon.log_level);
    dump_kv(out, "log_level", lvl ? lvl : "info");
    dump_kv(out, "metrics_listen", c->daemon.metrics_listen);

    fprintf(out, "\n[passwords]\n");
    dump_kv(out, "filter", c->passwords.filter);
    dump_kv(out, "upstream", c->passwords.upstream);
    format_duration_s(b, sizeof(b), c->passwords.max_filter_age_s);
    dump_kv(out, "max_filter_age", b);

    fprintf(out, "\n[urls]\n");
    dump_kv(out, "filter", c->urls.filter);
    dump_kv(out, "upstream", c->urls.upstream);
    format_duration_s(b, sizeof(b), c->urls.max_filter_age_s);
    dump_kv(out, "max_filter_age", b);

    fprintf(out, "\n[cache]\n");
    dump_kv(out, "path", c->cache.path);
    format_size(b, sizeof(b), c->cache.max_size);
    dump_kv(out, "max_size", b);
    format_duration_s(b, sizeof(b), c->cache.ttl_s);
    dump_kv(out, "ttl", b);
    format_duration_s(b, sizeof(b), c->cache.max_stale_s);
    dump_kv(out, "max_stale", b);

    fprintf(out, "\n[upstream]\n");
    format_duration_ms(b, sizeof(b), c->upstream.timeout_ms);
    dump_kv(out, "timeout", b);
    fprintf(out, "max_inflight = %" PRIu32 "\n", c->upstream.max_inflight);
    fprintf(out, "rate = %" PRIu32 "\n", c->upstream.rate);
    dump_kv(out, "proxy", c->upstream.proxy);
    dump_kv(out, "ca_file", c->upstream.ca_file);
    fprintf(out, "decoys = %" PRIu32 "\n", c->upstream.decoys);
}

static bool in_list(const uint32_t *ids, size_t n, uint32_t id)
{
    return n > 0 && bsearch(&id, ids, n, sizeof(*ids), cmp_u32) != NULL;
}

bool breachd_config_is_admin(const breachd_config *c, uid_t uid)
{
    return in_list(c->daemon.admin_users, c->daemon.n_admin_users, uid);
}

bool breachd_config_peer_allowed(const breachd_config *c, uid_t uid, gid_t gid, const gid_t *groups,
                                 size_t n_groups)
{
    if (c->daemon.n_allowed_users == 0 && c->daemon.n_allowed_groups == 0)
        return true;
    if (in_list(c->daemon.allowed_users, c->daemon.n_allowed_users, uid) ||
        breachd_config_is_admin(c, uid))
        return true;
    const uint32_t *g = c->daemon.allowed_groups;
    if (in_list(g, c->daemon.n_allowed_groups, gid))
        return true;
    for (size_t i = 0; i < n_groups; i++)
        if (in_list(g, c->daemon.n_allowed_groups, groups[i]))
            return true;
    return false;
}

const char *breachd_log_level_name(int level)
{
    for (size_t i = 0; i < BR_ARRAY_SIZE(log_levels); i++)
        if (log_levels[i].level == level)
            return log_levels[i].name;
    return NULL;
}
