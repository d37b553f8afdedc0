/* SPDX-License-Identifier: MIT */
/* The URL range mirror (docs/upstream.md): a directory of PREFIX.txt
 * files, PREFIX the 5 uppercase hex digits of a SHA-256, one file for every
 * prefix that holds at least one blocklist entry and none for the others,
 * ready for any web server or file://.
 *
 * A file holds one line "SUFFIX:CATEGORY\n" per entry: SUFFIX the other 59
 * hex digits of the SHA-256 in uppercase, CATEGORY [a-z0-9_-]{1,32}; lines
 * sorted by SUFFIX, LF line ends, a final LF; exactly what br_range_parse()
 * accepts for BR_RANGE_URL_SHA256. Existing files are read with LF or CRLF
 * and any hex case.
 *
 * Writing is two-phase so that a failure leaves the mirror as it was:
 * prepare writes every changed file under a temporary name beside it
 * ("PREFIX.txt.tmp.XXXXXX") and removes them all on failure; commit makes
 * them durable (fsync, or one syncfs for many files) and renames each over
 * its PREFIX.txt (atomic per file), then fsyncs the directory. A file whose
 * content would not change is not rewritten (its mtime stays: friendly to
 * rsync and HTTP caches).
 *
 * The directory also holds BR_MIRROR_EMPTY, an empty file (made or emptied
 * by commit): a web server serves it for the prefixes without a file, an
 * empty 200 meaning "no entries" (docs/upstream.md). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "url/url_feed.h"
#include "core/util.h"

#define BR_MIRROR_EMPTY "empty.txt"

typedef struct br_mirror_stats {
    uint64_t prefixes;        /* prefix files the set touches */
    uint64_t written;         /* files created or replaced */
    uint64_t unchanged;       /* already held exactly that content */
    uint64_t entries_new;     /* entries not in the mirror before */
    uint64_t entries_present; /* already there with the same category (update) */
    uint64_t conflicts;       /* already there with another category: kept (update) */
} br_mirror_stats;

typedef struct br_mirror br_mirror;

/* Full build: every prefix of fs (finished) gets exactly fs's entries.
 * Creates dir (one level) when missing. Prefix files of dir that fs has no
 * entry for are left alone here (see br_mirror_remove_stale). */
int br_mirror_prepare_full(const char *dir, const br_feedset *fs, br_mirror **out, br_error *err);

/* Incremental add: merge fs's entries into the existing files of their
 * prefixes (an entry already present keeps its category: removals and
 * re-categorizations need a rebuild). old_bitmap (the current filter's
 * prefix bitmap, may be NULL) must agree with the directory: a prefix whose
 * bit is set but whose file is missing is an error (the directory does not
 * belong to the filter). Only prefixes that gain entries are rewritten. */
int br_mirror_prepare_update(const char *dir, const br_feedset *fs, const uint8_t *old_bitmap,
                             br_mirror **out, br_error *err);

/* Make the prepared files durable and rename them into place. */
int br_mirror_commit(br_mirror *m, br_error *err);
const br_mirror_stats *br_mirror_get_stats(const br_mirror *m);
/* Removes any temporary files not committed. */
void br_mirror_free(br_mirror *m);
BR_DEFINE_FREEP(br_mirror, br_mirror_free)

/* Remove the PREFIX.txt files of dir whose prefix has no entry in bitmap
 * (2^20 bits, as in the filter): after a full build, the entries they held
 * are gone. Other files are never touched. */
int br_mirror_remove_stale(const char *dir, const uint8_t *bitmap, uint64_t *removed,
                           br_error *err);
