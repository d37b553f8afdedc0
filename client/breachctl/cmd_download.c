/* SPDX-License-Identifier: MIT */
/* breachctl download: fetch the Pwned Passwords corpus into per-prefix files
 * (lib/download/download.h does the work; docs/corpus.md is the user documentation).
 *
 * Output: on a terminal, a progress line on stderr (prefixes done / total,
 * MB, requests/s, ETA); in any case one summary line on stdout at the end.
 * Exit 0 only when every requested prefix is present and valid; otherwise 2,
 * with the count and the first missing prefixes on stderr. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "breachctl.h"
#include "ctl_opts.h"
#include "download/download.h"
#include "core/util.h"

#define RATE_WINDOW 20 /* progress samples kept for the recent rate (about 5 s) */

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    stop_flag = 1;
    signal(sig, SIG_DFL); /* a second one kills at once (still safe: see the docs) */
}

typedef struct ui {
    bool tty;
    bool line_shown;
    bool circuit_open;
    double t[RATE_WINDOW];
    uint64_t done[RATE_WINDOW], req[RATE_WINDOW];
    unsigned n, pos;
} ui;

static void fmt_eta(double s, char *out, size_t cap)
{
    if (s < 0 || s > 99 * 3600.0) {
        snprintf(out, cap, "--:--");
        return;
    }
    unsigned v = (unsigned)(s + 0.5);
    snprintf(out, cap, "%u:%02u:%02u", v / 3600, v / 60 % 60, v % 60);
}

static void progress_cb(void *ctx, const br_download_progress *p, bool final)
{
    ui *u = ctx;
    if (!u->tty)
        return;
    if (final) {
        if (u->line_shown)
            fputs("\r\033[K", stderr);
        u->line_shown = false;
        return;
    }
    /* rates over the last few seconds */
    uint64_t fresh = p->done - p->resumed;
    unsigned oldest = u->n < RATE_WINDOW ? 0 : u->pos;
    double dt = u->n ? p->elapsed_s - u->t[oldest] : p->elapsed_s;
    double rate_req = 0, rate_done = 0;
    if (u->n && dt > 0) {
        rate_req = (double)(p->requests - u->req[oldest]) / dt;
        rate_done = (double)(fresh - u->done[oldest]) / dt;
    } else if (p->elapsed_s > 0) {
        rate_req = (double)p->requests / p->elapsed_s;
        rate_done = (double)fresh / p->elapsed_s;
    }
    u->t[u->pos] = p->elapsed_s;
    u->done[u->pos] = fresh;
    u->req[u->pos] = p->requests;
    u->pos = (u->pos + 1) % RATE_WINDOW;
    if (u->n < RATE_WINDOW)
        u->n++;
    char eta[32];
    uint32_t left = p->total - p->done - p->failed;
    fmt_eta(rate_done > 0 ? left / rate_done : -1, eta, sizeof(eta));
    fprintf(stderr,
            "\rdownload: %" PRIu32 "/%" PRIu32 " prefixes (%.1f%%), %.1f MB, %.0f req/s, ETA %s",
            p->done, p->total, 100.0 * p->done / (p->total ? p->total : 1), (double)p->bytes / 1e6,
            rate_req, eta);
    if (p->failed)
        fprintf(stderr, ", %" PRIu32 " failed", p->failed);
    fputs("\033[K", stderr);
    u->line_shown = true;
}

static void log_cb(void *ctx, int level, const char *msg)
{
    ui *u = ctx;
    /* The breaker re-opens after every failed trial during an outage: say it once. */
    if (!strncmp(msg, "upstream circuit closed", 23) && u->circuit_open) {
        u->circuit_open = false;
        level = LOG_WARNING;
        msg = "upstream answering again";
    } else if (!strncmp(msg, "upstream circuit open", 21)) {
        if (u->circuit_open)
            return;
        u->circuit_open = true;
    }
    if (level > LOG_WARNING)
        return;
    if (u->line_shown)
        fputs("\r\033[K", stderr);
    u->line_shown = false;
    fprintf(stderr, "breachctl: download: %s\n", msg);
}

#define STR_(x) #x
#define STR(x) STR_(x)

static const ctl_usage download_usage[] = {
    {"download",
     "--out DIR [--ntlm] [--upstream TEMPLATE] [--parallel N]\n"
     "          [--range FIRST-LAST] [--single-file FILE] [--force] [--ca-file FILE]",
     "Fetches the Pwned Passwords corpus, every range 00000..FFFFF (or FIRST..LAST, "
     "hex), into DIR/XXXXX.txt. A re-run sends conditional requests and rewrites only "
     "changed ranges; an interrupted run resumes; --force fetches everything again "
     "(docs/corpus.md). --ntlm: the NTLM corpus (NT hashes, 27-hex suffixes; use a DIR "
     "of its own). Default upstream: " BR_DOWNLOAD_DEFAULT_UPSTREAM
     " (--ntlm: " BR_DOWNLOAD_DEFAULT_NTLM_UPSTREAM
     "); --parallel: " STR(BR_DOWNLOAD_DEFAULT_PARALLEL) ". Exit status 0 when every prefix "
                                                         "is present, else 2."},
};

