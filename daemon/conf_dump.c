/* SPDX-License-Identifier: MIT */
/* breachd.conf written back out (breachd_config_dump): every key in the
 * canonical spelling of its value. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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
    fprintf(out, "# breachd effective configuration%s%s\n", *c->path ? " from " : " (defaults)",
            c->path);
    for (size_t i = 0; i < bd_conf_n_keys; i++) {
        const bd_conf_key *k = &bd_conf_keys[i];
        if (i == 0 || strcmp(bd_conf_keys[i - 1].section, k->section) != 0)
            fprintf(out, "\n[%s]\n", k->section);
        char b[64];
        fprintf(out, "# %s\n", k->doc);
        dump_kv(out, k->name, bd_conf_format_value(c, k, b, sizeof(b)));
        if (k->type == BD_CONF_USERS || k->type == BD_CONF_GROUPS)
            dump_ids(out, k->name, k->type == BD_CONF_GROUPS ? "gids" : "uids",
                     *(const uint32_t *const *)(const void *)((const char *)c + k->off2),
                     *(const size_t *)(const void *)((const char *)c + k->off3));
    }
}
