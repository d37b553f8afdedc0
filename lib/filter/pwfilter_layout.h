/* SPDX-License-Identifier: MIT */
/* Internal to the password filter: the params block and the shard-table
 * entry of a binary-fuse file (docs/filter-format.md), shared by the reader
 * (pwfilter.c) and the build (builder/pwfilter_build.c). */
#pragma once

#include <stdint.h>

/* params block of the container header (docs/filter-format.md). */
enum {
    P_ARITY = 0,
    P_FP_BITS = 1,
    P_SHARD_BITS = 2,
    P_SHARD_COUNT = 4,
    P_TABLE_OFFSET = 8,
    P_ENTRY_SIZE = 16,
    P_END = 20,
};
/* One shard-table entry. */
enum {
    E_SEED = 0,
    E_FP_OFFSET = 8,
    E_KEY_COUNT = 16,
    E_SEGMENT_LENGTH = 20,
    E_SEGMENT_COUNT_LENGTH = 24,
    E_ARRAY_LENGTH = 28,
    ENTRY_SIZE = 32,
};
#define MAX_SHARD_BITS 20
#define SEED_BASE UINT64_C(0x6272656163686400) /* "breachd\0" */
