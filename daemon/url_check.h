/* SPDX-License-Identifier: MIT */
#pragma once

#include "filter/offline_codes.h"
#include "proto/protocol.h"
#include "server_types.h"

/* The category of an allow-list: a URL with an expression listed in it is
 * SAFE even when a blocklist lists the URL too (docs/filter-format.md,
 * "Allow-lists"). */
#define BD_URL_ALLOW_CATEGORY BR_URL_ALLOW_CATEGORY

/* Answer a URL request (now, or later from the loop). */
void bd_url_check(bd_conn *c, const br_request *req);
