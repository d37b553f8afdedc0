/* SPDX-License-Identifier: MIT */
/* What server.c (connections) and server_control.c (life cycle) share. */
#pragma once

#include "server.h"

/* Exit the loop once draining and nothing is owed to any client. */
void bd_maybe_finish_drain(bd_server *srv);
/* Write what is buffered for c now (at exit, outside the loop). */
void bd_conn_flush_now(bd_conn *c);
void bd_conn_close(bd_conn *c);
