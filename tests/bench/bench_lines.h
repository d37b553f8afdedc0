/* SPDX-License-Identifier: MIT */
/* Bench tools' input: the non-empty lines of a file (line ends stripped). */
#pragma once

#include <stddef.h>

/* *out: strdup'ed lines, *n of them (> 0); *longest: the longest line's
 * length. -1 after a message on stderr naming prog and path (unreadable,
 * out of memory, or no line). */
int bench_read_lines(const char *prog, const char *path, char ***out, size_t *n, size_t *longest);
