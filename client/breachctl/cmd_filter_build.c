/* SPDX-License-Identifier: MIT */
/* breachctl filter build of a password filter (filter_build.h): options,
 * inputs into a key set, the sharded build, progress on a terminal. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "builder/pwfilter_build.h"
#include "breachctl.h"
#include "ctl_opts.h"
#include "filter_build.h"
#include "filter/filter_delta.h"
#include "filter/filter_file.h"
#include "filter_fleet.h"
#include "filter_url.h"
#include "core/hash.h"
#include "filter/hibp_input.h"
#include "filter/pwfilter.h"
#include "core/util.h"

#define MAX_INPUTS 4096

/* ---- progress (only on a terminal) ---- */

typedef struct progress {
    bool tty;
    uint64_t start_ns, last_ns;
    uint64_t bytes_total;  /* sum over inputs, 0 when unknown */
    uint64_t bytes_before; /* bytes of inputs already finished */
    br_keyset *ks;
} progress;

static void progress_read(void *ctx, uint64_t done, uint64_t total)
{
    (void)total;
    progress *p = ctx;
    uint64_t now = br_now_ns();
    if (!p->tty || now - p->last_ns < 250000000u)
        return;
    p->last_ns = now;
    double secs = (double)(now - p->start_ns) / 1e9;
    uint64_t keys = br_keyset_count(p->ks);
    fprintf(stderr, "\rread %" PRIu64 " keys, %.2fM keys/s", keys,
            secs > 0 ? keys / secs / 1e6 : 0);
    uint64_t all_done = p->bytes_before + done;
    if (p->bytes_total && all_done > 0 && all_done <= p->bytes_total) {
        double eta = secs * (double)(p->bytes_total - all_done) / (double)all_done;
        fprintf(stderr, ", %.0f%%, ETA %d:%02d", 100.0 * (double)all_done / (double)p->bytes_total,
                (int)eta / 60, (int)eta % 60);
    }
    fputs("\033[K", stderr);
}

static void progress_shards(void *ctx, uint32_t done, uint32_t total)
{
    progress *p = ctx;
    if (p->tty)
        fprintf(stderr, "\rbuilding: shard %u of %u written\033[K", done, total);
}

/* ---- build ---- */

typedef struct build_sink {
    br_keyset *ks;
    br_error *err;
    const br_pwfilter *base; /* a delta: keys it answers maybe for stay out */
    uint64_t in_base;
    uint64_t recounted; /* --offline: keys of the base whose count moved up */
    uint64_t max_count; /* --offline: the largest count read */
    bool offline;
    uint64_t *hist; /* --stats: keys at >= 1, 2, 10, 100, 1000, 10000; then without a count */
} build_sink;

/* The thresholds of --stats. */
static const uint64_t stats_at[] = {1, 2, 10, 100, 1000, 10000};
#define STATS_BUCKETS (BR_ARRAY_SIZE(stats_at) + 1)

/* Both password kinds key by the first 8 bytes of the hash (hash-prefix64). */
static int add_key(void *ctx, const uint8_t *hash)
{
    build_sink *s = ctx;
    uint64_t key = br_hash_key64(hash);
    if (s->base && br_pwfilter_contains_key(s->base, key)) {
        s->in_base++;
        return 0;
    }
    return br_keyset_add(s->ks, key, s->err);
}

/* --offline: each key with its count (the reader checked it fits). */
static int add_key_counted(void *ctx, const uint8_t *hash, uint64_t count)
{
    build_sink *s = ctx;
    uint64_t key = br_hash_key64(hash);
    if (s->base && br_pwfilter_count_same(s->base, key, count)) {
        s->in_base++;
        return 0;
    }
    /* another count than the base set's: the delta carries the new one,
     * which the set answers over the base's (the newest member wins) */
    s->recounted += s->base && br_pwfilter_contains_key(s->base, key);
    s->max_count = BR_MAX(s->max_count, count);
    return br_keyset_add_counted(s->ks, key, count, s->err);
}

