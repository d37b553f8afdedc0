/* SPDX-License-Identifier: MIT */
/* conn_out.c: a connection's answers, written out whole lines at a time.
 * Used by conn.c (answers added) and server.c (written, refilled). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "server_types.h"

#define BD_OUT_CHUNK 16384 /* the most the output holds: one write */
int bd_conn_out_init(bd_conn *c);
void bd_conn_out_fini(bd_conn *c);
/* Add one answer line (LF included). */
void bd_conn_out_add(bd_conn *c, const char *line, size_t len);
/* Answer bytes not yet written. */
size_t bd_conn_out_unsent(const bd_conn *c);
/* After the output was written: the next whole lines into it. */
bool bd_conn_out_refill(bd_conn *c);
/* Between two batches of one read: write the answers so far now, whole
 * lines, as far as the socket takes them without blocking, so that the peer
 * reads them while the next batch is worked on. */
void bd_conn_out_write_early(bd_conn *c);
/* Write what the socket takes now (at exit, outside the loop). */
void bd_conn_out_flush_now(bd_conn *c);
