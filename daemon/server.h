/* SPDX-License-Identifier: MIT */
/* The socket server: a libevent loop with a Unix stream socket (created by
 * breachd, or handed over by systemd), a persistent read event per
 * connection (one read per batch into a buffer of the server's, answers
 * written with one write), line framing with the protocol's limits, peer
 * credentials, backpressure, reload and a draining shutdown: the connection layer, above the verbs.
 * It hands the lines it frames to dispatch.h; the verbs answer through
 * conn.h and never call back into it (docs/architecture.md, "The daemon,
 * top-down"). */
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
/* Start a reload (SIGHUP: waiter NULL; RELOAD: the request to answer,
 * through srv->reload). */
void bd_server_reload(bd_server *srv, bd_waiter *waiter);
void bd_server_fini(bd_server *srv);
