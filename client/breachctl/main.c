/* SPDX-License-Identifier: MIT */
/* breachctl: client and admin tool. This file parses the global options and
 * dispatches to one cmd_*() per command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/br_assert.h"
#include "breachctl.h"
#include "config.h"
#include "ctl_opts.h"
#include "core/util.h"

static const struct {
    const char *name;
    int (*fn)(const ctl_globals *g, int argc, char **argv);
} commands[] = {
    {"filter", cmd_filter},   {"url-canon", cmd_url},     {"url-expressions", cmd_url},
    {"password", cmd_check},  {"sha1", cmd_check},        {"nt", cmd_check},
    {"url", cmd_check},       {"ping", cmd_check},        {"stats", cmd_check},
    {"reload", cmd_check},    {"download", cmd_download}, {"audit", cmd_audit},
    {"key", cmd_key},         {"health", cmd_health},     {"dns", cmd_dns},
    {"publish", cmd_publish},
};

static void usage(FILE *out)
{
    fputs("Usage: breachctl [--socket PATH] COMMAND [OPTIONS] [ARGS...]\n"
          "       breachctl COMMAND --help        that command's usage\n"
          "\nChecks, answered by breachd:\n",
          out);
    cmd_check_summary(out);
    fputs("\nFilter files (offline):\n", out);
    cmd_filter_summary(out);
    fputs("\nURLs (offline):\n", out);
    cmd_url_summary(out);
    fputs("\nThe corpus:\n", out);
    cmd_download_summary(out);
    cmd_audit_summary(out);
    fputs("\nSigning keys (filter sign, filter fetch):\n", out);
    cmd_key_summary(out);
    fputs("\nDNS (libbreachd-dns, no daemon):\n", out);
    cmd_dns_summary(out);
    fputs("\nPublishing (a fleet that follows):\n", out);
    cmd_publish_summary(out);
    fputs("\nMonitoring:\n", out);
    cmd_health_summary(out);
    fprintf(out,
            "\nOptions:\n"
            "  --socket PATH   daemon socket, also taken after the command (default\n"
            "                  $BREACHD_SOCKET or %s)\n"
            "  -h, --help      this text\n"
            "  --version       print the version\n"
            "  --list-options COMMAND...\n"
            "                  print the long options COMMAND takes, one a line (the test\n"
            "                  suite compares them with this text and breachctl(1))\n"
            "\n"
            "Exit status: 0 clean/safe, 1 pwned/blocked, 2 error, 3 unknown.\n",
            BREACHD_DEFAULT_SOCKET);
}

/* A failed internal check in libbreach (br_assert.h): say so on stderr. */
static void assert_hook(const char *expr, const char *file, int line, const char *func)
{
    fprintf(stderr, "breachctl: internal error: %s failed in %s() at %s:%d\n", expr, func, file,
            line);
}

int main(int argc, char **argv)
{
    br_assert_set_hook(assert_hook);
    ctl_globals g = {.socket_path = getenv("BREACHD_SOCKET")};
    if (!g.socket_path || !*g.socket_path)
        g.socket_path = BREACHD_DEFAULT_SOCKET;

    bool version = false;
    const ctl_opt opts[] = {
        CTL_STR("socket", &g.socket_path),
        CTL_FLAG("version", &version),
        CTL_HELP,
        CTL_LIST_OPTIONS,
    };
    int first;
    /* Stop at the command: its own options are parsed by the command. */
    int r = ctl_getopt_prefix("breachctl", opts, BR_ARRAY_SIZE(opts), usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? EXIT_CLEAN : EXIT_ERROR;
    if (version) {
        printf("breachctl %s\n", BREACHD_VERSION);
        return EXIT_CLEAN;
    }
    if (first >= argc) {
        usage(stderr);
        return EXIT_ERROR;
    }
    const char *name = argv[first];
    for (size_t i = 0; i < BR_ARRAY_SIZE(commands); i++)
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].fn(&g, argc - first, argv + first);
    ctl_err("unknown command '%s' (see breachctl --help)", name);
    return EXIT_ERROR;
}
