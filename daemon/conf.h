/* SPDX-License-Identifier: MIT */
/* breachd's configuration file (breachd.conf(5); every key, type, default
 * and bound is documented in docs/breachd.conf.5).
 *
 * (This header is conf.h, not config.h: the build's generated config.h, with
 * BREACHD_VERSION, is included as "config.h" and a daemon/config.h next to
 * the daemon's sources would shadow it.)
 *
 * Format: INI, parsed with libinih. `[section]` lines, `key = value` lines,
 * comments are whole lines whose first non-blank character is `#` or `;`.
 * Blank lines, leading/trailing blanks, CRLF line endings and a UTF-8 BOM are
 * fine. Everything after the `=` (trimmed) is the value, verbatim: an inline
 * "# ..." or " ; ..." is part of the value, so `timeout = 5s # x` is a bad
 * duration, never silently "5s". Keys are separated with `=` only.
 *
 * Errors: the first problem stops the load; err says
 *     FILE:LINE: [section] key: what is wrong
 * (or FILE:LINE: what is wrong for a line that is not a key). Unknown sections
 * and keys, duplicate keys, bad and out-of-range values, unknown user and
 * group names, a metrics_listen that is not loopback, an upstream without
 * {prefix} are all errors. A section may appear more than once; a key only
 * once.
 *
 * Values:
 *  - duration: an integer with a unit: ms, s, m, h, d (a bare integer is
 *    seconds), e.g. 45d, 5s, 1500ms. Every duration key accepts ms; keys kept
 *    in seconds refuse a duration that is not whole seconds.
 *  - size: an integer with an optional unit K, M, G (powers of 1024, either
 *    case); a bare integer is bytes.
 *  - path: absolute, at most PATH_MAX-1 bytes.
 *  - user / group list: comma-separated names or numeric ids, blanks around
 *    the commas allowed; names are resolved once, at load.
 *
 * The keys, their types, bounds, defaults and one-line docs are one table,
 * in conf_schema.c: it drives the parse, the defaults and the dump. Adding a
 * key is a row there, a field here, its use, and its line in breachd.conf(5)
 * and data/breachd.conf.example (a unit test compares the three).
 *
 * Threading: load and free from any one thread; getpwnam_r / getgrnam_r are
 * used, which may consult NSS (files, systemd, ...). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "config.h"
#include "core/error.h"
#include "core/util.h"

/* BREACHD_CONFIG_PATH: SYSCONFDIR/breachd/breachd.conf, from the build (config.h). */

/* One [http] listen item: a TCP address and port, or a Unix socket path. */
typedef struct breachd_listen {
    int family;     /* AF_INET, AF_INET6 or AF_UNIX */
    char host[48];  /* AF_INET / AF_INET6: numeric, no brackets ("10.0.0.5", "::") */
    uint16_t port;  /* AF_INET / AF_INET6 */
    char path[108]; /* AF_UNIX: absolute, fits a sockaddr_un */
} breachd_listen;

/* One [http] allowed_networks item: an IPv4 or IPv6 network. */
typedef struct breachd_network {
    int family;       /* AF_INET or AF_INET6 */
    uint8_t addr[16]; /* network byte order (4 bytes for IPv4), host bits zero */
    uint8_t bits;     /* prefix length: 0 .. 32 or 0 .. 128 */
} breachd_network;

