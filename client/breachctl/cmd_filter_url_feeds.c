/* SPDX-License-Identifier: MIT */
/* The feeds of breachctl filter build|add --kind url-sha256: options
 * (--input, --format, --column, --skip-bad, --max-bad, --allow-empty) and
 * reading them through lib/url/url_feed.h; see filter_url_feeds.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "breachctl.h"
#include "filter/input_src.h"
#include "filter_url_feeds.h"
#include "core/util.h"

#define MAX_BAD_SHOWN 10

static void on_bad(void *ctx, const char *msg)
{
    feeds *f = ctx;
    if (f->bad_shown++ < MAX_BAD_SHOWN)
        fprintf(stderr, "breachctl: warning: %s (skipped)\n", msg);
}

/* An entry cut for an e-mail address: FILE:LINE only, never the URL. */
static void on_cut(void *ctx, const char *msg)
{
    feeds *f = ctx;
    if (f->cut_shown++ < MAX_BAD_SHOWN)
        fprintf(stderr, "breachctl: note: %s\n", msg);
}

/* ", skipped: 3 exception (@@) (first at FILE:7), 1 with $options (first at
 * FILE:9)" for the kinds seen: where, never what (a rule may hold a secret). */
static void print_skipped(const char *name, const br_feed_stats *st)
{
    const char *sep = ", skipped: ";
    for (int k = 0; k < BR_FEED_SKIP_KINDS; k++) {
        if (!st->skipped[k])
            continue;
        fprintf(stderr, "%s%" PRIu64 " %s (first at %s:%" PRIu64 ")", sep, st->skipped[k],
                br_feed_skip_name((br_feed_skip)k), name, st->first_skipped[k]);
        sep = ", ";
    }
}

/* More bad lines in this feed than --max-bad allows? Says so. */
static bool too_many_bad(const char *cmd, const feeds *f, const char *name, const br_feed_stats *st)
{
    uint64_t entry_lines = st->lines - st->comments;
    uint64_t limit =
        f->max_bad_pct >= 0 ? (uint64_t)((double)entry_lines * f->max_bad_pct / 100.0) : f->max_bad;
    if (st->bad <= limit)
        return false;
    ctl_err("%s: %s: %" PRIu64 " of %" PRIu64
            " entry lines are bad, more than --max-bad allows (%" PRIu64
            "); nothing was written (wrong --format?)",
            cmd, name, st->bad, entry_lines, limit);
    return true;
}

/* ---- one feed, decompressed --------------------------------------------------- */

/* A feed as a stdio stream over the decompressing input
 * (filter/input_src.h): gzip and bzip2 feeds are read as they are, told by
 * their content. */
typedef struct zfeed {
    br_input_src *src;
    br_error err; /* the decompression's error, when a read failed */
    int failed;   /* its code (a negative errno), or 0 */
} zfeed;

static ssize_t zfeed_read(void *cookie, char *buf, size_t size)
{
    zfeed *z = cookie;
    int n = br_input_src_read(z->src, (uint8_t *)buf, BR_MIN(size, (size_t)INT_MAX), 0, &z->err);
    if (n < 0) {
        z->failed = n;
        errno = -n;
        return -1;
    }
    return n;
}

int read_feed_file(br_feedset *fs, const char *path, const char *cat, const br_feed_opts *o,
                   br_feed_stats *st, br_error *err)
{
    bool is_stdin = strcmp(path, "-") == 0;
    const char *name = is_stdin ? "<stdin>" : path;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    zfeed z = {0};
    int r = br_input_src_open(fd, name, &z.src, err);
    FILE *in = NULL;
    if (r == 0) {
        in = fopencookie(&z, "r", (cookie_io_functions_t){.read = zfeed_read});
        r = in ? 0 : br_error_set(err, -ENOMEM, "out of memory");
    }
    if (r == 0)
        r = br_feedset_read(fs, in, name, cat, o, st, err);
    if (in)
        fclose(in);
    if (z.failed) /* its reason, rather than the reader's "read error" */
        r = br_error_set(err, z.failed, "%s", z.err.text);
    br_input_src_close(z.src);
    if (!is_stdin)
        close(fd);
    return r;
}

/* --column goes with the feeds read as csv (--format csv, or FEED=:csv),
 * and every such feed needs it: 0, or -1 after a message. */
static int check_columns(const char *cmd, const feeds *f, const br_feed_format *fmts, size_t n)
{
    size_t csv = 0;
    for (size_t i = 0; i < n; i++)
        csv += fmts[i] == BR_FEED_CSV;
    if (f->opts.column && csv == 0) {
        ctl_err("%s: --column goes with --format csv (or an --input FEED=CATEGORY:csv)", cmd);
        return -1;
    }
    if (csv && !f->opts.column) {
        ctl_err("%s: --format csv needs --column N (1-based) or --column NAME (a header name)",
                cmd);
        return -1;
    }
    return 0;
}

/* Every --input into its path (malloc'd: the caller frees paths[0..*n)),
 * category and format (its :FORMAT, or --format's): 0, or EXIT_ERROR after
 * a message naming the input. */
