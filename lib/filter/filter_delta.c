/* SPDX-License-Identifier: MIT */
/* Filter sets and layered files (filter_delta.h; docs/filter-format.md,
 * "Deltas and layered files"). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filter_delta.h"
#include "filter_writer.h"
#include "core/hash.h"
#include "core/util.h"

/* params of algorithm layers. */
enum {
    P_LAYER_COUNT = 0,
    P_END = 4,
};
/* One layer-table entry. */
enum {
    T_OFFSET = 0,
    T_SIZE = 8,
    T_ENTRY = 16,
};

int br_filter_names_add(br_filter_names *names, const uint8_t sha[32])
{
    if (names->n == names->cap) {
        size_t cap = names->cap ? 2 * names->cap : 4;
        void *p = realloc(names->sha, cap * 32);
        if (!p)
            return -ENOMEM;
        names->sha = p;
        names->cap = cap;
    }
    memcpy(names->sha[names->n++], sha, 32);
    return 0;
}

bool br_filter_names_has(const br_filter_names *names, const uint8_t sha[32])
{
    for (size_t i = 0; i < names->n; i++)
        if (memcmp(names->sha[i], sha, 32) == 0)
            return true;
    return false;
}

void br_filter_names_fini(br_filter_names *names)
{
    free(names->sha);
    memset(names, 0, sizeof(*names));
}

int br_filter_delta_check(const br_filter_header *set, const br_filter_names *names,
                          const br_filter_header *delta, br_error *err)
{
    if (delta->role != BR_ROLE_DELTA)
        return br_error_set(err, -EINVAL,
                            "a full filter, not a delta: only the first file of a set is a full "
                            "filter");
    if (delta->kind != set->kind)
        return br_error_set(err, -EINVAL, "a %s delta in a set of %s filters",
                            br_filter_kind_name(delta->kind), br_filter_kind_name(set->kind));
    if (delta->key_encoding != set->key_encoding)
        return br_error_set(err, -EINVAL, "key encoding %s in a set of %s",
                            br_key_encoding_name(delta->key_encoding),
                            br_key_encoding_name(set->key_encoding));
    if (!br_filter_names_has(names, delta->base_body_sha256)) {
        char want[17], have[17];
        br_hex_encode_upper(delta->base_body_sha256, 8, want);
        br_hex_encode_upper(set->body_sha256, 8, have);
        return br_error_set(err, -EINVAL,
                            "a delta of another base: it extends the filter whose body SHA-256 "
                            "starts %s, the loaded base's starts %s",
                            want, have);
    }
    return 0;
}

void br_filter_set_fold(br_filter_header *set, const br_filter_header *m)
{
    set->generation = BR_MAX(set->generation, m->generation);
    set->build_time = BR_MAX(set->build_time, m->build_time);
    set->key_count += m->key_count;
}

/* ---- reading layered files ---- */

static void free_views(br_filter_file **views, size_t n)
{
    for (size_t i = 0; i < n; i++)
        br_filter_file_free(views[i]);
    free(views);
}

static int check_layer(const br_filter_header *outer, const br_filter_header *h, size_t i,
                       br_error *err)
{
    if (h->kind != outer->kind || h->key_encoding != outer->key_encoding ||
        h->key_encoding_version > outer->key_encoding_version)
        return br_error_set(err, -EINVAL, "layer %zu: kind or key encoding differs from the file's",
                            i);
    if (h->algorithm == BR_ALGO_LAYERS)
        return br_error_set(err, -EINVAL, "layer %zu: a layered file inside a layered file", i);
    if ((i == 0) != (h->role == BR_ROLE_FULL))
        return br_error_set(err, -EINVAL, "layer %zu: %s", i,
                            i == 0 ? "the first layer must be a full filter"
                                   : "a later layer must be a delta");
    return 0;
}

