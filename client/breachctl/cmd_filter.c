/* SPDX-License-Identifier: MIT */
/* breachctl filter build | info | verify | query */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "breachctl.h"
#include "ctl_opts.h"
#include "filter_delta.h"
#include "filter_file.h"
#include "filter_fleet.h"
#include "filter_info.h"
#include "filter_url.h"
#include "url_feed.h"
#include "hash.h"
#include "hibp_input.h"
#include "keyset.h"
#include "pwfilter.h"
#include "util.h"

#define MAX_INPUTS 4096

/* ---- progress (only on a terminal) ---- */

typedef struct progress {
    bool tty;
    uint64_t start_ns, last_ns;
    uint64_t bytes_total; /* sum over inputs, 0 when unknown */
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
    fprintf(stderr, "\rread %" PRIu64 " keys, %.2fM keys/s", keys, secs > 0 ? keys / secs / 1e6 : 0);
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
} build_sink;

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

static const ctl_usage filter_usage[] = {
    {"filter build",
     "--kind password-sha1|password-ntlm --output FILE --input PATH...\n"
     "          [--plaintext] [--min-count N] [--generation N] [--source TEXT]\n"
     "          [--fp-bits 8|16|32] [--arity 3|4] [--threads N] [--memory SIZE]\n"
     "          [--tmpdir DIR] [--shard-keys N] [--allow-empty] [--base OLD]...",
     "A password filter from HIBP-format corpora (a single file, a per-prefix "
     "directory, a hash list) or, with --plaintext, from passwords one per line. "
     "With --base: a delta of the keys OLD (and the deltas after it) does not "
     "answer maybe for."},
    {"filter build",
     "--kind url-sha256 --output FILE\n"
     "          --input FEED[=CATEGORY]... [--ranges-dir DIR]\n"
     "          [--format FORMAT [--column N|NAME]]\n"
     "          [--skip-bad] [--max-bad N|P%] [--allow-empty] [--fpr P]\n"
     "          [--capacity N] [--generation N] [--source TEXT] [--base OLD]...",
     "A URL filter from blocklist feeds, and its range mirror in DIR (with --base: "
     "a delta, and the mirror of the whole set). FORMAT: "
     BR_FEED_FORMAT_NAMES ". CATEGORY: [a-z0-9_-]{1,32}, default " BR_FEED_DEFAULT_CATEGORY
     "; the first --input listing an expression sets its category."},
    {"filter build",
     "--merge BASE DELTA... --output FILE [--kind KIND] [--generation N]\n"
     "          [--source TEXT]",
     "Consolidates a base and its deltas into one layered filter that answers as "
     "they did; later deltas may name it as their base."},
    {"filter add",
     "FILE --input FEED[=CATEGORY]... [--ranges-dir DIR]\n"
     "          [--format FORMAT [--column N|NAME]] [--skip-bad] [--max-bad N|P%]\n"
     "          [--allow-empty] [--generation N] [--source TEXT]",
     "Adds feeds to a url-sha256 filter: a new generation; the old file is kept "
     "on failure."},
    {"filter info", "[--force] FILE",
     "Prints a filter file's header. --force: also for a file that fails its checks, "
     "each value marked unverified (exit status 2 all the same)."},
    {"filter verify", "[--pubkey PUB] FILE",
     "Checks the whole file: exit status 0 when intact (and, with --pubkey, signed "
     "by that key), 2 with the reason."},
    {"filter sign", "--key SECRET FILE",
     "Writes FILE.sig: an Ed25519 signature over the filter's hashes, kind, "
     "generation and build time."},
    {"filter fetch",
     "--url URL --pubkey PUB --output PATH | --config FILE\n"
     "          [--no-reload] [--socket PATH] [--ca-file FILE] [--timeout SECONDS]",
     "Downloads signed filters that changed (conditional, resumable), verifies "
     "them, replaces them keeping PATH.prev, and sends RELOAD; \"unchanged\" when "
     "there is nothing new. A failure never touches the installed files."},
    {"filter rollback", "[--no-reload] [--socket PATH] PATH",
     "Puts PATH.prev back as PATH, then sends RELOAD."},
    {"filter query", "FILE [KEY...]",
     "Offline lookup: maybe or no per KEY (40-hex SHA-1 or 64-hex SHA-256); "
     "without KEY, one per line on standard input."},
    {"filter query", "FILE --url [URL...]", "The same for URLs, against a url-sha256 filter."},
};

