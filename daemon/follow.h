/* SPDX-License-Identifier: MIT */
/* [urls] follow, [passwords] follow and [ntlm] follow (docs/fleet.md,
 * "Publishing and following"): one follower per followed section, each a thread that
 * polls the publisher's manifest every follow_interval (with If-None-Match;
 * just after each cycle of the publisher when its manifest announces one,
 * at a random phase otherwise), on a timer of the loop, verifies it against the section's
 * pubkey (lib/filter/manifest.h: signature, no replay, no gap; a manifest of
 * another kind than the section's is refused), fetches the new base or deltas
 * into the section's filter directory, checks each (SHA-256 named by the manifest, its
 * FILE.sig, the set it makes opens), writes DIR/set, and asks for the
 * ordinary reload (SIGHUP): the new set is swapped in atomically, and a
 * refused manifest or file leaves the served set alone. */
#pragma once

#include "conf.h"
#include "filter/manifest.h"
#include "kinds.h"

struct event_base;
typedef struct bd_follow bd_follow;

/* What kind k's section follows: url "" when it follows nothing; section
 * NULL (and url "") when no section follows k (SIMILAR); dir is its filter key (the directory),
 * pubkey what every file is verified against. */
typedef struct bd_follow_config {
    const char *section, *url, *dir, *pubkey;
    int64_t interval_s;
} bd_follow_config;
void bd_follow_config_of(const breachd_config *cfg, bd_kind k, bd_follow_config *out);

/* What DIR holds (the section's filter is the directory): *list the followed
 * set's files "DIR/base, DIR/delta, ..." (malloc'ed), NULL when nothing
 * was fetched yet (checks then answer as with no filter); m
 * receives DIR/manifest (empty without one). 0 or -ENOMEM. */
int bd_follow_read(const char *dir, char **list, br_manifest *m);

/* Kind k's follower on the loop base; off until bd_follow_apply. NULL: out
 * of memory, or no section follows k (SIMILAR). */
bd_follow *bd_follow_new(struct event_base *base, bd_kind k);
/* At the start and after every reload: follow what cfg says. Turning
 * the section's follow on, or another URL, directory or pubkey, polls at once;
 * another follow_interval counts from the last poll; off stops polling (a
 * poll under way ends, and its set is loaded only if the configuration
 * names it). */
void bd_follow_apply(bd_follow *f, const breachd_config *cfg);
void bd_follow_free(bd_follow *f);