int br_filter_layers_open(const br_filter_file *outer, br_filter_file ***out, size_t *n_out,
                          br_error *err)
{
    const br_filter_header *h = br_filter_file_header(outer);
    const uint8_t *data = br_filter_file_data(outer);
    uint64_t size = br_filter_file_size(outer);
    uint32_t n = br_load_le32(h->params + P_LAYER_COUNT);
    for (size_t i = P_END; i < BR_FILTER_PARAMS_SIZE; i++)
        if (h->params[i])
            return br_error_set(err, -EINVAL, "reserved param byte %zu is not zero", i);
    if (n < 2 || n > BR_LAYERS_MAX)
        return br_error_set(err, -EINVAL, "param layer_count: %u, expected 2..%d", n,
                            BR_LAYERS_MAX);
    uint64_t table_end = h->payload_offset + (uint64_t)n * T_ENTRY;
    if (table_end > size)
        return br_error_set(err, -EINVAL, "layer table: runs past the end of the file");
    br_filter_file **views = calloc(n, sizeof(*views));
    if (!views)
        return -ENOMEM;
    uint64_t expect =
        (table_end + BR_FILTER_PAYLOAD_ALIGN - 1) & ~(uint64_t)(BR_FILTER_PAYLOAD_ALIGN - 1);
    uint64_t keys = 0;
    int r = 0;
    for (uint32_t i = 0; i < n && r == 0; i++) {
        const uint8_t *e = data + h->payload_offset + (uint64_t)i * T_ENTRY;
        uint64_t off = br_load_le64(e + T_OFFSET), len = br_load_le64(e + T_SIZE);
        /* Layers follow each other on page boundaries, the last ends the file. */
        if (off != expect || len < BR_FILTER_HEADER_SIZE || len > size - off ||
            (i + 1 == n && off + len != size))
            r = br_error_set(err, -EINVAL, "layer %u: offset %llu / size %llu out of place", i,
                             (unsigned long long)off, (unsigned long long)len);
        if (r == 0) {
            r = br_filter_file_view(outer, off, len, &views[i], err);
            if (r < 0)
                br_error_prefix(err, r, "layer %u", i);
        }
        if (r == 0)
            r = check_layer(h, br_filter_file_header(views[i]), i, err);
        if (r == 0)
            keys += br_filter_file_header(views[i])->key_count;
        expect =
            (off + len + BR_FILTER_PAYLOAD_ALIGN - 1) & ~(uint64_t)(BR_FILTER_PAYLOAD_ALIGN - 1);
    }
    if (r == 0 && keys != h->key_count)
        r = br_error_set(err, -EINVAL, "field key_count: %llu, but the layers hold %llu",
                         (unsigned long long)h->key_count, (unsigned long long)keys);
    if (r < 0) {
        free_views(views, n);
        return r;
    }
    *out = views;
    *n_out = n;
    return 0;
}

int br_filter_header_read_first(const char *path, br_filter_header *hdr)
{
    int r = br_filter_header_read(path, hdr);
    if (r < 0 || hdr->algorithm != BR_ALGO_LAYERS)
        return r;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    uint8_t e[T_ENTRY], raw[BR_FILTER_HEADER_SIZE];
    if (fd < 0)
        return -errno;
    if (pread(fd, e, sizeof(e), (off_t)hdr->payload_offset) != (ssize_t)sizeof(e))
        return -EIO;
    uint64_t off = br_load_le64(e + T_OFFSET);
    if (off > INT64_MAX - sizeof(raw))
        return -EINVAL;
    if (pread(fd, raw, sizeof(raw), (off_t)off) != (ssize_t)sizeof(raw))
        return -EIO;
    return br_filter_header_decode(raw, sizeof(raw), hdr, NULL) < 0 ? -EINVAL : 0;
}

/* ---- writing layered files ---- */

typedef struct layer_src {
    const uint8_t *data;
    uint64_t size;
    const br_filter_header *h;
} layer_src;

/* The layers of the set: a layered file gives its own, flat. */
static int collect(br_filter_file *const *files, size_t n, layer_src *out, size_t *n_out,
                   br_filter_file ***views, size_t *n_views, br_error *err)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const br_filter_header *h = br_filter_file_header(files[i]);
        if (h->algorithm != BR_ALGO_LAYERS) {
            if (k == BR_LAYERS_MAX)
                return br_error_set(err, -E2BIG, "more than %d layers", BR_LAYERS_MAX);
            out[k++] = (layer_src){br_filter_file_data(files[i]), br_filter_file_size(files[i]), h};
            continue;
        }
        if (i > 0)
            return br_error_set(err, -EINVAL, "file %zu: a layered file can only come first",
                                i + 1);
        int r = br_filter_layers_open(files[i], views, n_views, err);
        if (r < 0)
            return r;
        if (*n_views + (n - 1) > BR_LAYERS_MAX)
            return br_error_set(err, -E2BIG, "more than %d layers", BR_LAYERS_MAX);
        for (size_t j = 0; j < *n_views; j++)
            out[k++] =
                (layer_src){br_filter_file_data((*views)[j]), br_filter_file_size((*views)[j]),
                            br_filter_file_header((*views)[j])};
    }
    *n_out = k;
    return 0;
}

/* Each layer after the first is a delta of an earlier one, or of the
 * layered file first (whose body names it as a whole). */
static int check_chain(const br_filter_header *first, const layer_src *l, size_t n, br_error *err)
{
    if (l[0].h->role != BR_ROLE_FULL)
        return br_error_set(err, -EINVAL, "file 1 is a delta: a set starts with a full filter");
    br_filter_names names = {0};
    int r = br_filter_names_add(&names, l[0].h->body_sha256);
    if (r == 0 && first->algorithm == BR_ALGO_LAYERS)
        r = br_filter_names_add(&names, first->body_sha256);
    for (size_t i = 1; i < n && r == 0; i++) {
        r = br_filter_delta_check(l[0].h, &names, l[i].h, err);
        if (r < 0)
            br_error_prefix(err, r, "layer %zu", i + 1);
        else
            r = br_filter_names_add(&names, l[i].h->body_sha256);
    }
    br_filter_names_fini(&names);
    return r;
}

