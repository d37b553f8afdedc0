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
#include "filter/pwfilter.h"

/* 0 and *out (NULL when c names no filter), or -errno with err naming the
 * file and what is wrong. */
int bdns_load_set(const bdns_conf *c, br_pwfilter **out, br_error *err);

/* A number that changes when the configuration file or any file of its
 * filter list (or its .sig and .verified) is replaced or changed: the
 * watcher reloads when it does. */
uint64_t bdns_files_stamp(const char *config_path, const char *filter_list);