static int split_inputs(const char *cmd, const feeds *f, char **paths,
                        char (*cats)[BR_FEED_CATEGORY_MAX + 1], br_feed_format *fmts, size_t *n)
{
    br_error err = {{0}};
    for (*n = 0; *n < f->n; (*n)++) {
        size_t i = *n;
        if (br_feed_split_input(f->args[i], &paths[i], cats[i], &fmts[i], &err) < 0) {
            ctl_err("%s: --input %s", cmd, err.text);
            return EXIT_ERROR;
        }
        if (fmts[i] == BR_FEED_AUTO)
            fmts[i] = f->opts.format;
    }
    return 0;
}

/* Read every feed into a finished set; prints a line per feed. */
int read_feeds(const char *cmd, feeds *f, br_feedset **out, br_feedset_stats *fst,
               uint64_t *bad_total)
{
    br_error err = {{0}};
    _cleanup_(br_feedset_freep) br_feedset *fs = NULL;
    if (br_feedset_new(&fs) < 0) {
        ctl_err("%s: out of memory", cmd);
        return EXIT_ERROR;
    }
    f->opts.on_bad = on_bad;
    f->opts.on_cut = on_cut;
    f->opts.ctx = f;
    /* Check every argument before reading any feed. */
    char *paths[MAX_INPUTS];
    char cats[MAX_INPUTS][BR_FEED_CATEGORY_MAX + 1];
    br_feed_format fmts[MAX_INPUTS];
    size_t n = 0;
    int status = split_inputs(cmd, f, paths, cats, fmts, &n);
    *bad_total = 0;
    for (size_t i = 0; status == 0 && i < n; i++) {
        br_feed_stats st = {0};
        br_feed_opts o = f->opts;
        o.format = fmts[i];
        int r = read_feed_file(fs, paths[i], cats[i], &o, &st, &err);
        if (r < 0) {
            ctl_err("%s", err.text[0] ? err.text : strerror(-r));
            status = EXIT_ERROR;
            break;
        }
        *bad_total += st.bad;
        const char *name = strcmp(paths[i], "-") == 0 ? "<stdin>" : paths[i];
        fprintf(stderr,
                "%s: %s, category %s: %" PRIu64 " entries from %" PRIu64 " lines (%" PRIu64
                " blank or comment, %" PRIu64 " localhost-like ignored, %" PRIu64 " bad skipped",
                name, br_feed_format_name(st.format), cats[i], st.entries, st.lines, st.comments,
                st.ignored, st.bad);
        print_skipped(name, &st);
        fputs(")\n", stderr);
        if (st.cut)
            fprintf(stderr,
                    "%s: %" PRIu64 " entries held an e-mail address and were cut down to their "
                    "longest expression free of it\n",
                    name, st.cut);
        if (f->opts.skip_bad && too_many_bad(cmd, f, name, &st))
            status = EXIT_ERROR;
    }
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    if (status)
        return status;
    if (f->cut_shown > MAX_BAD_SHOWN)
        fprintf(stderr, "breachctl: note: %" PRIu64 " more entries cut\n",
                f->cut_shown - MAX_BAD_SHOWN);
    if (f->bad_shown > MAX_BAD_SHOWN)
        fprintf(stderr, "breachctl: warning: %" PRIu64 " more bad lines skipped\n",
                f->bad_shown - MAX_BAD_SHOWN);
    br_feedset_finish(fs, fst);
    if (br_feedset_count(fs) == 0 && !f->allow_empty) {
        ctl_err("%s: the feeds hold no entry; an empty filter blocks nothing: --allow-empty "
                "builds one anyway (nothing was written)",
                cmd);
        return EXIT_ERROR;
    }
    *out = BR_TAKE_PTR(fs);
    return 0;
}

/* --max-bad N or --max-bad P% */
static bool parse_max_bad(const char *cmd, const char *s, feeds *f)
{
    char *end;
    errno = 0;
    if (s[0] >= '0' && s[0] <= '9') {
        double v = strtod(s, &end);
        if (!errno && end != s && strcmp(end, "%") == 0 && v >= 0 && v <= 100) {
            f->max_bad_pct = v;
            return true;
        }
        errno = 0;
        unsigned long long n = strtoull(s, &end, 10);
        if (!errno && *end == '\0') {
            f->max_bad = n;
            f->max_bad_pct = -1;
            return true;
        }
    }
    ctl_err("%s: --max-bad '%s': a number of lines (10) or a percentage of a feed's lines (0.5%%)",
            cmd, s);
    return false;
}

bool feed_opt_format(const char *cmd, const char *arg, void *dst)
{
    feeds *f = dst;
    if (br_feed_format_from_name(arg, &f->opts.format) < 0) {
        ctl_err("%s: --format '%s': expected " BR_FEED_FORMAT_NAMES, cmd, arg);
        return false;
    }
    return true;
}

bool feed_opt_max_bad(const char *cmd, const char *arg, void *dst)
{
    feeds *f = dst;
    f->opts.skip_bad = true; /* a limit means bad lines are skipped up to it */
    return parse_max_bad(cmd, arg, f);
}

/* Defaults and cross-checks once every option is read: the inputs parse,
 * and --column goes with the feeds read as csv. */
int check_feed_options(const char *cmd, const feeds *f)
{
    static char *paths[MAX_INPUTS];
    static char cats[MAX_INPUTS][BR_FEED_CATEGORY_MAX + 1];
    static br_feed_format fmts[MAX_INPUTS];
    size_t n = 0;
    int status = split_inputs(cmd, f, paths, cats, fmts, &n);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    if (status == 0 && check_columns(cmd, f, fmts, n) < 0)
        status = EXIT_ERROR;
    return status;
}