/* One layer, byte for byte; a delta that named the layered file whose
 * layers were taken over flat (its body is no file of the new set) is
 * pointed at the last of those layers instead, which stands for the same
 * keys: only its header changes. */
static int write_layer(br_filter_writer *w, const layer_src *l, const uint8_t *flat_name,
                       const uint8_t *flat_last, br_error *err)
{
    if (!flat_name || l->h->role != BR_ROLE_DELTA ||
        memcmp(l->h->base_body_sha256, flat_name, 32) != 0)
        return br_filter_writer_write(w, l->data, (size_t)l->size, err);
    br_filter_header h = *l->h;
    uint8_t raw[BR_FILTER_HEADER_SIZE];
    memcpy(h.base_body_sha256, flat_last, 32);
    if (br_filter_header_encode(&h, raw) < 0)
        return br_error_set(err, -EIO, "SHA-256 failed");
    int r = br_filter_writer_write(w, raw, sizeof(raw), err);
    if (r == 0)
        r = br_filter_writer_write(w, l->data + BR_FILTER_HEADER_SIZE,
                                   (size_t)(l->size - BR_FILTER_HEADER_SIZE), err);
    return r;
}

static int write_layers(br_filter_writer *w, const layer_src *l, size_t n, size_t n_flat,
                        const uint8_t *flat_name, br_filter_header *hdr, br_error *err)
{
    uint64_t off =
        BR_FILTER_PAYLOAD_ALIGN + (((uint64_t)n * T_ENTRY + BR_FILTER_PAYLOAD_ALIGN - 1) &
                                   ~(uint64_t)(BR_FILTER_PAYLOAD_ALIGN - 1));
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++) {
        uint8_t e[T_ENTRY];
        br_store_le64(e + T_OFFSET, off);
        br_store_le64(e + T_SIZE, l[i].size);
        r = br_filter_writer_write(w, e, sizeof(e), err);
        off = (off + l[i].size + BR_FILTER_PAYLOAD_ALIGN - 1) &
              ~(uint64_t)(BR_FILTER_PAYLOAD_ALIGN - 1);
        hdr->key_count += l[i].h->key_count;
        hdr->key_encoding_version = BR_MAX(hdr->key_encoding_version, l[i].h->key_encoding_version);
    }
    for (size_t i = 0; i < n && r == 0; i++) {
        r = br_filter_writer_align(w, BR_FILTER_PAYLOAD_ALIGN, err);
        if (r == 0)
            r = write_layer(w, &l[i], n_flat ? flat_name : NULL,
                            n_flat ? l[n_flat - 1].h->body_sha256 : NULL, err);
    }
    return r;
}

int br_filter_layers_write(const char *path, br_filter_file *const *files, size_t n,
                           const br_filter_layers_opts *o, uint64_t *file_bytes, br_error *err)
{
    layer_src l[BR_LAYERS_MAX];
    size_t nl = 0, nv = 0;
    br_filter_file **views = NULL;
    int r = n == 0 ? br_error_set(err, -EINVAL, "no files to merge")
                   : collect(files, n, l, &nl, &views, &nv, err);
    if (r == 0 && nl < 2)
        r = br_error_set(err, -EINVAL, "a merge needs a base and at least one delta");
    if (r == 0)
        r = check_chain(br_filter_file_header(files[0]), l, nl, err);
    br_filter_writer *w = NULL;
    if (r == 0)
        r = br_filter_writer_new(path, &w, err);
    br_filter_header hdr = {0};
    if (r == 0) {
        hdr.kind = l[0].h->kind;
        hdr.algorithm = BR_ALGO_LAYERS;
        hdr.key_encoding = l[0].h->key_encoding;
        hdr.generation = o->generation;
        hdr.build_time = o->build_time >= 0 ? o->build_time : br_build_time_now();
        br_store_le32(hdr.params + P_LAYER_COUNT, (uint32_t)nl);
        if (o->source)
            snprintf(hdr.source, sizeof(hdr.source), "%s", o->source);
        const br_filter_header *first = br_filter_file_header(files[0]);
        r = write_layers(w, l, nl, nv, first->body_sha256, &hdr, err);
    }
    if (r == 0 && file_bytes)
        *file_bytes = br_filter_writer_offset(w);
    if (r == 0)
        r = br_filter_writer_commit(w, &hdr, err);
    br_filter_writer_free(w);
    free_views(views, nv);
    return r;
}
