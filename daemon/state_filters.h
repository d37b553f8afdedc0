/* SPDX-License-Identifier: MIT */
/* The filters a configuration names, opened and verified for a new state
 * (state.h): each file's container and algorithm, and, when the section
 * names a pubkey, its detached signature (docs/filter-format.md,
 * "Signatures"). Called on the reload thread; nothing here touches the
 * running state, so a refused file leaves the old set serving. */
#pragma once

#include "conf.h"
#include "core/error.h"
#include "filter/filter_order.h"
#include "filter/pwfilter.h"
#include "filter/urlfilter.h"
#include "kinds.h"

/* What one configured file held when it was loaded. */
typedef struct bd_filter_id {
    char *path;
    char section[16];
    br_filter_id id; /* its generation, and the mark breachctl filter rollback leaves */
} bd_filter_id;

typedef struct bd_filter_ids {
    bd_filter_id *v;
    size_t n;
} bd_filter_ids;

void bd_filter_ids_clear(bd_filter_ids *ids);

/* A reload must not take an older file than the one it replaces: each
 * path of now that before (the serving state's; NULL at start) also had
 * must pass br_filter_generation_ok (filter/filter_order.h: the same file,
 * a higher generation, or marked by `breachctl filter rollback`). 0, or
 * -EINVAL with err naming the path and both generations. */
int bd_filters_check_order(const bd_filter_ids *now, const bd_filter_ids *before, br_error *err);

/* Kind k's filter (its row's section and filter key: [passwords] filter,
 * [ntlm] filter, [passwords] similar_filter, [urls] filter as an offline
 * set), or *out = NULL when none is configured. list: the files to load,
 * NULL for the configured ones; followed: files the section's follow
 * fetched (follow.h), breachd's own and verified against the section's pubkey.
 * Every file must belong to root and be writable by no one else
 * (breachd(8), "Files"), be of the row's filter kind, verify against the
 * section's pubkey when it names one, and be offline when the row says
 * offline_only; a filter built with --min-count needs the section's
 * min_count_ok = yes. 0, or a negative errno with err naming the config
 * line, the file and the reason. Each file loaded is added to ids (may be
 * NULL). */
int bd_filters_load_kind(const breachd_config *cfg, bd_kind k, const char *list, bool followed,
                         br_pwfilter **out, bd_filter_ids *ids, br_error *err);
/* [urls] filter as a range filter (the one kind with a second form), the
 * same way. */
int bd_filters_load_urls(const breachd_config *cfg, br_urlfilter **out, bd_filter_ids *ids,
                         br_error *err);
