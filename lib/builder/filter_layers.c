/* SPDX-License-Identifier: MIT */
/* Writing a layered file from a filter and its deltas (builder/filter_layers.h;
 * docs/filter-format.md, "Deltas and layered files"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/util.h"
#include "filter/filter_layers_layout.h"
#include "filter_layers.h"
#include "filter_writer.h"

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
    br_filter_views_free(views, nv);
    return r;
}
