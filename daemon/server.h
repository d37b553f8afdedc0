/* SPDX-License-Identifier: MIT */
/* The socket server: a libevent loop with a Unix stream socket (created by
 * breachd, or handed over by systemd), one bufferevent per connection, line
 * framing with the protocol's limits, peer credentials, backpressure,
 * reload and a draining shutdown. Request semantics live in dispatch.c. */
#pragma once

#include "server_types.h"

struct event_base;

void bd_limits_from_config(bd_limits *l, const breachd_config *cfg);

int bd_server_init(bd_server *srv, struct event_base *base, const char *config_path,
                   bd_state *state, br_error *err);
/* Take the systemd socket, or create the configured one. */
int bd_server_listen(bd_server *srv, br_error *err);
/* Stop accepting, refuse new requests, exit the loop once in-flight ones are
 * answered (or the drain timeout passes). */
void bd_server_drain(bd_server *srv);
/* Start a reload (SIGHUP: waiter NULL; RELOAD: the request to answer). */
void bd_server_reload(bd_server *srv, bd_waiter *waiter);
void bd_server_fini(bd_server *srv);

/* ---- used by dispatch.c and url_check.c ---- */

/* Append one response line (fmt without the id and the newline). */
void bd_conn_reply(bd_conn *c, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for a fixed text ("CLEAN", "PONG"): no formatting. */
void bd_conn_reply_text(bd_conn *c, const char *id, const char *text);
void bd_conn_reply_error(bd_conn *c, const char *id, br_proto_err code, const char *text);
/* NULL when c may start one more request that waits for an answer, else the
 * text of its ERR busy: an interactive connection has [limits] max_inflight,
 * the bulk lane [upstream] bulk_queue for all bulk connections together. */
const char *bd_conn_admit(const bd_conn *c);
/* A waiter for a request on c (takes references on c and the current state). */
bd_waiter *bd_waiter_new(bd_conn *c, const br_request *req);
/* Done with a waiter (answered or not): drops its references. */
void bd_waiter_free(bd_waiter *w);
