/* SPDX-License-Identifier: MIT */
/* The lanes of range lookups (docs/protocol.md "LANE", docs/upstream.md
 * "Lanes"): interactive lookups (a password change, a proxy) are bound by the
 * upstream deadline and always go first; the range endpoint's lookups (HTTP
 * clients) are bound by the deadline too, but go after the interactive ones,
 * with a share of the upstream rate and slots of their own; bulk lookups (an
 * audit of many accounts) wait their turn in a queue of their own, with a
 * share of the upstream rate and slots. A header of names only: no state, no
 * threads. */
#pragma once

typedef enum br_lane {
    BR_LANE_INTERACTIVE = 0, /* the default of every connection */
    BR_LANE_BULK = 1,
    BR_LANE_HTTP = 2, /* the range endpoint's lookups; no LANE verb selects it */
} br_lane;

#define BR_LANES 3

/* "interactive" or "bulk", as the LANE verb spells them; "http". */
static inline const char *br_lane_name(br_lane lane)
{
    return lane == BR_LANE_BULK ? "bulk" : lane == BR_LANE_HTTP ? "http" : "interactive";
}
