/* SPDX-License-Identifier: MIT */
/* Internal to the URL filter: what urlfilter.c (one file) and
 * urlfilter_set.c (a base and its deltas, layered files) share. */
#pragma once

#include "filter_delta.h"
#include "urlfilter.h"

struct br_urlfilter {
    br_filter_file *file;
    const uint8_t *bitmap; /* this member's prefix bitmap, in the mapping */
    br_bloom bloom;
    uint64_t capacity;
    double target_fpr;
    uint64_t base_key_count, base_generation;
    uint32_t prefixes_set;
    uint64_t bloom_bits_set;
    unsigned max_domain_labels;
    /* The set (filter_delta.h): the next member, probed when this one says
     * no; the header the set answers for; the bodies deltas may name; the
     * OR of the members' bitmaps once a delta joined (else NULL); the
     * largest label count of the members. */
    br_urlfilter *next;
    br_filter_header set_hdr;
    br_filter_names names;
    uint8_t *set_bitmap;
    unsigned set_labels;
    br_filter_file *outer; /* a layered file: the container of the members' views */
};

/* This member alone (no delta). */
bool br_urlfilter_member_maybe(const br_urlfilter *uf, const uint8_t sha256[BR_SHA256_LEN]);
/* Open a layered file's layers as one set (takes ownership of file). */
int br_urlfilter_from_layers(br_filter_file *file, br_urlfilter **out, br_error *err);
