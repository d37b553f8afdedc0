/* SPDX-License-Identifier: MIT */
/* breachctl dns NAME...: what a resolver with libbreachd-dns answers for
 * each name (breachctl(1) DNS, docs/dns.md): "block CATEGORY DOMAIN ACTION"
 * or "pass" per name, through the library itself. Exit 1 when any name is
 * blocked, 2 when the configuration cannot be read. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "breachctl.h"
#include "breachd-dns.h"
#include "core/util.h"
#include "ctl_opts.h"

static const ctl_usage dns_usage[] = {
    {"dns", "[--config FILE] [--stats] NAME...",
     "What a resolver with libbreachd-dns answers for each name, from the [dns] filter of "
     "breachd.conf ($BREACHD_CONFIG): 'block CATEGORY DOMAIN ACTION' or 'pass' (with the reason "
     "after it when the name is allowed, not a host name or no filter loaded). --stats: then "
     "the library's counters for these lookups, one 'NAME VALUE' a line. Exit status 1 when "
     "any name is blocked."},
};

void cmd_dns_summary(FILE *out)
{
    ctl_usage_summary(out, dns_usage, BR_ARRAY_SIZE(dns_usage));
}

static void usage(FILE *out)
{
    ctl_usage_command(out, dns_usage, BR_ARRAY_SIZE(dns_usage), "dns");
}

static const char *const pass_reasons[] = {"", "allowed", "invalid", "no-filter", "logged"};

/* Log lines of the library (a refused filter: the reason a name passes)
 * go to stderr as breachctl's. */
static void log_line(int level, const char *line, void *ctx)
{
    (void)ctx;
    if (level <= 4 /* LOG_WARNING */)
        ctl_err("dns: %s", line);
}

int cmd_dns(const ctl_globals *g, int argc, char **argv)
{
    (void)g;
    const char *config = NULL;
    bool stats = false;
    const ctl_opt opts[] = {CTL_STR("config", &config), CTL_FLAG("stats", &stats), CTL_HELP,
                            CTL_LIST_OPTIONS};
    int first;
    int r = ctl_getopt("dns", opts, BR_ARRAY_SIZE(opts), usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? EXIT_CLEAN : EXIT_ERROR;
    if (first >= argc) {
        ctl_err("dns: name a DNS name to look up");
        usage(stderr);
        return EXIT_ERROR;
    }
    char err[512];
    breachd_dns_set_log(NULL, log_line, NULL);
    breachd_dns *h = breachd_dns_open(config, err, sizeof(err));
    if (!h) {
        ctl_err("dns: %s", err);
        return EXIT_ERROR;
    }
    int rc = EXIT_CLEAN;
    for (int i = first; i < argc; i++) {
        breachd_dns_result res;
        if (breachd_dns_check(h, argv[i], strlen(argv[i]), &res) == BREACHD_DNS_BLOCK) {
            printf("block %s %s %s\n", res.category, res.domain,
                   breachd_dns_action_name(res.action));
            rc = EXIT_PWNED;
        } else if (res.reason == BREACHD_DNS_LOGGED) {
            printf("pass logged %s %s\n", res.category, res.domain);
        } else {
            printf("pass%s%s\n", res.reason ? " " : "", pass_reasons[res.reason]);
        }
    }
    if (stats) {
        char buf[16384];
        breachd_dns_stats(h, buf, sizeof(buf));
        fputs(buf, stdout);
    }
    breachd_dns_close(h);
    return rc;
}
