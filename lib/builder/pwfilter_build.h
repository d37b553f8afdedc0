/* SPDX-License-Identifier: MIT */
/* Building a password filter file (filter/pwfilter.h reads it). */
#pragma once

#include "core/error.h"
#include "filter/pwfilter.h"
#include "keyset.h"

/* Build the filter of every key in ks (which this finishes) into path. */
int br_pwfilter_build(br_keyset *ks, const br_pwfilter_build_opts *opts, const char *path,
                      br_pwfilter_build_stats *stats, br_error *err);
