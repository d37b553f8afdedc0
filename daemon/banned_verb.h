/* SPDX-License-Identifier: MIT */
/* The BANNED verb (docs/protocol.md, docs/banned.md): the banned terms and
 * the site's names that clients check new passwords against, a page at a
 * time. The terms are not secret; no password comes this way. */
#pragma once

#include "conn.h"

/* Answer a BANNED request at once: TERMS <generation> <min_score> <total>
 * <next> and the terms from req->index that fit the line. */
void bd_banned_terms(bd_conn *c, const br_request *req);
