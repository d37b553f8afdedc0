/* SPDX-License-Identifier: MIT */
/* One question to breachd over its socket (docs/protocol.md), through the
 * client library, which hashes the password and wipes its copies: only
 * "PW <sha1>" is sent. Nothing here logs; the outcome carries sanitized
 * text for the caller's message and log line. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proto/client.h"
#include "proto/client_text.h"
#include "pam_breachd.h"
#include "core/util.h"

/* An answer that is neither a verdict nor (for PING) PONG. */
static void unexpected(const br_answer *a, pb_outcome *out)
{
    char code[64];
    br_client_first_word(a->detail, code, sizeof(code));
    out->v = PB_ERROR;
    snprintf(out->reason, sizeof(out->reason), "breachd answered %s",
             a->kind == BR_ANSWER_ERROR ? code : "something unexpected");
    snprintf(out->detail, sizeof(out->detail), "unexpected answer %s %s",
             br_answer_kind_name(a->kind), code);
}

void pb_ask(const pb_options *o, const char *password, pb_outcome *out)
{
    memset(out, 0, sizeof(*out));
    br_error err = {{0}};
    br_answer a;
    int r = br_client_ask(o->socket, o->timeout_ms, password, password ? strlen(password) : 0, &a,
                          &err);
    if (r < 0) {
        out->v = PB_ERROR;
        snprintf(out->reason, sizeof(out->reason), "%s", br_client_failure_reason(r));
        br_client_safe_text(err.text[0] ? err.text : strerror(-r), out->detail,
                            sizeof(out->detail));
        return;
    }
    if (a.kind == BR_ANSWER_CLEAN || (a.kind == BR_ANSWER_OTHER && !password)) {
        out->v = PB_ACCEPT;
    } else if (a.kind == BR_ANSWER_PWNED) {
        out->v = PB_PWNED;
        out->count = a.count;
    } else if (a.kind == BR_ANSWER_UNKNOWN) {
        out->v = PB_UNKNOWN;
        br_client_first_word(a.detail, out->reason, sizeof(out->reason));
    } else {
        unexpected(&a, out);
    }
    br_wipe(&a, sizeof(a));
}

void pb_apply_min_count(const pb_options *o, pb_outcome *res)
{
    if (res->v == PB_PWNED && res->count < o->min_count)
        res->v = PB_ACCEPT;
}
