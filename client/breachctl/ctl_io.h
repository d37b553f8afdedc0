/* SPDX-License-Identifier: MIT */
/* What breachctl's checks and audit share for input and output: a line
 * reader that never leaves a copy of a line behind, JSON strings, and the
 * STATS answer as lines or one JSON object. */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* getline() that never leaves a copy behind: the buffer grows by
 * allocate-copy-wipe-free (getline's realloc would free the old buffer
 * unwiped). The line, without its LF (and a CR before it), is NUL-terminated
 * in *buf; its length, -1 at the end of input or on a read error (see
 * ferror), -2 when out of memory. The caller wipes and frees *buf. */
ssize_t ctl_read_line_wiped(FILE *in, char **buf, size_t *cap);

/* s as a JSON string literal: quotes, backslashes and control bytes
 * escaped, other bytes as they are. */
void ctl_json_string(FILE *f, const char *s);

/* The key=value pairs of a STATS answer (without "STATS "): one a line, or
 * one JSON object where a value of decimal digits (no leading zero) is a
 * number and anything else a string. Keys over 127 and values over 511
 * bytes are cut. */
void ctl_print_stats(FILE *out, const char *kv, bool json);
