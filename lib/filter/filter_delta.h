/* SPDX-License-Identifier: MIT */
/* Filter sets: a full filter followed by deltas, and layered files
 * (docs/filter-format.md, "Deltas and layered files").
 *
 * A delta (container v2, role delta) holds keys its base does not already
 * answer "maybe" for, and names its base by the SHA-256 of the base's body
 * (base_body_sha256). A set is a full filter, then deltas, each naming the
 * full filter or a delta before it; a key is "maybe" when any member says
 * so. A layered file (algorithm layers) is such a set in one file: a table,
 * then complete filter files at page-aligned offsets, the first full and
 * every later one a delta of an earlier one. breachctl filter build --merge
 * writes one; it answers exactly what its layers answered together.
 *
 * The kind-specific sets (pwfilter.h, urlfilter.h) use the checks here. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "filter_file.h"

/* Layers in a layered file at most. */
#define BR_LAYERS_MAX 64

/* The bodies a set can be named by: its members' body_sha256. */
typedef struct br_filter_names {
    uint8_t (*sha)[32];
    size_t n, cap;
} br_filter_names;

int br_filter_names_add(br_filter_names *names, const uint8_t sha[32]);
bool br_filter_names_has(const br_filter_names *names, const uint8_t sha[32]);
void br_filter_names_fini(br_filter_names *names);

/* Whether delta may join the set whose first member has header set (kind,
 * key encoding) and whose members are named by names: it must be a delta,
 * of the same kind and key encoding, naming one of them. -EINVAL with the
 * reason ("a delta of another base: it extends body ABCD..., not a filter of
 * this set"), without the file's name (the caller adds it). */
int br_filter_delta_check(const br_filter_header *set, const br_filter_names *names,
                          const br_filter_header *delta, br_error *err);

/* The header a set answers for: the first member's, with the newest
 * generation and build time of all and the sum of their key counts. */
void br_filter_set_fold(br_filter_header *set, const br_filter_header *member);

/* The layers of a layered file, as views into its mapping
 * (br_filter_file_view): table, offsets, sizes, kinds and key counts
 * checked; layer 0 is a full filter, later ones are deltas (which of the
 * earlier layers each extends is checked when the set is put together).
 * *views is a malloc'ed array of *n views; free each, then the array,
 * before outer. */
int br_filter_layers_open(const br_filter_file *outer, br_filter_file ***views, size_t *n,
                          br_error *err);
/* Free views[0..n) and the array (from br_filter_layers_open). */
void br_filter_views_free(br_filter_file **views, size_t n);

/* The header of path's first filter: its own, or for a layered file that
 * of its first layer (what tells an offline set from another kind's).
 * Reads two headers, never the body: 0, or -errno as br_filter_header_read
 * (-EINVAL also for a layer table that points nowhere). */
int br_filter_header_read_first(const char *path, br_filter_header *hdr);
