/* SPDX-License-Identifier: MIT */
/* What each verb does (dispatch.c), called by server.c with the lines it
 * has framed. */
#pragma once

#include <stddef.h>

#include "protocol.h"
#include "server_types.h"

/* dispatch.c: handle up to BD_BATCH complete request lines (without their
 * LF) read from one connection in one go. */
#define BD_BATCH 32
#define BD_LINE_BUF (BR_PROTO_MAX_LINE + 2)
void bd_dispatch_batch(bd_conn *c, char (*lines)[BD_LINE_BUF], const size_t *lens, size_t n);
