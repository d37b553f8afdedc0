/* SPDX-License-Identifier: MIT */
/* The range cache's mappings guarded against truncation in place
 * (range_cache.h, "Truncation while mapped"): LMDB reads data.mdb and
 * lock.mdb through shared mappings, and a page past the end of a file that
 * was truncated under it (`cp backup/data.mdb` over the live file, a stray
 * `truncate`) raises SIGBUS. The program's SIGBUS handler calls
 * br_range_cache_fault(), which swaps the mapping for zero pages and marks
 * the cache damaged: the faulting read resumes on zeros (LMDB and the entry
 * checks see a corrupt page and fail), and every later call of the cache
 * fails with -EIO without reaching LMDB. The same guard table as the filter
 * files (map_guard.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "core/map_guard.h"
#include "range_cache_int.h"

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
        uintptr_t start = 0;
        size_t len = 0;
        int *slot = i == 0 ? &c->guard_data : &c->guard_lock;
        if (have_st && find_map(st.st_dev, st.st_ino, have_path ? path : NULL, &start, &len) == 0) {
            /* writable zero pages: LMDB writes its lock file's mapping */
            *slot = br_map_guard_set(*slot, &c->damaged, start, len, PROT_READ | PROT_WRITE);
        } else {
            br_map_guard_clear(*slot);
            *slot = -1;
        }
    }
}

void br_rc_guard_remove(br_range_cache *c)
{
    br_map_guard_clear(c->guard_data);
    br_map_guard_clear(c->guard_lock);
    c->guard_data = c->guard_lock = -1;
}

bool br_range_cache_fault(const void *addr)
{
    return br_map_guard_fault(addr);
}

bool br_range_cache_damaged(const br_range_cache *c)
{
    return c && atomic_load(&((br_range_cache *)c)->damaged) != 0;
}