typedef struct breachd_config {
    char *path;          /* the file it came from; "" for breachd_config_defaults() */
    unsigned *key_lines; /* per bd_conf_keys row: the line that set it; NULL or 0: default */

    struct {
        char *socket;             /* absolute path, fits a sockaddr_un */
        mode_t socket_mode;       /* 0 .. 0777 */
        char *allowed_users_text; /* the value as written ("" = anyone) */
        uid_t *allowed_users;     /* resolved, sorted, without duplicates */
        size_t n_allowed_users;
        char *allowed_groups_text;
        gid_t *allowed_groups;
        size_t n_allowed_groups;
        char *admin_users_text; /* default "root"; "" = nobody may RELOAD */
        uid_t *admin_users;
        size_t n_admin_users;
        char *stats_users_text; /* default ""; STATS is for admin_users and these */
        uid_t *stats_users;
        size_t n_stats_users;
        int log_level;         /* syslog priority: LOG_ERR .. LOG_DEBUG */
        char *log_file;        /* "" = stderr, or syslog in the background (log.h) */
        char *metrics_listen;  /* as written; "" = off */
        char metrics_host[48]; /* numeric, no brackets: "127.0.0.1", "::1"; "" = off */
        uint16_t metrics_port; /* 0 = off */
        uint32_t canary_ms;    /* the canary's interval (canary.h); 0 = off */
        int trust_own_filters; /* 1: files of breachd's own uid trusted too (development) */
    } daemon;

    struct {
        uint32_t max_connections;  /* open connections */
        uint32_t max_inflight;     /* pending requests per connection */
        uint32_t idle_timeout_ms;  /* a connection with nothing pending is closed */
        uint64_t max_unread;       /* unread answer bytes before reading pauses */
        uint32_t drain_timeout_ms; /* SIGTERM: how long in-flight answers may take */
    } limits;

    struct {
        char *filter;             /* "" = none: every check goes to the range API */
        char *pubkey;             /* "" = none; else only filters signed by this key load */
        char *filter_url;         /* where breachctl filter fetch gets each filter; "" none */
        char *upstream;           /* URL template; "" = none (maybes answer UNKNOWN) */
        int64_t max_filter_age_s; /* by the filter's build time */
        int min_count_ok;         /* 1: a --min-count filter may be the filter */
        char *similar_filter;     /* offline filter of SIMILAR; "" = filter if offline */
        char *banned_terms;       /* terms file for BANNED (docs/banned.md); "" none */
        char *site_terms;         /* the site's names, a comma list; "" none */
        uint32_t min_score;       /* the clients' minimum score (docs/banned.md) */
        char *follow;             /* a password set's manifest URL; "" = none (follow.h) */
        int64_t follow_interval_s;
    } passwords;

    struct {              /* NT hashes (the NT verb), like passwords */
        char *filter;     /* "" = none: every NT check goes to the range API */
        char *pubkey;     /* as for passwords */
        char *filter_url; /* as for passwords */
        char *upstream;   /* URL template; "" = none */
        int64_t max_filter_age_s;
        int min_count_ok; /* as for passwords */
        char *follow;     /* as for passwords */
        int64_t follow_interval_s;
    } ntlm;

    struct {
        char *filter;     /* "" = URL checks answer UNKNOWN filter-unavailable */
        char *pubkey;     /* as for passwords */
        char *filter_url; /* as for passwords */
        char *upstream;   /* "" = none */
        int64_t max_filter_age_s;
        int when_stale; /* BREACHD_WHEN_STALE_FILTER (default), _UPSTREAM, _UNKNOWN */
        char *follow;   /* a publisher's manifest URL; "" = none (follow.h) */
        int64_t follow_interval_s;
    } urls;

    struct {
        char *path;                   /* LMDB environment directory */
        uint64_t max_size;            /* bytes (LMDB map size) */
        int64_t ttl_s;                /* cap on an entry's freshness */
        int64_t max_stale_s;          /* 0 = never answer from an expired entry
                                       * (br_resolver_config wants -1 for that) */
        int partition;                /* BREACHD_PARTITION_UID (default) or _NONE */
        uint32_t partition_share_pct; /* the most of max_size one partition takes, 1 .. 100 */
    } cache;

    struct {
        uint32_t timeout_ms; /* deadline of one range fetch */
        uint32_t max_inflight;
        uint32_t rate;                /* transfers per second */
        char *proxy;                  /* "" = libcurl's environment variables */
        char *ca_file;                /* "" = the system CA store */
        uint32_t decoys;              /* 0 .. 16 */
        uint32_t bulk_queue;          /* LANE bulk checks waiting at most */
        uint32_t bulk_share_pct;      /* the bulk lane's share of rate and max_inflight, 1 .. 100 */
        uint32_t http_share_pct;      /* the range endpoint's share of them, 1 .. 100 */
        uint32_t breaker_cooldown_ms; /* an open circuit waits this long before its trial */
    } upstream;

    struct {
        char *listen;            /* as written; "" = off */
        breachd_listen *listens; /* parsed, in the order written */
        size_t n_listens;
        char *allowed_networks_text;       /* as written */
        breachd_network *allowed_networks; /* parsed */
        size_t n_allowed_networks;
        uint32_t rate;                       /* requests per second per client; 0 = no limit */
        uint32_t ipv6_prefix;                /* an IPv6 client is its network of this many bits */
        uint32_t max_connections;            /* in total (at most half RLIMIT_NOFILE) */
        uint32_t max_connections_per_client; /* per client (Unix socket peers: no cap) */
        uint32_t header_timeout_ms;          /* a whole request must be in within this */
        int access_log;                      /* 0 (no, default) or 1: one log line per request */
        uint64_t prepared_size;              /* bytes of prepared range bodies kept; 0 = none */
    } http;

    /* [dns], libbreachd-dns's: checked and printed by breachd with the
     * library's code (client/dns/dns_conf.h), not used by it */
    struct bdns_conf *dns;
} breachd_config;

