/* SPDX-License-Identifier: MIT */
/* The HIBP-compatible range endpoint ([http] in breachd.conf(5);
 * docs/upstream.md "Serving the range API"): libevent's evhttp on the
 * daemon's loop, answering GET /range/{prefix}[?mode=ntlm] from the
 * resolver of the current state, each client (an address, an IPv6 network
 * of [http] ipv6_prefix bits) in a cache partition of its own
 * (http_range.c; a Unix socket listener's clients in BD_PARTITION_HTTP,
 * state.h).
 *
 * Order of the checks of a request: 400 for a malformed head (and the
 * connection ends), 403 outside allowed_networks, 429 past the client's
 * rate, then the route (404), the method (405), the prefix (400), and the
 * answer (200, 304, or 5xx when the range cannot be had). Connections are
 * capped and each request has a deadline (http.c). Nothing is logged
 * per request unless access_log = yes. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"

struct bd_server;
typedef struct bd_http bd_http;

/* Make the endpoint follow srv's current config: nothing when [http] listen
 * is unchanged; else stop the old listeners (their requests still waiting
 * for a range are dropped with their connections) and start the new ones.
 * 0, or a negative errno with err set (the endpoint is then off). */
int bd_http_apply(struct bd_server *srv, br_error *err);

/* Stop listening and close every connection. NULL is fine. */
void bd_http_free(bd_http *h);
