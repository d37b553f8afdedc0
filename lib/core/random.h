/* SPDX-License-Identifier: MIT */
/* The one source of randomness: the kernel's CSPRNG through getrandom(2),
 * for keys (the cache's secret, the decoy key, the range endpoint's
 * partition key), seeds and draws (the order of a burst, padding). It
 * waits for the pool at early boot, never longer. The decoys' AES-CTR
 * stream (decoys.c) is not a source: it is a deterministic draw from a key
 * taken here. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Fill buf with n random bytes: 0, or a negative errno (buf then holds
 * nothing usable). */
int br_random_bytes(void *buf, size_t n);

/* A random number in [0, n) (0 when n <= 1, or when no bytes came). */
uint32_t br_random_below(uint32_t n);
