/* SPDX-License-Identifier: MIT */
/* The canary (breachd.conf(5) [daemon] canary, docs/operations.md): every
 * interval, breachd checks fixed, public breached keys end to end, the way a
 * client's check goes (filter, resolver, cache, upstream), and records the
 * outcome in its counters (counters.h: STATS canary_*, the metrics) and a
 * warning in the log when it fails:
 *  - passwords: the SHA-1 of "password" (5BAA61E4...), when [passwords] has a
 *    filter or an upstream (none and empty are none);
 *  - NT hashes: the NT hash of "password" (8846F7EA...), when [ntlm] has one;
 *  - URLs: the expression of a public test URL, when a URL filter is loaded.
 * An offline filter answers its canary on the host, as it answers clients:
 * never through the range API; a range filter with no upstream passes at
 * the filter (its maybe: nothing else is configured to check).
 * Its lookups have a resolver partition of their own (BD_PARTITION_CANARY):
 * no peer's cache entries, waits or figures are touched, and the answer
 * counters users see (pw_*, requests_*) do not count it; the cache and
 * upstream figures do (as any fetch, decoys included).
 * The keys and the URL expression are the rows' canary_hex and canary_expr
 * (kinds.c); the canary runs every kind that has one.
 * Loop thread only. */
#pragma once

#include "server_types.h"

typedef struct bd_canary bd_canary;

/* Start the timer on srv's loop; it follows srv->state (and the interval)
 * across reloads. The first run is one interval after the start. NULL on
 * out-of-memory. */
bd_canary *bd_canary_new(bd_server *srv);
/* After a reload (bd_server's reloaded hook, ctx the canary; NULL is
 * ignored): the kinds follow the new configuration at once. A kind turned
 * off (canary = 0, or nothing of it configured) shows off with its last
 * failure cleared; a kind on shows its last outcome until its next run
 * (pending if it never ran); lookups of the old state are dropped. A
 * changed interval starts over from now. */
void bd_canary_reloaded(void *ctx);
/* Lookups still pending finish on their own (their outcome is dropped). */
void bd_canary_free(bd_canary *cn);
