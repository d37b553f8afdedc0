/* SPDX-License-Identifier: MIT */
/* The SIMILAR verb (docs/protocol.md, docs/similar.md): the hashes of a
 * password's variants looked up in an offline filter of popular passwords
 * on the host, never in the range API. */
#pragma once

#include "conn.h"

/* Answer a SIMILAR request at once: SIMILAR <count> <hits>, CLEAN, UNKNOWN
 * no-similar-filter or filter-unavailable, or ERR bad-request. */
void bd_similar_check(bd_conn *c, const br_request *req);
