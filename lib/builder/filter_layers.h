/* SPDX-License-Identifier: MIT */
/* Writing layered files: a filter and its deltas in one file
 * (filter/filter_delta.h reads them). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "filter/filter_delta.h"
#include "filter/filter_file.h"

typedef struct br_filter_layers_opts {
    uint64_t generation;
    const char *source;
    int64_t build_time; /* < 0: now (SOURCE_DATE_EPOCH when set) */
} br_filter_layers_opts;

/* Write a layered file at path from open, verified filter files: a full
 * filter (or a layered file, whose layers are taken over flat) and its
 * deltas, in set order (each naming a file before it). The layers are
 * copied byte for byte; the result names the same keys and answers exactly
 * as the set did. */
int br_filter_layers_write(const char *path, br_filter_file *const *files, size_t n,
                           const br_filter_layers_opts *opts, uint64_t *file_bytes, br_error *err);
