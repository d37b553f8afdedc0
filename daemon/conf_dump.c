/* SPDX-License-Identifier: MIT */
/* breachd.conf written back out (breachd_config_dump): every key in the
 * canonical spelling of its value. */
#include <inttypes.h>
#include <stdio.h>

#include "conf_int.h"

/* ---- dump and helpers ---------------------------------------------------------- */

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

static void format_duration_ms(char *buf, size_t len, uint64_t ms)
{
    if (ms % 1000)
        snprintf(buf, len, "%" PRIu64 "ms", ms);
    else
        bd_conf_format_duration_s(buf, len, (int64_t)(ms / 1000));
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
    dump_kv(out, "stats_users", c->daemon.stats_users_text);
    dump_ids(out, "stats_users", "uids", c->daemon.stats_users, c->daemon.n_stats_users);
    const char *lvl = breachd_log_level_name(c->daemon.log_level);
    dump_kv(out, "log_level", lvl ? lvl : "info");
    dump_kv(out, "metrics_listen", c->daemon.metrics_listen);

    fprintf(out, "\n[passwords]\n");
    dump_kv(out, "filter", c->passwords.filter);
    dump_kv(out, "upstream", c->passwords.upstream);
    bd_conf_format_duration_s(b, sizeof(b), c->passwords.max_filter_age_s);
    dump_kv(out, "max_filter_age", b);

    fprintf(out, "\n[urls]\n");
    dump_kv(out, "filter", c->urls.filter);
    dump_kv(out, "upstream", c->urls.upstream);
    bd_conf_format_duration_s(b, sizeof(b), c->urls.max_filter_age_s);
    dump_kv(out, "max_filter_age", b);
    dump_kv(out, "when_stale", breachd_when_stale_names[c->urls.when_stale]);

    fprintf(out, "\n[cache]\n");
    dump_kv(out, "path", c->cache.path);
    format_size(b, sizeof(b), c->cache.max_size);
    dump_kv(out, "max_size", b);
    bd_conf_format_duration_s(b, sizeof(b), c->cache.ttl_s);
    dump_kv(out, "ttl", b);
    bd_conf_format_duration_s(b, sizeof(b), c->cache.max_stale_s);
    dump_kv(out, "max_stale", b);
    dump_kv(out, "partition", breachd_partition_names[c->cache.partition]);

    fprintf(out, "\n[upstream]\n");
    format_duration_ms(b, sizeof(b), c->upstream.timeout_ms);
    dump_kv(out, "timeout", b);
    fprintf(out, "max_inflight = %" PRIu32 "\n", c->upstream.max_inflight);
    fprintf(out, "rate = %" PRIu32 "\n", c->upstream.rate);
    dump_kv(out, "proxy", c->upstream.proxy);
    dump_kv(out, "ca_file", c->upstream.ca_file);
    fprintf(out, "decoys = %" PRIu32 "\n", c->upstream.decoys);
}
