/* SPDX-License-Identifier: MIT */
/* The publisher's manifest (docs/fleet.md, "Publishing and following"):
 * a small signed text file that names the current base and the deltas
 * since it, each by file name, generation and SHA-256, and each feed's last
 * success, entry count and state. `breachctl publish` writes it, breachd
 * with [urls] follow reads it. The rules a follower applies live here
 * (br_manifest_plan): a signature by the configured key, no replay (the
 * generation and the publication time never go back), a chain of deltas
 * without a gap, and which files a host holding a given set must fetch.
 *
 *   breachd-manifest 1
 *   kind url-sha256
 *   generation 42
 *   published 1765070000
 *   cycle 30
 *   base base-40.bfuse 40 SHA256HEX BYTES
 *   delta delta-41.bfuse 41 SHA256HEX BYTES
 *   feed NAME LAST_SUCCESS ENTRIES ok|held REASON...
 *
 * cycle (optional) is the publisher's period in seconds: its cycles start
 * at published + k * cycle, which a follower polls just after.
 *
 * manifest.sig: "BRCHMAN1", the key id (32 bytes), the Ed25519 signature
 * of the manifest's bytes (64): 104 bytes. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "filter_sign.h"

#define BR_MANIFEST_SIG_MAGIC "BRCHMAN1"
#define BR_MANIFEST_SIG_SIZE (8 + BR_KEY_ID_LEN + 64)
#define BR_MANIFEST_MAX_BYTES (1u << 20)
#define BR_MANIFEST_NAME_MAX 64
#define BR_MANIFEST_REASON_MAX 120

typedef struct br_manifest_file {
    char name[BR_MANIFEST_NAME_MAX + 1]; /* [A-Za-z0-9._-], not starting with '.' */
    uint64_t generation;
    uint8_t sha256[32]; /* of the whole file */
    uint64_t bytes;
} br_manifest_file;

typedef struct br_manifest_feed {
    char name[BR_MANIFEST_NAME_MAX + 1]; /* [a-z0-9_] (a STATS field's suffix) */
    int64_t last_success;                /* unix time; -1: never */
    uint64_t entries;
    bool held; /* its last poll failed: it keeps its last good entries */
    char reason[BR_MANIFEST_REASON_MAX + 1];
} br_manifest_feed;

typedef struct br_manifest {
    uint32_t kind; /* BR_KIND_URL_SHA256 */
    uint64_t generation;
    int64_t published;
    int64_t cycle_s; /* the publisher's period; 0: none announced (--once) */
    br_manifest_file base;
    br_manifest_file *deltas; /* generations base+1, base+2, ... */
    size_t n_deltas;
    br_manifest_feed *feeds;
    size_t n_feeds;
} br_manifest;

void br_manifest_fini(br_manifest *m);
/* True for a feed name the manifest and STATS take. */
bool br_manifest_feed_name_ok(const char *name);
/* The text of m (malloc'ed, *len bytes). */
int br_manifest_format(const br_manifest *m, char **text, size_t *len);
/* Parse and check: every line known, names valid, the deltas' generations
 * base+1, base+2, ... up to generation (a gap is refused), generation
 * never below the base's. Errors name the line: "manifest:7: ...". */
int br_manifest_parse(const char *text, size_t len, br_manifest *m, br_error *err);
/* manifest.sig for text. */
int br_manifest_sign(const br_sign_key *secret, const char *text, size_t len,
                     uint8_t sig[BR_MANIFEST_SIG_SIZE], br_error *err);
/* 0 when sig is text's signature by pub; -EKEYREJECTED (another key, a bad
 * signature) or -EINVAL (not a manifest signature) with the reason. */
int br_manifest_verify(const br_sign_key *pub, const char *text, size_t len, const uint8_t *sig,
                       size_t sig_len, br_error *err);

/* What a follower holding a set (base generation and file SHA-256, newest
 * generation; have_base false: nothing yet) must fetch to reach m. */
typedef struct br_manifest_plan {
    bool take_base;     /* the base first (none held, another base, or a gap) */
    size_t first_delta; /* then m->deltas[first_delta..n_deltas) */
} br_manifest_plan;

/* Refuses (-ESTALE, reason in err) a manifest older than what the host
 * has: a generation below have_generation, or the same generation with an
 * earlier publication time (a replay); last_published < 0: none seen.
 * 0 and plan otherwise (plan empty when nothing is new). */
int br_manifest_plan_for(const br_manifest *m, bool have_base, const uint8_t have_base_sha[32],
                         uint64_t have_generation, int64_t last_published, br_manifest_plan *plan,
                         br_error *err);

/* When a follower's poll after last_poll_ms is due (milliseconds of the
 * real clock): one interval later; when the manifest held announced the
 * publisher's period (cycle_s > 0), at the first of its cycle starts
 * (published + k * cycle) plus the host's lag, between cycle/6 and cycle/2
 * by lag_draw (0..65535), no earlier than half a cycle (or half an
 * interval) before one interval: once a cycle at most. */
typedef struct br_manifest_when {
    int64_t last_poll_ms, interval_ms;
    int64_t published, cycle_s; /* of the manifest held; published -1: none */
    uint16_t lag_draw;
} br_manifest_when;
int64_t br_manifest_next_poll_ms(const br_manifest_when *w);
