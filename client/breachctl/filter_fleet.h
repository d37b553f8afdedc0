/* SPDX-License-Identifier: MIT */
/* breachctl's fleet subcommands (docs/fleet.md): filter sign and the
 * signature check of filter verify (cmd_filter_sign.c), called by
 * cmd_filter.c. Each *_cmd gets argv with argv[0] = the subcommand. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "filter/filter_file.h"
#include "filter/filter_sign.h"
#include "filter/pwfilter.h"
#include "filter/urlfilter.h"

struct feeds;
struct ctl_globals;

int filter_sign_cmd(int argc, char **argv);
/* filter verify --pubkey: FILE's container and FILE.sig against the public
 * key in pubkey; one line on stdout when good, else the reason on stderr.
 * 0 or EXIT_ERROR. */
int filter_verify_signature(const char *path, const char *pubkey);

/* Open path as a filter of any kind and verify all of it (container and
 * algorithm), keeping its header in h. 0 or a negative errno with err set
 * (prefixed by path). */
int fleet_open_verified(const char *path, br_filter_header *h, br_error *err);
/* The key id of key in uppercase hex. */
void fleet_key_id_hex(const br_sign_key *key, char hex[2 * BR_KEY_ID_LEN + 1]);

/* ---- deltas and merges (cmd_filter_delta.c, cmd_filter_url_delta.c) ---- */

/* Open paths[0..n) as one set, the way breachd loads `filter = a, b, ...`:
 * a full filter, then deltas each naming a file before it. 0, or
 * EXIT_ERROR after a message naming cmd and the refused file. last_body
 * (may be NULL): the body SHA-256 of paths[n-1], what a new delta of the
 * set names. */
int fleet_pw_set_open(const char *cmd, const char *const *paths, size_t n, br_pwfilter **out,
                      uint8_t last_body[32]);
int fleet_url_set_open(const char *cmd, const char *const *paths, size_t n, br_urlfilter **out,
                       uint8_t last_body[32]);
/* True when argv holds --merge: filter build consolidates (filter_merge_cmd). */
bool fleet_merge_requested(int argc, char **argv);
int filter_merge_cmd(int argc, char **argv);
/* filter info's lines about a delta, a layered file and a signature. */
void fleet_info_extra(const char *path);

/* What filter build --kind url-sha256 --base was asked (cmd_filter_url.c
 * parses it). */
typedef struct url_delta_args {
    const char *output, *ranges, *source;
    uint64_t generation, capacity;
    double fpr;
    const char *const *bases;
    size_t n_bases;
} url_delta_args;
/* The URL delta of the feeds against the set of bases; 0 or EXIT_ERROR. */
int url_filter_build_delta(const char *cmd, struct feeds *f, const url_delta_args *a);

/* ---- filter fetch | rollback (cmd_filter_fetch.c) ---- */
int filter_fetch_cmd(const struct ctl_globals *g, int argc, char **argv);
int filter_rollback_cmd(const struct ctl_globals *g, int argc, char **argv);
