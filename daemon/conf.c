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
 * breachd.conf(5) says a comment is a whole line, so the reader hands libinih only
 * what cannot be misread: blank lines for blank and comment lines, a checked
 * "[section]", and "key=" for a key line, whose value the handler then takes
 * verbatim from the raw line the reader kept. libinih tracks the section and
 * calls the handler; the line number is the reader's count at that moment
 * (libinih calls the handler before it reads the next line).
 *
 * This file: the keys, the reader, applying a key, the defaults and the
 * load; conf_int.h says where the rest is. */
#include <errno.h>
#include <stdarg.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>

#include "conf_int.h"

#define MAX_RAW_LINE 16384

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
    K_STATS_USERS,
    K_URL_WHEN_STALE,
    K_CACHE_PARTITION,
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
    [K_STATS_USERS] = {"daemon", "stats_users"},
    [K_URL_WHEN_STALE] = {"urls", "when_stale"},
    [K_CACHE_PARTITION] = {"cache", "partition"},
};

const char *const breachd_when_stale_names[] = {"filter", "upstream", "unknown", NULL};
const char *const breachd_partition_names[] = {"uid", "none", NULL};

static const char *const sections[] = {"daemon", "passwords", "urls", "cache", "upstream"};

static int set_str(char **dst, const char *value)
{
    char *s = strdup(value);
    if (!s)
        return -ENOMEM;
    free(*dst);
    *dst = s;
    return 0;
}

/* ---- applying one key ---------------------------------------------------------- */

static int set_id_list(char **text, uint32_t **ids, size_t *n, const char *v, bool group, char *why)
{
    uint32_t *new_ids;
    size_t new_n;
    int rc = bd_conf_parse_id_list(v, group, &new_ids, &new_n, why);
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

/* One of a NULL-terminated list of names (case as written); its index in *out. */
static int set_choice(const char *v, const char *const *names, int *out, char *why)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            return 0;
        }
    char q[100];
    bd_conf_quote_value(q, sizeof(q), v);
    return bd_conf_why_set(why, "bad value %s: expected %s or %s%s%s", q, names[0], names[1],
                           names[2] ? " or " : "", names[2] ? names[2] : "");
}

/* 0, -EINVAL with why, or -ENOMEM. */
static int apply_key(breachd_config *c, key_id k, const char *v, char *why)
{
    int rc;
    switch (k) {
    case K_SOCKET:
        rc = bd_conf_check_path(v, false, sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1, why);
        return rc < 0 ? rc : set_str(&c->daemon.socket, v);
    case K_SOCKET_MODE:
        return bd_conf_parse_mode(v, &c->daemon.socket_mode, why);
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
        return bd_conf_parse_log_level(v, &c->daemon.log_level, why);
    case K_METRICS_LISTEN:
        rc = bd_conf_parse_listen(v, c->daemon.metrics_host, &c->daemon.metrics_port, why);
        return rc < 0 ? rc : set_str(&c->daemon.metrics_listen, v);
    case K_PW_FILTER:
        rc = bd_conf_check_path(v, true, PATH_MAX - 1, why);
        return rc < 0 ? rc : set_str(&c->passwords.filter, v);
    case K_PW_UPSTREAM:
        rc = bd_conf_check_url_template(v, why);
        return rc < 0 ? rc : set_str(&c->passwords.upstream, v);
    case K_PW_MAX_FILTER_AGE:
        return bd_conf_parse_duration_s(v, BREACHD_CONF_MIN_FILTER_AGE_S,
                                        BREACHD_CONF_MAX_FILTER_AGE_S,
                                        &c->passwords.max_filter_age_s, why);
    case K_URL_FILTER:
        rc = bd_conf_check_path(v, true, PATH_MAX - 1, why);
        return rc < 0 ? rc : set_str(&c->urls.filter, v);
    case K_URL_UPSTREAM:
        rc = bd_conf_check_url_template(v, why);
        return rc < 0 ? rc : set_str(&c->urls.upstream, v);
    case K_URL_MAX_FILTER_AGE:
        return bd_conf_parse_duration_s(v, BREACHD_CONF_MIN_FILTER_AGE_S,
                                        BREACHD_CONF_MAX_FILTER_AGE_S, &c->urls.max_filter_age_s,
                                        why);
    case K_CACHE_PATH:
        rc = bd_conf_check_path(v, false, PATH_MAX - 1, why);
        return rc < 0 ? rc : set_str(&c->cache.path, v);
    case K_CACHE_MAX_SIZE:
        return bd_conf_parse_size(v, BREACHD_CONF_MIN_CACHE_SIZE, BREACHD_CONF_MAX_CACHE_SIZE,
                                  &c->cache.max_size, why);
    case K_CACHE_TTL:
        return bd_conf_parse_duration_s(v, BREACHD_CONF_MIN_TTL_S, BREACHD_CONF_MAX_TTL_S,
                                        &c->cache.ttl_s, why);
    case K_CACHE_MAX_STALE:
        return bd_conf_parse_duration_s(v, 0, BREACHD_CONF_MAX_STALE_S, &c->cache.max_stale_s, why);
    case K_UP_TIMEOUT: {
        uint64_t ms;
        rc = bd_conf_parse_duration_ms(v, &ms, why);
        if (rc < 0)
            return rc;
        if (ms < BREACHD_CONF_MIN_TIMEOUT_MS || ms > BREACHD_CONF_MAX_TIMEOUT_MS) {
            char q[100];
            bd_conf_quote_value(q, sizeof(q), v);
            return bd_conf_why_set(why, "%s is out of range (%dms .. %ds)", q,
                                   BREACHD_CONF_MIN_TIMEOUT_MS, BREACHD_CONF_MAX_TIMEOUT_MS / 1000);
        }
        c->upstream.timeout_ms = (uint32_t)ms;
        return 0;
    }
    case K_UP_MAX_INFLIGHT:
        return bd_conf_parse_uint(v, 1, BREACHD_CONF_MAX_INFLIGHT, &c->upstream.max_inflight, why);
    case K_UP_RATE:
        return bd_conf_parse_uint(v, 1, BREACHD_CONF_MAX_RATE, &c->upstream.rate, why);
    case K_UP_PROXY:
        rc = bd_conf_check_proxy(v, why);
        return rc < 0 ? rc : set_str(&c->upstream.proxy, v);
    case K_UP_CA_FILE:
        rc = bd_conf_check_path(v, true, PATH_MAX - 1, why);
        return rc < 0 ? rc : set_str(&c->upstream.ca_file, v);
    case K_UP_DECOYS:
        return bd_conf_parse_uint(v, 0, BREACHD_CONF_MAX_DECOYS, &c->upstream.decoys, why);
    case K_STATS_USERS:
        return set_id_list(&c->daemon.stats_users_text, &c->daemon.stats_users,
                           &c->daemon.n_stats_users, v, false, why);
    case K_URL_WHEN_STALE:
        return set_choice(v, breachd_when_stale_names, &c->urls.when_stale, why);
    case K_CACHE_PARTITION:
        return set_choice(v, breachd_partition_names, &c->cache.partition, why);
    case K_COUNT:
        break;
    }
    return bd_conf_why_set(why, "internal error: unhandled key");
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
    free(c->daemon.stats_users_text);
    free(c->daemon.stats_users);
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
    c->daemon.stats_users_text = strdup("");
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
        !c->daemon.stats_users_text ||
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
        bd_conf_quote_value(q, sizeof(q), s);
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
        /* An inline comment is part of the value (breachd.conf(5)): say so. */
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
