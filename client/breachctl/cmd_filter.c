/* SPDX-License-Identifier: MIT */
/* breachctl filter: the subcommand table, the usage texts, and info, verify
 * and query of password filters (build: cmd_filter_build.c) */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "breachctl.h"
#include "ctl_opts.h"
#include "filter_build.h"
#include "filter/filter_file.h"
#include "filter_fleet.h"
#include "filter_info.h"
#include "filter/filter_record.h"
#include "filter_url.h"
#include "core/clock.h"
#include "filter_url_feeds.h"
#include "core/hash.h"
#include "filter/hibp_input.h"
#include "filter/pwfilter.h"
#include "filter/urlfilter.h"
#include "url/url_feed.h"
#include "core/util.h"

static const ctl_usage filter_usage[] = {
    {"filter build",
     "--kind password-sha1|password-ntlm --output FILE --input PATH...\n"
     "          [--plaintext] [--min-count N] [--generation N] [--source TEXT]\n"
     "          [--fp-bits 8|16|32] [--arity 3|4] [--threads N] [--memory SIZE]\n"
     "          [--tmpdir DIR] [--shard-keys N] [--allow-empty] [--base OLD]...\n"
     "          [--offline] [--stats]",
     "A password filter from HIBP-format corpora (a single file, a per-prefix "
     "directory, a hash list) or, with --plaintext, from passwords one per line. "
     "With --base: a delta of the keys OLD (and the deltas after it) does not "
     "answer maybe for. --offline: each key keeps its count and a hit is answered "
     "on the host (24-bit fingerprints; counted input only). --stats: print the "
     "input's count histogram (keys seen at least 1, 2, 10, 100, 1000, 10000 times)."},
    {"filter build",
     "--kind url-sha256 --output FILE\n"
     "          --input FEED[=[CATEGORY][:FORMAT]]... [--ranges-dir DIR]\n"
     "          [--format FORMAT [--column N|NAME]]\n"
     "          [--skip-bad] [--max-bad N|P%] [--allow-empty] [--fpr P]\n"
     "          [--capacity N] [--generation N] [--source TEXT] [--base OLD]...\n"
     "          [--offline [--no-check-filter] [--no-quick-filter] [--sha256-keys]]",
     "A URL filter from blocklist feeds, and its range mirror in DIR (with --base: "
     "a delta, and the mirror of the whole set). --offline: each expression keeps "
     "its category and a hit is answered on the host (no mirror; at most 255 "
     "categories; with --base, a delta of an offline set); --no-check-filter: "
     "without the 16-bit check filter, for readers older than it (and without the quick "
     "filter); --no-quick-filter: without the 8-bit XXH3 quick filter (key encoding v4, "
     "for readers older than it); --sha256-keys: fingerprints keyed by SHA-256, not XXH3 "
     "(key encoding v5, for readers older than v6). FORMAT: " BR_FEED_FORMAT_NAMES
     " (:FORMAT for one feed, --format for the others). CATEGORY: "
     "[a-z0-9_-]{1,32}, default " BR_FEED_DEFAULT_CATEGORY "; the first --input listing "
     "an expression sets its category. Feeds may be gzip or bzip2 data (told by their "
     "content; bzip2 from a file, not a pipe)."},
    {"filter build",
     "--merge BASE DELTA... --output FILE [--kind KIND] [--generation N]\n"
     "          [--source TEXT]",
     "Consolidates a base and its deltas into one layered filter that answers as "
     "they did; later deltas may name it as their base."},
    {"filter add",
     "FILE --input FEED[=[CATEGORY][:FORMAT]]... [--ranges-dir DIR]\n"
     "          [--format FORMAT [--column N|NAME]] [--skip-bad] [--max-bad N|P%]\n"
     "          [--allow-empty] [--generation N] [--source TEXT]",
     "Adds feeds to a url-sha256 filter: a new generation; the old file is kept "
     "on failure."},
    {"filter info", "[--force] FILE",
     "Prints a filter file's header. --force: also for a file that fails its checks, "
     "each value marked unverified (exit status 2 all the same)."},
    {"filter verify", "[--pubkey PUB] [--no-record] FILE",
     "Checks the whole file: exit status 0 when intact (and, with --pubkey, signed "
     "by that key), 2 with the reason. An intact file gets FILE.verified, with which "
     "breachd starts without hashing it again; --no-record: not."},
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
     "without KEY, one per line on standard input. An offline filter answers "
     "no or pwned COUNT."},
    {"filter query", "FILE --url [URL...]", "The same for URLs, against a url-sha256 filter."},
};

void cmd_filter_summary(FILE *out)
{
    ctl_usage_summary(out, filter_usage, BR_ARRAY_SIZE(filter_usage));
    filter_export_summary(out);
}

