/* SPDX-License-Identifier: MIT */
/* The one interface of the verbs to the connection layer: server.c hands
 * dispatch.c the request lines it has framed; every verb answers through
 * conn.h. */
#pragma once

#include <stddef.h>

#include "server_types.h"

/* Handle up to BD_BATCH complete request lines (without their LF) read
 * from one connection in one go. */
void bd_dispatch_batch(bd_conn *c, char (*lines)[BD_LINE_BUF], const size_t *lens, size_t n);
