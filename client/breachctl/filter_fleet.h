/* SPDX-License-Identifier: MIT */
/* breachctl's fleet subcommands (docs/fleet.md): filter sign and the
 * signature check of filter verify (cmd_filter_sign.c), called by
 * cmd_filter.c. Each *_cmd gets argv with argv[0] = the subcommand. */
#pragma once

#include "error.h"
#include "filter_file.h"
#include "filter_sign.h"

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