/* --stats: every key of the input into the histogram, then on. */
static int add_key_stats(void *ctx, const uint8_t *hash, uint64_t count)
{
    build_sink *s = ctx;
    s->hist[BR_ARRAY_SIZE(stats_at)] += count == 0;
    for (size_t i = 0; i < BR_ARRAY_SIZE(stats_at) && count >= stats_at[i]; i++)
        s->hist[i]++;
    return s->offline ? add_key_counted(ctx, hash, count) : add_key(ctx, hash);
}

static void print_stats(const uint64_t *hist)
{
    printf("count histogram of the input (keys, a key listed twice counted twice):\n");
    for (size_t i = 0; i < BR_ARRAY_SIZE(stats_at); i++)
        printf("  count >= %-6" PRIu64 " %" PRIu64 "\n", stats_at[i], hist[i]);
    printf("  no count        %" PRIu64 "\n", hist[BR_ARRAY_SIZE(stats_at)]);
}

static void build_usage(FILE *out)
{
    filter_usage_of(out, "filter build");
}

#define STR_(x) #x
#define STR(x) STR_(x)
_Static_assert(BR_BFUSE_MAX_KEYS / 2 == 1073741824, "--shard-keys' message names the bound");

/* What filter build was asked, from its options. */
typedef struct build_args {
    const char *kind_name, *output, *source, *tmpdir;
    const char *inputs[MAX_INPUTS];
    size_t n_inputs;
    br_input_opts in;
    br_pwfilter_build_opts b;
    bool allow_empty;
    const char *bases[BR_LAYERS_MAX]; /* --base: a delta of this set */
    size_t n_bases;
    br_pwfilter *base;
    uint8_t base_body[32];
    uint64_t in_base, recounted;
    bool offline;
    bool stats; /* --stats: the count histogram of the input */
    uint64_t hist[STATS_BUCKETS];
    br_count_codes counts;
} build_args;

static bool opt_fp_bits(const char *cmd, const char *arg, void *dst)
{
    uint64_t v;
    if (!ctl_parse_u64(arg, 32, &v) || (v != 8 && v != 16 && v != 32)) {
        ctl_err("%s: --fp-bits '%s': must be 8, 16 or 32", cmd, arg);
        return false;
    }
    *(unsigned *)dst = (unsigned)v;
    return true;
}

/* SIZE with an optional K, M or G suffix (powers of 1024). */
static bool opt_memory(const char *cmd, const char *arg, void *dst)
{
    char *end;
    errno = 0;
    unsigned long long m = strtoull(arg, &end, 10);
    unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift)
        end++;
    if (errno || *end || arg[0] == '-' || m == 0 || m > (UINT64_MAX >> 30)) {
        ctl_err("%s: --memory '%s': a size such as 384M or 2G", cmd, arg);
        return false;
    }
    *(uint64_t *)dst = (uint64_t)m << shift;
    return true;
}

