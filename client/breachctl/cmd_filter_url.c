/* SPDX-License-Identifier: MIT */
/* breachctl filter build|add for url-sha256 filters: the feeds
 * (cmd_filter_url_feeds.c), the Bloom filter file (lib/filter/urlfilter.h)
 * and the range mirror (lib/url/url_mirror.h). info|verify|query:
 * cmd_filter_url_query.c. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "breachctl.h"
#include "filter_delta.h"
#include "filter_file.h"
#include "filter_fleet.h"
#include "filter_url.h"
#include "filter_url_feeds.h"
#include "hash.h"
#include "url_feed.h"
#include "url_mirror.h"
#include "urlfilter.h"
#include "util.h"


bool url_filter_kind_requested(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc)
            return strcmp(argv[i + 1], "url-sha256") == 0;
        if (strcmp(argv[i], "--kind=url-sha256") == 0)
            return true;
    }
    return false;
}

bool url_filter_file(const char *path)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    uint8_t raw[BR_FILTER_HEADER_SIZE];
    if (fd < 0 || pread(fd, raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        return false;
    br_filter_header h;
    return br_filter_header_decode(raw, sizeof(raw), &h, NULL) == 0 &&
           (h.algorithm == BR_ALGO_BLOCKED_BLOOM ||
            (h.algorithm == BR_ALGO_LAYERS && h.kind == BR_KIND_URL_SHA256));
}

/* The mirror goes in place right before the filter (the mirror is never
 * behind the filter); a mirror failure abandons the new filter. */
static int commit_mirror(void *ctx, br_error *err)
{
    br_mirror *m = ctx;
    return m ? br_mirror_commit(m, err) : 0;
}

static void print_mirror(const char *dir, const br_mirror_stats *ms, uint64_t removed)
{
    fprintf(stderr,
            "ranges %s: %" PRIu64 " prefix files for this set: %" PRIu64 " written, %" PRIu64
            " unchanged; %" PRIu64 " stale removed\n",
            dir, ms->prefixes, ms->written, ms->unchanged, removed);
}

/* ---- build ---- */

static void build_usage(void)
{
    fprintf(stderr,
            "Usage: breachctl filter build --kind url-sha256 --output FILE [--ranges-dir DIR]\n"
            "       --input FEED[=CATEGORY]... [--format FORMAT [--column N|NAME]]\n"
            "       [--skip-bad] [--max-bad N|P%%] [--allow-empty]\n"
            "       [--fpr P] [--capacity N] [--generation N] [--source TEXT]\n"
            "       [--base OLD]...   a delta: the expressions OLD does not answer maybe for\n"
            "  FORMAT: " BR_FEED_FORMAT_NAMES "\n"
            "  CATEGORY: [a-z0-9_-]{1,32}, default " BR_FEED_DEFAULT_CATEGORY
            "; the first --input listing an expression sets its category\n");
}

static const struct option feed_opts_build[] = {
    {"kind", required_argument, NULL, 'k'},
    {"output", required_argument, NULL, 'o'},
    {"ranges-dir", required_argument, NULL, 'R'},
    FEED_OPTIONS,
    {"fpr", required_argument, NULL, 'f'},
    {"capacity", required_argument, NULL, 'c'},
    {"generation", required_argument, NULL, 'g'},
    {"source", required_argument, NULL, 's'},
    {"base", required_argument, NULL, 'b'},
    {"socket", required_argument, NULL, 'S'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static bool parse_fpr(const char *cmd, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= BR_BLOOM_MIN_FPR && v <= BR_BLOOM_MAX_FPR)) {
        ctl_err("%s: --fpr '%s': must be a number from %g to %g", cmd, s, BR_BLOOM_MIN_FPR,
                BR_BLOOM_MAX_FPR);
        return false;
    }
    *out = v;
    return true;
}

static void default_source(char *buf, size_t size, const feeds *f)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < f->n && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " " : "", f->args[i]);
}

