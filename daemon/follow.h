/* SPDX-License-Identifier: MIT */
/* [urls] follow (docs/fleet.md, "Publishing and following"): a thread that
 * polls the publisher's manifest every follow_interval (at a random phase, with
 * If-None-Match), verifies it against [urls] pubkey (lib/filter/manifest.h:
 * signature, no replay, no gap), fetches the new base or deltas into the
 * [urls] filter directory, checks each (SHA-256 named by the manifest, its
 * FILE.sig, the set it makes opens), writes DIR/set, and asks for the
 * ordinary reload (SIGHUP): the new set is swapped in atomically, and a
 * refused manifest or file leaves the served set alone. */
#pragma once

#include "conf.h"
#include "filter/manifest.h"

typedef struct bd_follow bd_follow;

/* What DIR holds ([urls] filter is the directory): *list the followed
 * set's files "DIR/base, DIR/delta, ..." (malloc'ed), NULL when nothing
 * was fetched yet (URL checks then answer UNKNOWN filter-unavailable); m
 * receives DIR/manifest (empty without one). 0 or -ENOMEM. */
int bd_follow_read(const char *dir, char **list, br_manifest *m);
/* Start the thread when cfg has [urls] follow; NULL otherwise. */
bd_follow *bd_follow_start(const breachd_config *cfg);
void bd_follow_stop(bd_follow *f);
