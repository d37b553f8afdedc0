/* SPDX-License-Identifier: MIT */
/* Mappings guarded against their file being truncated in place.
 *
 * Reading a page of a shared file mapping past the file's current end raises
 * SIGBUS. Filter files (filter_file.h) and the range cache's LMDB files
 * (range_cache.h) register their mappings here; the program's SIGBUS handler
 * calls br_map_guard_fault(si_addr), which replaces the whole mapping that
 * holds the address with zero pages (with the protection it was registered
 * with), sets the owner's damaged flag and returns true, so the faulting
 * read resumes on zeros; the owner then refuses to trust the mapping.
 *
 * Threads and signals: lock-free atomics only. A slot is claimed by
 * compare-and-swap on its flag pointer, then len, prot and start are
 * published; the fault handler reads start first, so a slot it sees in use
 * is complete. br_map_guard_fault() is async-signal-safe and may run in any
 * thread at any instruction; set and clear are called by the owner. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Guard [start, start + len) for the owner whose damaged flag is *damaged
 * (non-NULL; it identifies the owner), to be remapped with prot (PROT_*)
 * after a fault. slot: the owner's slot, or -1 to claim one. Returns the
 * slot, or -1 when every slot is taken (the mapping is then unguarded:
 * not with the daemon's few filters and caches). */
int br_map_guard_set(int slot, atomic_int *damaged, uintptr_t start, size_t len, int prot);
/* Give the slot back (slot < 0: nothing). */
void br_map_guard_clear(int slot);
/* The SIGBUS handler's hook: true when addr lay in a guarded mapping, now
 * zero pages, its owner's flag set; false otherwise (the handler must let
 * the default action happen). */
bool br_map_guard_fault(const void *addr);
