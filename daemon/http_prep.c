/* SPDX-License-Identifier: MIT */
/* Prepared range bodies: a table of entries by (partition, kind, prefix),
 * in one list from the most to the least recently used. See http_prep.h.
 *
 * The identity body lives in a file, mapped for the codings and the
 * padding, and goes out as a file segment: libevent sends it with
 * sendfile(2), which hands the socket the pages instead of copying ~78 KB
 * per answer (the copy was a quarter of the endpoint's CPU, as nginx's
 * sendfile avoids it). The file is an unnamed one in the cache's directory
 * (open(2) O_TMPFILE), else a memfd (memfd_create(2)): a disk file's page
 * cache is read in batches of large folios where shmem is looked up a page
 * at a time (half of sendfile's cost). Without either the body is sent from
 * memory by reference. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "http_prep.h"

#define BUCKETS 4096 /* a power of two */

struct bd_prepared {
    bd_prep_key key;  /* its etag and last_modified point into validators */
    char *validators; /* the copies: "ETAG\0LAST-MODIFIED\0" */
    bd_prep_meta meta;
    bd_prepared *hnext;       /* in its bucket */
    bd_prepared *prev, *next; /* in the use order */
    int refs;                 /* 1 while in the table, +1 per reference given */
    bool in_table;
    char *body[BD_PREP_CODINGS];
    size_t len[BD_PREP_CODINGS];
    uint32_t n_lines;
    int fd; /* the identity body's memfd (body[0] its mapping), or -1 */
};

struct bd_http_prep {
    char *dir; /* where the bodies' files are made, NULL: memfds */
    bd_prepared *buckets[BUCKETS];
    bd_prepared *head, *tail; /* most and least recently used */
    uint64_t bytes;
};

bd_http_prep *bd_http_prep_new(const char *dir)
{
    bd_http_prep *t = calloc(1, sizeof(*t));
    if (t && dir && dir[0] && !(t->dir = strdup(dir))) {
        free(t);
        return NULL;
    }
    return t;
}

static size_t entry_bytes(const bd_prepared *e)
{
    size_t n = sizeof(*e) + strlen(e->key.etag) + strlen(e->key.last_modified) + 2;
    for (int i = 0; i < BD_PREP_CODINGS; i++)
        n += e->len[i];
    return n;
}

static void entry_unref(bd_prepared *e)
{
    if (--e->refs > 0)
        return;
    for (int i = e->fd >= 0 ? 1 : 0; i < BD_PREP_CODINGS; i++)
        free(e->body[i]);
    if (e->fd >= 0) {
        munmap(e->body[0], e->len[0]);
        close(e->fd);
    }
    free(e->validators);
    free(e);
}

/* The identity body (p, len) moved into a file of its own (t->dir's,
 * else a memfd), mapped read-only at *map: its fd, or -1 (then p stays as
 * it is). */
static int to_file(const bd_http_prep *t, const char *p, size_t len, char **map)
{
    if (len == 0)
        return -1;
    int fd = t->dir ? open(t->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600) : -1;
    if (fd < 0)
        fd = memfd_create("breachd-range", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, p + off, len - off);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        close(fd);
        return -1;
    }
    *map = m;
    return fd;
}

static unsigned bucket_of(uint32_t partition, br_range_kind kind, uint32_t prefix20)
{
    uint64_t x = ((uint64_t)partition << 32 | (uint64_t)prefix20 << 2 | (uint64_t)kind) *
                 UINT64_C(0x9E3779B97F4A7C15);
    return (unsigned)(x >> 52) & (BUCKETS - 1);
}

static bool same_range(const bd_prep_key *a, const bd_prep_key *b)
{
    return a->partition == b->partition && a->prefix20 == b->prefix20 && a->kind == b->kind;
}

static bool same_version(const bd_prep_key *a, const bd_prep_key *b)
{
    return a->fetched_at == b->fetched_at && a->len == b->len && !strcmp(a->core, b->core) &&
           !strcmp(a->etag, b->etag) && !strcmp(a->last_modified, b->last_modified);
}

static void list_unlink(bd_http_prep *t, bd_prepared *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        t->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        t->tail = e->prev;
    e->prev = e->next = NULL;
}

static void list_push_front(bd_http_prep *t, bd_prepared *e)
{
    e->next = t->head;
    if (t->head)
        t->head->prev = e;
    t->head = e;
    if (!t->tail)
        t->tail = e;
}

static void drop(bd_http_prep *t, bd_prepared *e)
{
    bd_prepared **pp = &t->buckets[bucket_of(e->key.partition, e->key.kind, e->key.prefix20)];
    while (*pp && *pp != e)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = e->hnext;
    list_unlink(t, e);
    t->bytes -= entry_bytes(e);
    e->in_table = false;
    entry_unref(e);
}

void bd_http_prep_free(bd_http_prep *t)
{
    if (!t)
        return;
    while (t->head)
        drop(t, t->head);
    free(t->dir);
    free(t);
}

bd_prepared *bd_http_prep_find(bd_http_prep *t, const bd_prep_key *key)
{
    bd_prepared *e = t->buckets[bucket_of(key->partition, key->kind, key->prefix20)];
    while (e && !same_range(&e->key, key))
        e = e->hnext;
    if (!e)
        return NULL;
    if (!same_version(&e->key, key)) {
        drop(t, e); /* the cache entry changed */
        return NULL;
    }
    list_unlink(t, e);
    list_push_front(t, e);
    e->refs++;
    return e;
}

