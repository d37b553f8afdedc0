/* SPDX-License-Identifier: MIT */
/* The blocking client of breachd's socket protocol, shared by breachctl, the
 * PAM module and the Squid helper. Every call has a deadline (poll), requests
 * can be pipelined in a batch, and answers are matched by id (they may come
 * out of order). Passwords are hashed here, with SHA-1 (PW) or to their NT
 * hash (NT, nthash.h), and every copy is wiped (OPENSSL_cleanse); the
 * library never writes a password anywhere. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/lane.h"
#include "core/nthash.h"
#include "protocol.h"
#include "protocol_terms.h"
#include "core/util.h"

typedef enum br_request_kind {
    BR_REQ_SHA1,         /* arg: 20 raw bytes */
    BR_REQ_URL,          /* arg: the URL text */
    BR_REQ_NT,           /* arg: 16 raw bytes, an NT hash (the NT verb) */
    BR_REQ_RAW,          /* arg: a verb with its argument, e.g. "PING", "STATS" */
    BR_REQ_SIMILAR_SHA1, /* arg: 1..128 raw SHA-1s, back to back (protocol_similar.h) */
    BR_REQ_SIMILAR_NT,   /* arg: 1..128 raw NT hashes, back to back */
} br_request_kind;

typedef struct br_client_request {
    br_request_kind kind;
    const void *arg;
    size_t arg_len;
    br_answer answer; /* filled by br_client_batch */
} br_client_request;

typedef struct br_client br_client;

/* Connect to the Unix socket at path within timeout_ms (a full listen
 * backlog is retried until then), then check who serves it
 * (br_client_check_peer). On failure err names the socket and the errno
 * (-ESRCH: served by an untrusted uid). */
int br_client_connect(const char *path, int timeout_ms, br_client **out, br_error *err);

/* Who may answer a client (docs/privacy.md "Who answers the clients"): the
 * peer of the connected Unix socket fd (SO_PEERCRED: the uid that called
 * listen(), systemd's root under socket activation) must be root, breachd's
 * user (meson option daemon_user, "breachd" by default) or the caller's own
 * effective uid (which could answer it anyway). 0, or -ESRCH with err
 * naming path and the uid ("... is served by uid 65534 (nobody), not
 * breachd: ..."); -errno when the peer cannot be read. So a socket left in
 * a directory others can write cannot be replaced by an impostor that
 * answers CLEAN. */
int br_client_check_peer(int fd, const char *path, br_error *err);
void br_client_free(br_client *c);
BR_DEFINE_FREEP(br_client, br_client_free)

/* Timeout of each following call, in ms (default: the connect timeout): a
 * call fails with -ETIMEDOUT when nothing was sent or received for that
 * long ("no progress"), so a long batch that keeps moving does not. */
void br_client_set_timeout(br_client *c, int timeout_ms);

/* Send n requests pipelined (at most window in flight) and wait for every
 * answer. 0, or -ETIMEDOUT / -EPIPE / -ECONNRESET / -EPROTO / -EPERM (a
 * refused peer) with err set; answers received before a failure are kept
 * (the others stay BR_ANSWER_NONE). Request ids are never reused on a
 * connection, so a late answer to an earlier, failed batch is ignored. An
 * argument that cannot be sent (URL with a space or control byte, too long)
 * is answered locally with BR_ANSWER_ERROR "bad-request ...". */
int br_client_batch(br_client *c, br_client_request *reqs, size_t n, size_t window, br_error *err);

/* One request each. */
int br_client_check_password(br_client *c, const void *password, size_t len, br_answer *a,
                             br_error *err);
int br_client_check_sha1(br_client *c, const uint8_t sha1[BR_SHA1_LEN], br_answer *a,
                         br_error *err);
/* NT: an NT hash, or a password hashed to one here (-ENOSYS with err set
 * when MD4 is not available, nthash.h). An older daemon answers NT with
 * ERR unknown-verb. */
