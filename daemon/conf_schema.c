/* SPDX-License-Identifier: MIT */
/* breachd.conf's keys: one table (section, name, type, bounds, default, doc
 * line) that drives the parse, the defaults, the free and the dump. Every
 * row has its line in docs/breachd.conf.5 and data/breachd.conf.example,
 * with the same default and bounds (tests/unit/test_config_schema.c). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "core/br_assert.h"
#include "conf_schema.h"
#include "config.h"
#include "dns_conf.h"

#define F(field) offsetof(breachd_config, field)
#define SUN_PATH_MAX (sizeof(((struct sockaddr_un *)NULL)->sun_path) - 1)
#define DAY (86400ull)

/* Rows by the shape of their value (designated initializers underneath):
 * NUM   a number min .. max in one field (UINT, MILLIS, SECONDS, SIZE,
 *       PERCENT, MODE);
 * STR   a string, path or URL in one field; max: the longest path (0: no
 *       bound); flags: BD_CONF_EMPTY_OK;
 * LIST  its text, and what it parses into: an array and its count (users,
 *       groups, networks, listen lists), or a host and a port;
 * CHOICE one of a table of names. */
#define NUM(sec, key, t, field, lo, hi, dflt, text)                                                \
    {                                                                                              \
        .section = (sec), .name = (key), .type = (t), .off = F(field), .min = (lo), .max = (hi),   \
        .def = (dflt), .doc = (text)                                                               \
    }
#define STR(sec, key, t, fl, field, hi, dflt, text)                                                \
    {                                                                                              \
        .section = (sec), .name = (key), .type = (t), .flags = (fl), .off = F(field), .max = (hi), \
        .def = (dflt), .doc = (text)                                                               \
    }
#define LIST(sec, key, t, text_field, parsed, count, dflt, text)                                   \
    {                                                                                              \
        .section = (sec), .name = (key), .type = (t), .off = F(text_field), .off2 = F(parsed),     \
        .off3 = F(count), .def = (dflt), .doc = (text)                                             \
    }
#define CHOICE(sec, key, field, names, dflt, text)                                                 \
    {                                                                                              \
        .section = (sec), .name = (key), .type = BD_CONF_CHOICE, .off = F(field),                  \
        .choices = (names), .def = (dflt), .doc = (text)                                           \
    }

/* The keys every filter kind's section opens with (daemon/kinds.h), in
 * this order: its filter (and deltas), pubkey, filter_url, upstream (its
 * default and doc) and max_filter_age (its default and doc). */
/* clang-format off */
#define FILTER_KEYS(sec, filter_doc, upstream_default, upstream_doc, age_default, age_doc)         \
    STR(#sec, "filter", BD_CONF_PATHS, BD_CONF_EMPTY_OK, sec.filter, PATH_MAX - 1, "",             \
        filter_doc),                                                                               \
    STR(#sec, "pubkey", BD_CONF_PATH, BD_CONF_EMPTY_OK, sec.pubkey, PATH_MAX - 1, "",              \
        "Ed25519 public key (PEM); set: only filters it signed load"),                             \
    STR(#sec, "filter_url", BD_CONF_URLS, 0, sec.filter_url, 0, "",                                \
        "where breachctl filter fetch --config gets each filter file (a URL per file)"),           \
    STR(#sec, "upstream", BD_CONF_URL_TEMPLATE, 0, sec.upstream, 0, upstream_default,              \
        upstream_doc),                                                                             \
    NUM(#sec, "max_filter_age", BD_CONF_SECONDS, sec.max_filter_age_s, 1, 3650 * DAY,              \
        age_default, age_doc)
/* clang-format on */

