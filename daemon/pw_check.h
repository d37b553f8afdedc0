/* SPDX-License-Identifier: MIT */
/* The PW and NT verbs (pw_check.c): rows of the verb table in dispatch.c. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "proto/protocol.h"
#include "server_types.h"

/* Answer a PW or NT request (now, or later from the loop). hint: the
 * filter's answer when the batch already probed it (0 no: CLEAN at once,
 * the filter's state was looked at for the batch; 1 maybe), or -1 to
 * probe here. */
void bd_pw_check(bd_conn *c, const br_request *req, int hint);

/* Probe the filter of verb (PW or NT) for every such request of a batch
 * (ok[i]: req[i] parsed) at once, so that their cache misses overlap
 * instead of being waited for one by one: hint[i] = 0 (no) or 1 (maybe;
 * for an offline filter: a hit, whose count bd_pw_check looks up); left at
 * -1 when the filter is missing, stale (unless offline) or damaged, or the
 * daemon is stopping. */
void bd_pw_prepare_batch(bd_conn *c, br_verb verb, const br_request *req, const bool *ok, size_t n,
                         int *hint);
