/* SPDX-License-Identifier: MIT */
/* Writing a filter file (docs/filter-format.md): the payload to a temporary
 * name beside the final one, then the header with its checksums, fsync and
 * a rename into place only when complete. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "filter/filter_file.h"
#include "core/util.h"

typedef struct br_filter_writer br_filter_writer;

/* Create a temporary file beside path (same directory, so the final rename is
 * atomic) and position it at the payload. */
int br_filter_writer_new(const char *path, br_filter_writer **out, br_error *err);
/* Discards the temporary file unless committed. */
void br_filter_writer_free(br_filter_writer *w);
BR_DEFINE_FREEP(br_filter_writer, br_filter_writer_free)

/* Append payload bytes. */
int br_filter_writer_write(br_filter_writer *w, const void *buf, size_t len, br_error *err);
/* Append zero bytes until the file offset is a multiple of align. */
int br_filter_writer_align(br_filter_writer *w, size_t align, br_error *err);
/* Current file offset (where the next byte goes). */
uint64_t br_filter_writer_offset(const br_filter_writer *w);
/* Fill the header's offsets, sizes and checksums from what was written, write
 * it, fsync, rename into place and fsync the directory. hdr's version,
 * header_size, payload_offset, payload_size and checksums are set here: the
 * version is 2 for a delta (role) or a layered file (algorithm), else 1. */
int br_filter_writer_commit(br_filter_writer *w, br_filter_header *hdr, br_error *err);
