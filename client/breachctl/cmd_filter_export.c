/* SPDX-License-Identifier: MIT */
/* breachctl filter export: the feeds' domain entries for resolvers with no
 * hook for libbreachd-dns (breachctl(1) DNS, docs/dns.md "Export"): read as
 * `filter build --kind url-sha256` reads them (the same --input forms and
 * rules), each domain entry ("host/": a hosts line, a domain, an RPZ or
 * unbound zone, a URL without a path) kept once, the first feed's category
 * winning, sorted, and written as an RPZ zone, unbound local-zones, a hosts
 * file or dnsmasq lines. The category allow becomes what each format has
 * to let a name through (RPZ passthru, unbound transparent, dnsmasq's own
 * servers); a hosts file has none, and blocks exact names only. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "breachctl.h"
#include "core/clock.h"
#include "core/util.h"
#include "ctl_opts.h"
#include "filter/offline_codes.h"
#include "filter_url_feeds.h"

#define ALLOW_CATEGORY BR_URL_ALLOW_CATEGORY /* docs/filter-format.md, "Allow-lists" */

typedef struct domain {
    char *name;
    uint64_t seq;
    unsigned category;
} domain;

typedef struct domains {
    domain *v;
    size_t n, cap;
    uint64_t skipped; /* entries with a path, IP addresses */
} domains;

/* An IPv4 dotted quad or an IPv6 literal: not a name to answer for. */
static bool is_address(const char *h, size_t n)
{
    if (n && h[0] == '[')
        return true;
    return strspn(h, "0123456789.") == n;
}

static int keep_domain(void *ctx, const char *expr, unsigned category)
{
    domains *d = ctx;
    size_t n = strlen(expr);
    if (n < 2 || expr[n - 1] != '/' || memchr(expr, '/', n - 1) || is_address(expr, n - 1)) {
        d->skipped++;
        return 0;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 1024;
        domain *v = realloc(d->v, cap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        d->v = v;
        d->cap = cap;
    }
    char *name = strndup(expr, n - 1);
    if (!name)
        return -ENOMEM;
    d->v[d->n] = (domain){name, d->n, category};
    d->n++;
    return 0;
}

static int by_name_then_seq(const void *a, const void *b)
{
    const domain *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* Sorted by name, each once (its first occurrence). */
static void dedupe(domains *d)
{
    qsort(d->v, d->n, sizeof(*d->v), by_name_then_seq);
    size_t o = 0;
    for (size_t i = 0; i < d->n; i++) {
        if (o > 0 && strcmp(d->v[o - 1].name, d->v[i].name) == 0) {
            free(d->v[i].name);
            continue;
        }
        d->v[o++] = d->v[i];
    }
    d->n = o;
}

/* ---- the formats: a header, then one writer per name ---- */

typedef struct out_format {
    const char *name;
    void (*header)(FILE *f, uint32_t serial);
    void (*block)(FILE *f, const char *name);
    void (*allow)(FILE *f, const char *name); /* NULL: allowed names are left out */
} out_format;

static void rpz_header(FILE *f, uint32_t serial)
{
    fprintf(f,
            "; breachd filter export: a response policy zone (RPZ). Names are relative to\n"
            "; the zone's origin; each blocks itself and its subdomains (NXDOMAIN).\n"
            "$TTL 300\n@ IN SOA localhost. hostmaster.localhost. %" PRIu32
            " 3600 600 86400 300\n@ IN NS localhost.\n",
            serial);
}

static void rpz_block(FILE *f, const char *n)
{
    fprintf(f, "%s CNAME .\n*.%s CNAME .\n", n, n);
}

static void rpz_allow(FILE *f, const char *n)
{
    fprintf(f, "%s CNAME rpz-passthru.\n*.%s CNAME rpz-passthru.\n", n, n);
}

static void unbound_header(FILE *f, uint32_t serial)
{
    (void)serial;
    fputs("# breachd filter export: unbound local-zones (include: it from unbound.conf)\n"
          "server:\n",
          f);
}

static void unbound_block(FILE *f, const char *n)
{
    fprintf(f, "local-zone: \"%s.\" always_nxdomain\n", n);
}

static void unbound_allow(FILE *f, const char *n)
{
    fprintf(f, "local-zone: \"%s.\" always_transparent\n", n);
}

static void hosts_header(FILE *f, uint32_t serial)
{
    (void)serial;
    fputs("# breachd filter export: a hosts file (exact names only: subdomains are not\n"
          "# blocked, and allow-listed names are left out)\n",
          f);
}

static void hosts_block(FILE *f, const char *n)
{
    fprintf(f, "0.0.0.0 %s\n", n);
}

static void dnsmasq_header(FILE *f, uint32_t serial)
{
    (void)serial;
    fputs("# breachd filter export: dnsmasq (conf-file=); each name and its subdomains\n"
          "# answer NXDOMAIN, allow-listed ones go to the usual servers\n",
          f);
}

static void dnsmasq_block(FILE *f, const char *n)
{
    fprintf(f, "address=/%s/\n", n);
}

static void dnsmasq_allow(FILE *f, const char *n)
{
    fprintf(f, "server=/%s/#\n", n);
}

static const out_format formats[] = {
    {"rpz", rpz_header, rpz_block, rpz_allow},
    {"unbound", unbound_header, unbound_block, unbound_allow},
    {"hosts", hosts_header, hosts_block, NULL},
    {"dnsmasq", dnsmasq_header, dnsmasq_block, dnsmasq_allow},
};

static const ctl_usage export_usage[] = {
    {"filter export",
     "--format rpz|unbound|hosts|dnsmasq --input FEED[=CATEGORY]... [--output FILE]\n"
     "          [--input-format FORMAT [--column N|NAME]] [--skip-bad] [--max-bad N|P%]\n"
     "          [--allow-empty]",
     "The feeds' domain entries, normalized (as filter build reads them), each once "
     "(the first feed's category wins), sorted, for a resolver with no hook for "
     "libbreachd-dns: an RPZ zone, unbound local-zones, a hosts file or dnsmasq lines "
     "(standard output without --output). The category allow lets its names "
     "through (none in a hosts file). FORMAT: as filter build's --format."},
};

void filter_export_summary(FILE *out)
{
    ctl_usage_summary(out, export_usage, BR_ARRAY_SIZE(export_usage));
}

static void usage(FILE *out)
{
    ctl_usage_command(out, export_usage, BR_ARRAY_SIZE(export_usage), "filter export");
}

static bool opt_out_format(const char *cmd, const char *arg, void *dst)
{
    for (size_t i = 0; i < BR_ARRAY_SIZE(formats); i++)
        if (strcmp(arg, formats[i].name) == 0) {
            *(const out_format **)dst = &formats[i];
            return true;
        }
    ctl_err("%s: --format '%s': expected rpz, unbound, hosts or dnsmasq", cmd, arg);
    return false;
}

static void write_all(FILE *f, const out_format *fmt, const domains *d, const br_feedset *fs)
{
    fmt->header(f, (uint32_t)br_clock_now_real());
    for (size_t i = 0; i < d->n; i++) {
        bool allow = strcmp(br_feedset_category(fs, d->v[i].category), ALLOW_CATEGORY) == 0;
        if (!allow)
            fmt->block(f, d->v[i].name);
        else if (fmt->allow)
            fmt->allow(f, d->v[i].name);
    }
}

/* To path through a temporary file renamed over it, or to stdout. */
static int write_output(const char *path, const out_format *fmt, const domains *d,
                        const br_feedset *fs)
{
    if (!path) {
        write_all(stdout, fmt, d, fs);
        return fflush(stdout) == 0 ? 0 : EXIT_ERROR;
    }
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "we");
    if (!f) {
        ctl_err("filter export: %s: %s", tmp, strerror(errno));
        return EXIT_ERROR;
    }
    write_all(f, fmt, d, fs);
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) < 0) {
        ctl_err("filter export: %s: %s", path, strerror(errno));
        unlink(tmp);
        return EXIT_ERROR;
    }
    return 0;
}

