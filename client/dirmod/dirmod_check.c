/* SPDX-License-Identifier: MIT */
/* One question to breachd for a directory module, and the decision
 * (docs/directories.md, "What the user sees", "Failure policies"). The
 * client library hashes the password and wipes its copies: only "PW
 * <sha1>" is sent. Every failure (no socket, a timeout, garbage, an ERR)
 * is one DM_ERROR answer, decided by on_error; there is no partial
 * answer. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/client.h"
#include "proto/client_text.h"
#include "dirmod.h"
#include "core/util.h"
#include "banned/banned.h"
#include "similar/similar.h"

void dm_ask(const dm_options *o, const char *password, size_t len, dm_answer *out)
{
    memset(out, 0, sizeof(*out));
    br_error err = {{0}};
    br_answer a;
    int r = br_client_ask(o->socket, o->timeout_ms, password, len, &a, &err);
    if (r < 0) {
        char detail[160];
        out->kind = DM_ERROR;
        br_client_safe_text(err.text[0] ? err.text : strerror(-r), detail, sizeof(detail));
        snprintf(out->reason, sizeof(out->reason), "%s (%.140s)", br_client_failure_reason(r),
                 detail);
    } else if (a.kind == BR_ANSWER_CLEAN) {
        out->kind = DM_CLEAN;
    } else if (a.kind == BR_ANSWER_PWNED) {
        out->kind = DM_PWNED;
        out->count = a.count;
    } else if (a.kind == BR_ANSWER_UNKNOWN) {
        out->kind = DM_UNKNOWN;
        br_client_first_word(a.detail, out->reason, sizeof(out->reason));
    } else {
        char code[48];
        out->kind = DM_ERROR;
        br_client_first_word(a.detail, code, sizeof(code));
        snprintf(out->reason, sizeof(out->reason), "unexpected answer %s %s",
                 br_answer_kind_name(a.kind), a.kind == BR_ANSWER_ERROR ? code : "");
    }
    br_wipe(&a, sizeof(a));
}

void dm_ask_similar(const dm_options *o, const char *password, size_t len, dm_answer *a)
{
    bool accepted = a->kind == DM_CLEAN || (a->kind == DM_PWNED && a->count < o->min_count);
    if (!accepted || o->similar == DM_SIMILAR_OFF)
        return;
    br_error err = {{0}};
    br_similar_answer sa = {0};
    _cleanup_(br_client_freep) br_client *c = NULL;
    br_similar *sim = br_similar_new(BR_SIMILAR_SHA1, &err);
    uint8_t(*h)[BR_SHA1_LEN] = calloc(BR_SIMILAR_MAX, BR_SHA1_LEN);
    int n = !sim || !h ? -ENOMEM : br_similar_hashes(sim, password, len, h, NULL, BR_SIMILAR_MAX);
    if (n >= 0 && br_client_connect(o->socket, o->timeout_ms, &c, &err) == 0 &&
        br_client_check_similar(c, false, (const uint8_t *)h, (size_t)n, &sa, &err) == 0 &&
        sa.similar && sa.count >= o->similar_min_count) {
        a->similar = true;
        a->similar_count = sa.count;
    }
    if (h)
        br_wipe(h, BR_SIMILAR_MAX * BR_SHA1_LEN);
    free(h);
    br_similar_free(sim);
    br_wipe(&sa, sizeof(sa));
}

void dm_seen_times(uint64_t count, char *buf, size_t size)
{
    char digits[24], grouped[32];
    int n = snprintf(digits, sizeof(digits), "%" PRIu64, count);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < sizeof(grouped); i++) {
        if (i > 0 && (n - i) % 3 == 0)
            grouped[o++] = ',';
        grouped[o++] = digits[i];
    }
    grouped[o] = '\0';
    if (count == 1)
        snprintf(buf, size, "once");
    else
        snprintf(buf, size, "%s times", grouped);
}

static void decide_rest(const dm_options *o, const dm_answer *a, dm_result *r);

/* An accepted password that is a small change of a popular breached one:
 * refused (similar=reject) or logged (warn). The user sees which kind of
 * thing matched, never the password; the log line holds no count. */
static void decide_similar(const dm_options *o, const dm_answer *a, dm_result *r)
{
    char seen[40];
    if (!a->similar || o->similar == DM_SIMILAR_OFF)
        return;
    r->accept = o->similar != DM_SIMILAR_REJECT;
    r->breached = !r->accept;
    dm_seen_times(a->similar_count, seen, sizeof(seen));
    snprintf(r->message, sizeof(r->message),
             "Password rejected: it is a small change of a password seen %s in data breaches",
             seen);
    snprintf(r->log, sizeof(r->log),
             "a new password is a small change of a popular breached password: %s",
             r->accept ? "accepted (similar=warn)" : "refused (similar=reject)");
}

/* Made of banned terms: refused (reject) before anything else, or one
 * log line (warn) once the rest accepted it. True when decided. */
static bool decide_banned(const dm_answer *a, dm_result *r, bool after)
{
    if (!a->banned || a->banned_reject == after || (after && !r->accept) || r->log[0])
        return false;
    const char *kind = br_banned_kinds_text(a->banned_kinds);
    r->accept = !a->banned_reject;
    r->breached = !r->accept;
    if (!r->accept)
        snprintf(r->message, sizeof(r->message), "Password rejected: it is made of %s", kind);
    snprintf(r->log, sizeof(r->log), "a new password is made of %s: %s", kind,
             r->accept ? "accepted (banned=warn)" : "refused (banned=reject)");
    return true;
}

void dm_decide(const dm_options *o, const dm_answer *a, dm_result *r)
{
    memset(r, 0, sizeof(*r));
    if (decide_banned(a, r, false))
        return;
    decide_rest(o, a, r);
    decide_banned(a, r, true);
}

static void decide_rest(const dm_options *o, const dm_answer *a, dm_result *r)
{
    char seen[40];
    switch (a->kind) {
    case DM_CLEAN:
        r->accept = true;
        decide_similar(o, a, r);
        return;
    case DM_PWNED:
        r->accept = a->count < o->min_count;
        if (r->accept) {
            decide_similar(o, a, r);
            return;
        }
        r->breached = !r->accept;
        dm_seen_times(a->count, seen, sizeof(seen));
        snprintf(r->message, sizeof(r->message),
                 "Password rejected: it has been seen %s in data breaches", seen);
        return;
    case DM_UNKNOWN:
        r->accept = o->on_unknown == DM_ALLOW;
        snprintf(r->log, sizeof(r->log), "breachd could not resolve a check (%s): %s", a->reason,
                 r->accept ? "accepted (on_unknown=allow)" : "refused");
        break;
    default:
        r->accept = o->on_error == DM_ALLOW;
        snprintf(r->log, sizeof(r->log), "cannot check a password with breachd: %s: %s", a->reason,
                 r->accept ? "accepted (on_error=allow)" : "refused");
        break;
    }
    snprintf(r->message, sizeof(r->message),
             "Password rejected: it could not be checked against known data breaches right now; "
             "try again later");
}

void dm_check_user(const dm_options *o, const char *password, size_t len, const dm_names *names,
                   dm_result *r)
{
    dm_answer a, ban = {0};
    dm_ask_banned(o, password, len, names, &ban);
    if (ban.banned && ban.banned_reject) { /* a refusal here sends nothing */
        a = ban;
    } else {
        dm_ask(o, password, len, &a);
        dm_ask_similar(o, password, len, &a);
        a.banned = ban.banned;
        a.banned_kinds = ban.banned_kinds;
    }
    dm_decide(o, &a, r);
    br_wipe(&a, sizeof(a));
}