void filter_usage_of(FILE *out, const char *name)
{
    ctl_usage_command(out, filter_usage, BR_ARRAY_SIZE(filter_usage), name);
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
    double age_days = difftime((time_t)br_clock_now_real(), t) / 86400.0;
    uint64_t size = br_pwfilter_file_size(pf);
    printf("%-18s %s\n", "file:", path);
    printf("%-18s %u\n", "format version:", h->version);
    printf("%-18s %s\n", "kind:", br_filter_kind_name(h->kind));
    printf("%-18s %s, %u-wise, %u-bit %s\n", "algorithm:", br_filter_algorithm_name(h->algorithm),
           br_pwfilter_arity(pf), br_pwfilter_fp_bits(pf),
           br_pwfilter_offline(pf) ? "slots" : "fingerprints");
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
    const br_pwo *off = br_pwfilter_offline_info(pf);
    if (off) {
        bool cats = off->code_kind == BR_CODES_CATEGORIES;
        printf("%-18s offline: hits are answered on the host, with their %s\n",
               "mode:", cats ? "category" : "count");
        printf("%-18s 24-bit fingerprint and 8-bit %s code in 32-bit slots%s\n",
               "slots:", cats ? "category" : "count",
               off->check_bits ? ", and a 16-bit check filter" : "");
        unsigned bits = 24 + off->check_bits;
        printf("%-18s about 1 in %.0f (2^-%u) per absent key\n",
               "false positives:", ldexp(1.0, (int)bits), bits);
        if (off->code_kind == BR_CODES_CATEGORIES) {
            printf("%-18s %u:", "categories:", off->cats.count);
            for (unsigned i = 0; i < off->cats.count; i++)
                printf(" %s", off->cats.names[i]);
            printf("\n%-18s %u (lookups try host suffixes of up to %u labels)\n",
                   "domain labels:", off->max_domain_labels, BR_MAX(off->max_domain_labels, 5u));
            printf("%-18s %u allow, %u removed (full SHA-256 keys)\n", "exact table:", off->n_allow,
                   off->n_removed);
            if (off->xxh3_keys)
                printf("%-18s XXH3-64 of the expression (fingerprints and check filters; the "
                       "exact table by SHA-256)\n",
                       "keyed by:");
            if (h->key_encoding_version >= 5)
                printf("%-18s 8-bit, %u keys (XXH3 of %s)\n", "quick filter:", off->quick_keys,
                       off->xxh3_keys ? "the allow entries: other expressions skip SHA-256"
                                      : "the expressions: unlisted names skip SHA-256");
        } else {
            printf("%-18s exact up to %d; above, the bucket's lower bound (ratio %.6f, at most "
                   "10%% below, never above); largest %" PRIu64 "\n",
                   "counts:", BR_COUNT_EXACT_MAX, off->ratio_ppm / 1e6, off->counts.bound[256] - 1);
        }
        if (off->min_count > 1)
            printf("%-18s keys seen at least %" PRIu64 " times\n", "min count:", off->min_count);
    } else {
        printf("%-18s range: a maybe is resolved by a range query\n", "mode:");
        printf("%-18s about 1 in %.0f (2^-%u) per absent key\n",
               "false positives:", ldexp(1.0, (int)br_pwfilter_fp_bits(pf)),
               br_pwfilter_fp_bits(pf));
    }
    printf("%-18s additions: a delta (filter build --base); removals: a rebuild\n", "updates:");
    ctl_print_hex("body sha256:", h->body_sha256, 32);
    ctl_print_hex("header sha256:", h->header_sha256, 32);
    return 0;
}

/* filter verify: the container hashed whole and the kind's reader's checks,
 * then (record) PATH.verified, so that breachd need not hash the body again
 * at its next start (docs/filter-format.md, "Start-up: verification records"). */
