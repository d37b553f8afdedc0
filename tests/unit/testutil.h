/* SPDX-License-Identifier: MIT */
/* Shared helpers for the unit tests: temporary directories and files. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Create a fresh directory under $TMPDIR or /tmp; returns a malloc'd path. */
char *tu_mkdtemp(void);
/* Remove a directory tree (the one tu_mkdtemp made). */
void tu_rmrf(const char *path);
/* Write len bytes to path (created or truncated). 0 or -errno. */
int tu_write_file(const char *path, const void *data, size_t len);
/* Read a whole file into a malloc'd buffer, NUL-terminated (not counted in
 * len). NULL on error. */
uint8_t *tu_read_file(const char *path, size_t *len);
/* malloc that aborts on failure (and tells the compiler so). */
void *tu_xmalloc(size_t len) __attribute__((malloc, returns_nonnull, alloc_size(1)));
/* asprintf that aborts on failure. */
char *tu_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Write byte at offset of path in place (same inode, same size, as `dd
 * conv=notrunc`), again until the file's mtime moves past the clock's
 * tick (the timestamps are coarse), so a reader that compares them sees
 * the change. Aborts on failure. */
void tu_rewrite_in_place(const char *path, long offset, int byte);
