/* SPDX-License-Identifier: MIT */
/* The table of breachd.conf's keys (conf_schema.c): what a key's value is,
 * where it is kept in breachd_config, its bounds, default and doc line, and
 * what applying, writing and freeing a value of each type means. The reader
 * (conf.c) goes through it for every key it reads. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "conf_values.h"

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
    BD_CONF_TEXT,         /* char *: any text of at most max bytes (its reader judges it) */
} bd_conf_type;

#define BD_CONF_EMPTY_OK 1u /* BD_CONF_PATH: "" is allowed */

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

/* The sections, in order: "[a], [b] or [c]" into buf. */
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

/* *dst = a copy of value (the old one freed): 0 or -ENOMEM. */
int bd_conf_set_str(char **dst, const char *value);