static int filter_verify(const char *path, bool url, bool record)
{
    br_error err = {{0}};
    br_filter_file *file = NULL;
    _cleanup_(br_pwfilter_freep) br_pwfilter *pf = NULL;
    _cleanup_(br_urlfilter_freep) br_urlfilter *uf = NULL;
    int r = br_filter_file_open(path, &file, &err);
    if (r == 0 && (r = url ? br_urlfilter_from_file(file, &uf, &err)
                           : br_pwfilter_from_file(file, &pf, &err)) < 0)
        br_error_prefix(&err, r, "%s", path);
    if (r < 0) {
        ctl_err("%s", err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    const br_filter_header *h = url ? br_urlfilter_header(uf) : br_pwfilter_header(pf);
    printf("%s: OK (%s, %" PRIu64 " keys, generation %" PRIu64 ")\n", path,
           br_filter_kind_name(h->kind), h->key_count, h->generation);
    if (record && br_filter_record_write(file, path, &err) < 0)
        fprintf(stderr,
                "breachctl: note: no verification record written (%s): breachd hashes the "
                "whole file at each start\n",
                err.text);
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

/* An offline filter's answer: "no" or the hit with its count. */
static int offline_answer(const br_pwfilter *pf, const char *s, size_t len, size_t hash_len)
{
    uint8_t hash[BR_SHA1_LEN];
    if (len != 2 * hash_len || !br_hex_decode(s, hash_len, hash))
        return -EINVAL;
    uint64_t count = 0;
    int r = br_pwfilter_lookup_count(pf, hash, &count);
    if (r < 0)
        return r;
    if (r == 0)
        puts("no");
    else
        printf("pwned %" PRIu64 "\n", count);
    return 0;
}

static int offline_query(const br_pwfilter *pf, int nkeys, char **keys, size_t hash_len,
                         const char *want)
{
    for (int i = 0; i < nkeys; i++)
        if (offline_answer(pf, keys[i], strlen(keys[i]), hash_len) < 0) {
            ctl_err("filter query: key %d is not %s", i + 1, want);
            return EXIT_ERROR;
        }
    if (nkeys > 0)
        return 0;
    _cleanup_free_ char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    for (uint64_t lineno = 1; (len = getline(&line, &cap, stdin)) >= 0; lineno++) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (offline_answer(pf, line, (size_t)len, hash_len) < 0) {
            ctl_err("filter query: stdin:%" PRIu64 ": not %s", lineno, want);
            return EXIT_ERROR;
        }
    }
    return fflush(stdout) == 0 ? 0 : EXIT_ERROR;
}

static int filter_query(const char *path, int nkeys, char **keys)
{
    _cleanup_(br_pwfilter_freep) br_pwfilter *pf = NULL;
    if (open_filter(path, &pf))
        return EXIT_ERROR;
    if (br_pwfilter_offline(pf)) {
        bool ntk = br_pwfilter_header(pf)->kind == BR_KIND_PASSWORD_NTLM;
        return offline_query(pf, nkeys, keys, ntk ? BR_NT_LEN : BR_SHA1_LEN,
                             ntk ? "a 32-hex NT hash" : "a 40-hex SHA-1");
    }
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
    return pw_filter_build(argc, argv);
}

/* filter info: whether PATH.verified lets breachd skip hashing the body. */
static void record_info(const char *path)
{
    uint8_t raw[BR_FILTER_HEADER_SIZE];
    br_filter_header h;
    struct stat st;
    br_error err = {{0}};
    int64_t at = 0;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0 || pread(fd, raw, sizeof(raw), 0) != (ssize_t)sizeof(raw) ||
        br_filter_header_decode(raw, sizeof(raw), &h, &err) < 0)
        return;
    int r = br_filter_record_check(path, &st, &h, -1, &at, &err);
    /* A record of the invoking user's own: breachd trusts it only under
     * [daemon] trust_own_filters = yes (breachd.conf(5)). */
    bool own = r != 0 && r != -ENOENT && geteuid() != 0 &&
               br_filter_record_check(path, &st, &h, (long)geteuid(), &at, NULL) == 0;
    char when[64] = "?";
    time_t t = (time_t)at;
    struct tm tm;
    if (r == 0 || own)
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    if (r == 0)
        printf("%-18s valid, written %s: breachd does not hash the body at start\n",
               "verified record:", when);
    else if (own)
        printf("%-18s valid, written %s, but yours (uid %u), not root's: breachd does not hash "
               "the body at start only with [daemon] trust_own_filters = yes\n",
               "verified record:", when, (unsigned)geteuid());
    else if (r == -ENOENT)
        printf("%-18s none: breachd hashes the body at each start (`breachctl filter verify` "
               "writes one)\n",
               "verified record:");
    else
        printf("%-18s not used: %s\n", "verified record:", err.text);
}

/* info FILE and verify FILE: by the file's kind. */
static int sub_info_verify(int argc, char **argv)
{
    bool info = strcmp(argv[0], "info") == 0, force = false, no_record = false;
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
        CTL_FLAG("no-record", &no_record),
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
        r = info ? url_filter_info(path, force) : filter_verify(path, true, !no_record);
    else
        r = info ? filter_info(path, force) : filter_verify(path, false, !no_record);
    if (r == 0 && info) {
        record_info(path);
        fleet_info_extra(path);
    }
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
    if (url_offline_file(path))
        return url_offline_query(path, nkeys, argv + first + 1, by_url);
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
    {"build", sub_build},        {"add", url_filter_add},    {"info", sub_info_verify},
    {"verify", sub_info_verify}, {"query", sub_query},       {"sign", filter_sign_cmd},
    {"fetch", sub_fetch},        {"rollback", sub_rollback}, {"export", filter_export_cmd},
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
    int r =
        ctl_getopt_prefix("filter", opts, BR_ARRAY_SIZE(opts), family_usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    if (first >= argc) {
        ctl_err("filter: expected build, add, info, verify, query, sign, fetch, rollback or "
                "export (see breachctl filter --help)");
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
