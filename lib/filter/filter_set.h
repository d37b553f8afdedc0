/* SPDX-License-Identifier: MIT */
/* What the set loaders of the filter types share (pwfilter.c,
 * urlfilter.c): a base with its deltas, and a layered file opened as
 * such a set (filter_delta.h, docs/filter-format.md). */
#pragma once

#include <stdbool.h>

#include "filter_delta.h"

/* A filter type, for br_filter_set_from_layers: each takes and gives the
 * type's own filter (br_pwfilter, br_urlfilter) as void *. */
typedef struct br_filter_set_ops {
    /* One layer's filter from its file (taken). */
    int (*from_file)(br_filter_file *file, void **out, br_error *err);
    /* Attach delta (taken: freed on an error) to the set headed by set. */
    int (*attach)(void *set, void *delta, br_error *err);
    /* The header the set headed by f answers for, its names, and where it
     * holds a layered file's container. */
    void (*parts)(void *f, br_filter_header **set_hdr, br_filter_names **names,
                  br_filter_file ***outer);
    void (*free)(void *f);
    /* f's own header (of its file, or of the layered file it came from). */
    const br_filter_header *(*file_header)(const void *f);
} br_filter_set_ops;

/* Defines NAME, the br_filter_set_ops of filter type T (br_pwfilter,
 * br_urlfilter: with T##_from_file, T##_attach, T##_free, T##_file_header
 * and the members
 * set_hdr, names and outer), and its functions, static. */
#define BR_FILTER_SET_OPS(T, NAME)                                                                 \
    static int NAME##_from_file(br_filter_file *file, void **out, br_error *err)                   \
    {                                                                                              \
        T *f_ = NULL;                                                                              \
        int r_ = T##_from_file(file, &f_, err);                                                    \
        *out = f_;                                                                                 \
        return r_;                                                                                 \
    }                                                                                              \
    static int NAME##_attach(void *set, void *delta, br_error *err)                                \
    {                                                                                              \
        return T##_attach(set, delta, err);                                                        \
    }                                                                                              \
    static void NAME##_parts(void *f, br_filter_header **set_hdr, br_filter_names **names,         \
                             br_filter_file ***outer)                                              \
    {                                                                                              \
        T *t_ = f;                                                                                 \
        *set_hdr = &t_->set_hdr;                                                                   \
        *names = &t_->names;                                                                       \
        *outer = &t_->outer;                                                                       \
    }                                                                                              \
    static void NAME##_free(void *f)                                                               \
    {                                                                                              \
        T##_free(f);                                                                               \
    }                                                                                              \
    static const br_filter_header *NAME##_file_header(const void *f)                               \
    {                                                                                              \
        return T##_file_header(f);                                                                 \
    }                                                                                              \
    static const br_filter_set_ops NAME = {NAME##_from_file, NAME##_attach, NAME##_parts,          \
                                           NAME##_free, NAME##_file_header}

/* Whether a member whose own header is dh may join the set (header set_hdr,
 * names): a delta of it (br_filter_delta_check), and not itself a set
 * (delta_is_set). 0 or -EINVAL with err set. */
int br_filter_set_admit(const br_filter_header *set_hdr, const br_filter_names *names,
                        const br_filter_header *dh, bool delta_is_set, br_error *err);

/* Open a layered file's layers as one set (takes file): the first layer
 * heads it, each later one is attached in order. The set answers for the
 * container (its generation, build time and keys) and may be named by the
 * container's body as well. */
int br_filter_set_from_layers(br_filter_file *file, const br_filter_set_ops *ops, void **out,
                              br_error *err);

/* Open paths[0..n) as one set (pwfilter.h, urlfilter.h: _open_set): a full
 * filter, then deltas attached in order. last_body (may be NULL): the body
 * SHA-256 of paths[n-1]. Errors name the file. */
int br_filter_set_open(const char *const *paths, size_t n, const br_filter_set_ops *ops, void **out,
                       uint8_t last_body[32], br_error *err);
