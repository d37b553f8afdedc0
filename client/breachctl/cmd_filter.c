/* SPDX-License-Identifier: MIT */
/* breachctl filter build | info | verify | query */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "breachctl.h"
#include "filter_file.h"
#include "filter_url.h"
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
} build_sink;

static int add_key(void *ctx, const uint8_t sha1[BR_SHA1_LEN])
{
    build_sink *s = ctx;
    return br_keyset_add(s->ks, br_hash_key64(sha1), s->err);
}

static void build_usage(void)
{
    fprintf(stderr, "Usage: breachctl filter build --kind password-sha1 --output FILE --input PATH...\n"
                    "       [--plaintext] [--min-count N] [--generation N] [--source TEXT]\n"
                    "       [--fp-bits 8|16|32] [--arity 3|4] [--threads N] [--tmpdir DIR]\n"
                    "       [--shard-keys N] [--memory SIZE] [--allow-empty]\n");
}

static int filter_build(int argc, char **argv)
{
    static const struct option opts[] = {
        {"kind", required_argument, NULL, 'k'},
        {"output", required_argument, NULL, 'o'},
        {"input", required_argument, NULL, 'i'},
        {"plaintext", no_argument, NULL, 'P'},
        {"min-count", required_argument, NULL, 'm'},
        {"generation", required_argument, NULL, 'g'},
        {"source", required_argument, NULL, 's'},
        {"fp-bits", required_argument, NULL, 'b'},
        {"arity", required_argument, NULL, 'a'},
        {"threads", required_argument, NULL, 't'},
        {"tmpdir", required_argument, NULL, 'T'},
        {"shard-keys", required_argument, NULL, 'K'},
        {"memory", required_argument, NULL, 'M'},
        {"allow-empty", no_argument, NULL, 'E'},
        {"socket", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    const char *kind_name = NULL, *output = NULL, *source = NULL, *tmpdir = NULL;
    const char *inputs[MAX_INPUTS];
    size_t n_inputs = 0;
    br_input_opts in_opts = {0};
    br_pwfilter_build_opts b_opts = {.build_time = -1};
    bool allow_empty = false;
    uint64_t v;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'k':
            kind_name = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'i':
            if (n_inputs == MAX_INPUTS) {
                ctl_err("filter build: more than %d --input options", MAX_INPUTS);
                return EXIT_ERROR;
            }
            inputs[n_inputs++] = optarg;
            break;
        case 'P':
            in_opts.plaintext = true;
            break;
        case 'm':
            if (!ctl_parse_u64(optarg, UINT64_MAX, &in_opts.min_count)) {
                ctl_err("filter build: --min-count '%s': not a whole number", optarg);
                return EXIT_ERROR;
            }
            break;
        case 'g':
            if (!ctl_opt_generation("filter build", optarg, &b_opts.generation))
                return EXIT_ERROR;
            break;
        case 's':
            if (!ctl_opt_source("filter build", optarg, &source))
                return EXIT_ERROR;
            break;
        case 'b':
            if (!ctl_parse_u64(optarg, 32, &v) || (v != 8 && v != 16 && v != 32)) {
                ctl_err("filter build: --fp-bits '%s': must be 8, 16 or 32", optarg);
                return EXIT_ERROR;
            }
            b_opts.fp_bits = (unsigned)v;
            break;
        case 'a':
            if (!ctl_parse_u64(optarg, 4, &v) || v < 3) {
                ctl_err("filter build: --arity '%s': must be 3 or 4", optarg);
                return EXIT_ERROR;
            }
            b_opts.arity = (unsigned)v;
            break;
        case 't':
            if (!ctl_parse_u64(optarg, 1024, &v) || v == 0) {
                ctl_err("filter build: --threads '%s': must be 1..1024", optarg);
                return EXIT_ERROR;
            }
            b_opts.threads = (unsigned)v;
            break;
        case 'T':
            tmpdir = optarg;
            break;
        case 'M': {
            /* SIZE with an optional K, M or G suffix (powers of 1024). */
            char *end;
            errno = 0;
            unsigned long long m = strtoull(optarg, &end, 10);
            unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
            if (shift)
                end++;
            if (errno || *end || optarg[0] == '-' || m == 0 || m > (UINT64_MAX >> 30)) {
                ctl_err("filter build: --memory '%s': a size such as 384M or 2G", optarg);
                return EXIT_ERROR;
            }
            b_opts.mem_budget = (uint64_t)m << shift;
            break;
        }
        case 'K':
            if (!ctl_parse_u64(optarg, BR_BFUSE_MAX_KEYS / 2, &v) || v < 16) {
                ctl_err("filter build: --shard-keys '%s': must be 16..%u", optarg,
                        BR_BFUSE_MAX_KEYS / 2);
                return EXIT_ERROR;
            }
            b_opts.shard_target = v;
            break;
        case 'E':
            allow_empty = true;
            break;
        case 'S':
            break; /* accepted everywhere; a build needs no daemon */
        case 'h':
            build_usage();
            return 0;
        default:
            build_usage();
            return EXIT_ERROR;
        }
    }
    if (optind < argc) {
        ctl_err("filter build: unexpected argument '%s'", argv[optind]);
        return EXIT_ERROR;
    }
    if (!kind_name || !output || n_inputs == 0) {
        ctl_err("filter build: --kind, --output and at least one --input are required");
        build_usage();
        return EXIT_ERROR;
    }
    br_filter_kind kind;
    if (br_filter_kind_from_name(kind_name, &kind) < 0) {
        ctl_err("filter build: --kind '%s': expected password-sha1 or url-sha256", kind_name);
        return EXIT_ERROR;
    }
    if (kind != BR_KIND_PASSWORD_SHA1) {
        ctl_err("filter build: --kind %s cannot be built by this version", kind_name);
        return EXIT_ERROR;
    }

    br_error err = {{0}};
    _cleanup_(br_keyset_freep) br_keyset *ks = NULL;
    int r = br_keyset_new(tmpdir, 0, &ks, &err);
    if (r < 0) {
        ctl_err("filter build: %s", err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    progress prog = {.tty = isatty(STDERR_FILENO), .start_ns = br_now_ns(), .ks = ks};
    for (size_t i = 0; i < n_inputs; i++)
        prog.bytes_total += br_input_size(inputs[i]);
    in_opts.progress = progress_read;
    in_opts.progress_ctx = &prog;
    br_input_stats st = {0};
    build_sink sink = {.ks = ks, .err = &err};
    for (size_t i = 0; i < n_inputs; i++) {
        uint64_t before = st.bytes;
        r = br_input_read(inputs[i], &in_opts, add_key, &sink, &st, &err);
        if (r < 0) {
            if (prog.tty)
                fputs("\r\033[K", stderr);
            ctl_err("%s", err.text[0] ? err.text : strerror(-r));
            return EXIT_ERROR;
        }
        prog.bytes_before += st.bytes - before;
    }
    if (st.keys == 0 && !allow_empty) {
        if (prog.tty)
            fputs("\r\033[K", stderr);
        ctl_err("filter build: no keys in the input (%" PRIu64 " lines); an empty filter finds no "
                "password breached: --allow-empty builds one anyway", st.lines);
        return EXIT_ERROR;
    }

    char default_source[BR_FILTER_SOURCE_SIZE];
    if (!source) {
        size_t len = 0;
        default_source[0] = '\0';
        for (size_t i = 0; i < n_inputs && len < sizeof(default_source); i++)
            len += (size_t)snprintf(default_source + len, sizeof(default_source) - len, "%s%s",
                                    i ? " " : "", inputs[i]);
        source = default_source;
    }
    b_opts.kind = kind;
    b_opts.source = source;
    b_opts.progress = progress_shards;
    b_opts.progress_ctx = &prog;
    br_pwfilter_build_stats bs = {0};
    r = br_pwfilter_build(ks, &b_opts, output, &bs, &err);
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
            output, bs.keys, st.lines, st.skipped_zero, st.skipped_min, st.keys - bs.keys,
            bs.shards, bs.shards == 1 ? "" : "s", bs.file_bytes,
            bs.keys ? 8.0 * (double)bs.fingerprint_bytes / (double)bs.keys : 0.0, secs);
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

static int filter_info(const char *path)
{
    _cleanup_(br_pwfilter_freep) br_pwfilter *pf = NULL;
    if (open_filter(path, &pf))
        return EXIT_ERROR;
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
    printf("%-18s additions and removals need a rebuild\n", "updates:");
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

/* A query key: exactly 40 hex digits, any case. */
static bool parse_key(const char *s, size_t len, uint64_t *key)
{
    uint8_t sha1[BR_SHA1_LEN];
    if (len != 2 * BR_SHA1_LEN || !br_hex_decode(s, BR_SHA1_LEN, sha1))
        return false;
    *key = br_hash_key64(sha1);
    return true;
}

static int filter_query(const char *path, int nkeys, char **keys)
{
    _cleanup_(br_pwfilter_freep) br_pwfilter *pf = NULL;
    if (open_filter(path, &pf))
        return EXIT_ERROR;
    uint64_t key;
    for (int i = 0; i < nkeys; i++) {
        if (!parse_key(keys[i], strlen(keys[i]), &key)) {
            ctl_err("filter query: key %d is not a 40-hex SHA-1", i + 1);
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
            if (!parse_key(line, (size_t)len, &block[n])) {
                br_pwfilter_contains_batch(pf, block, n, answers);
                for (size_t i = 0; i < n; i++)
                    puts(answers[i] ? "maybe" : "no");
                fflush(stdout);
                ctl_err("filter query: stdin:%" PRIu64 ": not a 40-hex SHA-1", lineno);
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

int cmd_filter(const ctl_globals *g, int argc, char **argv)
{
    (void)g;
    if (argc < 2) {
        ctl_err("filter: expected build, add, info, verify or query");
        return EXIT_ERROR;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "build") == 0) {
        if (url_filter_kind_requested(argc - 1, argv + 1))
            return url_filter_build(argc - 1, argv + 1);
        return filter_build(argc - 1, argv + 1);
    }
    if (strcmp(sub, "add") == 0)
        return url_filter_add(argc - 1, argv + 1);
    /* info/verify/query: FILE [KEY...], with --socket tolerated anywhere. */
    /* Positional arguments compacted in place over argv. */
    char **pos = argv + 2;
    int npos = 0;
    bool by_url = false;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            i++;
            continue;
        }
        if (strcmp(sub, "query") == 0 && strcmp(argv[i], "--url") == 0) {
            by_url = true;
            continue;
        }
        if (strncmp(argv[i], "--socket=", 9) == 0)
            continue;
        pos[npos++] = argv[i];
    }
    if (strcmp(sub, "info") == 0 || strcmp(sub, "verify") == 0) {
        if (npos != 1) {
            ctl_err("filter %s: expected exactly one FILE", sub);
            return EXIT_ERROR;
        }
        if (url_filter_file(pos[0]))
            return sub[0] == 'i' ? url_filter_info(pos[0]) : url_filter_verify(pos[0]);
        return sub[0] == 'i' ? filter_info(pos[0]) : filter_verify(pos[0]);
    }
    if (strcmp(sub, "query") == 0) {
        if (npos < 1) {
            ctl_err("filter query: expected FILE [KEY...]");
            return EXIT_ERROR;
        }
        if (url_filter_file(pos[0]))
            return url_filter_query(pos[0], npos - 1, pos + 1, by_url);
        if (by_url) {
            ctl_err("filter query: --url needs a url-sha256 filter");
            return EXIT_ERROR;
        }
        return filter_query(pos[0], npos - 1, pos + 1);
    }
    ctl_err("filter: unknown subcommand '%s' (build, add, info, verify, query)", sub);
    return EXIT_ERROR;
}
