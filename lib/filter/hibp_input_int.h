/* SPDX-License-Identifier: MIT */
/* Inside the password-input readers (hibp_input.c): the listing of a
 * per-prefix directory tree (hibp_input_dir.c) and the decompression layer
 * (hibp_input_decomp.c).
 *
 * A prefix file is named XXXXX.txt, XXXXX.txt.gz, XXXXX.gz, XXXXX.txt.bz2 or
 * XXXXX.bz2 (5 hex digits of any case, the suffix in lower case), anywhere under the directory:
 * subdirectories are searched (AB/CD/ABCDE.txt, AB/ABCDE.gz, ...), up to
 * BR_PREFIX_MAX_DEPTH levels, skipping those whose name starts with '.'.
 * Other files are ignored and counted. One prefix under two names anywhere
 * in the tree is an error; a prefix name that is not a regular file too. */
#pragma once

#include <stdint.h>
#include <stdlib.h>

#include "error.h"

#define BR_PREFIX_MAX_DEPTH 8

typedef struct br_prefix_file {
    uint32_t prefix;
    uint32_t path_off; /* into the pool: the path relative to the top directory */
} br_prefix_file;

typedef struct br_prefix_list {
    br_prefix_file *v;
    size_t n, cap;
    char *pool;
    size_t pool_len, pool_cap;
    uint64_t bytes;   /* sum of the prefix files' sizes (compressed ones as stored) */
    uint64_t ignored; /* files that are not prefix files */
} br_prefix_list;

/* List the prefix files under the open directory dfd (named path in
 * messages), sorted by prefix. dfd stays open and owned by the caller.
 * -ENOENT when there is none; -EINVAL for a duplicate or a non-file. */
int br_prefix_list_scan(int dfd, const char *path, br_prefix_list *l, br_error *err);
/* The relative path of entry i. */
static inline const char *br_prefix_list_path(const br_prefix_list *l, size_t i)
{
    return l->pool + l->v[i].path_off;
}
void br_prefix_list_free(br_prefix_list *l);
/* "dir/name" into out (cut when too long: the name is for messages). */
void br_input_join_path(char *out, size_t size, const char *dir, const char *name);

/* ---- decompression (hibp_input_decomp.c) ---- */

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