int filter_export_cmd(int argc, char **argv)
{
    static feeds f; /* 4096 input slots: not on the stack */
    memset(&f, 0, sizeof(f));
    f.max_bad_pct = DEFAULT_MAX_BAD_PCT;
    const out_format *fmt = NULL;
    const char *output = NULL;
    const ctl_opt opts[] = {
        CTL_FN("format", &fmt, opt_out_format),
        CTL_LIST("input", f.args, &f.n, MAX_INPUTS, "more than 4096 --input options"),
        CTL_FN("input-format", &f, feed_opt_format),
        CTL_STR("column", &f.opts.column),
        CTL_FLAG("skip-bad", &f.opts.skip_bad),
        CTL_FN("max-bad", &f, feed_opt_max_bad),
        CTL_FLAG("allow-empty", &f.allow_empty),
        CTL_STR("output", &output),
        CTL_HELP,
        CTL_LIST_OPTIONS,
    };
    int first;
    int r = ctl_getopt("filter export", opts, BR_ARRAY_SIZE(opts), usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? EXIT_CLEAN : EXIT_ERROR;
    if (!fmt || f.n == 0 || first < argc) {
        ctl_err("filter export: %s", !fmt       ? "--format is required"
                                     : f.n == 0 ? "--input is required"
                                                : "unexpected argument");
        usage(stderr);
        return EXIT_ERROR;
    }
    if ((r = check_feed_options("filter export", &f)) != 0)
        return r;
    domains d = {0};
    f.opts.on_entry = keep_domain;
    f.opts.entry_ctx = &d;
    br_feedset *fs = NULL;
    br_feedset_stats fst;
    uint64_t bad = 0;
    r = read_feeds("filter export", &f, &fs, &fst, &bad);
    if (r == 0) {
        dedupe(&d);
        fprintf(stderr,
                "filter export: %zu domains (%" PRIu64 " entries with a path or an address left "
                "out)\n",
                d.n, d.skipped);
        r = write_output(output, fmt, &d, fs);
    }
    for (size_t i = 0; i < d.n; i++)
        free(d.v[i].name);
    free(d.v);
    br_feedset_free(fs);
    return r;
}
