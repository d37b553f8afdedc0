/* SPDX-License-Identifier: MIT */
/* ctl_getopt: getopt_long over a command's option table (ctl_opts.h); the
 * helpers every command uses: ctl_err, ctl_parse_u64, --timeout
 * (breachctl.h). */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breachctl.h"
#include "core/br_assert.h"
#include "ctl_opts.h"

#define MAX_OPTS 32

bool ctl_list_mode;

/* One option's argument into its destination. false: an error was printed. */
static bool take(const char *cmd, const ctl_opt *o, const char *arg)
{
    uint64_t v;
    switch (o->type) {
    case CTL_OPT_FLAG:
        *(bool *)o->dst = true;
        return true;
    case CTL_OPT_STR:
        *(const char **)o->dst = arg;
        return true;
    case CTL_OPT_UINT:
        if (!ctl_parse_u64(arg, o->max, &v) || v < o->min) {
            ctl_err("%s: --%s '%s': %s", cmd, o->name, arg, o->want);
            return false;
        }
        *(uint64_t *)o->dst = v;
        return true;
    case CTL_OPT_LIST:
        if (*o->count >= o->max) {
            ctl_err("%s: %s", cmd, o->want);
            return false;
        }
        ((const char **)o->dst)[(*o->count)++] = arg;
        return true;
    case CTL_OPT_FN:
        return o->fn(cmd, arg, o->dst);
    case CTL_OPT_IGNORE:
        return true;
    case CTL_OPT_HELP:
        break;
    }
    (void)br_fails_assert(!"an option type without a parser");
    return false;
}

static int parse(const char *cmd, const ctl_opt *opts, size_t n, void (*usage)(FILE *out),
                 bool prefix, int argc, char **argv, int *first)
{
    struct option lo[MAX_OPTS + 1] = {{0}};
    char shorts[2 * MAX_OPTS + 2] = "";
    size_t ns = 0;
    if (br_fails_assert(n <= MAX_OPTS))
        return -1;
    if (prefix)
        shorts[ns++] = '+';
    for (size_t i = 0; i < n; i++) {
        bool has_arg = opts[i].type != CTL_OPT_FLAG && opts[i].type != CTL_OPT_HELP;
        lo[i] = (struct option){opts[i].name, has_arg ? required_argument : no_argument, NULL,
                                opts[i].short_name ? opts[i].short_name : 256 + (int)i};
        if (opts[i].short_name) {
            shorts[ns++] = opts[i].short_name;
            if (has_arg)
                shorts[ns++] = ':';
        }
    }
    shorts[ns] = '\0';
    int ch;
    optind = 0; /* a full re-initialisation: each parse starts afresh */
    while ((ch = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
        const ctl_opt *o = NULL;
        for (size_t i = 0; i < n && !o; i++)
            if (ch == (opts[i].short_name ? opts[i].short_name : 256 + (int)i))
                o = &opts[i];
        if (!o) {
            if (usage)
                usage(stderr);
            return -1;
        }
        if (o->type == CTL_OPT_HELP) {
            if (usage)
                usage(stdout);
            return 1;
        }
        if (!take(cmd, o, optarg))
            return -1;
    }
    *first = optind;
    if (ctl_list_mode && (!prefix || optind >= argc)) {
        /* The last command word's table: what the man-page test compares. */
        for (size_t i = 0; i < n; i++)
            printf("--%s\n", opts[i].name);
        return 1;
    }
    return 0;
}

int ctl_getopt(const char *cmd, const ctl_opt *opts, size_t n, void (*usage)(FILE *out), int argc,
               char **argv, int *first)
{
    return parse(cmd, opts, n, usage, false, argc, argv, first);
}

int ctl_getopt_prefix(const char *cmd, const ctl_opt *opts, size_t n, void (*usage)(FILE *out),
                      int argc, char **argv, int *first)
{
    return parse(cmd, opts, n, usage, true, argc, argv, first);
}

#define USAGE_WIDTH 79

/* text, each of its lines after the indent, wrapped at spaces to fit
 * USAGE_WIDTH columns. */
static void indented(FILE *out, const char *indent, const char *text)
{
    size_t room = USAGE_WIDTH - strlen(indent);
    while (*text) {
        size_t len = strcspn(text, "\n");
        size_t cut = len;
        while (cut > room && cut > 0) {
            do
                cut--;
            while (cut > 0 && text[cut] != ' ');
        }
        if (cut == 0) /* one word longer than the room: whole */
            cut = len;
        fprintf(out, "%s%.*s\n", indent, (int)cut, text);
        text += cut;
        text += *text == ' ' || *text == '\n';
    }
}

void ctl_usage_summary(FILE *out, const ctl_usage *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "  %s %s\n", rows[i].name, rows[i].synopsis);
        if (rows[i].about)
            indented(out, "      ", rows[i].about);
    }
}

void ctl_usage_command(FILE *out, const ctl_usage *rows, size_t n, const char *name)
{
    const char *lead = "Usage:";
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rows[i].name, name) != 0)
            continue;
        fprintf(out, "%s breachctl %s %s\n", lead, rows[i].name, rows[i].synopsis);
        lead = "   or:";
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0 && rows[i].about)
            indented(out, "", rows[i].about);
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

bool ctl_opt_reject_warn_off(const char *cmd, const char *opt, const char *arg, const int values[3],
                             int *out)
{
    static const char *const names[] = {"reject", "warn", "off"};
    for (int i = 0; i < 3; i++)
        if (strcmp(arg, names[i]) == 0) {
            *out = values[i];
            return true;
        }
    ctl_err("%s: --%s '%s': expected reject, warn or off", cmd, opt, arg);
    return false;
}
