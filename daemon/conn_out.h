/* SPDX-License-Identifier: MIT */
/* conn_out.c: a connection's answers, written out whole lines at a time.
 * Used by conn.c (answers added) and server.c (written). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "server_types.h"

#define BD_OUT_CHUNK 16384 /* the most one write takes: whole lines */

void bd_conn_out_fini(bd_conn *c);
/* Add one answer line (LF included). Outside the read path (an answer that
 * came later: upstream, reload) the write is queued on the loop. */
void bd_conn_out_add(bd_conn *c, const char *line, size_t len);
/* The same in two steps, for a line put together in place: room for len
 * bytes at the end of the output (NULL when out of memory: the connection
 * then ends), then the line written there added (len 0 when there was no
 * room). */
char *bd_conn_out_room(bd_conn *c, size_t len);
void bd_conn_out_added(bd_conn *c, size_t len);
/* Answer bytes not yet written. */
size_t bd_conn_out_unsent(const bd_conn *c);
/* Write the answers, whole lines, as far as the socket takes them without
 * blocking: 0 when all are written, 1 when the socket is full (the
 * connection's EV_WRITE is then armed; it is disarmed once all is written),
 * -errno when the write failed (the caller closes). */
int bd_conn_out_write(bd_conn *c);
/* Write what the socket takes now (at exit, outside the loop). */
void bd_conn_out_flush_now(bd_conn *c);
