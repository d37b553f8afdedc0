/* SPDX-License-Identifier: MIT */
/* The set loaders' shared steps (filter_set.h). */
#include <errno.h>
#include <stdlib.h>

#include "filter_set.h"

int br_filter_set_admit(const br_filter_header *set_hdr, const br_filter_names *names,
                        const br_filter_header *dh, bool delta_is_set, br_error *err)
{
    int r = br_filter_delta_check(set_hdr, names, dh, err);
    if (r == 0 && delta_is_set)
        r = br_error_set(err, -EINVAL, "a set cannot be a delta");
    return r;
}

/* The layers (views, n of them, taken) as one set in *head. */
static int join_layers(br_filter_file **views, size_t n, const br_filter_set_ops *ops,
                       void **head, br_error *err)
{
    int r = 0;
    for (size_t i = 0; i < n; i++) {
        void *f = NULL;
        br_filter_file *v = BR_TAKE_PTR(views[i]);
        r = ops->from_file(v, &f, err);
        if (r == 0 && i > 0)
            r = ops->attach(*head, BR_TAKE_PTR(f), err);
        else if (r == 0)
            *head = BR_TAKE_PTR(f);
        if (r < 0) {
            br_error_prefix(err, r, "layer %zu", i);
            break;
        }
    }
    return r;
}

int br_filter_set_from_layers(br_filter_file *file, const br_filter_set_ops *ops, void **out,
                              br_error *err)
{
    br_filter_file **views = NULL;
    size_t n = 0;
    int r = br_filter_layers_open(file, &views, &n, err);
    if (r < 0) {
        br_filter_file_free(file);
        return r;
    }
    void *head = NULL;
    r = join_layers(views, n, ops, &head, err);
    for (size_t i = 0; i < n; i++)
        br_filter_file_free(views[i]);
    free(views);
    br_filter_header *set_hdr;
    br_filter_names *names;
    br_filter_file **outer;
    if (r == 0) {
        ops->parts(head, &set_hdr, &names, &outer);
        *set_hdr = *br_filter_file_header(file);
        r = br_filter_names_add(names, set_hdr->body_sha256);
    }
    if (r < 0) {
        if (head)
            ops->free(head);
        br_filter_file_free(file);
        return r;
    }
    *outer = file;
    *out = head;
    return 0;
}