/* clang-format off */
const bd_conf_key bd_conf_keys[] = {
    STR("daemon", "socket", BD_CONF_PATH, 0, daemon.socket, SUN_PATH_MAX, BREACHD_DEFAULT_SOCKET,
        "the Unix socket breachd creates when not socket-activated"),
    NUM("daemon", "socket_mode", BD_CONF_MODE, daemon.socket_mode, 0, 0777, "0660",
        "permission bits of that socket, octal"),
    LIST("daemon", "allowed_users", BD_CONF_USERS, daemon.allowed_users_text, daemon.allowed_users,
         daemon.n_allowed_users, "",
         "who may use the socket (with allowed_groups); both empty: anyone"),
    LIST("daemon", "allowed_groups", BD_CONF_GROUPS, daemon.allowed_groups_text,
         daemon.allowed_groups, daemon.n_allowed_groups, "",
         "groups whose members may use the socket"),
    LIST("daemon", "admin_users", BD_CONF_USERS, daemon.admin_users_text, daemon.admin_users,
         daemon.n_admin_users, "root", "who may send RELOAD; empty: nobody over the socket"),
    LIST("daemon", "stats_users", BD_CONF_USERS, daemon.stats_users_text, daemon.stats_users,
         daemon.n_stats_users, "", "who may send STATS besides admin_users"),
    CHOICE("daemon", "log_level", daemon.log_level, &bd_conf_log_levels, "info",
           "error, warning, notice, info or debug"),
    STR("daemon", "log_file", BD_CONF_PATH, BD_CONF_EMPTY_OK, daemon.log_file, PATH_MAX - 1, "",
        "append log lines, time-stamped, to this file; empty: stderr or syslog"),
    LIST("daemon", "metrics_listen", BD_CONF_LISTEN, daemon.metrics_listen, daemon.metrics_host,
         daemon.metrics_port, "", "loopback HOST:PORT for Prometheus text at /metrics; empty: off"),
    NUM("daemon", "canary", BD_CONF_MILLIS, daemon.canary_ms, 0, DAY * 1000, "5m",
        "end-to-end self-check of public breached keys this often; 0: off"),
    CHOICE("daemon", "trust_own_filters", daemon.trust_own_filters, &bd_conf_yes_no, "no",
           "development only: filter files owned by breachd's own user accepted besides root's"),

    NUM("limits", "max_connections", BD_CONF_UINT, limits.max_connections, 1, 1u << 20, "1024",
        "open connections; past it a new one gets ERR busy"),
    NUM("limits", "max_inflight", BD_CONF_UINT, limits.max_inflight, 1, 1u << 16, "256",
        "pending requests per connection; past it ERR busy"),
    NUM("limits", "idle_timeout", BD_CONF_MILLIS, limits.idle_timeout_ms, 100, DAY * 1000, "5m",
        "a connection with nothing pending is closed after this"),
    NUM("limits", "max_unread", BD_CONF_SIZE, limits.max_unread, 4096, 1u << 30, "1M",
        "unread answer bytes before breachd stops reading a connection"),
    NUM("limits", "drain_timeout", BD_CONF_MILLIS, limits.drain_timeout_ms, 0, 3600 * 1000, "10s",
        "on SIGTERM, how long pending requests may take"),

    FILTER_KEYS(passwords, "the password filter, then its deltas; empty: every check goes to the "
                "range API",
                "https://api.pwnedpasswords.com/range/{prefix}", "the range API; empty: none",
                "45d", "an older filter is bypassed"),
    CHOICE("passwords", "min_count_ok", passwords.min_count_ok, &bd_conf_yes_no, "no",
           "yes: a filter built with --min-count may serve (rarer breaches: CLEAN)"),
    STR("passwords", "similar_filter", BD_CONF_PATHS, BD_CONF_EMPTY_OK, passwords.similar_filter,
        PATH_MAX - 1, "",
        "offline filter of popular passwords for SIMILAR; empty: filter when it is offline"),
    STR("passwords", "banned_terms", BD_CONF_PATH, BD_CONF_EMPTY_OK, passwords.banned_terms,
        PATH_MAX - 1, "", "a file of banned terms, one a line, for the clients (BANNED)"),
    NUM("passwords", "site_terms", BD_CONF_TEXT, passwords.site_terms, 0, 4096, "",
        "the site's own names, a comma list (the organisation, its domains, products)"),
    NUM("passwords", "min_score", BD_CONF_UINT, passwords.min_score, 1, 100, "5",
        "a new password holding a banned term or name is refused below this score"),
    STR("passwords", "follow", BD_CONF_URLS, 0, passwords.follow, 0, "",
        "a password set's manifest URL; set: filter is the directory of the followed files"),
    NUM("passwords", "follow_interval", BD_CONF_SECONDS, passwords.follow_interval_s, 1, DAY,
        "30s", "how often the manifest is polled (at a random phase)"),

    FILTER_KEYS(ntlm, "the password-ntlm filter (NT verb), then its deltas; empty: every NT check "
                "goes to the range API",
                "https://api.pwnedpasswords.com/range/{prefix}?mode=ntlm",
                "the NTLM range API; empty: none", "45d", "an older filter is bypassed"),
    CHOICE("ntlm", "min_count_ok", ntlm.min_count_ok, &bd_conf_yes_no, "no", "as for passwords"),
    STR("ntlm", "follow", BD_CONF_URLS, 0, ntlm.follow, 0, "",
        "a password-ntlm set's manifest URL; set: filter is the directory of the followed files"),
    NUM("ntlm", "follow_interval", BD_CONF_SECONDS, ntlm.follow_interval_s, 1, DAY, "30s",
        "as for passwords"),

    FILTER_KEYS(urls, "the URL filter, then its deltas; empty: URL checks answer UNKNOWN "
                "filter-unavailable",
                "", "the URL range API; empty: none", "2d", "an older filter is stale"),
    CHOICE("urls", "when_stale", urls.when_stale, &bd_conf_when_stale, "filter",
           "a stale filter: filter (keep using it), upstream or unknown"),
    STR("urls", "follow", BD_CONF_URLS, 0, urls.follow, 0, "",
        "a publisher's manifest URL; set: filter is the directory of the followed files"),
    NUM("urls", "follow_interval", BD_CONF_SECONDS, urls.follow_interval_s, 1, DAY, "30s",
        "how often the manifest is polled (at a random phase)"),

    STR("cache", "path", BD_CONF_PATH, 0, cache.path, PATH_MAX - 1, "/var/cache/breachd",
        "the LMDB range cache directory"),
    NUM("cache", "max_size", BD_CONF_SIZE, cache.max_size, 1ull << 20, 1ull << 40, "1G",
        "largest size of the cache"),
    NUM("cache", "ttl", BD_CONF_SECONDS, cache.ttl_s, 1, 365 * DAY, "7d",
        "how long a range answer stays fresh"),
    NUM("cache", "max_stale", BD_CONF_SECONDS, cache.max_stale_s, 0, 365 * DAY, "30d",
        "how long past its freshness an answer may serve when the upstream fails"),
    CHOICE("cache", "partition", cache.partition, &bd_conf_partition, "uid",
           "uid: each peer user its own entries and fetches; none: shared"),
    NUM("cache", "partition_share", BD_CONF_PERCENT, cache.partition_share_pct, 1, 100, "25%",
        "the most of max_size one partition's entries may take"),

    NUM("upstream", "timeout", BD_CONF_MILLIS, upstream.timeout_ms, 100, 300000, "5s",
        "deadline of one range query, retries included"),
    NUM("upstream", "max_inflight", BD_CONF_UINT, upstream.max_inflight, 1, 1024, "16",
        "range queries in flight at once"),
    NUM("upstream", "rate", BD_CONF_UINT, upstream.rate, 1, 100000, "50",
        "range queries started per second at most"),
    STR("upstream", "proxy", BD_CONF_PROXY, 0, upstream.proxy, 0, "",
        "proxy URL; empty: the usual environment variables"),
    STR("upstream", "ca_file", BD_CONF_PATH, BD_CONF_EMPTY_OK, upstream.ca_file, PATH_MAX - 1, "",
        "PEM file of the CAs to trust; empty: the system store"),
    NUM("upstream", "decoys", BD_CONF_UINT, upstream.decoys, 0, 16, "0",
        "decoy prefixes fetched, cached and revalidated with each real one"),
    NUM("upstream", "bulk_queue", BD_CONF_UINT, upstream.bulk_queue, 1, 10000000, "100000",
        "LANE bulk checks waiting at most; past it ERR busy"),
    NUM("upstream", "bulk_share", BD_CONF_PERCENT, upstream.bulk_share_pct, 1, 100, "50%",
        "the bulk lane's share of rate and max_inflight"),
    NUM("upstream", "http_share", BD_CONF_PERCENT, upstream.http_share_pct, 1, 100, "50%",
        "the range endpoint's share of rate and max_inflight"),
    NUM("upstream", "breaker_cooldown", BD_CONF_MILLIS, upstream.breaker_cooldown_ms, 100, 3600000,
        "30s", "an open circuit waits this long before its (decoyed) trial"),

    LIST("http", "listen", BD_CONF_LISTEN_LIST, http.listen, http.listens, http.n_listens, "",
         "HOST:PORT items or a Unix socket path for GET /range/{prefix}; empty: off"),
    LIST("http", "allowed_networks", BD_CONF_NETWORKS, http.allowed_networks_text,
         http.allowed_networks, http.n_allowed_networks, "127.0.0.0/8, ::1/128",
         "client networks (CIDR) that may use it; others get 403"),
    NUM("http", "rate", BD_CONF_UINT, http.rate, 0, 1000000, "100",
        "requests per second per client, past it 429; 0: no limit"),
    NUM("http", "ipv6_prefix", BD_CONF_UINT, http.ipv6_prefix, 0, 128, "64",
        "an IPv6 client is its network of this many bits (rate, caps, cache)"),
    NUM("http", "max_connections", BD_CONF_UINT, http.max_connections, 1, 1u << 20, "1024",
        "open connections in all; at most half the open-file limit"),
    NUM("http", "max_connections_per_client", BD_CONF_UINT, http.max_connections_per_client, 1,
        1u << 20, "64", "open connections of one client; past either cap one is closed at once"),
    NUM("http", "header_timeout", BD_CONF_MILLIS, http.header_timeout_ms, 100, 3600 * 1000, "10s",
        "a whole request (line, headers, body) must arrive within this"),
    CHOICE("http", "access_log", http.access_log, &bd_conf_yes_no, "no",
           "yes: log each request with its prefix (the clients' secret); no"),
    NUM("http", "prepared_size", BD_CONF_SIZE, http.prepared_size, 0, 1ull << 40, "64M",
        "formatted range bodies kept to answer again; each client [cache] partition_share of it"),
};
/* clang-format on */

