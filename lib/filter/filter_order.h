/* SPDX-License-Identifier: MIT */
/* The order of generations at a path (docs/filter-format.md, "Generations").
 * A signature does not expire, so an older signed file stays valid: what
 * keeps a reader from taking it back (a blocklist rollback) is its
 * generation. A reader that serves a file from a path and is handed a
 * new one there (a reload: breachd, libbreachd-dns) takes it only when it
 * is the same file, of a higher generation, or put back on purpose by
 * `breachctl filter rollback`, which leaves PATH.rollback naming it
 * (docs/fleet.md). The comparison is with what the reader serves: a
 * reader that starts afresh has nothing to compare with. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "filter_file.h"

/* What one file held when it was loaded, as the order needs it. */
typedef struct br_filter_id {
    uint64_t generation;
    uint8_t header_sha256[32];
    bool rollback; /* PATH.rollback names this very file */
} br_filter_id;

/* The id of the file at path whose header is h: its generation and header
 * SHA-256, and whether PATH.rollback names it: a regular file, not a
 * link, belonging to root (or to also_uid when it is >= 0) with no group
 * or world write bit, whose first 64 characters are h's header SHA-256 in
 * hex. */
void br_filter_id_of(const char *path, const br_filter_header *h, long also_uid, br_filter_id *out);

/* True when the file now may replace serving, the file served from the
 * same path: the same file (a reload of unchanged files), a higher
 * generation, or one marked for rollback. */
bool br_filter_generation_ok(const br_filter_id *now, const br_filter_id *serving);
