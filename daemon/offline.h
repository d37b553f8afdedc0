/* SPDX-License-Identifier: MIT */
/* Offline filters and `upstream = none` in the daemon (breachd.conf(5),
 * docs/privacy.md): which sections have no range API, and what
 * --check-config says about a configuration that leans on one it lacks. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "core/error.h"
#include "filter/pwfilter.h"
#include "kinds.h"

/* The `upstream` value that means: no range API at all. An empty value
 * means the same. */
#define BD_UPSTREAM_NONE "none"
bool bd_upstream_none(const char *tmpl);
/* HIBP's range API (the default [passwords] and [ntlm] upstreams): an
 * upstream on this host. */
#define BD_HIBP_HOST "api.pwnedpasswords.com"
bool bd_upstream_hibp(const char *tmpl);

/* The range-API template to hand the resolver: NULL for none. */
const char *bd_upstream_template(const char *tmpl);

/* [http] serves range bodies, so it needs a [passwords] upstream: -EINVAL
 * with err naming the conflict. At every load (start, reload,
 * --check-config). */
int bd_offline_check_config(const breachd_config *cfg, br_error *err);
/* Warnings in the log (and on stderr for --check-config) at every load:
 *  - a section with upstream = none and a filter that is not offline
 *    answers every maybe UNKNOWN no-upstream;
 *  - an offline filter with an upstream that nothing uses (a [passwords]
 *    or [ntlm] one is kept for [http] listen);
 *  - a section offline (or none) next to one still naming HIBP;
 *  - a --min-count filter let in by min_count_ok = yes, with its threshold.
 * filter holds the filters loaded for cfg by kind (kinds.h; NULL: none;
 * [urls]: its offline filter); each row says which of these apply to it. */
void bd_offline_warn(const breachd_config *cfg, const br_pwfilter *const filter[BD_KINDS_]);

/* The --min-count an offline filter (its first file) was built with; 0 or
 * 1: none, or not offline (a range filter does not record it). */
uint64_t bd_filter_min_count(const br_pwfilter *pf);

/* [urls] filter names an offline filter (its first file's header says so). */
bool bd_offline_urls_configured(const breachd_config *cfg);
/* Host suffixes of up to this many labels are looked up (filter-format.md,
 * "Long domains"). */
unsigned bd_offline_url_labels(const br_pwfilter *pf);