const size_t bd_conf_n_keys = BR_ARRAY_SIZE(bd_conf_keys);

/* The sections, in order, into out (at most cap); how many. */
static size_t bd_conf_sections(const char **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < bd_conf_n_keys; i++)
        if (i == 0 || strcmp(bd_conf_keys[i - 1].section, bd_conf_keys[i].section) != 0) {
            if (n < cap)
                out[n] = bd_conf_keys[i].section;
            n++;
        }
    return n;
}

void bd_conf_sections_text(char *buf, size_t len)
{
    const char *s[32];
    size_t n = bd_conf_sections(s, BR_ARRAY_SIZE(s));
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && i < BR_ARRAY_SIZE(s); i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int w = snprintf(buf + used, len - used, "%s[%s]", sep, s[i]);
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
    }
}

/* ---- fields --------------------------------------------------------------------- */

#define FIELD(c, off, type) ((type *)(void *)((char *)(c) + (off)))
#define CFIELD(c, off, type) ((const type *)(const void *)((const char *)(c) + (off)))

int bd_conf_set_str(char **dst, const char *value)
{
    char *s = strdup(value);
    if (!s)
        return -ENOMEM;
    free(*dst);
    *dst = s;
    return 0;
}

/* Keep a list as written (off) and parsed (items, taken: off2, its count
 * n: off3), replacing what was there. */
