/* SPDX-License-Identifier: MIT */
/* The range cache's mappings guarded against truncation in place
 * (range_cache.h, "Truncation while mapped"): LMDB reads data.mdb and
 * lock.mdb through shared mappings, and a page past the end of a file that
 * was truncated under it (`cp backup/data.mdb` over the live file, a stray
 * `truncate`) raises SIGBUS. The program's SIGBUS handler calls
 * br_range_cache_fault(), which swaps the mapping for zero pages and marks
 * the cache damaged: the faulting read resumes on zeros (LMDB and the entry
 * checks see a corrupt page and fail), and every later call of the cache
 * fails with -EIO without reaching LMDB. The same scheme as the filter files
 * (filter_file.h), with slots of its own. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "range_cache_int.h"

/* A slot is claimed by its owner (CAS from NULL), then len, then start are
 * published; the fault handler reads start first. Two slots a cache. */
#define GUARD_SLOTS 16
typedef struct guard_slot {
    _Atomic(br_range_cache *) owner;
    atomic_size_t len;
    atomic_uintptr_t start; /* 0: not in use */
} guard_slot;
static guard_slot guards[GUARD_SLOTS];

static void slot_set(br_range_cache *c, int *slot, uintptr_t start, size_t len)
{
    for (int i = 0; *slot < 0 && i < GUARD_SLOTS; i++) {
        br_range_cache *none = NULL;
        if (atomic_compare_exchange_strong(&guards[i].owner, &none, c))
            *slot = i;
    }
    if (*slot < 0)
        return; /* all taken (not with the daemon's one or two caches): unguarded */
    guard_slot *g = &guards[*slot];
    atomic_store(&g->start, 0);
    atomic_store(&g->len, len);
    atomic_store(&g->start, start);
}

static void slot_clear(int *slot)
{
    if (*slot < 0)
        return;
    guard_slot *g = &guards[*slot];
    atomic_store(&g->start, 0);
    atomic_store(&g->len, 0);
    atomic_store(&g->owner, NULL);
    *slot = -1;
}

/* The shared mapping from offset 0 of the file (dev, ino), as
 * /proc/self/maps lists it; failing that (an overlay file system may list
 * the backing file's device), of the file whose path is path (NULL: none).
 * 0 or -ENOENT. */
static int find_map(dev_t dev, ino_t ino, const char *path, uintptr_t *start, size_t *len)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return -errno;
    char line[4096 + 256];
    int rc = -ENOENT;
    bool line_start = true, by_path = false;
    while (fgets(line, sizeof(line), f)) {
        bool was_start = line_start;
        line_start = strchr(line, '\n') != NULL; /* a longer line is read in pieces */
        unsigned long lo, hi, off, inode;
        unsigned maj, min;
        char perms[8];
        int end = 0;
        if (!was_start || sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &lo, &hi, perms, &off, &maj,
                                 &min, &inode, &end) != 7)
            continue;
        if (off != 0 || perms[3] != 's' || hi <= lo)
            continue;
        line[strcspn(line, "\n")] = '\0';
        bool same_file = inode == (unsigned long)ino && makedev(maj, min) == dev;
        if (same_file || (path && !by_path && strcmp(line + end, path) == 0)) {
            *start = (uintptr_t)lo;
            *len = (size_t)(hi - lo);
            rc = 0;
            by_path = !same_file;
            if (same_file)
                break;
        }
    }
    fclose(f);
    return rc;
}

void br_rc_guard_update(br_range_cache *c, bool with_lock)
{
    static const char *const names[2] = {"data.mdb", "lock.mdb"};
    int fd;
    struct stat st;
    for (int i = 0; i < (with_lock ? 2 : 1); i++) {
        char path[4096];
        bool have_path =
            c->dir && snprintf(path, sizeof(path), "%s/%s", c->dir, names[i]) < (int)sizeof(path);
        bool have_st = i == 0 ? mdb_env_get_fd(c->env, &fd) == 0 && fstat(fd, &st) == 0
                              : have_path && stat(path, &st) == 0;
        uintptr_t start;
        size_t len;
        int *slot = i == 0 ? &c->guard_data : &c->guard_lock;
        if (have_st && find_map(st.st_dev, st.st_ino, have_path ? path : NULL, &start, &len) == 0)
            slot_set(c, slot, start, len);
        else
            slot_clear(slot);
    }
}

void br_rc_guard_remove(br_range_cache *c)
{
    slot_clear(&c->guard_data);
    slot_clear(&c->guard_lock);
}

bool br_range_cache_fault(const void *addr)
{
    uintptr_t a = (uintptr_t)addr;
    for (int i = 0; i < GUARD_SLOTS; i++) {
        uintptr_t start = atomic_load(&guards[i].start);
        size_t len = atomic_load(&guards[i].len);
        if (!start || a - start >= len)
            continue;
        br_range_cache *c = atomic_load(&guards[i].owner);
        /* Zero pages, writable (LMDB writes its lock file's mapping); mmap
         * is a plain system call: async-signal-safe. */
        void *p = mmap((void *)start, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (p == MAP_FAILED)
            return false;
        if (c)
            atomic_store(&c->damaged, 1);
        return true;
    }
    return false;
}

bool br_range_cache_damaged(const br_range_cache *c)
{
    return c && atomic_load(&((br_range_cache *)c)->damaged) != 0;
}
