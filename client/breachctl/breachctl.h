/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Each command gets argv with argv[0] = its own name. */
int cmd_filter(const ctl_globals *g, int argc, char **argv);
/* url-canon, url-expressions (argv[0] says which): offline, no daemon. */
int cmd_url(const ctl_globals *g, int argc, char **argv);
/* password, sha1, url, ping, stats, reload (argv[0] says which). */
int cmd_check(const ctl_globals *g, int argc, char **argv);
/* download: the corpus downloader (lib/download/download.h). */
int cmd_download(const ctl_globals *g, int argc, char **argv);
/* key generate: Ed25519 key pairs for signed filters (cmd_key.c). */
int cmd_key(const ctl_globals *g, int argc, char **argv);

/* A decimal number 0..max, nothing else (no sign, no blanks). */
bool ctl_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* Print "breachctl: " + message to stderr. */
void ctl_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The filter commands' shared options: false after an error naming CMD and
 * the option. --generation: a decimal number; --source: shorter than the
 * header's source field. */
bool ctl_opt_generation(const char *cmd, const char *arg, uint64_t *out);
bool ctl_opt_source(const char *cmd, const char *arg, const char **out);

/* "label              HEX" (uppercase) on stdout: the info commands' hashes. */
void ctl_print_hex(const char *label, const uint8_t *d, size_t len);
