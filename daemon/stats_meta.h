/* SPDX-License-Identifier: MIT */
/* The type and help line of each STATS key, for the Prometheus text
 * format (stats.c, docs/protocol.md "STATS"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* One line of help for key into help (size bytes). True when the figure is
 * a counter, false for a gauge (and for a key it does not know). */
bool bd_stats_meta(const char *key, char *help, size_t size);