/* 0: parsed and checked; 1: --help answered; -1: an error was printed. */
static int parse_build(int argc, char **argv, build_args *a)
{
    uint64_t arity = 0, threads = 0;
    const ctl_opt opts[] = {
        CTL_STR("kind", &a->kind_name),
        CTL_STR("output", &a->output),
        CTL_LIST("input", a->inputs, &a->n_inputs, MAX_INPUTS,
                 "more than " STR(MAX_INPUTS) " --input options"),
        CTL_FLAG("plaintext", &a->in.plaintext),
        CTL_FLAG("offline", &a->offline),
        CTL_FLAG("stats", &a->stats),
        CTL_UINT("min-count", &a->in.min_count, 0, UINT64_MAX, "not a whole number"),
        CTL_FN("generation", &a->b.generation, ctl_opt_generation),
        CTL_FN("source", &a->source, ctl_opt_source),
        CTL_FN("fp-bits", &a->b.fp_bits, opt_fp_bits),
        CTL_UINT("arity", &arity, 3, 4, "must be 3 or 4"),
        CTL_UINT("threads", &threads, 1, 1024, "must be 1..1024"),
        CTL_STR("tmpdir", &a->tmpdir),
        CTL_UINT("shard-keys", &a->b.shard_target, 16, BR_BFUSE_MAX_KEYS / 2,
                 "must be 16..1073741824"),
        CTL_FN("memory", &a->b.mem_budget, opt_memory),
        CTL_FLAG("allow-empty", &a->allow_empty),
        CTL_LIST("base", a->bases, &a->n_bases, BR_LAYERS_MAX, "more than 64 --base options"),
        CTL_IGNORE("socket"), /* accepted everywhere; a build needs no daemon */
        CTL_HELP,
    };
    int first;
    int r = ctl_getopt("filter build", opts, BR_ARRAY_SIZE(opts), build_usage, argc, argv, &first);
    if (r != 0)
        return r;
    a->b.arity = (unsigned)arity;
    a->b.threads = (unsigned)threads;
    if (first < argc) {
        ctl_err("filter build: unexpected argument '%s'", argv[first]);
        return -1;
    }
    if (!a->kind_name || !a->output || a->n_inputs == 0) {
        ctl_err("filter build: --kind, --output and at least one --input are required");
        build_usage(stderr);
        return -1;
    }
    br_filter_kind kind;
    if (br_filter_kind_from_name(a->kind_name, &kind) < 0) {
        ctl_err("filter build: --kind '%s': expected password-sha1, password-ntlm or url-sha256",
                a->kind_name);
        return -1;
    }
    if (kind != BR_KIND_PASSWORD_SHA1 && kind != BR_KIND_PASSWORD_NTLM) {
        ctl_err("filter build: --kind %s cannot be built by this version", a->kind_name);
        return -1;
    }
    a->b.kind = kind;
    a->in.kind = kind;
    if (a->offline) {
        a->in.need_counts = true;
        a->in.max_count = br_count_codes_limit();
        a->in.count_cb = add_key_counted;
        a->b.min_count = a->in.min_count;
    }
    if (a->stats)
        a->in.count_cb = add_key_stats;
    return 0;
}

/* Every input into ks. 0, or -1 after an error was printed. */
static int read_inputs(build_args *a, br_keyset *ks, progress *prog, br_input_stats *st,
                       br_error *err)
{
    for (size_t i = 0; i < a->n_inputs; i++)
        prog->bytes_total += br_input_size(a->inputs[i]);
    a->in.progress = progress_read;
    a->in.progress_ctx = prog;
    build_sink sink = {
        .ks = ks, .err = err, .base = a->base, .offline = a->offline, .hist = a->hist};
    for (size_t i = 0; i < a->n_inputs; i++) {
        uint64_t before = st->bytes;
        int r = br_input_read(a->inputs[i], &a->in, add_key, &sink, st, err);
        if (r < 0) {
            if (prog->tty)
                fputs("\r\033[K", stderr);
            ctl_err("%s", err->text[0] ? err->text : strerror(-r));
            return -1;
        }
        prog->bytes_before += st->bytes - before;
    }
    a->in_base = sink.in_base;
    a->recounted = sink.recounted;
    if (a->stats)
        print_stats(a->hist);
    if (a->offline && br_count_codes_make(sink.max_count, &a->counts) < 0) {
        ctl_err("filter build: the largest count %" PRIu64 " does not fit the count code",
                sink.max_count); /* the reader refused such a line already */
        return -1;
    }
    a->b.counts = a->offline ? &a->counts : NULL;
    if (st->keys == 0 && !a->allow_empty) {
        if (prog->tty)
            fputs("\r\033[K", stderr);
        ctl_err("filter build: no keys in the input (%" PRIu64 " lines); an empty filter finds no "
                "password breached: --allow-empty builds one anyway",
                st->lines);
        return -1;
    }
    return 0;
}

