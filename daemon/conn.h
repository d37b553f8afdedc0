/* SPDX-License-Identifier: MIT */
/* A connection as the verbs see it (conn.c): the narrow interface through
 * which a verb's handler (dispatch.c, pw_check.c, url_check.c) answers, and
 * the connection's life that answering touches (references, closing once
 * nothing is owed, the end of a drain). Handlers call only this and the
 * data of server_types.h; they never call into server.c or
 * server_control.c (docs/architecture.md, "The daemon, top-down"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "proto/protocol.h"
#include "server_types.h"

/* Append one response line (fmt without the id and the newline). */
void bd_conn_reply(bd_conn *c, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for a fixed text of len bytes ("CLEAN", "PONG"): no
 * formatting, the line put together where it is sent from. */
void bd_conn_reply_n(bd_conn *c, const char *id, const char *text, size_t len);
static inline void bd_conn_reply_text(bd_conn *c, const char *id, const char *text)
{
    bd_conn_reply_n(c, id, text, strlen(text)); /* a literal's length is known when compiled */
}
void bd_conn_reply_error(bd_conn *c, const char *id, br_proto_err code, const char *text);
/* NULL when c may start one more request that waits for an answer, else the
 * text of its ERR busy: an interactive connection has [limits] max_inflight,
 * the bulk lane [upstream] bulk_queue for all bulk connections together. */
const char *bd_conn_admit(const bd_conn *c);
/* A waiter for a request on c (takes references on c and the current state). */
bd_waiter *bd_waiter_new(bd_conn *c, const br_request *req);
/* Done with a waiter (answered or not): drops its references. */
void bd_waiter_free(bd_waiter *w);

/* ---- the connection's life (server.c, server_control.c) ---- */

/* Drop one reference; the last frees c. */
void bd_conn_unref(bd_conn *c);
void bd_conn_close(bd_conn *c);
/* Close c when it is closing (or its peer closed its side) and nothing more
 * is owed to the peer. */
void bd_conn_maybe_close(bd_conn *c);
/* Exit the loop once draining and nothing is owed to any client (socket
 * answers, and the range endpoint's answers counted in srv->http_unsent). */
void bd_maybe_finish_drain(bd_server *srv);
/* Start or stop reading c's socket (back-pressure, EOF, closing). */
void bd_conn_set_reading(bd_conn *c, bool on);
/* Drop c's input not worked on yet, wiped first: it may hold a hash. */
void bd_conn_carry_drop(bd_conn *c);