void cmd_download_summary(FILE *out)
{
    ctl_usage_summary(out, download_usage, BR_ARRAY_SIZE(download_usage));
}

static void usage(FILE *out)
{
    ctl_usage_command(out, download_usage, BR_ARRAY_SIZE(download_usage), "download");
}

static void summary(const br_download_opts *o, const br_download_result *res)
{
    const br_download_progress *p = &res->p;
    double rate = p->elapsed_s > 0 ? (double)p->requests / p->elapsed_s : 0;
    printf("download: %s: %" PRIu32 "/%" PRIu32 " prefixes present (%" PRIu32 " written, %" PRIu32
           " unchanged, %" PRIu32 " not modified, %" PRIu32 " resumed, %" PRIu32
           " failed), %" PRIu64 " requests, %.1f MB in %.1f s (%.0f req/s)",
           res->complete      ? "complete"
           : res->interrupted ? "interrupted"
           : res->gave_up     ? "gave up"
                              : "incomplete",
           p->total - res->missing, p->total, p->written, p->unchanged, p->not_modified, p->resumed,
           p->failed, p->requests, (double)p->bytes / 1e6, p->elapsed_s, rate);
    if (res->complete && o->single_file)
        printf("; %s: %" PRIu64 " lines", o->single_file, res->single_file_lines);
    putchar('\n');
    fflush(stdout);
}

static void report_missing(const br_download_result *res)
{
    fprintf(stderr,
            "breachctl: download: %" PRIu32 " of %" PRIu32 " prefixes missing:", res->missing,
            res->p.total);
    for (uint32_t i = 0; i < res->n_missing_listed; i++)
        fprintf(stderr, "%s %05" PRIX32 " (%s)", i ? "," : "", res->missing_prefix[i],
                res->missing_reason[i]);
    if (res->missing > res->n_missing_listed)
        fprintf(stderr, ", ...");
    fputc('\n', stderr);
    fprintf(stderr, "breachctl: download: run the same command again to resume%s\n",
            res->interrupted ? "" : " (the missing prefixes are fetched again)");
}

static bool opt_parallel(const char *cmd, const char *arg, void *dst)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(arg, &end, 10);
    if (errno || *end || !*arg || arg[0] == '-' || v < 1 || v > BR_DOWNLOAD_MAX_PARALLEL) {
        ctl_err("%s: --parallel takes 1 to %d", cmd, BR_DOWNLOAD_MAX_PARALLEL);
        return false;
    }
    *(uint32_t *)dst = (uint32_t)v;
    return true;
}

static bool opt_range(const char *cmd, const char *arg, void *dst)
{
    br_download_opts *o = dst;
    if (br_download_parse_range(arg, &o->first, &o->last) < 0) {
        ctl_err("%s: --range takes FIRST-LAST, 1 to 5 hex digits each, FIRST <= LAST", cmd);
        return false;
    }
    return true;
}

/* 0: parsed; 1: --help answered; -1: an error was printed. */
static int parse_opts(int argc, char **argv, br_download_opts *o)
{
    const ctl_opt opts[] = {
        CTL_STR("out", &o->out_dir),
        CTL_STR("upstream", &o->url_template),
        CTL_FN("parallel", &o->parallel, opt_parallel),
        CTL_FN("range", o, opt_range),
        CTL_STR("single-file", &o->single_file),
        CTL_FLAG("force", &o->force),
        CTL_FLAG("ntlm", &o->ntlm),
        CTL_STR("ca-file", &o->ca_file),
        CTL_IGNORE("socket"), /* accepted everywhere (breachctl(1)); no daemon needed here */
        CTL_HELP,
    };
    int first;
    int r = ctl_getopt("download", opts, BR_ARRAY_SIZE(opts), usage, argc, argv, &first);
    if (r != 0)
        return r;
    if (first < argc) {
        ctl_err("download: unexpected argument '%s'", argv[first]);
        return -1;
    }
    if (!o->out_dir || !*o->out_dir) {
        ctl_err("download: --out DIR is required");
        usage(stderr);
        return -1;
    }
    return 0;
}

int cmd_download(const ctl_globals *g, int argc, char **argv)
{
    (void)g;
    br_download_opts o = {.first = 0, .last = 0xFFFFF};
    int r = parse_opts(argc, argv, &o);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;

    ui u = {.tty = isatty(STDERR_FILENO) == 1};
    o.progress = progress_cb;
    o.progress_ctx = &u;
    o.log = log_cb;
    o.log_ctx = &u;
    o.stop = &stop_flag;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    br_download_result res;
    br_error err = {{0}};
    int rc = br_download_run(&o, &res, &err);
    if (u.line_shown)
        fputs("\r\033[K", stderr);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (rc < 0) {
        ctl_err("download: %s", err.text);
        if (res.p.total)
            summary(&o, &res);
        return EXIT_ERROR;
    }
    summary(&o, &res);
    if (res.complete)
        return 0;
    if (res.interrupted)
        ctl_err("download: interrupted");
    else if (res.gave_up)
        ctl_err("download: the upstream stopped answering; gave up");
    report_missing(&res);
    return EXIT_ERROR;
}
