/* SPDX-License-Identifier: MIT */
/* [urls] follow (docs/fleet.md, "Publishing and following"): a thread that
 * polls the publisher's manifest every follow_interval (with If-None-Match;
 * just after each cycle of the publisher when its manifest announces one,
 * at a random phase otherwise), on a timer of the loop, verifies it against [urls] pubkey
 * (lib/filter/manifest.h: signature, no replay, no gap), fetches the new base or deltas into the
 * [urls] filter directory, checks each (SHA-256 named by the manifest, its
 * FILE.sig, the set it makes opens), writes DIR/set, and asks for the
 * ordinary reload (SIGHUP): the new set is swapped in atomically, and a
 * refused manifest or file leaves the served set alone. */
#pragma once

#include "conf.h"
#include "filter/manifest.h"

struct event_base;
typedef struct bd_follow bd_follow;

/* What DIR holds ([urls] filter is the directory): *list the followed
 * set's files "DIR/base, DIR/delta, ..." (malloc'ed), NULL when nothing
 * was fetched yet (URL checks then answer UNKNOWN filter-unavailable); m
 * receives DIR/manifest (empty without one). 0 or -ENOMEM. */
int bd_follow_read(const char *dir, char **list, br_manifest *m);

/* The follower of the loop base; off until bd_follow_apply. NULL: out of
 * memory. */
bd_follow *bd_follow_new(struct event_base *base);
/* At the start and after every reload: follow what cfg says. Turning
 * [urls] follow on, or another URL, directory or pubkey, polls at once;
 * another follow_interval counts from the last poll; off stops polling (a
 * poll under way ends, and its set is loaded only if the configuration
 * names it). */
void bd_follow_apply(bd_follow *f, const breachd_config *cfg);
void bd_follow_free(bd_follow *f);
