/* SPDX-License-Identifier: MIT */
/* Writing a url-sha256 filter file from a draft (filter/urlfilter.h). */
#pragma once

#include <stdint.h>

#include "core/error.h"
#include "filter/urlfilter.h"

/* Write the draft to a temporary file beside path, fsync, and rename it over
 * path. A draft from br_urlfilter_draft_new() records itself as a full build
 * (base_key_count = its keys, base_generation = opts->generation); one from
 * br_urlfilter_draft_from() keeps the base of the filter it copied. */
int br_urlfilter_draft_save(br_urlfilter_draft *d, const char *path,
                            const br_urlfilter_save_opts *opts, uint64_t *file_bytes,
                            br_error *err);
