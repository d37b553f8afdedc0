/* SPDX-License-Identifier: MIT */
/* Mappings guarded against truncation in place: see map_guard.h. */
#include <sys/mman.h>

#include "map_guard.h"

#define GUARD_SLOTS 96
typedef struct guard_slot {
    _Atomic(atomic_int *) owner; /* the owner's damaged flag; NULL: free */
    atomic_size_t len;
    atomic_int prot;
    atomic_uintptr_t start; /* 0: not in use */
} guard_slot;
static guard_slot guards[GUARD_SLOTS];

int br_map_guard_set(int slot, atomic_int *damaged, uintptr_t start, size_t len, int prot)
{
    for (int i = 0; slot < 0 && i < GUARD_SLOTS; i++) {
        atomic_int *none = NULL;
        if (atomic_compare_exchange_strong(&guards[i].owner, &none, damaged))
            slot = i;
    }
    if (slot < 0)
        return -1;
    guard_slot *g = &guards[slot];
    atomic_store(&g->start, 0);
    atomic_store(&g->len, len);
    atomic_store(&g->prot, prot);
    atomic_store(&g->start, start);
    return slot;
}

void br_map_guard_clear(int slot)
{
    if (slot < 0 || slot >= GUARD_SLOTS)
        return;
    guard_slot *g = &guards[slot];
    atomic_store(&g->start, 0);
    atomic_store(&g->len, 0);
    atomic_store(&g->owner, NULL);
}

bool br_map_guard_fault(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    for (int i = 0; i < GUARD_SLOTS; i++) {
        uintptr_t start = atomic_load(&guards[i].start);
        size_t len = atomic_load(&guards[i].len);
        if (!start || a - start >= len)
            continue;
        atomic_int *damaged = atomic_load(&guards[i].owner);
        /* The whole mapping becomes zero pages, so that no read faults
         * again; mmap is a plain system call: async-signal-safe. */
        void *p = mmap((void *)start, len, atomic_load(&guards[i].prot),
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (p == MAP_FAILED)
            return false;
        if (damaged)
            atomic_store(damaged, 1);
        return true;
    }
    return false;
}