static int keep_list(breachd_config *c, const bd_conf_key *k, const char *v, void *items, size_t n)
{
    if (bd_conf_set_str(FIELD(c, k->off, char *), v) < 0) {
        free(items);
        return -ENOMEM;
    }
    free(*FIELD(c, k->off2, void *));
    *FIELD(c, k->off2, void *) = items;
    *FIELD(c, k->off3, size_t) = n;
    return 0;
}

static int set_id_list(breachd_config *c, const bd_conf_key *k, const char *v, br_error *err)
{
    uint32_t *ids;
    size_t n;
    int rc = bd_conf_parse_id_list(v, k->type == BD_CONF_GROUPS, &ids, &n, err);
    return rc < 0 ? rc : keep_list(c, k, v, ids, n);
}

/* A list kept as written (off) and parsed (off2, count off3). */
static int set_parsed_list(breachd_config *c, const bd_conf_key *k, const char *v, br_error *err)
{
    void *items = NULL;
    size_t n = 0;
    int rc = k->type == BD_CONF_LISTEN_LIST
                 ? bd_conf_parse_listen_list(v, (breachd_listen **)&items, &n, err)
                 : bd_conf_parse_networks(v, (breachd_network **)&items, &n, err);
    return rc < 0 ? rc : keep_list(c, k, v, items, n);
}

