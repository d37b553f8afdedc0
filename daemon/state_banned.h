/* SPDX-License-Identifier: MIT */
/* The banned terms a configuration names ([passwords] banned_terms and
 * site_terms, breachd.conf(5), docs/banned.md), read for a new state on
 * the reload thread: the clients fetch them with BANNED. */
#pragma once

#include <stdint.h>

#include "banned/banned.h"
#include "conf.h"
#include "core/error.h"

/* The site's terms, then the file's, into *out (NULL when neither key is
 * set) with a generation that differs from every earlier list's. A bad
 * line of the file is logged as a warning (FILE:LINE: what) and skipped;
 * a file that cannot be read or a bad site term fails with err naming
 * the key. */
int bd_banned_load(const breachd_config *cfg, br_banned **out, uint64_t *generation, br_error *err);
