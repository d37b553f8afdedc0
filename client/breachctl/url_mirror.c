/* SPDX-License-Identifier: MIT */
/* Writing the URL range mirror (rules in url_mirror.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/hash.h"
#include "range/range.h"
#include "url_mirror.h"
#include "filter/urlfilter.h"

#define SUFFIX_HEX 59
#define FSYNC_EACH_MAX 256 /* more pending files than this: one syncfs instead */

typedef struct pending {
    char *tmp; /* name inside the directory */
    char final[16];
} pending;

struct br_mirror {
    char *dir;
    int dfd;
    pending *p;
    size_t n, cap;
    br_mirror_stats st;
};

void br_mirror_free(br_mirror *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        if (m->p[i].tmp) {
            unlinkat(m->dfd, m->p[i].tmp, 0);
            free(m->p[i].tmp);
        }
    }
    free(m->p);
    if (m->dfd >= 0)
        close(m->dfd);
    free(m->dir);
    free(m);
}

const br_mirror_stats *br_mirror_get_stats(const br_mirror *m)
{
    return &m->st;
}

static int mirror_new(const char *dir, br_mirror **out, br_error *err)
{
    _cleanup_(br_mirror_freep) br_mirror *m = calloc(1, sizeof(*m));
    if (!m)
        return br_error_set(err, -ENOMEM, "out of memory");
    m->dfd = -1;
    m->dir = strdup(dir);
    if (!m->dir)
        return br_error_set(err, -ENOMEM, "out of memory");
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return br_error_set(err, -errno, "%s: cannot create the ranges directory: %s", dir,
                            strerror(errno));
    m->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (m->dfd < 0)
        return br_error_set(err, -errno, "%s: %s", dir, strerror(errno));
    *out = BR_TAKE_PTR(m);
    return 0;
}

/* ---- a growing text buffer ---- */

typedef struct text {
    char *p;
    size_t len, cap;
} text;

