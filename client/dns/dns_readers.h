/* SPDX-License-Identifier: MIT */
/* When a retired generation may be freed: lookups in flight are counted
 * per slot and per phase, with no lock and no allocation (docs/dns.md,
 * "Reloads: no stall").
 *
 * A lookup enters (bdns_reader_enter: one atomic add on the counter of
 * its thread's slot for the current phase's parity), then loads the
 * current generation, and exits (one atomic subtract) when it no longer
 * reads it. Slots spread threads over cache lines; threads that share a
 * slot share a counter, which still counts each of them.
 *
 * The watcher swaps the generation pointer (X), notes the phase P it reads
 * after X, and frees the old generation once the phase reached P + 2.
 * bdns_readers_advance moves the phase from p to p + 1 only when every
 * counter of parity (p - 1) & 1 read zero, and only the watcher calls it.
 * Why that is safe: a lookup that loaded the old generation did so before
 * X, after its add, so its counter held it from before X until the lookup
 * exited. The two advances from P to P + 2 happen after X and check the
 * parities (P - 1) & 1 and P & 1, that is both counters of every slot;
 * each counter read zero, so no lookup that could hold the old generation
 * was left. The adds, the generation's load and swap and the counters'
 * reads are sequentially consistent, so "before X" and "after X" are one
 * order for all threads. Why it advances: after a move to p, new lookups
 * count under p & 1, so the other parity only drains.
 *
 * A slot's cache line also holds the lookups' counters (what each answered,
 * docs/dns.md "Counters"): a lookup adds to those of its own slot, a line
 * its thread already holds, and a reader of the counters sums the slots. */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define BDNS_READER_SLOTS 64
#define BDNS_SLOT_COUNTERS 6 /* the rest of the slot's 64-byte line */

typedef struct bdns_readers {
    struct {
        _Alignas(64) _Atomic uint64_t n[2];
        _Atomic uint64_t count[BDNS_SLOT_COUNTERS];
    } slot[BDNS_READER_SLOTS];
    _Alignas(64) _Atomic uint64_t phase;
} bdns_readers;

/* Count this thread in; returns what bdns_reader_exit takes. Then load the
 * pointer it protects with memory_order_seq_cst. */
static inline unsigned bdns_reader_enter(bdns_readers *r)
{
    uint64_t t = (uint64_t)(uintptr_t)pthread_self();
    unsigned slot = (unsigned)(((t ^ (t >> 21)) * 0x9e3779b97f4a7c15ull) >> 58);
    unsigned parity = (unsigned)atomic_load_explicit(&r->phase, memory_order_relaxed) & 1;
    atomic_fetch_add_explicit(&r->slot[slot].n[parity], 1, memory_order_seq_cst);
    return slot << 1 | parity;
}

static inline void bdns_reader_exit(bdns_readers *r, unsigned token)
{
    atomic_fetch_sub_explicit(&r->slot[token >> 1].n[token & 1], 1, memory_order_release);
}

/* Add one to counter i (< BDNS_SLOT_COUNTERS) of the slot of token, a
 * token of bdns_reader_enter not yet given to bdns_reader_exit. */
static inline void bdns_reader_count(bdns_readers *r, unsigned token, unsigned i)
{
    atomic_fetch_add_explicit(&r->slot[token >> 1].count[i], 1, memory_order_relaxed);
}

/* Counter i summed over the slots. */
uint64_t bdns_readers_sum(const bdns_readers *r, unsigned i);
/* The phase now (read after the swap that retires a generation). */
uint64_t bdns_readers_phase(bdns_readers *r);
/* One step: the phase moves on when the parity before its last move has
 * drained. True when it moved. The watcher alone. */
bool bdns_readers_advance(bdns_readers *r);
/* In a forked child: no other thread is in a lookup any more. */
void bdns_readers_reset(bdns_readers *r);
