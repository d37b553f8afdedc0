/* SPDX-License-Identifier: MIT */
/* breachctl filter build --kind url-sha256 --base OLD: a URL delta, and
 * the range mirror of the whole set (docs/filter-format.md "Deltas and
 * layered files", the URL cycle). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builder/urlfilter_save.h"
#include "breachctl.h"
#include "filter_fleet.h"
#include "filter_url.h"
#include "filter_url_feeds.h"
#include "url/url_feed.h"
#include "url_mirror.h"
#include "filter/urlfilter.h"
#include "core/util.h"

typedef struct delta_mirror {
    br_mirror *m;
} delta_mirror;

static int commit_mirror(void *ctx, br_error *err)
{
    delta_mirror *dm = ctx;
    return dm->m ? br_mirror_commit(dm->m, err) : 0;
}

/* An empty PREFIX.txt (a URL range with no entries) in place of dir's file
 * for prefix p, unless it is empty already. */
static int write_empty(const char *dir, uint32_t p, bool *written, br_error *err)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof(path), "%s/%05X.txt", dir, p);
    struct stat st;
    *written = false;
    if (stat(path, &st) == 0 && st.st_size == 0)
        return 0;
    snprintf(tmp, sizeof(tmp), "%s.tmp.empty", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || fsync(fd) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
        int r = -errno;
        if (fd >= 0)
            unlink(tmp);
        return br_error_set(err, r, "%s: %s", path, strerror(-r));
    }
    *written = true;
    return 0;
}

/* After the full rewrite of the feeds' prefixes: a prefix that a filter of
 * the set still lists but that holds no entry any more gets an empty file
 * (its removed entries answer "not listed" at once); files of prefixes no
 * filter lists are removed. */
static int mirror_finish(const char *dir, const br_feedset *fs, const uint8_t *set_bitmap,
                         const uint8_t *delta_bitmap, uint64_t *emptied, uint64_t *removed,
                         br_error *err)
{
    _cleanup_free_ uint8_t *has = calloc(1, BR_URLFILTER_BITMAP_BYTES);
    _cleanup_free_ uint8_t *all = malloc(BR_URLFILTER_BITMAP_BYTES);
    if (!has || !all)
        return -ENOMEM;
    const br_feed_entry *e = br_feedset_entries(fs);
    for (uint64_t i = 0; i < br_feedset_count(fs); i++) {
        uint32_t p = br_urlfilter_prefix_of(e[i].hash);
        has[p >> 3] |= (uint8_t)(1u << (p & 7));
    }
    for (size_t i = 0; i < BR_URLFILTER_BITMAP_BYTES; i++)
        all[i] = set_bitmap[i] | delta_bitmap[i];
    *emptied = 0;
    for (uint32_t p = 0; p < BR_URLFILTER_PREFIXES; p++) {
        if (!br_prefix_bitmap_test(all, p) || br_prefix_bitmap_test(has, p))
            continue;
        bool w;
        int r = write_empty(dir, p, &w, err);
        if (r < 0)
            return r;
        *emptied += w;
    }
    return br_mirror_remove_stale(dir, all, removed, err);
}

/* The draft of the expressions the base set does not answer maybe for. */
static int delta_draft(const char *cmd, const br_urlfilter *base, const br_feedset *fs,
                       const url_delta_args *a, br_urlfilter_draft **out, uint64_t *fresh)
{
    uint64_t n = br_feedset_count(fs);
    const br_feed_entry *e = br_feedset_entries(fs);
    *fresh = 0;
    for (uint64_t i = 0; i < n; i++)
        *fresh += !br_urlfilter_maybe(base, e[i].hash);
    if (a->capacity && a->capacity < *fresh) {
        ctl_err("%s: --capacity %" PRIu64 " is below the %" PRIu64 " new entries of this delta",
                cmd, a->capacity, *fresh);
        return EXIT_ERROR;
    }
    br_error err = {{0}};
    if (br_urlfilter_draft_new(a->capacity ? a->capacity : *fresh, a->fpr, out, &err) < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    for (uint64_t i = 0; i < n; i++)
        if (!br_urlfilter_maybe(base, e[i].hash))
            br_urlfilter_draft_add(*out, e[i].hash, true);
    br_urlfilter_draft_note_domain_labels(*out, br_feedset_max_domain_labels(fs));
    return 0;
}

int url_filter_build_delta(const char *cmd, feeds *f, const url_delta_args *a)
{
    uint8_t base_body[32];
    _cleanup_(br_urlfilter_freep) br_urlfilter *base = NULL;
    if (url_offline_file(a->bases[0])) {
        ctl_err("%s --base %s: an offline filter: a delta is built like its base (add --offline)",
                cmd, a->bases[0]);
        return EXIT_ERROR;
    }
    if (fleet_url_set_open(cmd, a->bases, a->n_bases, &base, base_body))
        return EXIT_ERROR;
    _cleanup_(br_feedset_freep) br_feedset *fs = NULL;
    br_feedset_stats fst = {0};
    uint64_t bad = 0;
    int status = read_feeds(cmd, f, &fs, &fst, &bad);
    if (status)
        return status;
    _cleanup_(br_urlfilter_draft_freep) br_urlfilter_draft *d = NULL;
    uint64_t fresh = 0;
    if (delta_draft(cmd, base, fs, a, &d, &fresh))
        return EXIT_ERROR;

    br_error err = {{0}};
    uint64_t generation = a->generation;
    uint64_t dflt = ctl_generation_after(br_urlfilter_header(base)->generation);
    if (ctl_generation_for(cmd, a->output, dflt, &generation) < 0)
        return EXIT_ERROR;
    delta_mirror dm = {0};
    if (a->ranges && br_mirror_prepare_full(a->ranges, fs, &dm.m, &err) < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    char defsrc[BR_FILTER_SOURCE_SIZE];
    snprintf(defsrc, sizeof(defsrc), "delta of %s", a->bases[a->n_bases - 1]);
    br_urlfilter_save_opts so = {
        .generation = generation,
        .source = a->source ? a->source : defsrc,
        .build_time = -1,
        .before_commit = commit_mirror,
        .ctx = &dm,
        .base_body_sha256 = base_body,
    };
    uint64_t bytes = 0;
    int r = br_urlfilter_draft_save(d, a->output, &so, &bytes, &err);
    uint64_t emptied = 0, removed = 0, prefixes = dm.m ? br_mirror_get_stats(dm.m)->prefixes : 0;
    if (r == 0 && a->ranges &&
        mirror_finish(a->ranges, fs, br_urlfilter_prefix_bitmap(base), br_urlfilter_draft_bitmap(d),
                      &emptied, &removed, &err) < 0)
        ctl_err("warning: %s", err.text);
    br_mirror_free(dm.m);
    if (r < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    if (a->ranges)
        fprintf(stderr,
                "ranges %s: the whole set's mirror: %" PRIu64 " prefix files with entries, %" PRIu64
                " emptied (entries removed, a filter still lists the prefix), %" PRIu64
                " removed\n",
                a->ranges, prefixes, emptied, removed);
    fprintf(stderr,
            "wrote %s: delta of %s (generation %" PRIu64 "): %" PRIu64
            " new expressions of %" PRIu64 " (%" PRIu64
            " already a maybe of the base set), %" PRIu64 " bytes\n",
            a->output, a->bases[a->n_bases - 1], so.generation, fresh, br_feedset_count(fs),
            br_feedset_count(fs) - fresh, bytes);
    return 0;
}
