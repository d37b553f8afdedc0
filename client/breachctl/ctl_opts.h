/* SPDX-License-Identifier: MIT */
/* breachctl's option tables: a command lists its options as rows (name,
 * type, where the value goes, bounds, the end of the error message) and
 * ctl_getopt parses them with getopt_long, so that no command writes its own
 * loop. Messages are "CMD: --NAME 'ARG': WANT" (breachctl(1)). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum ctl_opt_type {
    CTL_OPT_FLAG,   /* no argument; *(bool *)dst = true */
    CTL_OPT_STR,    /* *(const char **)dst = the argument */
    CTL_OPT_UINT,   /* *(uint64_t *)dst = a decimal number min .. max, else want */
    CTL_OPT_LIST,   /* ((const char **)dst)[(*count)++] = the argument, at most max */
    CTL_OPT_FN,     /* fn(cmd, argument, dst); false: it printed the error */
    CTL_OPT_IGNORE, /* takes an argument that has no effect here */
    CTL_OPT_HELP,   /* usage on stdout, done */
} ctl_opt_type;

typedef struct ctl_opt {
    const char *name; /* long name, without "--" */
    char short_name;  /* 0: none */
    ctl_opt_type type;
    void *dst;
    uint64_t min, max;
    const char *want;                                        /* CTL_OPT_UINT, CTL_OPT_LIST */
    bool (*fn)(const char *cmd, const char *arg, void *dst); /* CTL_OPT_FN */
    size_t *count;                                           /* CTL_OPT_LIST */
} ctl_opt;

/* Rows. */
#define CTL_FLAG(n, d)                                                                             \
    {                                                                                              \
        .name = (n), .type = CTL_OPT_FLAG, .dst = (d)                                              \
    }
#define CTL_STR(n, d)                                                                              \
    {                                                                                              \
        .name = (n), .type = CTL_OPT_STR, .dst = (d)                                               \
    }
#define CTL_UINT(n, d, lo, hi, w)                                                                  \
    {                                                                                              \
        .name = (n), .type = CTL_OPT_UINT, .dst = (d), .min = (lo), .max = (hi), .want = (w)       \
    }
#define CTL_LIST(n, d, cnt, hi, w)                                                                 \
    {                                                                                              \
        .name = (n), .type = CTL_OPT_LIST, .dst = (d), .count = (cnt), .max = (hi), .want = (w)    \
    }
#define CTL_FN(n, d, f)                                                                            \
    {                                                                                              \
        .name = (n), .type = CTL_OPT_FN, .dst = (d), .fn = (f)                                     \
    }
#define CTL_IGNORE(n)                                                                              \
    {                                                                                              \
        .name = (n), .type = CTL_OPT_IGNORE                                                        \
    }
#define CTL_HELP                                                                                   \
    {                                                                                              \
        .name = "help", .short_name = 'h', .type = CTL_OPT_HELP                                    \
    }
/* breachctl --list-options: the table of the last command word is printed
 * ("--NAME" a line, every row) instead of being parsed, and the parse
 * answers 1 as for --help. The test suite compares these lists with
 * breachctl(1) and the help texts (tests/integration/test_cli_help.py). */
extern bool ctl_list_mode;
#define CTL_LIST_OPTIONS CTL_FLAG("list-options", &ctl_list_mode)

/* Parse argv[1..] (options may come before or after the arguments; "--"
 * ends them) against opts[0..n). usage (may be NULL) is printed on stderr
 * after an unknown option, on stdout for --help. 0: parsed, *first is the
 * index of the first argument; 1: --help was answered; -1: an error was
 * printed. Each call starts afresh (getopt's state is reset). */
int ctl_getopt(const char *cmd, const ctl_opt *opts, size_t n, void (*usage)(FILE *out), int argc,
               char **argv, int *first);
/* The same, but parsing stops at the first argument that is not an option
 * (getopt's "+"): for a command word followed by a subcommand and its own
 * options, such as breachctl's global options before the command. */
int ctl_getopt_prefix(const char *cmd, const ctl_opt *opts, size_t n, void (*usage)(FILE *out),
                      int argc, char **argv, int *first);

/* One form of a command for its usage: "NAME SYNOPSIS", then what it does.
 * synopsis may continue on more lines (each starting with spaces); about
 * (may be NULL) is one or more lines without indent. Every command's --help
 * and the top-level help print the same rows. */
typedef struct ctl_usage {
    const char *name;     /* "password", "filter build" */
    const char *synopsis; /* its options and arguments */
    const char *about;
} ctl_usage;

/* "  NAME SYNOPSIS" and the about lines indented below, for every row: the
 * top-level help and a command family's --help. */
void ctl_usage_summary(FILE *out, const ctl_usage *rows, size_t n);
/* "Usage: breachctl NAME SYNOPSIS" ("   or: ..." for more rows of that name),
 * then their about lines: one command's --help. */
void ctl_usage_command(FILE *out, const ctl_usage *rows, size_t n, const char *name);

/* A reject | warn | off argument of option opt (--similar, --banned) as
 * values[0], [1], [2] into *out: true, or false with the error printed. */
bool ctl_opt_reject_warn_off(const char *cmd, const char *opt, const char *arg, const int values[3],
                             int *out);