int br_client_check_nt(br_client *c, const uint8_t nt[BR_NT_LEN], br_answer *a, br_error *err);
int br_client_check_password_nt(br_client *c, const void *password, size_t len, br_answer *a,
                                br_error *err);
int br_client_command(br_client *c, const char *verb, br_answer *a, br_error *err);

/* One question to breachd on a connection of its own, as the PAM and
 * directory modules ask it: connect to the socket at path, send "PW
 * <sha1>" of the password (len bytes; "PING" when password is NULL), take
 * the answer into *a, close.
 * Deadline: timeout_ms bounds the whole call, the connect (a full listen
 * backlog retried) and the exchange together; what the connect used is
 * taken off the exchange's time, which is at least 1 ms.
 * Errors: 0 with *a the answer (any kind: an ERR answer is an answer), or
 * the connect's failure (-ENOENT, -ECONNREFUSED, -EACCES, -ETIMEDOUT, -ESRCH
 * for an untrusted peer, ...)
 * or the exchange's (-ETIMEDOUT, -EPIPE, -ECONNRESET, -EPROTO, -EPERM: a
 * refused peer) with err set and *a zero (BR_ANSWER_NONE).
 * Privacy: only the password's SHA-1 leaves the process; the copies made
 * here are wiped, err never holds the password or its hash. The caller
 * wipes *a when done and its own password. */
int br_client_ask(const char *path, int timeout_ms, const void *password, size_t len, br_answer *a,
                  br_error *err);

/* The answer to a password's variants (docs/similar.md). */
typedef struct br_similar_answer {
    bool similar;    /* one variant is in the offline filter of popular passwords */
    uint64_t count;  /* then: the highest count among the hits */
    unsigned hits;   /* then: how many variants hit */
    bool unknown;    /* no answer: no offline filter, an older daemon, ... */
    char reason[64]; /* then why: "no-similar-filter", "unknown-verb", ... */
} br_similar_answer;

/* The variants' hashes (n raw SHA-1s, or NT hashes when nt, back to back:
 * br_similar_hashes of lib/similar/) sent as ceil(n / 128) SIMILAR
 * requests pipelined, their answers folded into *a: similar with the
 * highest count when any hit, else unknown when any could not be answered
 * (an older daemon's ERR unknown-verb gives reason "unknown-verb"), else
 * clean. n = 0 is clean without a request. 0, or a failure of the
 * exchange as br_client_batch. The caller wipes hashes. */
int br_client_check_similar(br_client *c, bool nt, const uint8_t *hashes, size_t n,
                            br_similar_answer *a, br_error *err);

/* Put the rest of this connection on lane (sends "LANE bulk" or "LANE
 * interactive", docs/protocol.md): 0; -EOPNOTSUPP with err set when the
 * daemon does not know the verb (an older one); -EPROTO for another answer;
 * or a failure of the exchange as br_client_batch. Bulk lookups are not
 * bound by the daemon's upstream deadline and may wait much longer than an
 * interactive one: raise the timeout (br_client_set_timeout) to match. */
int br_client_set_lane(br_client *c, br_lane lane, br_error *err);

/* The banned terms and the site's names breachd holds (BANNED, every page:
 * docs/banned.md), each handed to fn (kind 'b' or 's'); when a reload
 * changed them between pages, fn is called with kind 0 (forget those
 * handed so far) and the list is read again. The number of terms with
 * *min_score ([passwords] min_score); -EOPNOTSUPP with err for an older
 * daemon (no BANNED verb), -EPROTO, -EAGAIN (changed four times), fn's
 * negative return, or a failure of the exchange. */
int br_client_banned_terms(br_client *c, br_terms_fn fn, void *ctx, unsigned *min_score,
                           br_error *err);
/* Hash a password into sha1 and wipe nothing else: a helper for batches. */
int br_client_hash_password(const void *password, size_t len, uint8_t sha1[BR_SHA1_LEN]);
/* The same to an NT hash (br_nt_hash): 0, -ENOSYS (no MD4) or -EIO. */
int br_client_hash_password_nt(const void *password, size_t len, uint8_t nt[BR_NT_LEN]);
