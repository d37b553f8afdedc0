/* SPDX-License-Identifier: MIT */
/* Listing the prefix files of a per-prefix directory tree; rules in
 * hibp_input_int.h, layouts in docs/corpus.md ("Corpus formats"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash.h"
#include "hibp_input_int.h"
#include "core/util.h"

#define PREFIX_HEX 5

void br_input_join_path(char *out, size_t size, const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    const char *sep = dl > 0 && dir[dl - 1] == '/' ? "" : "/";
    snprintf(out, size, "%s%s%s", dir, sep, name);
}

/* 5 hex digits of any case and one of the endings below: "XXXXX.txt",
 * "XXXXX.gz", ..., and "XXXXX" alone (pwned-pw-download's tree). */
static const char *const prefix_endings[] = {"", ".txt", ".txt.gz", ".gz", ".txt.bz2", ".bz2"};

static bool parse_prefix_name(const char *name, uint32_t *prefix)
{
    uint32_t v = 0;
    for (int i = 0; i < PREFIX_HEX; i++) {
        int d = br_hexval((unsigned char)name[i]);
        if (d < 0)
            return false;
        v = v << 4 | (uint32_t)d;
    }
    const char *ext = name + PREFIX_HEX;
    for (size_t i = 0; i < BR_ARRAY_SIZE(prefix_endings); i++) {
        if (strcmp(ext, prefix_endings[i]) == 0) {
            *prefix = v;
            return true;
        }
    }
    return false;
}

static int prefix_cmp(const void *a, const void *b)
{
    uint32_t x = ((const br_prefix_file *)a)->prefix, y = ((const br_prefix_file *)b)->prefix;
    return (x > y) - (x < y);
}

static int io_error(br_error *err, int errnum, const char *name)
{
    return br_error_set(err, -errnum, "%s: %s", name, strerror(errnum));
}

/* Append "rel/name" (or "name" at the top) to the pool and an entry. */
static int add_file(br_prefix_list *l, uint32_t prefix, const char *rel, const char *name,
                    const char *path, br_error *err)
{
    size_t need = (rel[0] ? strlen(rel) + 1 : 0) + strlen(name) + 1;
    if (l->pool_len + need > UINT32_MAX)
        return br_error_set(err, -E2BIG, "%s: too many files", path);
    if (l->pool_len + need > l->pool_cap) {
        size_t cap = l->pool_cap ? 2 * l->pool_cap : 16384;
        while (cap < l->pool_len + need)
            cap *= 2;
        char *p = realloc(l->pool, cap);
        if (!p)
            return br_error_set(err, -ENOMEM, "%s: out of memory", path);
        l->pool = p;
        l->pool_cap = cap;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 1024;
        br_prefix_file *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return br_error_set(err, -ENOMEM, "%s: out of memory", path);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (br_prefix_file){prefix, (uint32_t)l->pool_len};
    l->pool_len +=
        (size_t)snprintf(l->pool + l->pool_len, need, "%s%s%s", rel, rel[0] ? "/" : "", name) + 1;
    return 0;
}

/* Scan directory dfd, which is rel under the top (named top in messages). */
static int scan(int dfd, const char *top, const char *rel, unsigned depth, br_prefix_list *l,
                br_error *err)
{
    char here[PATH_MAX], full[PATH_MAX];
    if (rel[0])
        br_input_join_path(here, sizeof(here), top, rel);
    else
        snprintf(here, sizeof(here), "%s", top);
    int fd = openat(dfd, rel[0] ? rel : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return io_error(err, e, here);
    }
    int rc = 0;
    struct dirent *de;
    for (;;) {
        errno = 0;
        if (!(de = readdir(d))) {
            if (errno != 0)
                rc = io_error(err, errno, here);
            break;
        }
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), name, &st, 0) < 0) {
            int e = errno;
            br_input_join_path(full, sizeof(full), here, name);
            rc = io_error(err, e, full);
            break;
        }
        uint32_t prefix;
        bool is_prefix = parse_prefix_name(name, &prefix);
        if (S_ISDIR(st.st_mode) && !is_prefix) {
            if (name[0] == '.' || depth >= BR_PREFIX_MAX_DEPTH)
                continue;
            char sub[PATH_MAX];
            br_input_join_path(sub, sizeof(sub), rel[0] ? rel : ".", name);
            rc = scan(dfd, top, rel[0] ? sub : name, depth + 1, l, err);
            if (rc < 0)
                break;
            continue;
        }
        if (!is_prefix) {
            l->ignored++;
            continue;
        }
        if (!S_ISREG(st.st_mode)) {
            br_input_join_path(full, sizeof(full), here, name);
            rc = br_error_set(err, -EINVAL, "%s: not a regular file", full);
            break;
        }
        rc = add_file(l, prefix, rel, name, top, err);
        if (rc < 0)
            break;
        l->bytes += (uint64_t)st.st_size;
    }
    closedir(d);
    return rc;
}

int br_prefix_list_scan(int dfd, const char *path, br_prefix_list *l, br_error *err)
{
    int rc = scan(dfd, path, "", 0, l, err);
    if (rc < 0)
        return rc;
    if (l->n == 0)
        return br_error_set(err, -ENOENT,
                            "%s: no prefix files (XXXXX.txt, XXXXX.txt.gz, XXXXX.gz, "
                            "XXXXX.txt.bz2, XXXXX.bz2 or XXXXX, also in subdirectories)",
                            path);
    qsort(l->v, l->n, sizeof(*l->v), prefix_cmp);
    for (size_t i = 1; i < l->n; i++)
        if (l->v[i].prefix == l->v[i - 1].prefix)
            return br_error_set(err, -EINVAL, "%s: prefix %05" PRIX32 " is there twice (%s and %s)",
                                path, l->v[i].prefix, br_prefix_list_path(l, i - 1),
                                br_prefix_list_path(l, i));
    return 0;
}

void br_prefix_list_free(br_prefix_list *l)
{
    free(l->v);
    free(l->pool);
    l->v = NULL;
    l->pool = NULL;
}
