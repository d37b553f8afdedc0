/* SPDX-License-Identifier: MIT */
/* breachctl filter build|add for url-sha256 filters: the feeds
 * (cmd_filter_url_feeds.c), the Bloom filter file (lib/filter/urlfilter.h)
 * and the range mirror (url_mirror.h). info|verify|query:
 * cmd_filter_url_query.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder/urlfilter_save.h"
#include "breachctl.h"
#include "ctl_opts.h"
#include "filter/filter_delta.h"
#include "filter/filter_file.h"
#include "filter_fleet.h"
#include "filter_url.h"
#include "filter_url_feeds.h"
#include "core/hash.h"
#include "url/url_feed.h"
#include "url_mirror.h"
#include "filter/urlfilter.h"
#include "core/util.h"

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
    br_filter_header h; /* a layered file's first layer: Bloom, not offline */
    return br_filter_header_read_first(path, &h) == 0 && h.algorithm == BR_ALGO_BLOCKED_BLOOM;
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

static void default_source(char *buf, size_t size, const feeds *f)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < f->n && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " " : "", f->args[i]);
}

static void build_usage(FILE *out)
{
    filter_usage_of(out, "filter build");
}

/* What filter build --kind url-sha256 was asked, from its options. */
typedef struct url_build {
    const char *kind, *output, *ranges, *source;
    feeds f;
    double fpr;
    uint64_t capacity, generation;
    const char *bases[BR_LAYERS_MAX]; /* --base: a delta of this set */
    size_t n_bases;
    bool offline;  /* --offline: cmd_filter_url_offline.c */
    bool no_check; /* --no-check-filter */
    bool no_quick; /* --no-quick-filter */
    bool sha256;   /* --sha256-keys */
} url_build;

static bool opt_fpr(const char *cmd, const char *arg, void *dst)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !(v >= BR_BLOOM_MIN_FPR && v <= BR_BLOOM_MAX_FPR)) {
        ctl_err("%s: --fpr '%s': must be a number from %g to %g", cmd, arg, BR_BLOOM_MIN_FPR,
                BR_BLOOM_MAX_FPR);
        return false;
    }
    *(double *)dst = v;
    return true;
}

static bool opt_capacity(const char *cmd, const char *arg, void *dst)
{
    uint64_t v;
    if (!ctl_parse_u64(arg, BR_BLOOM_MAX_CAPACITY, &v) || v == 0) {
        ctl_err("%s: --capacity '%s': must be 1..%" PRIu64, cmd, arg,
                (uint64_t)BR_BLOOM_MAX_CAPACITY);
        return false;
    }
    *(uint64_t *)dst = v;
    return true;
}

/* 0: parsed and checked; 1: --help answered; -1: an error was printed. */
static int parse_build(const char *cmd, int argc, char **argv, url_build *a)
{
    const ctl_opt opts[] = {
        CTL_STR("kind", &a->kind),
        CTL_STR("output", &a->output),
        CTL_STR("ranges-dir", &a->ranges),
        FEED_OPTS(&a->f),
        CTL_FN("fpr", &a->fpr, opt_fpr),
        CTL_FN("capacity", &a->capacity, opt_capacity),
        CTL_FN("generation", &a->generation, ctl_opt_generation),
        CTL_FN("source", &a->source, ctl_opt_source),
        CTL_LIST("base", a->bases, &a->n_bases, BR_LAYERS_MAX, "more than 64 --base options"),
        CTL_FLAG("offline", &a->offline),
        CTL_FLAG("no-check-filter", &a->no_check),
        CTL_FLAG("no-quick-filter", &a->no_quick),
        CTL_FLAG("sha256-keys", &a->sha256),
        CTL_IGNORE("socket"), /* accepted everywhere; a build needs no daemon */
        CTL_HELP,
    };
    int first;
    int r = ctl_getopt(cmd, opts, BR_ARRAY_SIZE(opts), build_usage, argc, argv, &first);
    if (r != 0)
        return r;
    if (first < argc) {
        ctl_err("%s: unexpected argument '%s'", cmd, argv[first]);
        return -1;
    }
    if (!a->kind || strcmp(a->kind, "url-sha256") != 0 || !a->output || a->f.n == 0) {
        ctl_err("%s: --kind url-sha256, --output and at least one --input are required", cmd);
        build_usage(stderr);
        return -1;
    }
    if (a->no_check && !a->offline) {
        ctl_err("%s: --no-check-filter: only an offline filter (--offline) has check filters", cmd);
        return -1;
    }
    if (a->sha256 && !a->offline) {
        ctl_err("%s: --sha256-keys: only an offline filter (--offline) keys its fingerprints by "
                "XXH3",
                cmd);
        return -1;
    }
    if (a->no_quick && !a->offline) {
        ctl_err("%s: --no-quick-filter: only an offline filter (--offline) has a quick filter",
                cmd);
        return -1;
    }
    if (a->offline && a->ranges) {
        ctl_err("%s: --offline: an offline filter answers on the host and needs no --ranges-dir",
                cmd);
        return -1;
    }
    return check_feed_options(cmd, &a->f) ? -1 : 0;
}

