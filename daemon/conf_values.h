/* SPDX-License-Identifier: MIT */
/* The values of breachd.conf (conf_values.c): a parser per kind of value,
 * each giving the reason for a bad one without the file, line or key (the
 * reader, conf.c, adds them), and the canonical spellings that the dump and
 * the messages write. conf_schema.c applies them to the keys' fields. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "conf.h"

/* uid_t and gid_t lists share one uint32_t parser (bd_conf_parse_id_list). */
_Static_assert(__builtin_types_compatible_p(uid_t, uint32_t), "uid_t is not uint32_t");
_Static_assert(__builtin_types_compatible_p(gid_t, uint32_t), "gid_t is not uint32_t");

/* The names of a BD_CONF_CHOICE key, and the value each stands for. */
typedef struct bd_conf_choices {
    const char *noun; /* in messages: "bad log level ..." */
    size_t n;
    struct {
        const char *name;
        int value;
    } v[8];
} bd_conf_choices;

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

/* ---- value parsers: 0, or -EINVAL with the reason in err ----------------------- */

int bd_conf_parse_duration_ms(const char *v, uint64_t *out_ms, br_error *err);
int bd_conf_parse_duration_s(const char *v, int64_t min_s, int64_t max_s, int64_t *out,
                             br_error *err);
int bd_conf_parse_millis(const char *v, uint32_t min_ms, uint32_t max_ms, uint32_t *out,
                         br_error *err);
int bd_conf_parse_size(const char *v, uint64_t min, uint64_t max, uint64_t *out, br_error *err);
int bd_conf_parse_uint(const char *v, uint32_t min, uint32_t max, uint32_t *out, br_error *err);
/* "N%" or "N", a whole number min .. max. */
int bd_conf_parse_percent(const char *v, uint32_t min, uint32_t max, uint32_t *out, br_error *err);
int bd_conf_parse_mode(const char *v, mode_t *out, br_error *err);
int bd_conf_parse_choice(const char *v, const bd_conf_choices *ch, int *out, br_error *err);
int bd_conf_check_path(const char *v, bool allow_empty, size_t max_len, br_error *err);
/* A comma-separated list (blanks around the commas allowed) of at most
 * BREACHD_CONF_MAX_FILES absolute paths of at most max_len bytes each. */
int bd_conf_check_paths(const char *v, bool allow_empty, size_t max_len, br_error *err);
/* The same for http://, https:// and file:// URLs (filter_url). */
int bd_conf_check_urls(const char *v, br_error *err);
int bd_conf_check_url_template(const char *v, br_error *err);
int bd_conf_check_proxy(const char *v, br_error *err);
int bd_conf_parse_listen(const char *v, char host[48], uint16_t *port, br_error *err);

/* Also -ENOMEM. *out is malloc'ed (NULL when empty). */
int bd_conf_parse_listen_list(const char *v, breachd_listen **out, size_t *n_out, br_error *err);
int bd_conf_parse_networks(const char *v, breachd_network **out, size_t *n_out, br_error *err);

/* The names of the log levels (syslog priorities LOG_ERR .. LOG_DEBUG). */
extern const bd_conf_choices bd_conf_log_levels;
extern const bd_conf_choices bd_conf_when_stale; /* [urls] when_stale */
extern const bd_conf_choices bd_conf_partition;  /* [cache] partition */
extern const bd_conf_choices bd_conf_yes_no;     /* yes (1) or no (0) */

/* User or group names or ids: also -ENOMEM. *out is malloc'ed (NULL when
 * empty), sorted, without duplicates. */
int bd_conf_parse_id_list(const char *v, bool group, uint32_t **out, size_t *n_out, br_error *err);

/* ---- the canonical spellings (the dump, messages, breachd.conf(5)) ------------- */

/* s in its largest exact unit: "45d", "6h", "90s". */
void bd_conf_format_duration_s(char *buf, size_t len, int64_t s);
/* ms as "1500ms" or in its largest exact unit. */
void bd_conf_format_duration_ms(char *buf, size_t len, uint64_t ms);
/* n in its largest exact unit: "1G", "512M", "4K", "100". */
void bd_conf_format_size(char *buf, size_t len, uint64_t n);
/* v (a URL, a URL template, a proxy or a list of URLs) with its secrets as
 * REDACTED, for --check-config (breachd(8)): in each URL the userinfo's
 * password ("user:REDACTED@"), or a userinfo without one whole (a token:
 * "REDACTED@"), and the value of each query parameter whose name holds
 * key, token, secret, pass, pwd, auth, sig, credential or session in any
 * case ("?api_key=REDACTED"). Into buf (size bytes, cut to fit). */
const char *bd_conf_redact_urls(const char *v, char *buf, size_t size);
