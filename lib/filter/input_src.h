/* SPDX-License-Identifier: MIT */
/* A decompressing input (hibp_input_decomp.c): the corpus readers
 * (hibp_input.c) and breachctl's URL feeds read gzip and bzip2 data through
 * it, told by its content, not by a file name. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* An input being read: bzip2 data (told by its magic; seekable inputs only)
 * through libbz2, anything else through zlib (gzip decompressed, other data
 * as it is). */
typedef struct br_input_src br_input_src;

/* Open fd (it stays the caller's; name is for messages and must outlive
 * the source): 0, or a negative errno with err set. */
int br_input_src_open(int fd, const char *name, br_input_src **out, br_error *err);
/* Up to size bytes into buf: how many, 0 at the end, or a negative errno
 * with err set: a read error, or "NAME: not valid gzip|bzip2 data after
 * line LINE (reason)" for data that is corrupt or cut short. */
int br_input_src_read(br_input_src *s, uint8_t *buf, size_t size, uint64_t line, br_error *err);
/* Compressed bytes consumed so far, or -1 when unknown (a gzip pipe). */
int64_t br_input_src_offset(const br_input_src *s);
void br_input_src_close(br_input_src *s);
