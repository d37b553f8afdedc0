/* SPDX-License-Identifier: MIT */
/* Opening the configured filter as breachd opens an offline [urls] filter
 * (breachd(8), "Files"; docs/dns.md): each file owned by root (or by the
 * user of BREACHD_TRUST_OWN_FILTERS=1) and not group or world writable,
 * its body hashed unless a verification record vouches for it, signed by
 * [urls] pubkey when one is set, the first a full filter and each later
 * one a delta of the set before it. Only offline url-sha256 filters: a
 * Bloom (range) URL filter would send a request per name that may be
 * listed, so it is refused with that reason. */
#pragma once

#include <stdint.h>

#include "dns_conf.h"
#include "filter/filter_order.h"
#include "filter/pwfilter.h"

/* What the files of a loaded list held, as the order of generations needs
 * them (filter/filter_order.h): v[i] is the i-th path of the list. */
typedef struct bdns_ids {
    br_filter_id *v;
    size_t n;
} bdns_ids;

void bdns_ids_clear(bdns_ids *ids);

/* The list being served and its ids: what a reload is compared with. */
typedef struct bdns_serving {
    const char *list;
    const bdns_ids *ids;
} bdns_serving;

/* 0 and *out (NULL when c names no filter) with ids, or -errno with err
 * naming the file and what is wrong. With serving (NULL when nothing is
 * served: at open, or fail-open), a path it also names must hold the same
 * file, a higher generation, or the file `breachctl filter rollback` put
 * back (br_filter_generation_ok; docs/filter-format.md, "Generations"), as
 * breachd's reload requires: an older signed file served again is
 * refused. */
int bdns_load_set(const bdns_conf *c, const bdns_serving *serving, br_pwfilter **out, bdns_ids *ids,
                  br_error *err);

/* A number that changes when the configuration file or any file of its
 * filter list (or its .sig, .verified and .rollback) is replaced or
 * changed: the watcher reloads when it does. */
uint64_t bdns_files_stamp(const char *config_path, const char *filter_list);
