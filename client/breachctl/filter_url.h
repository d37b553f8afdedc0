/* SPDX-License-Identifier: MIT */
/* breachctl filter subcommands for url-sha256 filters (cmd_filter_url.c),
 * called by cmd_filter.c. Each gets argv with argv[0] = the subcommand. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "url/url_feed.h"

/* True when argv holds "--kind url-sha256" or "--kind=url-sha256". */
bool url_filter_kind_requested(int argc, char **argv);
/* True when path's header decodes and names the blocked-bloom algorithm (a
 * layered file: its first layer). */
bool url_filter_file(const char *path);

int url_filter_build(int argc, char **argv);
/* The usage of one filter subcommand ("filter build"), from the table in
 * cmd_filter.c. */
void filter_usage_of(FILE *out, const char *name);
int url_filter_add(int argc, char **argv);
/* force: filter info --force (filter_info.h). */
int url_filter_info(const char *path, bool force);
/* keys: 64-hex SHA-256 keys, or URLs with by_url; none: read stdin. */
int url_filter_query(const char *path, int nkeys, char **keys, bool by_url);

/* ---- offline URL filters (cmd_filter_url_offline.c) ---- */
typedef struct url_offline_args {
    const br_feedset *fs;      /* finished */
    const char *const *inputs; /* the --input arguments, for messages */
    size_t n_inputs;
    const char *output;
    const char *source, *default_source; /* --source, or NULL: the default */
    uint64_t generation;
    const char *const *bases; /* --base: a delta of this offline set */
    size_t n_bases;
    bool no_check; /* --no-check-filter: key encoding v2/v3, no check filters */
    bool no_quick; /* --no-quick-filter: key encoding v4, no quick filter */
    bool sha256;   /* --sha256-keys: key encoding v5, fingerprints keyed by SHA-256 */
} url_offline_args;
/* True when path's header decodes and names an offline url-sha256 filter
 * (a layered file: its first layer). */
bool url_offline_file(const char *path);
/* The filter of the feeds, or with bases the delta of the feeds against
 * that offline set (docs/filter-format.md, "Sets"): 0, or EXIT_ERROR after
 * a message (more than 255 categories names the --input). */
int url_offline_build(const char *cmd, const url_offline_args *a);
/* "no" or "blocked CATEGORY[ EXPRESSION]" per key or URL. */
int url_offline_query(const char *path, int nkeys, char **keys, bool by_url);
