/* SPDX-License-Identifier: MIT */
/* breachctl: client and admin tool. This file parses the global options and
 * dispatches to one cmd_*() per command. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/br_assert.h"
#include "breachctl.h"
#include "config.h"
#include "ctl_opts.h"
#include "filter/filter_file.h"
#include "core/hash.h"
#include "core/util.h"

static const struct {
    const char *name;
    int (*fn)(const ctl_globals *g, int argc, char **argv);
} commands[] = {
    {"filter", cmd_filter},  {"url-canon", cmd_url},     {"url-expressions", cmd_url},
    {"password", cmd_check}, {"sha1", cmd_check},        {"nt", cmd_check},
    {"url", cmd_check},      {"ping", cmd_check},        {"stats", cmd_check},
    {"reload", cmd_check},   {"download", cmd_download}, {"audit", cmd_audit},
    {"key", cmd_key},        {"health", cmd_health},     {"dns", cmd_dns},
    {"publish", cmd_publish},
};

bool ctl_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return false;
    *out = v;
    return true;
}

bool ctl_opt_generation(const char *cmd, const char *arg, void *dst)
{
    if (ctl_parse_u64(arg, UINT64_MAX, dst))
        return true;
    ctl_err("%s: --generation '%s': not a whole number", cmd, arg);
    return false;
}

uint64_t ctl_generation_after(uint64_t above)
{
    uint64_t now = (uint64_t)BR_MAX(br_build_time_now(), (int64_t)1);
    return above >= now ? (above == UINT64_MAX ? above : above + 1) : now;
}

int ctl_generation_for(const char *cmd, const char *output, uint64_t dflt, uint64_t *gen)
{
    br_filter_header old;
    bool have = br_filter_header_read(output, &old) == 0;
    if (*gen) {
        if (have && *gen <= old.generation) {
            ctl_err("%s: --generation %" PRIu64 " is not above generation %" PRIu64 " of %s, "
                    "which the new file replaces: every filter a publisher signs needs a new, "
                    "higher generation (docs/fleet.md, \"Generations\")",
                    cmd, *gen, old.generation, output);
            return -1;
        }
        return 0;
    }
    if (have && old.generation >= dflt) {
        if (old.generation == UINT64_MAX) {
            ctl_err("%s: generation overflow", cmd);
            return -1;
        }
        dflt = old.generation + 1;
    }
    *gen = dflt;
    return 0;
}

bool ctl_opt_timeout_ms(const char *cmd, const char *arg, void *dst)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (*end || v < 1 || v > 3600000) {
        ctl_err("%s: --timeout '%s': milliseconds, 1..3600000", cmd, arg);
        return false;
    }
    *(int *)dst = (int)v;
    return true;
}

bool ctl_opt_source(const char *cmd, const char *arg, void *dst)
{
    if (strlen(arg) >= BR_FILTER_SOURCE_SIZE) {
        ctl_err("%s: --source is longer than %d bytes", cmd, BR_FILTER_SOURCE_SIZE - 1);
        return false;
    }
    *(const char **)dst = arg;
    return true;
}

void ctl_print_hex(const char *label, const uint8_t *d, size_t len)
{
    char hex[2 * 64 + 1];
    if (len > 64)
        len = 64;
    br_hex_encode_upper(d, len, hex);
    printf("%-18s %s\n", label, hex);
}

void ctl_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("breachctl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

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
