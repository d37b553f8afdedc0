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

#include "core/error.h"
#include "filter/input_src.h"

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

/* ---- decompression: filter/input_src.h (hibp_input_decomp.c) ---- */
