/* SPDX-License-Identifier: MIT */
/* breachctl audit: options, usage, names and progress on a terminal. */
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "ctl_opts.h"
#include "filter/filter_file.h"
#include "core/util.h"

static const ctl_usage audit_usage[] = {
    {"audit",
     "[--format F] [--kind password-ntlm|password-sha1] [--json]\n"
     "          [--html OUT] [--machines] [--timeout MS] [--socket PATH] [FILE]",
     "Checks every account of a password-hash export through breachd (FILE, or "
     "stdin): one line per account in input order (USER PWNED <count>, USER CLEAN, "
     "USER EMPTY, USER UNKNOWN <reason>), then a summary and the groups of accounts "
     "that share a password. Hashes are never printed (docs/audit.md)."},
};

void cmd_audit_summary(FILE *out)
{
    ctl_usage_summary(out, audit_usage, BR_ARRAY_SIZE(audit_usage));
}

static void usage(FILE *f)
{
    ctl_usage_command(f, audit_usage, BR_ARRAY_SIZE(audit_usage), "audit");
    fprintf(f, "  --format F   auto (per line, the default), pwdump, secretsdump, pdbedit\n"
               "               (Samba's pdbedit -Lw) or user-hash (NAME:HASH lines)\n"
               "  --kind K     password-ntlm (NT hashes, the default) or password-sha1\n"
               "               (NAME:SHA1 lines)\n"
               "  --machines   audit machine accounts (NAME$) too; skipped by default\n"
               "  --json       one JSON object per account, then one with the summary\n"
               "  --html OUT   also write the report to OUT as one HTML page: charts, no\n"
               "               script, no hash or password (mode 0600 when new)\n"
               "Exit status: 0 all clean, 1 any pwned or empty, 3 any unknown (none pwned),\n"
               "2 error.\n");
}

static bool opt_format(const char *cmd, const char *arg, void *dst)
{
    if (br_audit_format_from_name(arg, dst) == 0)
        return true;
    ctl_err("%s: --format '%s': expected auto, pwdump, secretsdump, pdbedit or user-hash", cmd,
            arg);
    return false;
}

static bool opt_kind(const char *cmd, const char *arg, void *dst)
{
    br_filter_kind k;
    if (br_filter_kind_from_name(arg, &k) == 0 &&
        (k == BR_KIND_PASSWORD_NTLM || k == BR_KIND_PASSWORD_SHA1)) {
        *(bool *)dst = k == BR_KIND_PASSWORD_NTLM;
        return true;
    }
    ctl_err("%s: --kind '%s': expected password-ntlm or password-sha1", cmd, arg);
    return false;
}

int audit_parse_opts(int argc, char **argv, audit_opts *o, ctl_globals *g, int *first)
{
    const char *sock = NULL;
    const ctl_opt opts[] = {
        CTL_FN("format", &o->format, opt_format),
        CTL_FN("kind", &o->ntlm, opt_kind),
        {.name = "json", .short_name = 'j', .type = CTL_OPT_FLAG, .dst = &o->json},
        CTL_FLAG("machines", &o->machines),
        CTL_STR("html", &o->html),
        CTL_FN("timeout", &o->timeout_ms, ctl_opt_timeout_ms),
        CTL_STR("socket", &sock),
        CTL_HELP,
    };
    int r = ctl_getopt("audit", opts, BR_ARRAY_SIZE(opts), usage, argc, argv, first);
    if (r != 0)
        return r;
    if (argc - *first > 1) {
        ctl_err("audit: one FILE at most (got %d)", argc - *first);
        return -1;
    }
    if (!o->ntlm && o->format != BR_AUDIT_AUTO && o->format != BR_AUDIT_USER_HASH) {
        ctl_err("audit: --format %s holds NT hashes: it needs --kind password-ntlm",
                br_audit_format_name(o->format));
        return -1;
    }
    if (sock)
        g->socket_path = sock;
    return 0;
}

void audit_print_name(FILE *f, const char *name)
{
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
}

void audit_progress_show(audit_progress *p, size_t done)
{
    uint64_t now = br_now_ns();
    if (!p->tty || (p->shown && now - p->last_ns < 250000000u))
        return;
    p->last_ns = now;
    p->shown = true;
    fprintf(stderr, "\raudit: %zu of %zu accounts\033[K", done, p->total);
}

void audit_progress_done(audit_progress *p)
{
    if (p->shown)
        fputs("\r\033[K", stderr);
}
