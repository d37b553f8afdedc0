/* SPDX-License-Identifier: MIT */
/* breachctl: client and admin tool. This file parses the global options and
 * dispatches to one cmd_*() per command. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "br_assert.h"
#include "breachctl.h"
#include "config.h"
#include "filter_file.h"
#include "hash.h"

static const struct {
    const char *name;
    int (*fn)(const ctl_globals *g, int argc, char **argv);
} commands[] = {
    {"filter", cmd_filter},
    {"url-canon", cmd_url},
    {"url-expressions", cmd_url},
    {"password", cmd_check},
    {"sha1", cmd_check},
    {"url", cmd_check},
    {"ping", cmd_check},
    {"stats", cmd_check},
    {"reload", cmd_check},
    {"download", cmd_download},
    {"key", cmd_key},
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

bool ctl_opt_generation(const char *cmd, const char *arg, uint64_t *out)
{
    if (ctl_parse_u64(arg, UINT64_MAX, out))
        return true;
    ctl_err("%s: --generation '%s': not a whole number", cmd, arg);
    return false;
}

bool ctl_opt_source(const char *cmd, const char *arg, const char **out)
{
    if (strlen(arg) >= BR_FILTER_SOURCE_SIZE) {
        ctl_err("%s: --source is longer than %d bytes", cmd, BR_FILTER_SOURCE_SIZE - 1);
        return false;
    }
    *out = arg;
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
    fprintf(out,
            "Usage: breachctl [--socket PATH] COMMAND [ARGS...]\n"
            "\n"
            "Commands:\n"
            "  password [--quiet] [--json]     check passwords: typed (no echo) on a terminal,\n"
            "                                  else one per line on stdin\n"
            "  sha1 HEX40...                   check SHA-1 hashes of passwords\n"
            "  url URL...                      check URLs against the blocklists\n"
            "  ping | stats | reload           daemon status and administration\n"
            "                                  (checks take --quiet, --json, --timeout MS)\n"
            "  filter build  --kind password-sha1 --output FILE --input PATH...\n"
            "                [--plaintext] [--min-count N] [--generation N] [--source TEXT]\n"
            "                [--fp-bits 8|16|32] [--arity 3|4] [--threads N] [--tmpdir DIR]\n"
            "                [--shard-keys N] [--base OLD]...   (--base: a delta of OLD)\n"
            "  filter build  --merge BASE DELTA... --output FILE   one layered base\n"
            "  filter build  --kind url-sha256 --output FILE [--ranges-dir DIR]\n"
            "                --input FEED[=CATEGORY]... [--format auto|urls|hosts|domains]\n"
            "                [--skip-bad] [--fpr P] [--capacity N] [--generation N] [--source TEXT]\n"
            "  filter add    FILE --input FEED[=CATEGORY]... [--ranges-dir DIR] [--format F]\n"
            "                [--skip-bad] [--generation N] [--source TEXT]   (url-sha256 only)\n"
            "  filter info   FILE\n"
            "  filter verify [--pubkey PUB] FILE   intact (and signed by PUB's key)\n"
            "  filter sign   --key SECRET FILE     write FILE.sig (Ed25519)\n"
            "  filter fetch  --url URL --pubkey PUB --output PATH | --config FILE\n"
            "                                  download signed filters if they changed,\n"
            "                                  verify, install (PATH.prev kept), RELOAD\n"
            "  filter rollback PATH            PATH.prev back in place, then RELOAD\n"
            "  filter query  FILE [KEY...]     KEY: 40-hex SHA-1 or 64-hex SHA-256; none: stdin\n"
            "  filter query  FILE --url [URL...]   url-sha256: maybe/no per URL\n"
            "  url-canon [URL...]              print the canonical URL of each, one per line\n"
            "  url-expressions [--hash] [URL...]\n"
            "                                  print the lookup expressions of each URL, one\n"
            "                                  per line; groups separated by an empty line\n"
            "                                  (url-*: no URL given: read stdin, one per line)\n"
            "  download --out DIR [--upstream TEMPLATE] [--parallel N] [--range FIRST-LAST]\n"
            "           [--single-file FILE] [--force]\n"
            "                                  fetch the Pwned Passwords corpus into DIR/XXXXX.txt\n"
            "                                  (resumable, incremental; see docs/corpus.md)\n"
            "  key generate --secret FILE --public FILE\n"
            "                                  an Ed25519 key pair for filter sign\n"
            "\n"
            "Options:\n"
            "  --socket PATH   daemon socket (default $BREACHD_SOCKET or %s)\n"
            "  -h, --help      this text\n"
            "  --version       print the version\n"
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

    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {0},
    };
    int c;
    /* "+": stop at the command; its own options are parsed by the command. */
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            g.socket_path = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("breachctl %s\n", BREACHD_VERSION);
            return 0;
        default:
            usage(stderr);
            return EXIT_ERROR;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return EXIT_ERROR;
    }
    const char *name = argv[optind];
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(name, commands[i].name) == 0) {
            int sub_argc = argc - optind;
            char **sub_argv = argv + optind;
            optind = 0; /* full getopt re-initialisation for the command */
            return commands[i].fn(&g, sub_argc, sub_argv);
        }
    }
    ctl_err("unknown command '%s' (see breachctl --help)", name);
    return EXIT_ERROR;
}