/* A string checked by its type, then kept. */
static int set_checked_str(breachd_config *c, const bd_conf_key *k, const char *v, br_error *err)
{
    int rc;
    switch (k->type) {
    case BD_CONF_PATH:
        rc = bd_conf_check_path(v, k->flags & BD_CONF_EMPTY_OK, (size_t)k->max, err);
        break;
    case BD_CONF_PATHS:
        rc = bd_conf_check_paths(v, k->flags & BD_CONF_EMPTY_OK, (size_t)k->max, err);
        break;
    case BD_CONF_URLS:
        rc = bd_conf_check_urls(v, err);
        break;
    case BD_CONF_URL_TEMPLATE:
        rc = bd_conf_check_url_template(v, err);
        break;
    case BD_CONF_PROXY:
        rc = bd_conf_check_proxy(v, err);
        break;
    case BD_CONF_LISTEN:
        rc = bd_conf_parse_listen(v, FIELD(c, k->off2, char), FIELD(c, k->off3, uint16_t), err);
        break;
    case BD_CONF_TEXT:
        rc = strlen(v) <= k->max
                 ? 0
                 : br_error_set(err, -EINVAL, "longer than %" PRIu64 " bytes", k->max);
        break;
    default:
        (void)br_fails_assert(!"a string key of another type");
        rc = br_error_set(err, -EINVAL, "internal error: [%s] %s is not a string", k->section,
                          k->name);
    }
    return rc < 0 ? rc : bd_conf_set_str(FIELD(c, k->off, char *), v);
}

int bd_conf_apply(breachd_config *c, const bd_conf_key *k, const char *v, br_error *err)
{
    switch (k->type) {
    case BD_CONF_PATH:
    case BD_CONF_PATHS:
    case BD_CONF_URLS:
    case BD_CONF_URL_TEMPLATE:
    case BD_CONF_PROXY:
    case BD_CONF_LISTEN:
    case BD_CONF_TEXT:
        return set_checked_str(c, k, v, err);
    case BD_CONF_MODE:
        return bd_conf_parse_mode(v, FIELD(c, k->off, mode_t), err);
    case BD_CONF_USERS:
    case BD_CONF_GROUPS:
        return set_id_list(c, k, v, err);
    case BD_CONF_CHOICE:
        return bd_conf_parse_choice(v, k->choices, FIELD(c, k->off, int), err);
    case BD_CONF_SECONDS:
        return bd_conf_parse_duration_s(v, (int64_t)k->min, (int64_t)k->max,
                                        FIELD(c, k->off, int64_t), err);
    case BD_CONF_MILLIS:
        return bd_conf_parse_millis(v, (uint32_t)k->min, (uint32_t)k->max,
                                    FIELD(c, k->off, uint32_t), err);
    case BD_CONF_SIZE:
        return bd_conf_parse_size(v, k->min, k->max, FIELD(c, k->off, uint64_t), err);
    case BD_CONF_UINT:
        return bd_conf_parse_uint(v, (uint32_t)k->min, (uint32_t)k->max, FIELD(c, k->off, uint32_t),
                                  err);
    case BD_CONF_PERCENT:
        return bd_conf_parse_percent(v, (uint32_t)k->min, (uint32_t)k->max,
                                     FIELD(c, k->off, uint32_t), err);
    case BD_CONF_LISTEN_LIST:
    case BD_CONF_NETWORKS:
        return set_parsed_list(c, k, v, err);
    }
    (void)br_fails_assert(!"a key without a type");
    return br_error_set(err, -EINVAL, "internal error: [%s] %s has no type", k->section, k->name);
}

