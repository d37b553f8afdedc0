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
    bool machines; /* audit machine accounts (name$) too */
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
