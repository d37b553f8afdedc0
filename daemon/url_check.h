/* SPDX-License-Identifier: MIT */
#pragma once

#include "proto/protocol.h"
#include "server_types.h"

/* Answer a URL request (now, or later from the loop). */
void bd_url_check(bd_conn *c, const br_request *req);
