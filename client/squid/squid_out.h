/* SPDX-License-Identifier: MIT */
/* breachd-squid-helper's answers to Squid, on standard output: buffered,
 * and written together before the helper waits again, so that a batch of
 * answers is one write (breachd-squid-helper(8), "Requests are
 * pipelined"). */
#pragma once

#include <stddef.h>

/* Append n bytes (at most the buffer, 64 KiB), writing what is buffered
 * first when they do not fit. */
void out_add(const char *s, size_t n);

/* Write everything buffered; a full pipe is waited for. */
void out_flush(void);
