/* SPDX-License-Identifier: MIT */
/* The grace steps of lookups in flight, and the lookups' counters
 * (dns_readers.h). */
#include <string.h>

#include "dns_readers.h"

uint64_t bdns_readers_phase(bdns_readers *r)
{
    return atomic_load_explicit(&r->phase, memory_order_seq_cst);
}

bool bdns_readers_advance(bdns_readers *r)
{
    uint64_t p = atomic_load_explicit(&r->phase, memory_order_seq_cst);
    unsigned before = (unsigned)(p - 1) & 1;
    for (unsigned i = 0; i < BDNS_READER_SLOTS; i++)
        if (atomic_load_explicit(&r->slot[i].n[before], memory_order_seq_cst) != 0)
            return false;
    atomic_store_explicit(&r->phase, p + 1, memory_order_seq_cst);
    return true;
}

uint64_t bdns_readers_sum(const bdns_readers *r, unsigned i)
{
    uint64_t sum = 0;
    for (unsigned s = 0; s < BDNS_READER_SLOTS; s++)
        sum += atomic_load_explicit(&r->slot[s].count[i], memory_order_relaxed);
    return sum;
}

void bdns_readers_reset(bdns_readers *r)
{
    for (unsigned i = 0; i < BDNS_READER_SLOTS; i++) {
        atomic_store(&r->slot[i].n[0], 0);
        atomic_store(&r->slot[i].n[1], 0);
    }
}
