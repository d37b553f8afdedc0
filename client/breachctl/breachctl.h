/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses (breachctl(1), EXIT STATUS). */
enum {
    EXIT_CLEAN = 0,
    EXIT_PWNED = 1,
    EXIT_ERROR = 2,
    EXIT_UNKNOWN = 3,
};

typedef struct ctl_globals {
    const char *socket_path;
} ctl_globals;

/* Each command gets argv with argv[0] = its own name, and answers --help.
 * Its _summary prints its forms for the top-level help (ctl_usage_summary). */
int cmd_filter(const ctl_globals *g, int argc, char **argv);
void cmd_filter_summary(FILE *out);
/* url-canon, url-expressions (argv[0] says which): offline, no daemon. */
int cmd_url(const ctl_globals *g, int argc, char **argv);
void cmd_url_summary(FILE *out);
/* password, sha1, nt, url, ping, stats, reload (argv[0] says which). */
int cmd_check(const ctl_globals *g, int argc, char **argv);
void cmd_check_summary(FILE *out);
/* download: the corpus downloader (lib/download/download.h). */
int cmd_download(const ctl_globals *g, int argc, char **argv);
void cmd_download_summary(FILE *out);
/* audit: the accounts of a password-hash export (docs/audit.md). */
int cmd_audit(const ctl_globals *g, int argc, char **argv);
void cmd_audit_summary(FILE *out);
/* key generate: Ed25519 key pairs for signed filters (cmd_key.c). */
int cmd_key(const ctl_globals *g, int argc, char **argv);
void cmd_key_summary(FILE *out);
/* publish: signed deltas and manifests for following hosts (cmd_publish.c). */
int cmd_publish(const ctl_globals *g, int argc, char **argv);
void cmd_publish_summary(FILE *out);
/* health: one monitoring-plugins status line from STATS (cmd_health.c). */
int cmd_health(const ctl_globals *g, int argc, char **argv);
void cmd_health_summary(FILE *out);

/* dns: a name through libbreachd-dns, as a resolver sees it (cmd_dns.c). */
int cmd_dns(const ctl_globals *g, int argc, char **argv);
void cmd_dns_summary(FILE *out);

/* A decimal number 0..max, nothing else (no sign, no blanks). */
bool ctl_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* Print "breachctl: " + message to stderr. */
void ctl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The filter commands' shared options, as option-table parsers
 * (ctl_opts.h): false after an error naming CMD and the option.
 * --generation: a decimal number into *(uint64_t *)dst; --source: shorter
 * than the header's source field, into *(const char **)dst; --timeout:
 * milliseconds, 1 to 3600000, into *(int *)dst. */
bool ctl_opt_generation(const char *cmd, const char *arg, void *dst);

/* The generation of a filter about to be written to output (docs/fleet.md,
 * "Generations"): *gen given (--generation, not 0) must be above the
 * generation of the filter output holds now, if any; 0 becomes dflt, or
 * the output's generation + 1 when that is higher. 0, or -1 after an error
 * naming cmd was printed. */
int ctl_generation_for(const char *cmd, const char *output, uint64_t dflt, uint64_t *gen);
/* The default generation of a new filter: the build time in seconds
 * (SOURCE_DATE_EPOCH when set), or above + 1 when that is higher. */
uint64_t ctl_generation_after(uint64_t above);
bool ctl_opt_source(const char *cmd, const char *arg, void *dst);
bool ctl_opt_timeout_ms(const char *cmd, const char *arg, void *dst);

/* "label              HEX" (uppercase) on stdout: the info commands' hashes. */
void ctl_print_hex(const char *label, const uint8_t *d, size_t len);