int url_filter_build(int argc, char **argv)
{
    const char *cmd = "filter build";
    const char *output = NULL, *ranges = NULL, *source = NULL, *kind = NULL;
    feeds f = {.max_bad_pct = DEFAULT_MAX_BAD_PCT};
    double fpr = BR_BLOOM_DEFAULT_FPR;
    uint64_t capacity = 0, generation = 0;
    const char *bases[BR_LAYERS_MAX];
    size_t n_bases = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", feed_opts_build, NULL)) != -1) {
        int r = parse_feed_option(cmd, c, &f);
        if (r >= 0) {
            if (r)
                return r;
            continue;
        }
        switch (c) {
        case 'k':
            kind = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'R':
            ranges = optarg;
            break;
        case 'f':
            if (!parse_fpr(cmd, optarg, &fpr))
                return EXIT_ERROR;
            break;
        case 'c':
            if (!ctl_parse_u64(optarg, BR_BLOOM_MAX_CAPACITY, &capacity) || capacity == 0) {
                ctl_err("%s: --capacity '%s': must be 1..%" PRIu64, cmd, optarg,
                        (uint64_t)BR_BLOOM_MAX_CAPACITY);
                return EXIT_ERROR;
            }
            break;
        case 'g':
            if (!ctl_opt_generation(cmd, optarg, &generation))
                return EXIT_ERROR;
            break;
        case 's':
            if (!ctl_opt_source(cmd, optarg, &source))
                return EXIT_ERROR;
            break;
        case 'b':
            if (n_bases == BR_LAYERS_MAX) {
                ctl_err("%s: more than %d --base options", cmd, BR_LAYERS_MAX);
                return EXIT_ERROR;
            }
            bases[n_bases++] = optarg;
            break;
        case 'S':
            break;
        case 'h':
            build_usage();
            return 0;
        default:
            build_usage();
            return EXIT_ERROR;
        }
    }
    if (optind < argc) {
        ctl_err("%s: unexpected argument '%s'", cmd, argv[optind]);
        return EXIT_ERROR;
    }
    if (!kind || strcmp(kind, "url-sha256") != 0 || !output || f.n == 0) {
        ctl_err("%s: --kind url-sha256, --output and at least one --input are required", cmd);
        build_usage();
        return EXIT_ERROR;
    }
    if (check_feed_options(cmd, &f))
        return EXIT_ERROR;
    if (n_bases) {
        url_delta_args da = {.output = output, .ranges = ranges, .source = source,
                             .generation = generation, .capacity = capacity, .fpr = fpr,
                             .bases = bases, .n_bases = n_bases};
        return url_filter_build_delta(cmd, &f, &da);
    }

    uint64_t t0 = br_now_ns();
    _cleanup_(br_feedset_freep) br_feedset *fs = NULL;
    br_feedset_stats fst = {0};
    uint64_t bad = 0;
    int status = read_feeds(cmd, &f, &fs, &fst, &bad);
    if (status)
        return status;
    uint64_t n = br_feedset_count(fs);
    if (capacity && capacity < n) {
        ctl_err("%s: --capacity %" PRIu64 " is below the %" PRIu64 " entries of this build", cmd,
                capacity, n);
        return EXIT_ERROR;
    }
    if (n == 0)
        fprintf(stderr, "breachctl: warning: no entries (--allow-empty): the filter blocks nothing\n");

    br_error err = {{0}};
    _cleanup_(br_urlfilter_draft_freep) br_urlfilter_draft *d = NULL;
    int r = br_urlfilter_draft_new(capacity ? capacity : n, fpr, &d, &err);
    if (r < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    const br_feed_entry *e = br_feedset_entries(fs);
    for (uint64_t i = 0; i < n; i++)
        br_urlfilter_draft_add(d, e[i].hash, true);
    br_urlfilter_draft_note_domain_labels(d, br_feedset_max_domain_labels(fs));

    _cleanup_(br_mirror_freep) br_mirror *m = NULL;
    if (ranges && br_mirror_prepare_full(ranges, fs, &m, &err) < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    char defsrc[BR_FILTER_SOURCE_SIZE];
    if (!source) {
        default_source(defsrc, sizeof(defsrc), &f);
        source = defsrc;
    }
    br_urlfilter_save_opts so = {
        .generation = generation,
        .source = source,
        .build_time = -1,
        .before_commit = commit_mirror,
        .ctx = m,
    };
    uint64_t bytes = 0;
    r = br_urlfilter_draft_save(d, output, &so, &bytes, &err);
    if (r < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    uint64_t removed = 0;
    if (ranges) {
        /* The new filter is in place; prefixes it has no entry for are gone. */
        if (br_mirror_remove_stale(ranges, br_urlfilter_draft_bitmap(d), &removed, &err) < 0)
            ctl_err("warning: %s", err.text);
        print_mirror(ranges, br_mirror_get_stats(m), removed);
    }
    uint64_t cap = br_urlfilter_draft_capacity(d);
    uint64_t blocks = br_urlfilter_draft_blocks(d);
    fprintf(stderr,
            "wrote %s: %" PRIu64 " keys (%" PRIu64 " duplicates, %" PRIu64
            " category conflicts: first --input kept; %" PRIu64 " bad lines skipped), capacity %" PRIu64
            ", k=%u, %.2f bits/key, expected false positives %.3g per expression (target %g), %" PRIu64
            " bytes, %.1f s\n",
            output, n, fst.duplicates, fst.conflicts, bad, cap, br_urlfilter_draft_k(d),
            (double)blocks * BR_BLOOM_BLOCK_BITS / (double)cap,
            br_bloom_fpr((double)cap / (double)blocks, br_urlfilter_draft_k(d)), fpr, bytes,
            (double)(br_now_ns() - t0) / 1e9);
    if (!ranges)
        fprintf(stderr, "breachctl: note: no --ranges-dir: no range mirror was written\n");
    return 0;
}

/* ---- add ---- */

static double target_fpr_of(const br_urlfilter *uf)
{
    br_urlfilter_info info;
    br_urlfilter_get_info(uf, &info);
    return info.target_fpr;
}

static void add_usage(void)
{
    fprintf(stderr, "Usage: breachctl filter add FILE --input FEED[=CATEGORY]... [--ranges-dir DIR]\n"
                    "       [--format FORMAT [--column N|NAME]] [--skip-bad] [--max-bad N|P%%]\n"
                    "       [--allow-empty] [--generation N] [--source TEXT]\n"
                    "  FORMAT: " BR_FEED_FORMAT_NAMES "\n");
}

static const struct option feed_opts_add[] = {
    {"ranges-dir", required_argument, NULL, 'R'},
    FEED_OPTIONS,
    {"generation", required_argument, NULL, 'g'},
    {"source", required_argument, NULL, 's'},
    {"socket", required_argument, NULL, 'S'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

int url_filter_add(int argc, char **argv)
{
    const char *cmd = "filter add";
    const char *ranges = NULL, *source = NULL;
    feeds f = {.max_bad_pct = DEFAULT_MAX_BAD_PCT};
    uint64_t generation = 0;
    bool have_generation = false;
    int c;
    while ((c = getopt_long(argc, argv, "h", feed_opts_add, NULL)) != -1) {
        int r = parse_feed_option(cmd, c, &f);
        if (r >= 0) {
            if (r)
                return r;
            continue;
        }
        switch (c) {
        case 'R':
            ranges = optarg;
            break;
        case 'g':
            if (!ctl_opt_generation(cmd, optarg, &generation))
                return EXIT_ERROR;
            have_generation = true;
            break;
        case 's':
            if (!ctl_opt_source(cmd, optarg, &source))
                return EXIT_ERROR;
            break;
        case 'S':
            break;
        case 'h':
            add_usage();
            return 0;
        default:
            add_usage();
            return EXIT_ERROR;
        }
    }
    if (optind + 1 != argc || f.n == 0) {
        ctl_err("%s: expected one FILE and at least one --input", cmd);
        add_usage();
        return EXIT_ERROR;
    }
    if (check_feed_options(cmd, &f))
        return EXIT_ERROR;
    const char *path = argv[optind];
    if (!url_filter_file(path) && access(path, R_OK) == 0) {
        br_filter_file *ff = NULL;
        br_error e = {{0}};
        if (br_filter_file_open(path, &ff, &e) == 0) {
            ctl_err("%s: %s is a %s filter: additions need a rebuild (filter build)", cmd, path,
                    br_filter_kind_name(br_filter_file_header(ff)->kind));
            br_filter_file_free(ff);
            return EXIT_ERROR;
        }
    }
    br_error err = {{0}};
    _cleanup_(br_urlfilter_freep) br_urlfilter *old = NULL;
    if (br_urlfilter_open(path, &old, &err) < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    const br_filter_header *oh = br_urlfilter_header(old);
    if (br_urlfilter_members(old) > 1 || oh->role != BR_ROLE_FULL) {
        ctl_err("%s: %s is a %s: add to a full filter, or build a new delta with filter build "
                "--base",
                cmd, path, oh->role != BR_ROLE_FULL ? "delta" : "layered (merged) filter");
        return EXIT_ERROR;
    }
    if (have_generation && generation <= oh->generation) {
        ctl_err("%s: --generation %" PRIu64 " must be above the filter's %" PRIu64, cmd,
                generation, oh->generation);
        return EXIT_ERROR;
    }
    if (!have_generation) {
        if (oh->generation == UINT64_MAX) {
            ctl_err("%s: generation overflow", cmd);
            return EXIT_ERROR;
        }
        generation = oh->generation + 1;
    }

    _cleanup_(br_feedset_freep) br_feedset *fs = NULL;
    br_feedset_stats fst = {0};
    uint64_t bad = 0;
    int status = read_feeds(cmd, &f, &fs, &fst, &bad);
    if (status)
        return status;

    _cleanup_(br_urlfilter_draft_freep) br_urlfilter_draft *d = NULL;
    if (br_urlfilter_draft_from(old, &d, &err) < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    uint64_t n = br_feedset_count(fs), fresh = 0;
    const br_feed_entry *e = br_feedset_entries(fs);
    for (uint64_t i = 0; i < n; i++)
        fresh += br_urlfilter_draft_add(d, e[i].hash, false);
    br_urlfilter_draft_note_domain_labels(d, br_feedset_max_domain_labels(fs));

    _cleanup_(br_mirror_freep) br_mirror *m = NULL;
    if (ranges && br_mirror_prepare_update(ranges, fs, br_urlfilter_prefix_bitmap(old), &m, &err) < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    br_urlfilter_save_opts so = {
        .generation = generation,
        .source = source ? source : oh->source,
        .build_time = -1,
        .before_commit = commit_mirror,
        .ctx = m,
    };
    uint64_t bytes = 0;
    if (br_urlfilter_draft_save(d, path, &so, &bytes, &err) < 0) {
        ctl_err("%s: %s (the old filter is unchanged)", cmd, err.text);
        return EXIT_ERROR;
    }
    if (ranges) {
        const br_mirror_stats *ms = br_mirror_get_stats(m);
        fprintf(stderr,
                "ranges %s: %" PRIu64 " prefix files touched: %" PRIu64 " rewritten, %" PRIu64
                " unchanged; %" PRIu64 " entries new, %" PRIu64 " already listed, %" PRIu64
                " listed under another category (kept: re-categorizing needs a rebuild)\n",
                ranges, ms->prefixes, ms->written, ms->unchanged, ms->entries_new,
                ms->entries_present, ms->conflicts);
    } else if (fresh > 0) {
        fprintf(stderr, "breachctl: note: no --ranges-dir: update the range mirror with the same "
                        "entries, or their checks cannot be resolved\n");
    }
    uint64_t keys = br_urlfilter_draft_keys(d), cap = br_urlfilter_draft_capacity(d);
    unsigned k = br_urlfilter_draft_k(d);
    uint64_t blocks = br_urlfilter_draft_blocks(d);
    double now = br_bloom_fpr((double)keys / (double)blocks, k);
    fprintf(stderr,
            "updated %s: generation %" PRIu64 ", %" PRIu64 " new keys of %" PRIu64
            " (%" PRIu64 " already in the filter), %" PRIu64 " keys for a capacity of %" PRIu64
            ", expected false positives %.4g per expression now\n",
            path, generation, fresh, n, n - fresh, keys, cap, now);
    double target = target_fpr_of(old);
    if (now > target)
        fprintf(stderr,
                "breachctl: warning: %" PRIu64 " keys exceed the capacity of %" PRIu64
                ": false positives (%.4g) are above the target %g; rebuild with a larger "
                "--capacity\n",
                keys, cap, now, target);
    return 0;
}
