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
#include "core/hash.h"
#include "core/util.h"
#include "filter_layers_layout.h"

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

void br_filter_views_free(br_filter_file **views, size_t n)
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
        br_filter_views_free(views, n);
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
