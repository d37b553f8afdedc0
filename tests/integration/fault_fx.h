/* SPDX-License-Identifier: MIT */
/* Shared fixture of the resolver tests against tests/integration/faultserver
 * (test_resolver_faults.c, _limits.c, _validators.c, _requests.c): one fault
 * server per test program, started and stopped by fault_group_setup() and
 * fault_group_teardown() in its own temp dir on its own port, and per test a
 * resolver with a fresh cache (fx_config, fx_open, fx_close) asking the
 * server's mode MODE at http://127.0.0.1:PORT/MODE/{prefix}. The fault
 * server answers every prefix with the same range: suffix S42 has count 42,
 * S7 count 7, SPAD is padding (count 0), SNONE is absent. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "resolver_fx.h"

#define S42 "00000000000000000000000000000000001"
#define S7 "ABCDEF0123456789ABCDEF0123456789ABC"
#define SPAD "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
#define SNONE "123456789012345678901234567890ABCDE"

extern rt_fault g_fault;
extern char *g_fault_dir; /* the fault server's state dir: requests.log */

/* The SHA-1 "PPPPP" + suffix (35 hex digits). */
void hash_of(uint32_t prefix, const char *suffix, uint8_t out[20]);
/* A prefix no earlier test of this program asked for. */
uint32_t fresh_prefix(void);
/* Defaults for these tests: quick retries, no rate limit, a breaker that
 * stays out of the way unless a test wants it; upstream mode `mode`. */
void fx_config(fx *x, const char *mode);
void fx_open(fx *x); /* fx_open_cache with a 16 MiB cache */

/* cmocka group setup and teardown: the fault server. */
int fault_group_setup(void **state);
int fault_group_teardown(void **state);
