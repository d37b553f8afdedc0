/* SPDX-License-Identifier: MIT */
/* The filters a configuration names, opened and verified for a new state
 * (state.h): each file's container and algorithm, and, when the section
 * names a pubkey, its detached signature (docs/filter-format.md,
 * "Signatures"). Called on the reload thread; nothing here touches the
 * running state, so a refused file leaves the old set serving. */
#pragma once

#include "conf.h"
#include "error.h"
#include "pwfilter.h"
#include "urlfilter.h"

/* [passwords] filter, or *out = NULL when none is configured. 0, or a
 * negative errno with err naming the config line, the file and the reason. */
int bd_filters_load_passwords(const breachd_config *cfg, br_pwfilter **out, br_error *err);
/* [ntlm] filter (password-ntlm, the NT verb), the same way. */
int bd_filters_load_ntlm(const breachd_config *cfg, br_pwfilter **out, br_error *err);
/* [urls] filter, the same way. */
int bd_filters_load_urls(const breachd_config *cfg, br_urlfilter **out, br_error *err);
