/* SPDX-License-Identifier: MIT */
/* breachctl publish (docs/fleet.md, "Publishing and following"): what the
 * configuration, the feeds (publish_feed.c) and the cycle (cmd_publish.c)
 * share. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "download/fetch_file.h"
#include "filter/manifest.h"
#include "filter/offline_codes.h"

typedef uint8_t pub_key[32];

typedef struct pub_feed {
    char name[BR_MANIFEST_NAME_MAX + 1];
    char url[2048];
    char format[16];
    char category[BR_CATEGORY_NAME_MAX + 1];
    int64_t interval_s;
    /* state (kept in STATE/feed-NAME.*) */
    br_fetch_validators val;
    int64_t last_success, last_poll;
    uint64_t holds; /* polls that kept the last good entries */
    bool held;
    char reason[BR_MANIFEST_REASON_MAX + 1];
    pub_key *keys; /* the last good entries, sorted */
    /* keys[i]'s expression's XXH3 (the quick filter's key: docs/fleet.md),
     * NULL while unknown: a state kept by an older publisher */
    uint64_t *quick;
    size_t n;
    unsigned labels;
} pub_feed;

/* A [feed NAME] section of kind url-sha256, or a [corpus NAME] section of
 * a password kind (format "corpus", url its input path). */
typedef struct pub_conf {
    char path[4096];
    uint32_t kind; /* br_filter_kind of [publish] kind */
    char output[4096], state[4200], key[4096];
    int64_t interval_s, keep_s;
    unsigned max_shrink_pct;
    bool quick_filter; /* [publish] quick_filter: v6 (v5) files when every feed's XXH3 is known */
    bool sha256_keys;  /* [publish] sha256_keys: v5 files, fingerprints keyed by SHA-256 */
    pub_feed *feeds;
    size_t n_feeds;
} pub_conf;

/* Read FILE's [publish] and [feed NAME] sections; errors name FILE:LINE. */
int pub_conf_read(const char *path, pub_conf *c);
void pub_conf_free(pub_conf *c);
/* Load each feed's kept state (its last good entries). */
int pub_feeds_load(pub_conf *c);
/* Poll feed f now: new entries replace its last good ones, unless the poll
 * failed, the body was not a feed, or it shrank past max_shrink (f->held,
 * f->reason; logged with the feed's name). true when its entries changed. */
bool pub_feed_poll(const pub_conf *c, pub_feed *f, int64_t now);

/* ---- shared by the cycles of URL feeds and of password corpora ---- */

/* Sign DIR/NAME (NAME.sig), write NAME.gz, describe it for the manifest. */
int pub_sign_file(const br_sign_key *key, const char *dir, const char *name, uint64_t gen,
                  br_manifest_file *mf, br_error *err);
/* Write the signed manifest m (its feed lines from c's sections). */
int pub_write_manifest(const pub_conf *c, br_manifest *m, const br_sign_key *key, int64_t now,
                       br_error *err);
/* Remove files that left the manifest keep ago. */
void pub_clean_old(const pub_conf *c, const br_manifest *m, int64_t now);
/* True when the deltas since the base hold a share of its bytes that
 * calls for a new base. */
bool pub_want_base(const br_manifest *m);

/* One cycle of a password kind (publish_pw.c): when a corpus input
 * changed, build an offline password filter of it, a delta over the
 * published set (new keys and raised counts) or a base, sign it and write
 * the manifest. announce: write the manifest even with nothing new.
 * *have_manifest is m's state. Returns 0 or an exit status. */
int pub_pw_cycle(const pub_conf *c, br_manifest *m, bool *have_manifest, const br_sign_key *key,
                 bool announce, int64_t now);
