/* SPDX-License-Identifier: MIT */
/* URL filter sets: a base and its deltas, and layered files (urlfilter.h,
 * filter_delta.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "filter_set.h"
#include "urlfilter_int.h"

const br_filter_header *br_urlfilter_file_header(const br_urlfilter *uf)
{
    return uf->outer ? br_filter_file_header(uf->outer) : br_filter_file_header(uf->file);
}

size_t br_urlfilter_members(const br_urlfilter *uf)
{
    size_t n = 0;
    for (; uf; uf = uf->next)
        n++;
    return n;
}

int br_urlfilter_attach(br_urlfilter *uf, br_urlfilter *delta, br_error *err)
{
    const br_filter_header *dh = br_urlfilter_file_header(delta);
    int r = br_filter_set_admit(&uf->set_hdr, &uf->names, dh, delta->next != NULL, err);
    if (r == 0 && !uf->set_bitmap) {
        uf->set_bitmap = malloc(BR_URLFILTER_BITMAP_BYTES);
        if (uf->set_bitmap)
            memcpy(uf->set_bitmap, uf->bitmap, BR_URLFILTER_BITMAP_BYTES);
        else
            r = -ENOMEM;
    }
    if (r == 0)
        r = br_filter_names_add(&uf->names, dh->body_sha256);
    if (r < 0) {
        br_urlfilter_free(delta);
        return r;
    }
    for (size_t i = 0; i < BR_URLFILTER_BITMAP_BYTES; i++)
        uf->set_bitmap[i] |= delta->bitmap[i];
    uf->set_labels = BR_MAX(uf->set_labels, delta->max_domain_labels);
    br_urlfilter *last = uf;
    while (last->next)
        last = last->next;
    last->next = delta;
    br_filter_set_fold(&uf->set_hdr, dh);
    return 0;
}

BR_FILTER_SET_OPS(br_urlfilter, set_ops);

int br_urlfilter_from_layers(br_filter_file *file, br_urlfilter **out, br_error *err)
{
    void *set = NULL;
    int r = br_filter_set_from_layers(file, &set_ops, &set, err);
    *out = set;
    return r;
}

int br_urlfilter_open_set(const char *const *paths, size_t n, br_urlfilter **out,
                          uint8_t last_body[32], br_error *err)
{
    void *set = NULL;
    int r = br_filter_set_open(paths, n, &set_ops, &set, last_body, err);
    *out = set;
    return r;
}
