/* SPDX-License-Identifier: MIT */
/* Internal to the configuration parser (conf.h): what its files share.
 * conf.c reads the file (line reader, sections and keys, applying a key) and
 * has the defaults and free; conf_values.c parses the values; conf_access.c
 * the user and group lists and the peer policy; conf_dump.c writes a
 * configuration back out. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "conf.h"

/* uid_t and gid_t lists share the uint32_t helpers of conf_access.c. */
_Static_assert(__builtin_types_compatible_p(uid_t, uint32_t), "uid_t is not uint32_t");
_Static_assert(__builtin_types_compatible_p(gid_t, uint32_t), "gid_t is not uint32_t");

#define WHY_MAX 320

/* ---- small helpers ------------------------------------------------------------- */

static inline bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static inline char *skip_blanks(char *s)
{
    while (is_blank(*s))
        s++;
    return s;
}

static inline void rstrip_blanks(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && is_blank(s[n - 1]))
        s[--n] = '\0';
}

/* Decimal digits from *p into *out, stopping at the first non-digit.
 * false: no digit, or over UINT64_MAX. */
bool bd_conf_take_u64(const char **p, uint64_t *out);

/* A value as it may appear in a message: quoted, cut after 80 bytes. */
void bd_conf_quote_value(char *buf, size_t len, const char *value);

/* ---- value parsers: 0, or -EINVAL with the reason in why (WHY_MAX bytes) ------- */

/* Format the reason into why; returns -EINVAL. */
int bd_conf_why_set(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* conf_values.c */
int bd_conf_parse_duration_ms(const char *v, uint64_t *out_ms, char *why);
int bd_conf_parse_duration_s(const char *v, int64_t min_s, int64_t max_s, int64_t *out, char *why);
int bd_conf_parse_size(const char *v, uint64_t min, uint64_t max, uint64_t *out, char *why);
int bd_conf_parse_uint(const char *v, uint32_t min, uint32_t max, uint32_t *out, char *why);
int bd_conf_parse_mode(const char *v, mode_t *out, char *why);
int bd_conf_parse_log_level(const char *v, int *out, char *why);
int bd_conf_check_path(const char *v, bool allow_empty, size_t max_len, char *why);
int bd_conf_check_url_template(const char *v, char *why);
int bd_conf_check_proxy(const char *v, char *why);
int bd_conf_parse_listen(const char *v, char host[48], uint16_t *port, char *why);

/* conf_access.c; also -ENOMEM. *out is malloc'ed (NULL when empty). */
int bd_conf_parse_id_list(const char *v, bool group, uint32_t **out, size_t *n_out, char *why);

/* ---- formatting (conf_dump.c) -------------------------------------------------- */

/* s in its largest exact unit: "45d", "6h", "90s". */
void bd_conf_format_duration_s(char *buf, size_t len, int64_t s);