void bd_conf_format_bounds(const bd_conf_key *k, char *buf, size_t len)
{
    char lo[32], hi[32];
    switch (k->type) {
    case BD_CONF_SECONDS:
        bd_conf_format_duration_s(lo, sizeof(lo), (int64_t)k->min);
        bd_conf_format_duration_s(hi, sizeof(hi), (int64_t)k->max);
        break;
    case BD_CONF_MILLIS:
        snprintf(lo, sizeof(lo), k->min % 1000 ? "%" PRIu64 "ms" : "%" PRIu64 "s",
                 k->min % 1000 ? k->min : k->min / 1000);
        snprintf(hi, sizeof(hi), k->max % 1000 ? "%" PRIu64 "ms" : "%" PRIu64 "s",
                 k->max % 1000 ? k->max : k->max / 1000);
        break;
    case BD_CONF_SIZE:
        bd_conf_format_size(lo, sizeof(lo), k->min);
        bd_conf_format_size(hi, sizeof(hi), k->max);
        break;
    case BD_CONF_UINT:
        snprintf(lo, sizeof(lo), "%" PRIu64, k->min);
        snprintf(hi, sizeof(hi), "%" PRIu64, k->max);
        break;
    case BD_CONF_PERCENT:
        snprintf(lo, sizeof(lo), "%" PRIu64 "%%", k->min);
        snprintf(hi, sizeof(hi), "%" PRIu64 "%%", k->max);
        break;
    default:
        buf[0] = '\0';
        return;
    }
    snprintf(buf, len, "%s .. %s", lo, hi);
}

/* ---- defaults, free ------------------------------------------------------------ */

void breachd_config_free(breachd_config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < bd_conf_n_keys; i++) {
        const bd_conf_key *k = &bd_conf_keys[i];
        switch (k->type) {
        case BD_CONF_USERS:
        case BD_CONF_GROUPS:
            free(*FIELD(c, k->off2, uint32_t *));
            free(*FIELD(c, k->off, char *));
            break;
        case BD_CONF_LISTEN_LIST:
        case BD_CONF_NETWORKS:
            free(*FIELD(c, k->off2, void *));
            free(*FIELD(c, k->off, char *));
            break;
        case BD_CONF_PATH:
        case BD_CONF_PATHS:
        case BD_CONF_URLS:
        case BD_CONF_URL_TEMPLATE:
        case BD_CONF_PROXY:
        case BD_CONF_LISTEN:
        case BD_CONF_TEXT:
            free(*FIELD(c, k->off, char *));
            break;
        default:
            break;
        }
    }
    free(c->dns);
    free(c->key_lines);
    free(c->path);
    free(c);
}

unsigned breachd_config_key_line(const breachd_config *c, const char *section, const char *name)
{
    if (!c->key_lines)
        return 0;
    for (size_t i = 0; i < bd_conf_n_keys; i++)
        if (strcmp(bd_conf_keys[i].section, section) == 0 &&
            strcmp(bd_conf_keys[i].name, name) == 0)
            return c->key_lines[i];
    return 0;
}

