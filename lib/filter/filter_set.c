/* SPDX-License-Identifier: MIT */
/* The set loaders' shared steps (filter_set.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
static int join_layers(br_filter_file **views, size_t n, const br_filter_set_ops *ops, void **head,
                       br_error *err)
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

/* One file of a set being opened (the index-th) into *f. */
static int open_member(const char *path, size_t index, const br_filter_set_ops *ops, void **f,
                       uint8_t last_body[32], br_error *err)
{
    br_filter_file *file = NULL;
    int r = br_filter_file_open(path, &file, err);
    if (r < 0)
        return r;
    r = ops->from_file(file, f, err);
    if (r < 0)
        return br_error_prefix(err, r, "%s", path);
    const br_filter_header *h = ops->file_header(*f);
    if (index == 0 && h->role != BR_ROLE_FULL)
        return br_error_set(err, -EINVAL, "%s: a delta, not a full filter: name its base first",
                            path);
    if (last_body)
        memcpy(last_body, h->body_sha256, 32);
    return 0;
}

int br_filter_set_open(const char *const *paths, size_t n, const br_filter_set_ops *ops, void **out,
                       uint8_t last_body[32], br_error *err)
{
    void *set = NULL;
    int r = 0;
    for (size_t i = 0; i < n && r == 0; i++) {
        void *f = NULL;
        r = open_member(paths[i], i, ops, &f, last_body, err);
        if (r == 0 && i > 0) {
            r = ops->attach(set, BR_TAKE_PTR(f), err);
            if (r < 0)
                br_error_prefix(err, r, "%s", paths[i]);
        } else if (r == 0) {
            set = BR_TAKE_PTR(f);
        }
        if (f)
            ops->free(f);
    }
    if (r < 0) {
        if (set)
            ops->free(set);
        return r;
    }
    *out = set;
    return 0;
}
