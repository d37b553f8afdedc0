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

/* [passwords] filter, or *out = NULL when none is configured. Every file
 * must belong to root and be writable by no one else (breachd(8),
 * "Files"); a filter built with --min-count needs min_count_ok = yes. 0,
 * or a negative errno with err naming the config line, the file and the
 * reason. Each file loaded is added to ids (may be NULL). */
int bd_filters_load_passwords(const breachd_config *cfg, br_pwfilter **out, bd_filter_ids *ids,
                              br_error *err);
/* [ntlm] filter (password-ntlm, the NT verb), the same way. */
int bd_filters_load_ntlm(const breachd_config *cfg, br_pwfilter **out, bd_filter_ids *ids,
                         br_error *err);
/* [passwords] similar_filter (the SIMILAR verb), the same way with
 * [passwords] pubkey; a set that is not offline is refused. */
int bd_filters_load_similar(const breachd_config *cfg, br_pwfilter **out, bd_filter_ids *ids,
                            br_error *err);
/* [urls] filter, the same way. */
int bd_filters_load_urls(const breachd_config *cfg, br_urlfilter **out, bd_filter_ids *ids,
                         br_error *err);
/* [urls] filter when it is an offline set (offline.h), the same way: owner,
 * kind, signature, base and deltas, generation; a set that is not offline
 * is refused. */
int bd_filters_load_urls_offline(const breachd_config *cfg, br_pwfilter **out, bd_filter_ids *ids,
                                 br_error *err);
/* The same for the files of list; followed: files [urls] follow fetched
 * (follow.h), breachd's own and verified against [urls] pubkey. */
/* The files a [passwords] follow (ntlm: [ntlm] follow) fetched, list
 * "DIR/base, DIR/delta, ...": as bd_filters_load_passwords (ntlm) with list
 * as the filter, each file breachd's own and verified against the section's
 * pubkey (docs/fleet.md). */
int bd_filters_load_followed_pw(const breachd_config *cfg, bool ntlm, const char *list,
                                br_pwfilter **out, bd_filter_ids *ids, br_error *err);
int bd_filters_load_urls_list(const breachd_config *cfg, const char *list, bool followed,
                              br_pwfilter **out, bd_filter_ids *ids, br_error *err);
