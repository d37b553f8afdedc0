/* SPDX-License-Identifier: MIT */
/* breachd-squid-helper's answers to Squid, on standard output: buffered,
 * and written together before the helper waits again, so that a batch of
 * answers is one write (breachd-squid-helper(8), "Requests are
 * pipelined"). */
#pragma once

#include <stddef.h>

/* Append one answer line: "CHANNEL SP TEXT LF", or "TEXT LF" when cl is 0
 * (cl + tl + 2 bytes at most the buffer, 64 KiB; a longer one is an
 * internal error, dropped). The buffered answers are written first when it
 * does not fit. */
void out_answer(const char *channel, size_t cl, const char *text, size_t tl);

/* Write everything buffered; a full pipe is waited for. */
void out_flush(void);
