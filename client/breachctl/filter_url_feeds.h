/* SPDX-License-Identifier: MIT */
/* breachctl filter build|add --kind url-sha256: the options and the reading
 * of the feeds they share (cmd_filter_url_feeds.c), for cmd_filter_url.c. */
#pragma once

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "url_feed.h"

#define MAX_INPUTS 4096
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
/* A getopt result of FEED_OPTIONS: 0 taken, EXIT_ERROR after a message,
 * -1 not a feed option. */
int parse_feed_option(const char *cmd, int c, feeds *f);
/* Cross-checks once every option is read (--column with csv): 0 or EXIT_ERROR. */
int check_feed_options(const char *cmd, const feeds *f);

/* The getopt_long entries of the feed options, shared by build and add. */
#define FEED_OPTIONS                                                                               \
    {"input", required_argument, NULL, 'i'}, {"format", required_argument, NULL, 'F'},             \
        {"column", required_argument, NULL, 'C'}, {"skip-bad", no_argument, NULL, 'B'},            \
        {"max-bad", required_argument, NULL, 'X'}, {"allow-empty", no_argument, NULL, 'E'}

