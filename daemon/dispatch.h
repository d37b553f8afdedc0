/* SPDX-License-Identifier: MIT */
/* The one interface of the verbs to the connection layer: server.c hands
 * dispatch.c the request lines it has framed; every verb answers through
 * conn.h. */
#pragma once

#include <stddef.h>

#include "server_types.h"

/* Handle up to BD_BATCH complete request lines (lines[i]: lens[i] bytes,
 * without their LF) read from one connection in one go. The lines stay
 * where they are, unchanged; the caller wipes them. */
void bd_dispatch_batch(bd_conn *c, const char *const *lines, const size_t *lens, size_t n);
