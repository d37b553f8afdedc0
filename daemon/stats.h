/* SPDX-License-Identifier: MIT */
/* Counters of the daemon, rendered as the one-line STATS answer and as
 * Prometheus text at metrics_listen (libevent's evhttp, loopback only). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "server_types.h"

struct event_base;

/* Render every figure as "key=value" pairs separated by sep, with a prefix
 * before each key ("" for STATS, "breachd_" for Prometheus), into buf.
 * Returns the length (truncated to fit, never over size-1). */
size_t bd_stats_render(bd_server *srv, char *buf, size_t size);

typedef struct bd_metrics bd_metrics;
/* Serve GET /metrics on host:port. 0, or a negative errno: bind(2)'s
 * (-EADDRINUSE: the port is taken), -EADDRNOTAVAIL when it tells none. */
int bd_metrics_start(struct event_base *base, bd_server *srv, const char *host, uint16_t port,
                     bd_metrics **out);
void bd_metrics_stop(bd_metrics *m);