/* A new filter of n entries: capacity (0: n) and fpr. 0, or EXIT_ERROR
 * after a message. */
static int new_draft(const char *cmd, const br_feedset *fs, uint64_t capacity, double fpr,
                     br_urlfilter_draft **out)
{
    uint64_t n = br_feedset_count(fs);
    if (capacity && capacity < n) {
        ctl_err("%s: --capacity %" PRIu64 " is below the %" PRIu64 " entries of this build", cmd,
                capacity, n);
        return EXIT_ERROR;
    }
    if (n == 0)
        fprintf(stderr,
                "breachctl: warning: no entries (--allow-empty): the filter blocks nothing\n");
    br_error err = {{0}};
    if (br_urlfilter_draft_new(capacity ? capacity : n, fpr, out, &err) < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    const br_feed_entry *e = br_feedset_entries(fs);
    for (uint64_t i = 0; i < n; i++)
        br_urlfilter_draft_add(*out, e[i].hash, true);
    br_urlfilter_draft_note_domain_labels(*out, br_feedset_max_domain_labels(fs));
    return 0;
}

static void build_report(const url_build *a, const br_urlfilter_draft *d, uint64_t n,
                         const br_feedset_stats *fst, uint64_t bad, uint64_t bytes, uint64_t t0)
{
    uint64_t cap = br_urlfilter_draft_capacity(d);
    uint64_t blocks = br_urlfilter_draft_blocks(d);
    fprintf(
        stderr,
        "wrote %s: %" PRIu64 " keys (%" PRIu64 " duplicates, %" PRIu64
        " category conflicts: first --input kept; %" PRIu64 " bad lines skipped), capacity %" PRIu64
        ", k=%u, %.2f bits/key, expected false positives %.3g per expression (target %g), %" PRIu64
        " bytes, %.1f s\n",
        a->output, n, fst->duplicates, fst->conflicts, bad, cap, br_urlfilter_draft_k(d),
        (double)blocks * BR_BLOOM_BLOCK_BITS / (double)cap,
        br_bloom_fpr((double)cap / (double)blocks, br_urlfilter_draft_k(d)), a->fpr, bytes,
        (double)(br_now_ns() - t0) / 1e9);
    if (!a->ranges)
        fprintf(stderr, "breachctl: note: no --ranges-dir: no range mirror was written\n");
}

/* Write the filter (and the mirror right before it); the mirror's stale
 * prefixes go once the filter is in place. 0, or EXIT_ERROR after a message. */
static int save_build(const char *cmd, const url_build *a, br_urlfilter_draft *d,
                      const br_feedset *fs, uint64_t *bytes)
{
    br_error err = {{0}};
    uint64_t generation = a->generation;
    if (ctl_generation_for(cmd, a->output, ctl_generation_after(0), &generation) < 0)
        return EXIT_ERROR;
    _cleanup_(br_mirror_freep) br_mirror *m = NULL;
    if (a->ranges && br_mirror_prepare_full(a->ranges, fs, &m, &err) < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    char defsrc[BR_FILTER_SOURCE_SIZE];
    if (!a->source)
        default_source(defsrc, sizeof(defsrc), &a->f);
    br_urlfilter_save_opts so = {
        .generation = generation,
        .source = a->source ? a->source : defsrc,
        .build_time = -1,
        .before_commit = commit_mirror,
        .ctx = m,
    };
    if (br_urlfilter_draft_save(d, a->output, &so, bytes, &err) < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    if (a->ranges) {
        /* The new filter is in place; prefixes it has no entry for are gone. */
        uint64_t removed = 0;
        if (br_mirror_remove_stale(a->ranges, br_urlfilter_draft_bitmap(d), &removed, &err) < 0)
            ctl_err("warning: %s", err.text);
        print_mirror(a->ranges, br_mirror_get_stats(m), removed);
    }
    return 0;
}

int url_filter_build(int argc, char **argv)
{
    const char *cmd = "filter build";
    url_build a = {.f = {.max_bad_pct = DEFAULT_MAX_BAD_PCT}, .fpr = BR_BLOOM_DEFAULT_FPR};
    int r = parse_build(cmd, argc, argv, &a);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    if (a.n_bases && !a.offline) {
        url_delta_args da = {.output = a.output,
                             .ranges = a.ranges,
                             .source = a.source,
                             .generation = a.generation,
                             .capacity = a.capacity,
                             .fpr = a.fpr,
                             .bases = a.bases,
                             .n_bases = a.n_bases};
        return url_filter_build_delta(cmd, &a.f, &da);
    }

    uint64_t t0 = br_now_ns();
    _cleanup_(br_feedset_freep) br_feedset *fs = NULL;
    br_feedset_stats fst = {0};
    uint64_t bad = 0, bytes = 0;
    int status = read_feeds(cmd, &a.f, &fs, &fst, &bad);
    if (status)
        return status;
    if (a.offline) {
        char defsrc[BR_FILTER_SOURCE_SIZE];
        if (!a.source)
            default_source(defsrc, sizeof(defsrc), &a.f);
        url_offline_args oa = {.fs = fs,
                               .inputs = a.f.args,
                               .n_inputs = a.f.n,
                               .output = a.output,
                               .source = a.source,
                               .default_source = defsrc,
                               .generation = a.generation,
                               .bases = a.bases,
                               .n_bases = a.n_bases,
                               .no_check = a.no_check,
                               .no_quick = a.no_quick,
                               .sha256 = a.sha256};
        return url_offline_build(cmd, &oa);
    }
    _cleanup_(br_urlfilter_draft_freep) br_urlfilter_draft *d = NULL;
    if (new_draft(cmd, fs, a.capacity, a.fpr, &d) || save_build(cmd, &a, d, fs, &bytes))
        return EXIT_ERROR;
    build_report(&a, d, br_feedset_count(fs), &fst, bad, bytes, t0);
    return 0;
}

/* ---- add ---- */

static double target_fpr_of(const br_urlfilter *uf)
{
    br_urlfilter_info info;
    br_urlfilter_get_info(uf, &info);
    return info.target_fpr;
}

static void add_usage(FILE *out)
{
    filter_usage_of(out, "filter add");
}

/* What filter add was asked, from its options. */
typedef struct url_add {
    const char *path, *ranges, *source;
    feeds f;
    uint64_t generation;
    bool have_generation;
} url_add;

static bool opt_add_generation(const char *cmd, const char *arg, void *dst)
{
    url_add *a = dst;
    a->have_generation = ctl_opt_generation(cmd, arg, &a->generation);
    return a->have_generation;
}

/* 0: parsed and checked; 1: --help answered; -1: an error was printed. */
static int parse_add(const char *cmd, int argc, char **argv, url_add *a)
{
    const ctl_opt opts[] = {
        CTL_STR("ranges-dir", &a->ranges),
        FEED_OPTS(&a->f),
        CTL_FN("generation", a, opt_add_generation),
        CTL_FN("source", &a->source, ctl_opt_source),
        CTL_IGNORE("socket"), /* accepted everywhere; no daemon needed here */
        CTL_HELP,
    };
    int first;
    int r = ctl_getopt(cmd, opts, BR_ARRAY_SIZE(opts), add_usage, argc, argv, &first);
    if (r != 0)
        return r;
    if (first + 1 != argc || a->f.n == 0) {
        ctl_err("%s: expected one FILE and at least one --input", cmd);
        add_usage(stderr);
        return -1;
    }
    a->path = argv[first];
    return check_feed_options(cmd, &a->f) ? -1 : 0;
}

/* A readable filter of another kind is named as such. */
static bool refuse_other_kind(const char *cmd, const char *path)
{
    if (url_filter_file(path) || access(path, R_OK) != 0)
        return false;
    if (url_offline_file(path)) {
        ctl_err("%s: %s is an offline url-sha256 filter: additions go in a delta (filter build "
                "--kind url-sha256 --offline --base %s)",
                cmd, path, path);
        return true;
    }
    _cleanup_(br_filter_file_freep) br_filter_file *ff = NULL;
    br_error e = {{0}};
    if (br_filter_file_open(path, &ff, &e) < 0)
        return false;
    ctl_err("%s: %s is a %s filter: additions need a rebuild (filter build)", cmd, path,
            br_filter_kind_name(br_filter_file_header(ff)->kind));
    return true;
}

/* The generation of the new file: --generation, above the old one's, or
 * the old one's + 1. 0, or EXIT_ERROR after a message. */
static int next_generation(const char *cmd, url_add *a, const br_filter_header *oh)
{
    if (a->have_generation && a->generation <= oh->generation) {
        ctl_err("%s: --generation %" PRIu64 " must be above the filter's %" PRIu64, cmd,
                a->generation, oh->generation);
        return EXIT_ERROR;
    }
    if (!a->have_generation) {
        if (oh->generation == UINT64_MAX) {
            ctl_err("%s: generation overflow", cmd);
            return EXIT_ERROR;
        }
        a->generation = oh->generation + 1;
    }
    return 0;
}

/* The old filter's bits plus the set's entries; *fresh counts the new ones.
 * 0, or EXIT_ERROR after a message. */
static int grown_draft(const char *cmd, const br_urlfilter *old, const br_feedset *fs,
                       br_urlfilter_draft **out, uint64_t *fresh)
{
    br_error err = {{0}};
    if (br_urlfilter_draft_from(old, out, &err) < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    uint64_t n = br_feedset_count(fs);
    const br_feed_entry *e = br_feedset_entries(fs);
    *fresh = 0;
    for (uint64_t i = 0; i < n; i++)
        *fresh += br_urlfilter_draft_add(*out, e[i].hash, false);
    br_urlfilter_draft_note_domain_labels(*out, br_feedset_max_domain_labels(fs));
    return 0;
}

/* Write the grown filter in place of the old one (the touched range files
 * right before it). 0, or EXIT_ERROR after a message. */
static int save_add(const char *cmd, const url_add *a, const br_urlfilter *old,
                    br_urlfilter_draft *d, const br_feedset *fs, uint64_t fresh)
{
    br_error err = {{0}};
    _cleanup_(br_mirror_freep) br_mirror *m = NULL;
    if (a->ranges &&
        br_mirror_prepare_update(a->ranges, fs, br_urlfilter_prefix_bitmap(old), &m, &err) < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    br_urlfilter_save_opts so = {
        .generation = a->generation,
        .source = a->source ? a->source : br_urlfilter_header(old)->source,
        .build_time = -1,
        .before_commit = commit_mirror,
        .ctx = m,
    };
    uint64_t bytes = 0;
    if (br_urlfilter_draft_save(d, a->path, &so, &bytes, &err) < 0) {
        ctl_err("%s: %s (the old filter is unchanged)", cmd, err.text);
        return EXIT_ERROR;
    }
    if (a->ranges) {
        const br_mirror_stats *ms = br_mirror_get_stats(m);
        fprintf(stderr,
                "ranges %s: %" PRIu64 " prefix files touched: %" PRIu64 " rewritten, %" PRIu64
                " unchanged; %" PRIu64 " entries new, %" PRIu64 " already listed, %" PRIu64
                " listed under another category (kept: re-categorizing needs a rebuild)\n",
                a->ranges, ms->prefixes, ms->written, ms->unchanged, ms->entries_new,
                ms->entries_present, ms->conflicts);
    } else if (fresh > 0) {
        fprintf(stderr, "breachctl: note: no --ranges-dir: update the range mirror with the same "
                        "entries, or their checks cannot be resolved\n");
    }
    return 0;
}

static void add_report(const url_add *a, const br_urlfilter *old, const br_urlfilter_draft *d,
                       uint64_t n, uint64_t fresh)
{
    uint64_t keys = br_urlfilter_draft_keys(d), cap = br_urlfilter_draft_capacity(d);
    unsigned k = br_urlfilter_draft_k(d);
    uint64_t blocks = br_urlfilter_draft_blocks(d);
    double now = br_bloom_fpr((double)keys / (double)blocks, k);
    fprintf(stderr,
            "updated %s: generation %" PRIu64 ", %" PRIu64 " new keys of %" PRIu64 " (%" PRIu64
            " already in the filter), %" PRIu64 " keys for a capacity of %" PRIu64
            ", expected false positives %.4g per expression now\n",
            a->path, a->generation, fresh, n, n - fresh, keys, cap, now);
    double target = target_fpr_of(old);
    if (now > target)
        fprintf(stderr,
                "breachctl: warning: %" PRIu64 " keys exceed the capacity of %" PRIu64
                ": false positives (%.4g) are above the target %g; rebuild with a larger "
                "--capacity\n",
                keys, cap, now, target);
}

int url_filter_add(int argc, char **argv)
{
    const char *cmd = "filter add";
    url_add a = {.f = {.max_bad_pct = DEFAULT_MAX_BAD_PCT}};
    int r = parse_add(cmd, argc, argv, &a);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    if (refuse_other_kind(cmd, a.path))
        return EXIT_ERROR;
    br_error err = {{0}};
    _cleanup_(br_urlfilter_freep) br_urlfilter *old = NULL;
    if (br_urlfilter_open(a.path, &old, &err) < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    const br_filter_header *oh = br_urlfilter_header(old);
    if (br_urlfilter_members(old) > 1 || oh->role != BR_ROLE_FULL) {
        ctl_err("%s: %s is a %s: add to a full filter, or build a new delta with filter build "
                "--base",
                cmd, a.path, oh->role != BR_ROLE_FULL ? "delta" : "layered (merged) filter");
        return EXIT_ERROR;
    }
    if (next_generation(cmd, &a, oh))
        return EXIT_ERROR;

    _cleanup_(br_feedset_freep) br_feedset *fs = NULL;
    br_feedset_stats fst = {0};
    uint64_t bad = 0, fresh = 0;
    int status = read_feeds(cmd, &a.f, &fs, &fst, &bad);
    if (status)
        return status;
    _cleanup_(br_urlfilter_draft_freep) br_urlfilter_draft *d = NULL;
    if (grown_draft(cmd, old, fs, &d, &fresh) || save_add(cmd, &a, old, d, fs, fresh))
        return EXIT_ERROR;
    add_report(&a, old, d, br_feedset_count(fs), fresh);
    return 0;
}
