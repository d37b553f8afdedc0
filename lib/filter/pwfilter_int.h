/* SPDX-License-Identifier: MIT */
/* Internal to the password filter: what pwfilter.c (the file, sets),
 * pwfilter_offline.c (an offline member's codes) and the build
 * (builder/pwfilter_build.c) share. */
#pragma once

#include "filter_delta.h"
#include "offline_codes.h"
#include "pwfilter.h"

/* Params of both binary-fuse algorithms (docs/filter-format.md). */
enum {
    BR_PWP_ARITY = 0,
    BR_PWP_FP_BITS = 1,
    BR_PWP_SHARD_BITS = 2,
    BR_PWP_SHARD_COUNT = 4,
    BR_PWP_TABLE_OFFSET = 8,
    BR_PWP_ENTRY_SIZE = 16,
    BR_PWP_END = 20, /* binary-fuse: zero from here on */
    /* binary-fuse-offline only */
    BR_PWP_OFF_CHECK_BITS = 3, /* url-sha256, key encoding v4: the check filter's bits */
    BR_PWP_OFF_FP_BITS = 20,
    BR_PWP_OFF_CODE_BITS = 21,
    BR_PWP_OFF_CODE_KIND = 22,
    BR_PWP_OFF_DOMAIN_LABELS = 23,
    BR_PWP_OFF_CODE_COUNT = 24,
    BR_PWP_OFF_RATIO_PPM = 28,
    BR_PWP_OFF_CODES_OFFSET = 32,
    BR_PWP_OFF_CODES_SIZE = 40,
    BR_PWP_OFF_MIN_COUNT = 48,
    BR_PWP_OFF_EXACT_ALLOW = 56,   /* url-sha256: allow entries in the exact table */
    BR_PWP_OFF_EXACT_REMOVED = 60, /* url-sha256: removals in the exact table */
    BR_PWP_OFF_END = 64,
};

/* What a range filter's member and an offline one do differently on the
 * query path (pwfilter.c), chosen when the member is opened. */
typedef struct br_pwfilter_ops {
    /* This member alone: maybe (or damaged) for key. */
    bool (*member_contains)(const br_pwfilter *pf, uint64_t key);
    /* The set from this member on, for a batch of keys. */
    void (*contains_batch)(const br_pwfilter *pf, const uint64_t *keys, size_t n, bool *out);
} br_pwfilter_ops;

struct br_pwfilter {
    const br_pwfilter_ops *ops;
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
    br_pwo *offline;       /* algorithm binary-fuse-offline: its codes; else NULL */
    /* url-sha256, key encoding v4: the check filters, one per shard (a key's
     * shard's), over br_pwo_check_key() of its keys; else NULL. */
    br_bfuse *checks;
    /* url-sha256, key encoding v5: the quick filter over the XXH3 of the
     * file's expressions (has_quick); v6: of its allow entries
     * (offline->xxh3_keys); else none. */
    br_bfuse quick;
    bool has_quick;
};

/* The check filter of a url-sha256 offline file of key encoding v4
 * (docs/filter-format.md, "The check filter"): its fingerprint bits, the
 * seeds of its construction, and the key it holds for a filter key. */
#define BR_PWO_CHECK_BITS 16
#define BR_PWO_CHECK_SEED_BASE UINT64_C(0x636865636b656400) /* "checked\0" */
uint64_t br_pwo_check_key(uint64_t key);
/* The quick filter of key encoding v5 (docs/filter-format.md, "The quick
 * filter"): 8-bit fingerprints, one filter per file, its seeds'  base. */
#define BR_PWO_QUICK_BITS 8
#define BR_PWO_QUICK_SEED_BASE UINT64_C(0x717569636b000000) /* "quick\0\0\0" */
/* True unless pf has check filters and key's says no. */
bool br_pwo_check(const br_pwfilter *pf, uint64_t key);

/* pwfilter_offline.c: read an offline member's params and code table (the
 * generic params were read already); write them. */
int br_pwo_read(br_pwfilter *pf, br_error *err);
void br_pwo_header(const br_pwfilter_build_opts *o, uint8_t *params, uint64_t codes_offset);
/* True when o's file gets check filters (url-sha256, key encoding v4). */
bool br_pwo_checked(const br_pwfilter_build_opts *o);
/* True when o's file gets a quick filter (url-sha256, key encoding v5, v6). */
bool br_pwo_quick(const br_pwfilter_build_opts *o);
/* True when o has an exact table (a file of key encoding v3). */
bool br_pwo_exact(const br_pwfilter_build_opts *o);
/* The bytes of o's code table (counts or category names). */
uint64_t br_pwo_codes_bytes(const br_pwfilter_build_opts *o);
/* Strictly ascending full keys (an exact table's order). */
bool br_pwo_keys_sorted(const uint8_t (*k)[32], size_t n);
/* Counted pairs (key, count or category code) into keys[] and codes[]. */
int br_pwo_split(const br_pwfilter_build_opts *o, const uint64_t *pairs, size_t n, uint64_t *keys,
                 uint8_t *codes);
