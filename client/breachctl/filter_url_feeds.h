/* SPDX-License-Identifier: MIT */
/* breachctl filter build|add --kind url-sha256: the options and the reading
 * of the feeds they share (cmd_filter_url_feeds.c), for cmd_filter_url.c. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctl_opts.h"
#include "url/url_feed.h"

#define MAX_INPUTS 4096
_Static_assert(MAX_INPUTS == 4096, "FEED_OPTS' message names the bound");
#define DEFAULT_MAX_BAD_PCT 1.0 /* --max-bad's default: 1% of a feed's entry lines */

typedef struct feeds {
    const char *args[MAX_INPUTS];
    size_t n;
    br_feed_opts opts;
    uint64_t bad_shown;
    uint64_t cut_shown;
    /* --max-bad: at most max_bad bad lines a feed, or max_bad_pct percent
     * of its entry lines (the default: 1%) */
    uint64_t max_bad;
    double max_bad_pct;
    bool allow_empty;
} feeds;

/* Read every feed into a finished set, a line per feed on stderr. 0, or
 * EXIT_ERROR after a message: a feed that does not read, more bad lines in a
 * feed than --max-bad allows, no entry at all without --allow-empty. */
int read_feeds(const char *cmd, feeds *f, br_feedset **out, br_feedset_stats *fst,
               uint64_t *bad_total);
/* Read one feed (path, or "-": standard input) into fs under cat, gzip and
 * bzip2 told by their content (filter/input_src.h): 0, or a negative errno
 * with err naming the feed. */
int read_feed_file(br_feedset *fs, const char *path, const char *cat, const br_feed_opts *o,
                   br_feed_stats *st, br_error *err);
/* Cross-checks once every option is read (--column with csv): 0 or EXIT_ERROR. */
int check_feed_options(const char *cmd, const feeds *f);

/* The option rows (ctl_opts.h) of --format and --max-bad; dst is the feeds. */
bool feed_opt_format(const char *cmd, const char *arg, void *dst);
bool feed_opt_max_bad(const char *cmd, const char *arg, void *dst);

/* The ctl_opt rows of the feed options, shared by build and add: they fill
 * the feeds *f. */
#define FEED_OPTS(f)                                                                               \
    CTL_LIST("input", (f)->args, &(f)->n, MAX_INPUTS, "more than 4096 --input options"),           \
        CTL_FN("format", (f), feed_opt_format), CTL_STR("column", &(f)->opts.column),              \
        CTL_FLAG("skip-bad", &(f)->opts.skip_bad), CTL_FN("max-bad", (f), feed_opt_max_bad),       \
        CTL_FLAG("allow-empty", &(f)->allow_empty)

/* breachctl filter export (cmd_filter_export.c): the feeds' domain entries
 * as an RPZ zone, unbound local-zones, a hosts file or dnsmasq lines. */
int filter_export_cmd(int argc, char **argv);
void filter_export_summary(FILE *out);