/* key's validators copied into e. false when out of memory. */
static bool keep_validators(bd_prepared *e, const bd_prep_key *key)
{
    size_t el = strlen(key->etag), ll = strlen(key->last_modified);
    if (!(e->validators = malloc(el + ll + 2)))
        return false;
    memcpy(e->validators, key->etag, el + 1);
    memcpy(e->validators + el + 1, key->last_modified, ll + 1);
    e->key = *key;
    e->key.etag = e->validators;
    e->key.last_modified = e->validators + el + 1;
    return true;
}

bd_prepared *bd_http_prep_add(bd_http_prep *t, const bd_prep_key *key, const bd_prep_meta *meta)
{
    bd_prepared *old = bd_http_prep_find(t, key);
    if (old) { /* the caller found none; all the same, one entry a version */
        drop(t, old);
        entry_unref(old);
    }
    bd_prepared *e = calloc(1, sizeof(*e));
    if (!e || !keep_validators(e, key)) {
        free(e);
        return NULL;
    }
    e->meta = *meta;
    e->fd = -1;
    e->refs = 2; /* the table's and the caller's */
    e->in_table = true;
    bd_prepared **b = &t->buckets[bucket_of(key->partition, key->kind, key->prefix20)];
    e->hnext = *b;
    *b = e;
    list_push_front(t, e);
    t->bytes += entry_bytes(e);
    return e;
}

/* Bytes held by partition's entries. */
static uint64_t partition_bytes(const bd_http_prep *t, uint32_t partition)
{
    uint64_t n = 0;
    for (const bd_prepared *e = t->head; e; e = e->next)
        if (e->key.partition == partition)
            n += entry_bytes(e);
    return n;
}

/* The least recently used entry of partition (any when all), not keep. */
static bd_prepared *oldest(const bd_http_prep *t, uint32_t partition, bool all,
                           const bd_prepared *keep)
{
    for (bd_prepared *e = t->tail; e; e = e->prev)
        if (e != keep && (all || e->key.partition == partition))
            return e;
    return NULL;
}

int bd_http_prep_set(bd_http_prep *t, bd_prepared *e, int enc, char *p, size_t len,
                     uint32_t n_lines, uint64_t budget, uint64_t share)
{
    if (enc < 0 || enc >= BD_PREP_CODINGS || e->body[enc]) {
        free(p);
        return -EINVAL;
    }
    e->body[enc] = p;
    e->len[enc] = len;
    if (enc == 0) {
        e->n_lines = n_lines;
        char *map;
        if ((e->fd = to_file(t, p, len, &map)) >= 0) {
            free(p);
            e->body[0] = map;
        }
    }
    if (!e->in_table)
        return 0; /* dropped already: for the caller's answer only */
    t->bytes += len;
    uint64_t mine = partition_bytes(t, e->key.partition);
    bd_prepared *o;
    while (mine > share && (o = oldest(t, e->key.partition, false, e))) {
        mine -= entry_bytes(o);
        drop(t, o);
    }
    while (t->bytes > budget && (o = oldest(t, 0, true, e)))
        drop(t, o);
    if (mine > share || t->bytes > budget)
        drop(t, e); /* alone too large: sent this once, not kept */
    return 0;
}

bool bd_http_prep_body(const bd_prepared *e, int enc, const char **p, size_t *len)
{
    if (enc < 0 || enc >= BD_PREP_CODINGS || !e->body[enc])
        return false;
    *p = e->body[enc];
    *len = e->len[enc];
    return true;
}

void bd_http_prep_release(bd_prepared *e)
{
    if (e)
        entry_unref(e);
}

uint32_t bd_http_prep_lines(const bd_prepared *e)
{
    return e->n_lines;
}

int bd_http_prep_file(const bd_prepared *e, size_t *len)
{
    *len = e->len[0];
    return e->body[0] ? e->fd : -1;
}

const bd_prep_meta *bd_http_prep_meta(const bd_prepared *e)
{
    return &e->meta;
}

static void given_done(const void *data, size_t datalen, void *extra)
{
    (void)data;
    (void)datalen;
    entry_unref(extra);
}

static void segment_done(const struct evbuffer_file_segment *seg, int flags, void *extra)
{
    (void)seg;
    (void)flags;
    entry_unref(extra);
}

/* The identity body as a file segment of its memfd (sent with sendfile). */
static int give_segment(bd_prepared *e, struct evbuffer *out)
{
    struct evbuffer_file_segment *seg = evbuffer_file_segment_new(
        e->fd, 0, (ev_off_t)e->len[0], EVBUF_FS_DISABLE_MMAP | EVBUF_FS_DISABLE_LOCKING);
    if (!seg)
        return -ENOMEM;
    e->refs++;
    evbuffer_file_segment_add_cleanup_cb(seg, segment_done, e);
    int rc = evbuffer_add_file_segment(out, seg, 0, (ev_off_t)e->len[0]);
    evbuffer_file_segment_free(seg); /* out holds it, or nobody: then e's ref goes */
    return rc < 0 ? -ENOMEM : 0;
}

int bd_http_prep_give(bd_prepared *e, int enc, struct evbuffer *out)
{
    const char *p;
    size_t len;
    if (!bd_http_prep_body(e, enc, &p, &len))
        return -EINVAL;
    if (len == 0)
        return 0;
    if (enc == 0 && e->fd >= 0)
        return give_segment(e, out);
    e->refs++;
    if (evbuffer_add_reference(out, p, len, given_done, e) < 0) {
        e->refs--;
        return -ENOMEM;
    }
    return 0;
}