/* What a delta left out (and, offline, carried for a higher count). */
static void print_delta(const build_args *a)
{
    if (a->offline)
        fprintf(stderr,
                "delta of %s: %" PRIu64 " keys of the input already in the base set with "
                "their count were left out, %" PRIu64 " with a higher count are in it\n",
                a->bases[a->n_bases - 1], a->in_base, a->recounted);
    else
        fprintf(stderr,
                "delta of %s: %" PRIu64 " keys of the input are already a maybe of the "
                "base set and were left out\n",
                a->bases[a->n_bases - 1], a->in_base);
}

int pw_filter_build(int argc, char **argv)
{
    build_args a = {.b = {.build_time = -1}};
    int r = parse_build(argc, argv, &a);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    _cleanup_(br_pwfilter_freep) br_pwfilter *base = NULL;
    if (a.n_bases) {
        if (fleet_pw_set_open("filter build --base", a.bases, a.n_bases, &base, a.base_body))
            return EXIT_ERROR;
        if (br_pwfilter_offline(base) != a.offline) {
            ctl_err("filter build --base %s: %s filter; a delta is built %s like its base "
                    "(%s --offline)",
                    a.bases[a.n_bases - 1], a.offline ? "not an offline" : "an offline",
                    a.offline ? "not offline" : "offline", a.offline ? "drop" : "add");
            return EXIT_ERROR;
        }
        a.base = base;
        a.b.base_body_sha256 = a.base_body;
    }
    uint64_t dflt = ctl_generation_after(base ? br_pwfilter_header(base)->generation : 0);
    if (ctl_generation_for("filter build", a.output, dflt, &a.b.generation) < 0)
        return EXIT_ERROR;

    br_error err = {{0}};
    _cleanup_(br_keyset_freep) br_keyset *ks = NULL;
    r = br_keyset_new(a.tmpdir, 0, &ks, &err);
    if (r < 0) {
        ctl_err("filter build: %s", err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    progress prog = {.tty = isatty(STDERR_FILENO), .start_ns = br_now_ns(), .ks = ks};
    br_input_stats st = {0};
    if (read_inputs(&a, ks, &prog, &st, &err) < 0)
        return EXIT_ERROR;

    char default_source[BR_FILTER_SOURCE_SIZE];
    if (!a.source) {
        size_t len = 0;
        default_source[0] = '\0';
        for (size_t i = 0; i < a.n_inputs && len < sizeof(default_source); i++)
            len += (size_t)snprintf(default_source + len, sizeof(default_source) - len, "%s%s",
                                    i ? " " : "", a.inputs[i]);
        a.source = default_source;
    }
    a.b.source = a.source;
    a.b.progress = progress_shards;
    a.b.progress_ctx = &prog;
    br_pwfilter_build_stats bs = {0};
    r = br_pwfilter_build(ks, &a.b, a.output, &bs, &err);
    if (prog.tty)
        fputs("\r\033[K", stderr);
    if (r < 0) {
        ctl_err("filter build: %s", err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    double secs = (double)(br_now_ns() - prog.start_ns) / 1e9;
    fprintf(stderr,
            "wrote %s: %" PRIu64 " keys from %" PRIu64 " lines (%" PRIu64 " padding, %" PRIu64
            " under --min-count, %" PRIu64 " duplicates skipped), %u shard%s, %" PRIu64
            " bytes, %.2f bits/key, %.1f s\n",
            a.output, bs.keys, st.lines, st.skipped_zero, st.skipped_min,
            st.keys - bs.keys - a.in_base, bs.shards, bs.shards == 1 ? "" : "s", bs.file_bytes,
            bs.keys ? 8.0 * (double)bs.fingerprint_bytes / (double)bs.keys : 0.0, secs);
    if (base)
        print_delta(&a);
    if (br_keyset_spilled(ks)) { /* where the disk space and time went */
        const char *dir = a.tmpdir && *a.tmpdir ? a.tmpdir : getenv("TMPDIR");
        fprintf(stderr,
                "the keys did not fit in memory: they were sorted through a temporary "
                "directory under %s (--tmpdir), now removed\n",
                dir && *dir ? dir : "/var/tmp");
    }
    return 0;
}
