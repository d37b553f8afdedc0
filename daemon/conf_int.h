/* SPDX-License-Identifier: MIT */
/* Internal to the configuration parser (conf.h): what its files share.
 * conf_schema.c holds the table of keys and what a type means (apply a value,
 * defaults, free); conf.c reads the file (line reader, sections and keys) and
 * loads; conf_values.c parses the values; conf_access.c the user and group
 * lists and the peer policy; conf_dump.c writes a configuration back out. */
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

/* ---- the schema (conf_schema.c) ------------------------------------------------ */

/* What a key's value is, and how its field(s) in breachd_config are kept. */
typedef enum bd_conf_type {
    BD_CONF_PATH,         /* char *: "" (flag EMPTY_OK) or absolute, at most max bytes */
    BD_CONF_URL_TEMPLATE, /* char *: a range API template or "" */
    BD_CONF_PROXY,        /* char *: a proxy URL or "" */
    BD_CONF_MODE,         /* mode_t: octal, at most 0777 */
    BD_CONF_USERS,        /* char * text (off), uid_t * (off2), size_t count (off3) */
    BD_CONF_GROUPS,       /* the same with gid_t */
    BD_CONF_CHOICE,       /* int: one of choices, by name (any case) */
    BD_CONF_LISTEN,       /* char * (off), char[48] host (off2), uint16_t port (off3) */
    BD_CONF_SECONDS,      /* int64_t: a duration in whole seconds, min .. max */
    BD_CONF_MILLIS,       /* uint32_t: a duration in milliseconds, min .. max */
    BD_CONF_SIZE,         /* uint64_t: bytes, min .. max */
    BD_CONF_UINT,         /* uint32_t: min .. max */
    BD_CONF_PERCENT,      /* uint32_t: a whole percentage min .. max, written "50%" */
    BD_CONF_PATHS,        /* char *: "" (flag EMPTY_OK) or comma-separated absolute paths */
    BD_CONF_URLS,         /* char *: "" or comma-separated http(s):// or file:// URLs */
    BD_CONF_LISTEN_LIST,  /* char * (off), breachd_listen * (off2), size_t count (off3) */
    BD_CONF_NETWORKS,     /* char * (off), breachd_network * (off2), size_t count (off3) */
} bd_conf_type;

#define BD_CONF_EMPTY_OK 1u /* BD_CONF_PATH: "" is allowed */

/* The names of a BD_CONF_CHOICE key, and the value each stands for. */
typedef struct bd_conf_choices {
    const char *noun; /* in messages: "bad log level ..." */
    size_t n;
    struct {
        const char *name;
        int value;
    } v[8];
} bd_conf_choices;

typedef struct bd_conf_key {
    const char *section;
    const char *name;
    bd_conf_type type;
    unsigned flags;
    size_t off, off2, off3; /* offsetof(breachd_config, ...) of its field(s) */
    uint64_t min, max;      /* bounds (inclusive) of numbers; max length of a path */
    const bd_conf_choices *choices;
    const char *def; /* the default, as it is written in a file */
    const char *doc; /* one line, written above the key by the dump */
} bd_conf_key;

/* The table, in file order: sections in the order of breachd.conf(5). */
extern const bd_conf_key bd_conf_keys[];
extern const size_t bd_conf_n_keys;

/* The sections, in order, and how many; "[a], [b] or [c]" into buf. */
size_t bd_conf_sections(const char **out, size_t cap);
void bd_conf_sections_text(char *buf, size_t len);

/* Parse v into k's field(s) of c. 0, -EINVAL with err set to what is wrong
 * (without the file, line or key), or -ENOMEM. */
int bd_conf_apply(breachd_config *c, const bd_conf_key *k, const char *v, br_error *err);

/* k's bounds as messages and breachd.conf(5) write them: "1s .. 3650d";
 * "" for a key without numeric bounds. */
void bd_conf_format_bounds(const bd_conf_key *k, char *buf, size_t len);

/* k's value in c in its canonical spelling (what the dump writes): a string
 * key's own text, or buf (len bytes, 64 are enough) filled. */
const char *bd_conf_format_value(const breachd_config *c, const bd_conf_key *k, char *buf,
                                 size_t len);

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

/* *dst = a copy of value (the old one freed): 0 or -ENOMEM (conf_schema.c). */
int bd_conf_set_str(char **dst, const char *value);

/* A value as it may appear in a message: quoted, cut after 80 bytes. */
void bd_conf_quote_value(char *buf, size_t len, const char *value);

/* ---- value parsers: 0, or -EINVAL with the reason in err ----------------------- */

/* conf_values.c */
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

/* conf_http.c; also -ENOMEM. *out is malloc'ed (NULL when empty). */
int bd_conf_parse_listen_list(const char *v, breachd_listen **out, size_t *n_out, br_error *err);
int bd_conf_parse_networks(const char *v, breachd_network **out, size_t *n_out, br_error *err);

/* The names of the log levels (syslog priorities LOG_ERR .. LOG_DEBUG). */
extern const bd_conf_choices bd_conf_log_levels;
extern const bd_conf_choices bd_conf_when_stale; /* [urls] when_stale */
extern const bd_conf_choices bd_conf_partition;  /* [cache] partition */
extern const bd_conf_choices bd_conf_yes_no;     /* yes (1) or no (0) */

/* conf_access.c; also -ENOMEM. *out is malloc'ed (NULL when empty). */
int bd_conf_parse_id_list(const char *v, bool group, uint32_t **out, size_t *n_out, br_error *err);

/* ---- formatting (conf_dump.c) -------------------------------------------------- */

/* s in its largest exact unit: "45d", "6h", "90s". */
void bd_conf_format_duration_s(char *buf, size_t len, int64_t s);
/* ms as "1500ms" or in its largest exact unit. */
void bd_conf_format_duration_ms(char *buf, size_t len, uint64_t ms);
/* n in its largest exact unit: "1G", "512M", "4K", "100". */
void bd_conf_format_size(char *buf, size_t len, uint64_t n);
