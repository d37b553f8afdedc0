/* SPDX-License-Identifier: MIT */
/* breachctl filter build --base (deltas) and --merge (a layered base), and
 * what filter info adds for deltas and layered files (lib/filter/
 * filter_delta.h; docs/filter-format.md "Deltas and layered files"). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder/filter_layers.h"
#include "breachctl.h"
#include "ctl_opts.h"
#include "filter/filter_delta.h"
#include "filter/filter_file.h"
#include "filter_fleet.h"
#include "filter_url.h"
#include "core/hash.h"
#include "filter/pwfilter.h"
#include "filter/urlfilter.h"
#include "core/util.h"

static int set_open_failed(const char *cmd, int r, const br_error *err)
{
    ctl_err("%s: %s", cmd, err->text[0] ? err->text : strerror(-r));
    return EXIT_ERROR;
}

int fleet_pw_set_open(const char *cmd, const char *const *paths, size_t n, br_pwfilter **out,
                      uint8_t last_body[32])
{
    br_error err = {{0}};
    int r = br_pwfilter_open_set(paths, n, out, last_body, &err);
    return r < 0 ? set_open_failed(cmd, r, &err) : 0;
}

int fleet_url_set_open(const char *cmd, const char *const *paths, size_t n, br_urlfilter **out,
                       uint8_t last_body[32])
{
    br_error err = {{0}};
    int r = br_urlfilter_open_set(paths, n, out, last_body, &err);
    return r < 0 ? set_open_failed(cmd, r, &err) : 0;
}

/* ---- merge ---- */

bool fleet_merge_requested(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--merge") == 0)
            return true;
    return false;
}

static void merge_usage(FILE *out)
{
    filter_usage_of(out, "filter build");
}

/* The set the files make, verified as breachd would load it. */
static int merge_check_set(const char *cmd, char *const *paths, size_t n, uint32_t *kind,
                           br_filter_header *set_hdr)
{
    br_filter_header h;
    br_error err = {{0}};
    if (fleet_open_verified(paths[0], &h, &err) < 0) {
        ctl_err("%s: %s", cmd, err.text);
        return EXIT_ERROR;
    }
    *kind = h.kind;
    if (h.kind == BR_KIND_URL_SHA256 && !url_offline_file(paths[0])) {
        br_urlfilter *set = NULL;
        if (fleet_url_set_open(cmd, (const char *const *)paths, n, &set, NULL))
            return EXIT_ERROR;
        *set_hdr = *br_urlfilter_header(set);
        br_urlfilter_free(set);
    } else {
        br_pwfilter *set = NULL;
        if (fleet_pw_set_open(cmd, (const char *const *)paths, n, &set, NULL))
            return EXIT_ERROR;
        *set_hdr = *br_pwfilter_header(set);
        br_pwfilter_free(set);
    }
    return 0;
}

static int merge_write(const char *cmd, char *const *paths, size_t n, const char *output,
                       const br_filter_layers_opts *o, uint64_t *bytes)
{
    br_filter_file *files[BR_LAYERS_MAX] = {0};
    br_error err = {{0}};
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++)
        r = br_filter_file_open(paths[i], &files[i], &err);
    if (r == 0)
        r = br_filter_layers_write(output, files, n, o, bytes, &err);
    for (size_t i = 0; i < n; i++)
        br_filter_file_free(files[i]);
    if (r < 0) {
        ctl_err("%s: %s", cmd, err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    return 0;
}

int filter_merge_cmd(int argc, char **argv)
{
    const char *cmd = "filter build --merge";
    const char *output = NULL, *kind_name = NULL, *source = NULL;
    bool merge = false;
    uint64_t generation = 0;
    const ctl_opt opts[] = {
        CTL_FLAG("merge", &merge),
        CTL_STR("output", &output),
        CTL_STR("kind", &kind_name),
        CTL_FN("generation", &generation, ctl_opt_generation),
        CTL_FN("source", &source, ctl_opt_source),
        CTL_IGNORE("socket"),
        CTL_HELP,
    };
    int first;
    int r = ctl_getopt(cmd, opts, BR_ARRAY_SIZE(opts), merge_usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    size_t n = (size_t)(argc - first);
    if (!output || n < 2 || n > BR_LAYERS_MAX) {
        ctl_err("%s: expected --output FILE and a BASE with 1..%d DELTA files", cmd,
                BR_LAYERS_MAX - 1);
        merge_usage(stderr);
        return EXIT_ERROR;
    }
    char *const *paths = argv + first;
    uint32_t kind;
    br_filter_header set_hdr;
    if (merge_check_set(cmd, paths, n, &kind, &set_hdr))
        return EXIT_ERROR;
    if (kind_name && strcmp(kind_name, br_filter_kind_name(kind)) != 0) {
        ctl_err("%s: --kind %s, but %s is a %s filter", cmd, kind_name, paths[0],
                br_filter_kind_name(kind));
        return EXIT_ERROR;
    }
    /* A merge answers as the set: by default it keeps the set's generation
     * (it replaces the base, which was older), unless output holds that
     * generation already. */
    if (ctl_generation_for(cmd, output, set_hdr.generation, &generation) < 0)
        return EXIT_ERROR;
    char defsrc[BR_FILTER_SOURCE_SIZE];
    snprintf(defsrc, sizeof(defsrc), "merge of %zu files, generations up to %" PRIu64, n,
             set_hdr.generation);
    br_filter_layers_opts o = {
        .generation = generation,
        .source = source ? source : defsrc,
        .build_time = -1,
    };
    uint64_t bytes = 0;
    if (merge_write(cmd, paths, n, output, &o, &bytes))
        return EXIT_ERROR;
    /* What was written loads as the same set. */
    uint32_t k2;
    br_filter_header merged;
    char *one[1] = {(char *)output};
    if (merge_check_set(cmd, one, 1, &k2, &merged))
        return EXIT_ERROR;
    fprintf(stderr,
            "wrote %s: %s, %" PRIu64 " keys in one layered file (generation %" PRIu64 "), %" PRIu64
            " bytes; deltas may now name it with --base\n",
            output, br_filter_kind_name(kind), merged.key_count, merged.generation, bytes);
    return 0;
}

/* ---- info ---- */

void fleet_info_extra(const char *path)
{
    br_filter_header h;
    if (br_filter_header_read(path, &h) < 0)
        return;
    if (h.role == BR_ROLE_DELTA) {
        printf("%-18s delta: holds only keys its base does not answer maybe for\n", "role:");
        ctl_print_hex("base body sha256:", h.base_body_sha256, 32);
    } else if (h.algorithm == BR_ALGO_LAYERS) {
        printf("%-18s full, %u layers (a base and its deltas, merged)\n",
               "role:", br_load_le32(h.params));
    }
    _cleanup_free_ char *sig = br_filter_sig_path(path);
    printf("%-18s %s\n", "signature:", sig && access(sig, F_OK) == 0 ? sig : "none");
}
