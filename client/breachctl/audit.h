/* SPDX-License-Identifier: MIT */
/* breachctl audit (cmd_audit.c): its options and its terminal output
 * (audit_opts.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "audit/audit_input.h"
#include "breachctl.h"

/* No answer and nothing sent for this long: the daemon is stuck. A bulk
 * audit waits behind other work, but answers keep coming while it moves. */
#define AUDIT_DEFAULT_TIMEOUT_MS 120000

typedef struct audit_opts {
    br_audit_format format; /* --format; BR_AUDIT_AUTO: per line */
    bool ntlm;              /* --kind password-ntlm (the default) or password-sha1 */
    bool json;
    bool machines;    /* audit machine accounts (name$) too */
    const char *html; /* --html FILE: the report as one HTML page too */
    int timeout_ms;
} audit_opts;

/* Parse argv (argv[0] = "audit"); --socket goes into g. 0: parsed, *first
 * is the index of FILE (argc when none); 1: --help answered; -1: an error
 * was printed. */
int audit_parse_opts(int argc, char **argv, audit_opts *o, ctl_globals *g, int *first);

/* An account name as it is, but with control bytes as '?' (a name comes from
 * the input file and goes to a terminal). */
void audit_print_name(FILE *f, const char *name);

/* "audit: N of M accounts" on a terminal's stderr, at most 4 times a second. */
typedef struct audit_progress {
    bool tty, shown;
    size_t total;
    uint64_t last_ns;
} audit_progress;
void audit_progress_show(audit_progress *p, size_t done);
void audit_progress_done(audit_progress *p);

/* ---- the HTML report (audit_html.c, docs/audit.md "A report to show") ---- */

/* A breached account: its name and how often its password was seen. */
typedef struct audit_report_account {
    const char *name;
    uint64_t count;
} audit_report_account;

/* Accounts that share one password: names[0..n), and its breach count
 * (0: not breached, or not settled). */
typedef struct audit_report_group {
    const char *const *names;
    size_t n;
    uint64_t count;
} audit_report_group;

/* What the report shows: counts, account names and groups; it has no field
 * for a hash or a password. */
typedef struct audit_report {
    const char *source; /* the input, as named on the command line */
    size_t accounts;
    uint64_t pwned, clean, unknown, empty, errors, machines, no_hash, history, history_pwned;
    audit_report_account *breached; /* sorted here: most seen first */
    size_t n_breached;
    const char *const *empty_names; /* accounts with the empty password */
    size_t n_empty;
    audit_report_group *groups; /* sorted here: largest first */
    size_t n_groups;
} audit_report;

/* Write r to path as one self-contained HTML page (inline CSS and SVG, no
 * script, nothing fetched), mode 0600 for a new file. 0, or -1 with a
 * message in why. Sorts r's arrays. */
int audit_write_html(const char *path, audit_report *r, char *why, size_t why_len);
