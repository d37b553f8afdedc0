/* SPDX-License-Identifier: MIT */
/* breachctl filter fetch | rollback (docs/fleet.md): the files a fetch
 * keeps beside an installed filter PATH, and how it replaces it
 * (fetch_state.c); the commands are in cmd_filter_fetch.c.
 *
 *   PATH            the installed filter          PATH.sig       its signature
 *   PATH.prev       the one before (rollback)     PATH.sig.prev  its signature
 *   PATH.part       a download in progress (resumed by the next fetch)
 *   PATH.sig.new    a downloaded signature not installed yet
 *   PATH.fetch      the state: validators of PATH, PATH.sig, PATH.part
 *   PATH.rollback   left by `filter rollback`: the header SHA-256 of the
 *                   older file it put back, which breachd then loads
 *                   although it serves a newer one (docs/fleet.md)
 *
 * Every file is created O_EXCL | O_NOFOLLOW after removing what was at its
 * name, in a directory that fetch_dir_check accepted. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "download/fetch_file.h"
#include "filter/filter_file.h"

typedef struct fetch_state {
    char url[2048];           /* where PATH came from */
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

/* Create path anew, mode 0644: whatever was at the name (a planted link)
 * is removed first, and O_CREAT | O_EXCL | O_NOFOLLOW. An fd or -errno. */
int fetch_create(const char *path, br_error *err);

/* ---- checks (fetch_guard.c) ---- */

/* The directory of path must belong to root (or to this uid) and be
 * writable by no group or other: -EPERM naming the fix otherwise. */
int fetch_dir_check(const char *path, br_error *err);

/* h against the installed old: 1 when it is the installed file itself, 0
 * when its generation is newer, else -EINVAL naming both generations. */
int fetch_generation_check(const br_filter_header *old, const br_filter_header *h, br_error *err);

/* What a download's header must say (br_fetch_opts.check_head, ctx). */
typedef struct fetch_head {
    uint32_t kind; /* 0: any */
    bool have_old;
    br_filter_header old; /* the installed file's, when have_old */
} fetch_head;
/* The check_head of br_fetch_opts: a filter header (magic, version,
 * checksum, fields), of the kind, newer than the installed; *limit = the
 * size the header declares. */
int fetch_head_check(void *ctx, const uint8_t *head, size_t len, uint64_t *limit, char *reason,
                     size_t reason_len);

/* Write PATH.rollback naming the file now at PATH; fetch_install removes it. */
int fetch_rollback_mark(const char *path, br_error *err);
void fetch_rollback_unmark(const char *path);