/* Files in a filter list (a base and its deltas) at most. */
#define BREACHD_CONF_MAX_FILES 64

/* Split a comma-separated list value (filter, filter_url) into its items,
 * blanks around them dropped, empty items skipped. 0 and *items a malloc'ed
 * array of *n malloc'ed strings (breachd_config_list_free), or -ENOMEM. */
int breachd_config_list_split(const char *v, char ***items, size_t *n);
void breachd_config_list_free(char **items, size_t n);

/* [urls] when_stale: what a URL filter past max_filter_age does. */
enum {
    BREACHD_WHEN_STALE_FILTER = 0,
    BREACHD_WHEN_STALE_UPSTREAM = 1,
    BREACHD_WHEN_STALE_UNKNOWN = 2
};
/* [cache] partition: whose lookups share cache entries and fetches. */
enum { BREACHD_PARTITION_UID = 0, BREACHD_PARTITION_NONE = 1 };

/* Entries in a user / group list at most. The bounds of the other keys are in
 * the table (conf_schema.c) and breachd.conf(5). */
#define BREACHD_CONF_MAX_LIST 256

/* A configuration holding every default (admin_users = root is resolved to
 * uid 0 without a lookup; the socket is the build's default_socket option).
 * 0 or -ENOMEM. */
int breachd_config_defaults(breachd_config **out);

/* Read path. 0, or a negative errno with err filled: -ENOENT / -EACCES / ...
 * when the file cannot be opened or read ("FILE: reason"), -EINVAL for a
 * problem in it ("FILE:LINE: ..."), -ENOMEM. *out is NULL on failure. */
int breachd_config_load(const char *path, breachd_config **out, br_error *err);

/* The same from an open stream; name is used in messages and as cfg->path. */
int breachd_config_load_stream(FILE *f, const char *name, breachd_config **out, br_error *err);

/* The line of cfg->path that set [section] name; 0 when it has its default. */
unsigned breachd_config_key_line(const breachd_config *cfg, const char *section, const char *name);

/* NULL is fine. */
void breachd_config_free(breachd_config *cfg);
BR_DEFINE_FREEP(breachd_config, breachd_config_free)

/* Write the effective configuration as a complete config file (what
 * breachd --check-config prints): every section and key, each after a
 * comment line with its doc line and its bounds, in the canonical spelling
 * of each value (durations and sizes in their largest exact unit), with the
 * resolved ids of user and group lists on comment lines. With secrets,
 * loading the output gives the same configuration. Without (what
 * --check-config prints, which ends up in terminals and CI logs), the
 * secrets of the proxy, upstream and feed URLs (userinfo, token-like query
 * values: bd_conf_redact_urls) are written as REDACTED. */
void breachd_config_dump(const breachd_config *cfg, bool secrets, FILE *out);

/* Peer policy helpers for SO_PEERCRED. A peer may connect when both
 * allowed_users and allowed_groups are empty, or its uid is in allowed_users,
 * admin_users or stats_users, or its gid or one of groups[0..n_groups) is in
 * allowed_groups. */
bool breachd_config_peer_allowed(const breachd_config *cfg, uid_t uid, gid_t gid,
                                 const gid_t *groups, size_t n_groups);
/* May send RELOAD: uid is in admin_users. */
bool breachd_config_is_admin(const breachd_config *cfg, uid_t uid);
/* May send STATS: uid is in admin_users or stats_users. */
bool breachd_config_may_stats(const breachd_config *cfg, uid_t uid);

/* May an HTTP client at sa use the range endpoint: its address (an
 * IPv4-mapped IPv6 address counts as the IPv4 one) is in [http]
 * allowed_networks. A Unix socket peer (AF_UNIX) always may: the socket's
 * file mode is its access control. */
struct sockaddr;
bool breachd_config_http_allowed(const breachd_config *cfg, const struct sockaddr *sa);

/* "error", "warning", "notice", "info", "debug" for LOG_ERR .. LOG_DEBUG; NULL otherwise. */
const char *breachd_log_level_name(int level);
