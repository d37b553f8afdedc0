/* SPDX-License-Identifier: MIT */
/* breachctl filter fetch | rollback (docs/fleet.md): the files a fetch
 * keeps beside an installed filter PATH, and how it replaces it
 * (fetch_state.c); the commands are in cmd_filter_fetch.c.
 *
 *   PATH            the installed filter          PATH.sig       its signature
 *   PATH.prev       the one before (rollback)     PATH.sig.prev  its signature
 *   PATH.part       a download in progress (resumed by the next fetch)
 *   PATH.sig.new    a downloaded signature not installed yet
 *   PATH.fetch      the state: validators of PATH, PATH.sig, PATH.part */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "fetch_file.h"

typedef struct fetch_state {
    char url[2048];          /* where PATH came from */
    br_fetch_validators file; /* of the installed PATH */
    br_fetch_validators sig;  /* of the installed PATH.sig */
    br_fetch_validators part; /* of PATH.part's partial body */
} fetch_state;

/* PATH + suffix, malloc'ed (NULL: out of memory). */
char *fetch_path(const char *path, const char *suffix);

/* Read PATH.fetch; a missing or unreadable state is an empty one (every
 * validator unset): the next fetch is then unconditional. */
void fetch_state_load(const char *path, fetch_state *st);
/* Write PATH.fetch atomically. */
int fetch_state_save(const char *path, const fetch_state *st, br_error *err);

/* Put PATH.part (and PATH.sig.new, when sig_new) in place as PATH (and
 * PATH.sig), keeping what was there as PATH.prev (PATH.sig.prev): PATH
 * always names a complete file, the old one or the new one. Only the
 * signature when !file. Then fsyncs the directory. */
int fetch_install(const char *path, bool file, bool sig_new, br_error *err);
/* Put PATH.prev (and PATH.sig.prev) back as PATH (PATH.sig). -ENOENT when
 * there is no PATH.prev. */
int fetch_rollback(const char *path, br_error *err);