int breachd_config_defaults(breachd_config **out)
{
    *out = NULL;
    _cleanup_(breachd_config_freep) breachd_config *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->path = strdup("");
    c->dns = malloc(sizeof(*c->dns));
    if (!c->path || !c->dns)
        return -ENOMEM;
    bdns_conf_defaults(c->dns);
    for (size_t i = 0; i < bd_conf_n_keys; i++) {
        br_error err;
        int rc = bd_conf_apply(c, &bd_conf_keys[i], bd_conf_keys[i].def, &err);
        if (rc == -ENOMEM)
            return rc;
        if (br_fails_assert(rc == 0)) /* a default that does not parse */
            return -EINVAL;
    }
    *out = BR_TAKE_PTR(c);
    return 0;
}

/* ---- the canonical spelling ------------------------------------------------------ */

const char *bd_conf_format_value(const breachd_config *c, const bd_conf_key *k, char *buf,
                                 size_t len)
{
    switch (k->type) {
    case BD_CONF_MODE:
        snprintf(buf, len, "%04o", (unsigned)*CFIELD(c, k->off, mode_t));
        break;
    case BD_CONF_CHOICE: {
        int v = *CFIELD(c, k->off, int);
        for (size_t i = 0; i < k->choices->n; i++)
            if (k->choices->v[i].value == v)
                return k->choices->v[i].name;
        return k->def;
    }
    case BD_CONF_SECONDS:
        bd_conf_format_duration_s(buf, len, *CFIELD(c, k->off, int64_t));
        break;
    case BD_CONF_MILLIS:
        bd_conf_format_duration_ms(buf, len, *CFIELD(c, k->off, uint32_t));
        break;
    case BD_CONF_SIZE:
        bd_conf_format_size(buf, len, *CFIELD(c, k->off, uint64_t));
        break;
    case BD_CONF_UINT:
        snprintf(buf, len, "%" PRIu32, *CFIELD(c, k->off, uint32_t));
        break;
    case BD_CONF_PERCENT:
        snprintf(buf, len, "%" PRIu32 "%%", *CFIELD(c, k->off, uint32_t));
        break;
    default: /* the strings, as written */
        return *CFIELD(c, k->off, char *);
    }
    return buf;
}

/* ---- breachd.conf written back out (breachd_config_dump) ---------------------- */

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

void breachd_config_dump(const breachd_config *c, bool secrets, FILE *out)
{
    char url[4096]; /* a redacted URL or list of URLs (longer ones are cut) */
    fprintf(out, "# breachd effective configuration%s%s\n", *c->path ? " from " : " (defaults)",
            c->path);
    for (size_t i = 0; i < bd_conf_n_keys; i++) {
        const bd_conf_key *k = &bd_conf_keys[i];
        if (i == 0 || strcmp(bd_conf_keys[i - 1].section, k->section) != 0)
            fprintf(out, "\n[%s]\n", k->section);
        char b[80]; /* bounds: two values of up to 31 bytes and " .. " */
        bd_conf_format_bounds(k, b, sizeof(b));
        fprintf(out, b[0] ? "# %s (%s)\n" : "# %s\n", k->doc, b);
        const char *v = bd_conf_format_value(c, k, b, sizeof(b));
        bool urls =
            k->type == BD_CONF_PROXY || k->type == BD_CONF_URLS || k->type == BD_CONF_URL_TEMPLATE;
        if (urls && !secrets)
            v = bd_conf_redact_urls(v, url, sizeof(url));
        dump_kv(out, k->name, v);
        if (k->type == BD_CONF_USERS || k->type == BD_CONF_GROUPS)
            dump_ids(out, k->name, k->type == BD_CONF_GROUPS ? "gids" : "uids",
                     *(const uint32_t *const *)(const void *)((const char *)c + k->off2),
                     *(const size_t *)(const void *)((const char *)c + k->off3));
    }
    bdns_conf_dump(c->dns, out);
}