void cmd_filter_summary(FILE *out)
{
    ctl_usage_summary(out, filter_usage, BR_ARRAY_SIZE(filter_usage));
}

void filter_usage_of(FILE *out, const char *name)
{
    ctl_usage_command(out, filter_usage, BR_ARRAY_SIZE(filter_usage), name);
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
    uint64_t in_base;
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
    int r = ctl_getopt("filter build", opts, BR_ARRAY_SIZE(opts), build_usage, argc, argv,
                       &first);
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
    build_sink sink = {.ks = ks, .err = err, .base = a->base};
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

static int filter_build(int argc, char **argv)
{
    build_args a = {.b = {.build_time = -1}};
    int r = parse_build(argc, argv, &a);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    _cleanup_(br_pwfilter_freep) br_pwfilter *base = NULL;
    if (a.n_bases) {
        if (fleet_pw_set_open("filter build --base", a.bases, a.n_bases, &base, a.base_body))
            return EXIT_ERROR;
        a.base = base;
        a.b.base_body_sha256 = a.base_body;
        if (a.b.generation == 0)
            a.b.generation = br_pwfilter_header(base)->generation + 1;
    }

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
        fprintf(stderr, "delta of %s: %" PRIu64 " keys of the input are already a maybe of the "
                        "base set and were left out\n",
                a.bases[a.n_bases - 1], a.in_base);
    return 0;
}

/* ---- info / verify / query ---- */

static int open_filter(const char *path, br_pwfilter **pf)
{
    br_error err = {{0}};
    int r = br_pwfilter_open(path, pf, &err);
    if (r < 0) {
        ctl_err("%s", err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    return 0;
}

static int filter_info(const char *path, bool force)
{
    _cleanup_(br_pwfilter_freep) br_pwfilter *pf = NULL;
    br_error err = {{0}};
    int r = br_pwfilter_open(path, &pf, &err);
    if (r < 0)
        return filter_info_refused(path, force, r, &err);
    const br_filter_header *h = br_pwfilter_header(pf);
    char when[64];
    time_t t = (time_t)h->build_time;
    struct tm tm;
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    double age_days = difftime(time(NULL), t) / 86400.0;
    uint64_t size = br_pwfilter_file_size(pf);
    printf("%-18s %s\n", "file:", path);
    printf("%-18s %u\n", "format version:", h->version);
    printf("%-18s %s\n", "kind:", br_filter_kind_name(h->kind));
    printf("%-18s %s, %u-wise, %u-bit fingerprints\n", "algorithm:",
           br_filter_algorithm_name(h->algorithm), br_pwfilter_arity(pf), br_pwfilter_fp_bits(pf));
    printf("%-18s %s v%u\n", "key encoding:", br_key_encoding_name(h->key_encoding),
           h->key_encoding_version);
    printf("%-18s %" PRIu64 "\n", "generation:", h->generation);
    printf("%-18s %s\n", "source:", h->source);
    printf("%-18s %s (%.1f days ago)\n", "build time:", when, age_days);
    printf("%-18s %" PRIu64 "\n", "keys:", h->key_count);
    printf("%-18s %u\n", "shards:", br_pwfilter_shard_count(pf));
    printf("%-18s %" PRIu64 " bytes\n", "file size:", size);
    if (h->key_count)
        printf("%-18s %.2f in fingerprints, %.2f with headers\n", "bits per key:",
               8.0 * (double)br_pwfilter_fingerprint_bytes(pf) / (double)h->key_count,
               8.0 * (double)size / (double)h->key_count);
    printf("%-18s about 1 in %.0f (2^-%u) per absent key\n", "false positives:",
           ldexp(1.0, (int)br_pwfilter_fp_bits(pf)), br_pwfilter_fp_bits(pf));
    printf("%-18s additions: a delta (filter build --base); removals: a rebuild\n", "updates:");
    ctl_print_hex("body sha256:", h->body_sha256, 32);
    ctl_print_hex("header sha256:", h->header_sha256, 32);
    return 0;
}

static int filter_verify(const char *path)
{
    _cleanup_(br_pwfilter_freep) br_pwfilter *pf = NULL;
    if (open_filter(path, &pf))
        return EXIT_ERROR;
    const br_filter_header *h = br_pwfilter_header(pf);
    printf("%s: OK (%s, %" PRIu64 " keys, generation %" PRIu64 ")\n", path,
           br_filter_kind_name(h->kind), h->key_count, h->generation);
    return 0;
}

/* A query key: exactly 2 * hash_len hex digits, any case (40 for a SHA-1,
 * 32 for an NT hash). */
static bool parse_key(const char *s, size_t len, size_t hash_len, uint64_t *key)
{
    uint8_t hash[BR_SHA1_LEN];
    if (len != 2 * hash_len || !br_hex_decode(s, hash_len, hash))
        return false;
    *key = br_hash_key64(hash);
    return true;
}

static int filter_query(const char *path, int nkeys, char **keys)
{
    _cleanup_(br_pwfilter_freep) br_pwfilter *pf = NULL;
    if (open_filter(path, &pf))
        return EXIT_ERROR;
    bool nt = br_pwfilter_header(pf)->kind == BR_KIND_PASSWORD_NTLM;
    size_t hash_len = nt ? BR_NT_LEN : BR_SHA1_LEN;
    const char *want = nt ? "a 32-hex NT hash" : "a 40-hex SHA-1";
    uint64_t key;
    for (int i = 0; i < nkeys; i++) {
        if (!parse_key(keys[i], strlen(keys[i]), hash_len, &key)) {
            ctl_err("filter query: key %d is not %s", i + 1, want);
            return EXIT_ERROR;
        }
        puts(br_pwfilter_contains_key(pf, key) ? "maybe" : "no");
    }
    if (nkeys > 0)
        return 0;
    /* Keys from stdin are answered in blocks through the batched probe, so
     * their memory accesses overlap instead of waiting one by one. */
    enum { BLOCK = 1024 };
    uint64_t block[BLOCK];
    bool answers[BLOCK];
    size_t n = 0;
    _cleanup_free_ char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    uint64_t lineno = 0;
    for (;;) {
        len = getline(&line, &cap, stdin);
        if (len >= 0) {
            lineno++;
            if (len > 0 && line[len - 1] == '\n')
                len--;
            if (len > 0 && line[len - 1] == '\r')
                len--;
            if (!parse_key(line, (size_t)len, hash_len, &block[n])) {
                br_pwfilter_contains_batch(pf, block, n, answers);
                for (size_t i = 0; i < n; i++)
                    puts(answers[i] ? "maybe" : "no");
                fflush(stdout);
                ctl_err("filter query: stdin:%" PRIu64 ": not %s", lineno, want);
                return EXIT_ERROR;
            }
            n++;
        }
        if (n == BLOCK || (len < 0 && n > 0)) {
            br_pwfilter_contains_batch(pf, block, n, answers);
            for (size_t i = 0; i < n; i++)
                fputs(answers[i] ? "maybe\n" : "no\n", stdout);
            n = 0;
        }
        if (len < 0)
            break;
    }
    return fflush(stdout) == 0 ? 0 : EXIT_ERROR;
}

/* ---- the subcommands ---- */

static void info_usage(FILE *out)
{
    filter_usage_of(out, "filter info");
}

static void verify_usage(FILE *out)
{
    filter_usage_of(out, "filter verify");
}

static void query_usage(FILE *out)
{
    filter_usage_of(out, "filter query");
}

static int sub_build(int argc, char **argv)
{
    if (fleet_merge_requested(argc, argv))
        return filter_merge_cmd(argc, argv);
    if (url_filter_kind_requested(argc, argv))
        return url_filter_build(argc, argv);
    return filter_build(argc, argv);
}

/* info FILE and verify FILE: by the file's kind. */
static int sub_info_verify(int argc, char **argv)
{
    bool info = strcmp(argv[0], "info") == 0, force = false;
    const char *pubkey = NULL; /* verify --pubkey PUB: the signature too */
    char cmd[32];
    snprintf(cmd, sizeof(cmd), "filter %s", argv[0]);
    const ctl_opt info_opts[] = {
        CTL_IGNORE("socket"), /* accepted everywhere; offline */
        CTL_HELP,
        CTL_FLAG("force", &force),
    };
    const ctl_opt verify_opts[] = {
        CTL_IGNORE("socket"),
        CTL_HELP,
        CTL_STR("pubkey", &pubkey),
    };
    int first;
    int r = ctl_getopt(cmd, info ? info_opts : verify_opts,
                       info ? BR_ARRAY_SIZE(info_opts) : BR_ARRAY_SIZE(verify_opts),
                       info ? info_usage : verify_usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    if (argc - first != 1) {
        ctl_err("%s: expected exactly one FILE", cmd);
        return EXIT_ERROR;
    }
    const char *path = argv[first];
    if (pubkey && filter_verify_signature(path, pubkey) != 0)
        return EXIT_ERROR;
    if (url_filter_file(path))
        r = info ? url_filter_info(path, force) : url_filter_verify(path);
    else
        r = info ? filter_info(path, force) : filter_verify(path);
    if (r == 0 && info)
        fleet_info_extra(path);
    return r;
}

static int sub_query(int argc, char **argv)
{
    bool by_url = false;
    const ctl_opt opts[] = {
        CTL_FLAG("url", &by_url),
        CTL_IGNORE("socket"), /* accepted everywhere; offline */
        CTL_HELP,
    };
    int first;
    int r = ctl_getopt("filter query", opts, BR_ARRAY_SIZE(opts), query_usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    if (first >= argc) {
        ctl_err("filter query: expected FILE [KEY...]");
        return EXIT_ERROR;
    }
    const char *path = argv[first];
    int nkeys = argc - first - 1;
    if (url_filter_file(path))
        return url_filter_query(path, nkeys, argv + first + 1, by_url);
    if (by_url) {
        ctl_err("filter query: --url needs a url-sha256 filter");
        return EXIT_ERROR;
    }
    return filter_query(path, nkeys, argv + first + 1);
}

/* fetch and rollback send RELOAD: they need the socket. */
static const ctl_globals *filter_globals;

static int sub_fetch(int argc, char **argv)
{
    return filter_fetch_cmd(filter_globals, argc, argv);
}

static int sub_rollback(int argc, char **argv)
{
    return filter_rollback_cmd(filter_globals, argc, argv);
}

/* Each gets argv with argv[0] = its name. */
static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} subcommands[] = {
    {"build", sub_build},       {"add", url_filter_add}, {"info", sub_info_verify},
    {"verify", sub_info_verify}, {"query", sub_query},   {"sign", filter_sign_cmd},
    {"fetch", sub_fetch},        {"rollback", sub_rollback},
};

static void family_usage(FILE *out)
{
    fputs("Usage: breachctl filter SUBCOMMAND [OPTIONS] [ARGS...]\n"
          "       breachctl filter SUBCOMMAND --help\n\n",
          out);
    cmd_filter_summary(out);
}

int cmd_filter(const ctl_globals *g, int argc, char **argv)
{
    filter_globals = g;
    const ctl_opt opts[] = {
        CTL_IGNORE("socket"), /* accepted everywhere; offline */
        CTL_HELP,
    };
    int first;
    /* Stop at the subcommand: its own options are parsed by it. */
    int r = ctl_getopt_prefix("filter", opts, BR_ARRAY_SIZE(opts), family_usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    if (first >= argc) {
        ctl_err("filter: expected build, add, info, verify, query, sign, fetch or rollback (see "
                "breachctl filter --help)");
        return EXIT_ERROR;
    }
    for (size_t i = 0; i < BR_ARRAY_SIZE(subcommands); i++)
        if (strcmp(argv[first], subcommands[i].name) == 0)
            return subcommands[i].fn(argc - first, argv + first);
    ctl_err("filter: unknown subcommand '%s' (build, add, info, verify, query, sign, fetch, "
            "rollback)",
            argv[first]);
    return EXIT_ERROR;
}