static int text_put(text *t, const char *s, size_t n)
{
    if (t->len + n > t->cap) {
        size_t c = t->cap ? t->cap : 4096;
        while (c < t->len + n)
            c *= 2;
        char *p = realloc(t->p, c);
        if (!p)
            return -ENOMEM;
        t->p = p;
        t->cap = c;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    return 0;
}

static int text_line(text *t, const char *suffix, const char *category)
{
    size_t cl = strlen(category);
    char line[SUFFIX_HEX + 1 + BR_FEED_CATEGORY_MAX + 1];
    memcpy(line, suffix, SUFFIX_HEX);
    line[SUFFIX_HEX] = ':';
    memcpy(line + SUFFIX_HEX + 1, category, cl);
    line[SUFFIX_HEX + 1 + cl] = '\n';
    return text_put(t, line, SUFFIX_HEX + cl + 2);
}

/* ---- existing files ---- */

/* Read dir/name whole: 0 and *t filled, -ENOENT when absent, else an error. */
static int read_existing(br_mirror *m, const char *name, text *t, br_error *err)
{
    _cleanup_close_ int fd = openat(m->dfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return -ENOENT;
        return br_error_set(err, -errno, "%s/%s: %s", m->dir, name, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) < 0)
        return br_error_set(err, -errno, "%s/%s: %s", m->dir, name, strerror(errno));
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > BR_RANGE_DEFAULT_MAX_BODY)
        return br_error_set(err, -EINVAL, "%s/%s: not a regular file of at most %zu bytes", m->dir,
                            name, (size_t)BR_RANGE_DEFAULT_MAX_BODY);
    t->len = 0;
    if (st.st_size == 0)
        return 0;
    if (t->cap < (size_t)st.st_size) {
        char *p = realloc(t->p, (size_t)st.st_size);
        if (!p)
            return br_error_set(err, -ENOMEM, "out of memory");
        t->p = p;
        t->cap = (size_t)st.st_size;
    }
    while (t->len < (size_t)st.st_size) {
        ssize_t r = read(fd, t->p + t->len, (size_t)st.st_size - t->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return br_error_set(err, r < 0 ? -errno : -EIO, "%s/%s: read failed", m->dir, name);
        t->len += (size_t)r;
    }
    return 0;
}

typedef struct rec {
    char suffix[SUFFIX_HEX]; /* uppercase */
    char cat[BR_FEED_CATEGORY_MAX + 1];
    size_t order;
} rec;

static int cmp_rec(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    int c = memcmp(x->suffix, y->suffix, SUFFIX_HEX);
    if (c)
        return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Parse an existing file into sorted records, the first of a repeated
 * suffix kept (as br_range_parse does). */
static int parse_existing(const br_mirror *m, const char *name, const text *t, rec **out,
                          size_t *nout, br_error *err)
{
    rec *v = NULL;
    size_t n = 0, cap = 0, lineno = 0;
    for (size_t i = 0; i < t->len;) {
        const char *nl = memchr(t->p + i, '\n', t->len - i);
        size_t end = nl ? (size_t)(nl - t->p) : t->len;
        const char *s = t->p + i;
        size_t len = end - i;
        i = nl ? end + 1 : t->len;
        lineno++;
        if (len > 0 && s[len - 1] == '\r')
            len--;
        size_t cl = len > SUFFIX_HEX + 1 ? len - SUFFIX_HEX - 1 : 0;
        bool ok = len > SUFFIX_HEX + 1 && s[SUFFIX_HEX] == ':' && cl <= BR_FEED_CATEGORY_MAX;
        for (size_t k = 0; ok && k < SUFFIX_HEX; k++)
            ok = br_hexval((unsigned char)s[k]) >= 0;
        char cat[BR_FEED_CATEGORY_MAX + 1] = "";
        if (ok) {
            memcpy(cat, s + SUFFIX_HEX + 1, cl);
            cat[cl] = '\0';
            ok = br_feed_category_valid(cat);
        }
        if (!ok) {
            free(v);
            return br_error_set(err, -EINVAL, "%s/%s:%zu: not a \"SUFFIX59:category\" line", m->dir,
                                name, lineno);
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            rec *nv = realloc(v, cap * sizeof(*v));
            if (!nv) {
                free(v);
                return br_error_set(err, -ENOMEM, "out of memory");
            }
            v = nv;
        }
        for (size_t k = 0; k < SUFFIX_HEX; k++) {
            char c = s[k];
            v[n].suffix[k] = (c >= 'a' && c <= 'f') ? (char)(c - 32) : c;
        }
        memcpy(v[n].cat, cat, cl + 1);
        v[n].order = n;
        n++;
    }
    if (n)
        qsort(v, n, sizeof(*v), cmp_rec);
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (o == 0 || memcmp(v[o - 1].suffix, v[i].suffix, SUFFIX_HEX) != 0)
            v[o++] = v[i];
    *out = v;
    *nout = o;
    return 0;
}

/* ---- writing temporaries ---- */

static int write_temp(br_mirror *m, const char *final, const text *t, br_error *err)
{
    if (m->n == m->cap) {
        size_t c = m->cap ? 2 * m->cap : 256;
        pending *p = realloc(m->p, c * sizeof(*p));
        if (!p)
            return br_error_set(err, -ENOMEM, "out of memory");
        m->p = p;
        m->cap = c;
    }
    _cleanup_free_ char *path = NULL;
    if (asprintf(&path, "%s/%s.tmp.XXXXXX", m->dir, final) < 0)
        return br_error_set(err, -ENOMEM, "out of memory");
    _cleanup_close_ int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0)
        return br_error_set(err, -errno, "%s/%s: cannot create a temporary file: %s", m->dir, final,
                            strerror(errno));
    pending *pe = &m->p[m->n];
    pe->tmp = strdup(strrchr(path, '/') + 1);
    if (!pe->tmp) {
        unlink(path);
        return br_error_set(err, -ENOMEM, "out of memory");
    }
    snprintf(pe->final, sizeof(pe->final), "%s", final);
    m->n++;
    int r = br_write_all(fd, t->p, t->len);
    if (r < 0)
        return br_error_set(err, r, "%s: write: %s", path, strerror(-r));
    if (fchmod(fd, 0644) < 0)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    m->st.written++;
    return 0;
}

static void suffix_of(const uint8_t hash[BR_SHA256_LEN], char out[SUFFIX_HEX])
{
    char hex[2 * BR_SHA256_LEN + 1];
    br_hex_encode_upper(hash, BR_SHA256_LEN, hex);
    memcpy(out, hex + BR_RANGE_PREFIX_HEX, SUFFIX_HEX);
}

/* Calls fn for each run of fs's entries that share a prefix. */
typedef int (*group_fn)(br_mirror *m, const br_feedset *fs, const br_feed_entry *e, size_t n,
                        uint32_t prefix, const uint8_t *old_bitmap, text *scratch, br_error *err);

static int for_each_group(br_mirror *m, const br_feedset *fs, const uint8_t *old_bitmap,
                          group_fn fn, br_error *err)
{
    const br_feed_entry *e = br_feedset_entries(fs);
    size_t n = br_feedset_count(fs);
    text scratch[2] = {{0}};
    int r = 0;
    for (size_t i = 0; i < n && r >= 0;) {
        uint32_t p = br_urlfilter_prefix_of(e[i].hash);
        size_t j = i + 1;
        while (j < n && br_urlfilter_prefix_of(e[j].hash) == p)
            j++;
        m->st.prefixes++;
        r = fn(m, fs, e + i, j - i, p, old_bitmap, scratch, err);
        i = j;
    }
    free(scratch[0].p);
    free(scratch[1].p);
    return r;
}

static int full_group(br_mirror *m, const br_feedset *fs, const br_feed_entry *e, size_t n,
                      uint32_t prefix, const uint8_t *old_bitmap, text *scratch, br_error *err)
{
    (void)old_bitmap;
    text *t = &scratch[0], *old = &scratch[1];
    t->len = 0;
    for (size_t i = 0; i < n; i++) {
        char suffix[SUFFIX_HEX];
        suffix_of(e[i].hash, suffix);
        if (text_line(t, suffix, br_feedset_category(fs, e[i].category)) < 0)
            return br_error_set(err, -ENOMEM, "out of memory");
    }
    m->st.entries_new += n;
    char name[16];
    br_range_prefix_hex(prefix, name);
    strcat(name, ".txt");
    int r = read_existing(m, name, old, err);
    if (r < 0 && r != -ENOENT)
        return r;
    if (r == 0 && old->len == t->len && memcmp(old->p, t->p, t->len) == 0) {
        m->st.unchanged++;
        return 0;
    }
    return write_temp(m, name, t, err);
}

static int update_group(br_mirror *m, const br_feedset *fs, const br_feed_entry *e, size_t n,
                        uint32_t prefix, const uint8_t *old_bitmap, text *scratch, br_error *err)
{
    text *t = &scratch[0], *old = &scratch[1];
    char name[16];
    br_range_prefix_hex(prefix, name);
    strcat(name, ".txt");
    int r = read_existing(m, name, old, err);
    if (r == -ENOENT) {
        if (old_bitmap && br_prefix_bitmap_test(old_bitmap, prefix))
            return br_error_set(err, -ENOENT,
                                "%s/%s is missing, but the filter has entries in prefix %.5s: the "
                                "ranges directory does not belong to this filter",
                                m->dir, name, name);
        old->len = 0;
    } else if (r < 0) {
        return r;
    }
    _cleanup_free_ rec *v = NULL;
    size_t nv = 0;
    r = parse_existing(m, name, old, &v, &nv, err);
    if (r < 0)
        return r;
    t->len = 0;
    size_t i = 0, j = 0, added = 0;
    while (i < nv || j < n) {
        char suffix[SUFFIX_HEX];
        if (j < n)
            suffix_of(e[j].hash, suffix);
        int c = i == nv ? 1 : j == n ? -1 : memcmp(v[i].suffix, suffix, SUFFIX_HEX);
        if (c <= 0) {
            if (c == 0) {
                if (strcmp(v[i].cat, br_feedset_category(fs, e[j].category)) == 0)
                    m->st.entries_present++;
                else
                    m->st.conflicts++;
                j++;
            }
            r = text_line(t, v[i].suffix, v[i].cat);
            i++;
        } else {
            r = text_line(t, suffix, br_feedset_category(fs, e[j].category));
            added++;
            j++;
        }
        if (r < 0)
            return br_error_set(err, -ENOMEM, "out of memory");
    }
    m->st.entries_new += added;
    if (added == 0) {
        m->st.unchanged++;
        return 0;
    }
    return write_temp(m, name, t, err);
}

int br_mirror_prepare_full(const char *dir, const br_feedset *fs, br_mirror **out, br_error *err)
{
    _cleanup_(br_mirror_freep) br_mirror *m = NULL;
    int r = mirror_new(dir, &m, err);
    if (r < 0)
        return r;
    r = for_each_group(m, fs, NULL, full_group, err);
    if (r < 0)
        return r;
    *out = BR_TAKE_PTR(m);
    return 0;
}

int br_mirror_prepare_update(const char *dir, const br_feedset *fs, const uint8_t *old_bitmap,
                             br_mirror **out, br_error *err)
{
    _cleanup_(br_mirror_freep) br_mirror *m = NULL;
    int r = mirror_new(dir, &m, err);
    if (r < 0)
        return r;
    r = for_each_group(m, fs, old_bitmap, update_group, err);
    if (r < 0)
        return r;
    *out = BR_TAKE_PTR(m);
    return 0;
}

int br_mirror_commit(br_mirror *m, br_error *err)
{
    /* The answer for prefixes without entries (docs/upstream.md). */
    _cleanup_close_ int efd = openat(m->dfd, BR_MIRROR_EMPTY, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    struct stat st;
    if (efd < 0 || fstat(efd, &st) < 0 || (st.st_size != 0 && ftruncate(efd, 0) < 0))
        return br_error_set(err, -errno, "%s/%s: %s", m->dir, BR_MIRROR_EMPTY, strerror(errno));
    if (m->n == 0)
        return 0;
    if (m->n <= FSYNC_EACH_MAX) {
        for (size_t i = 0; i < m->n; i++) {
            _cleanup_close_ int fd = openat(m->dfd, m->p[i].tmp, O_RDONLY | O_CLOEXEC);
            if (fd < 0 || fsync(fd) < 0)
                return br_error_set(err, -errno, "%s/%s: fsync: %s", m->dir, m->p[i].tmp,
                                    strerror(errno));
        }
    } else if (syncfs(m->dfd) < 0) {
        return br_error_set(err, -errno, "%s: syncfs: %s", m->dir, strerror(errno));
    }
    for (size_t i = 0; i < m->n; i++) {
        if (renameat(m->dfd, m->p[i].tmp, m->dfd, m->p[i].final) < 0)
            return br_error_set(err, -errno, "rename %s/%s -> %s: %s", m->dir, m->p[i].tmp,
                                m->p[i].final, strerror(errno));
        free(m->p[i].tmp);
        m->p[i].tmp = NULL;
    }
    if (fsync(m->dfd) < 0)
        return br_error_set(err, -errno, "%s: fsync: %s", m->dir, strerror(errno));
    return 0;
}

/* "XXXXX.txt" with 5 uppercase hex digits: its prefix, else -1. */
static int64_t prefix_file(const char *name)
{
    if (strlen(name) != BR_RANGE_PREFIX_HEX + 4 || strcmp(name + BR_RANGE_PREFIX_HEX, ".txt") != 0)
        return -1;
    int64_t p = 0;
    for (int i = 0; i < BR_RANGE_PREFIX_HEX; i++) {
        char c = name[i];
        int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
        if (v < 0)
            return -1;
        p = p * 16 + v;
    }
    return p;
}

int br_mirror_remove_stale(const char *dir, const uint8_t *bitmap, uint64_t *removed, br_error *err)
{
    *removed = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return br_error_set(err, -errno, "%s: %s", dir, strerror(errno));
    DIR *d = fdopendir(dfd);
    if (!d) {
        int r = -errno;
        close(dfd);
        return br_error_set(err, r, "%s: %s", dir, strerror(-r));
    }
    int r = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        int64_t p = prefix_file(de->d_name);
        if (p < 0 || br_prefix_bitmap_test(bitmap, (uint32_t)p))
            continue;
        if (unlinkat(dfd, de->d_name, 0) < 0) {
            r = br_error_set(err, -errno, "%s/%s: %s", dir, de->d_name, strerror(errno));
            break;
        }
        (*removed)++;
    }
    if (r == 0 && *removed && fsync(dfd) < 0)
        r = br_error_set(err, -errno, "%s: fsync: %s", dir, strerror(errno));
    closedir(d);
    return r;
}
