/* SPDX-License-Identifier: MIT */
/* Internal to the password filter: what pwfilter.c (one file) and
 * pwfilter_set.c (a base and its deltas, layered files) share. */
#pragma once

#include "filter_delta.h"
#include "pwfilter.h"

struct br_pwfilter {
    br_filter_file *file;
    unsigned shard_bits;
    uint32_t shard_count;
    unsigned arity, fp_bits;
    br_bfuse *shards;
    /* The set (filter_delta.h): the next member, probed when this one says
     * no; the header the set answers for; the bodies deltas may name. */
    br_pwfilter *next;
    br_filter_header set_hdr;
    br_filter_names names;
    br_filter_file *outer; /* a layered file: the container of the members' views */
};

/* This member alone (no delta). */
bool br_pwfilter_member_contains(const br_pwfilter *pf, uint64_t key);
/* Open a layered file's layers as one set (takes ownership of file). */
int br_pwfilter_from_layers(br_filter_file *file, br_pwfilter **out, br_error *err);
