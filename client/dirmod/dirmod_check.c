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
#include <string.h>

#include <openssl/crypto.h>

#include "client.h"
#include "dirmod.h"

/* Text from breachd or the client library, for a log line: printable
 * ASCII only, and a run of 16 or more hex digits (a hash or part of one,
 * should a peer ever echo it) replaced by "[hex]". */
static void safe_text(const char *in, char *out, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; in[i] && o + 1 < size;) {
        size_t run = 0;
        while (br_hexval((unsigned char)in[i + run]) >= 0)
            run++;
        if (run >= 16) {
            int w = snprintf(out + o, size - o, "[hex]");
            o = w < 0 || (size_t)w >= size - o ? size - 1 : o + (size_t)w;
            i += run;
            continue;
        }
        for (size_t k = 0; k < (run ? run : 1) && o + 1 < size; k++, i++) {
            unsigned char c = (unsigned char)in[i];
            out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
        }
    }
    out[o] = '\0';
}

/* The first word of an answer's detail (an UNKNOWN reason, an ERR code). */
static void first_word(const char *in, char *out, size_t size)
{
    char tmp[48];
    size_t n = strcspn(in, " ");
    snprintf(tmp, sizeof(tmp), "%.*s", (int)(n < sizeof(tmp) - 1 ? n : sizeof(tmp) - 1), in);
    safe_text(tmp[0] ? tmp : "no reason given", out, size);
}

static const char *error_reason(int r)
{
    switch (r) {
    case -ENOENT:
    case -ECONNREFUSED:
        return "breachd is not running";
    case -EACCES:
    case -EPERM:
        return "no permission to use breachd's socket";
    case -ETIMEDOUT:
        return "no answer in time";
    default:
        return "cannot talk to breachd";
    }
}

static int64_t now_ms(void)
{
    return (int64_t)(br_now_ns() / 1000000u);
}

void dm_ask(const dm_options *o, const char *password, size_t len, dm_answer *out)
{
    memset(out, 0, sizeof(*out));
    br_error err = {{0}};
    br_answer a;
    memset(&a, 0, sizeof(a));
    int64_t deadline = now_ms() + o->timeout_ms;
    _cleanup_(br_client_freep) br_client *c = NULL;
    int r = br_client_connect(o->socket, o->timeout_ms, &c, &err);
    if (r == 0) {
        int64_t left = deadline - now_ms();
        br_client_set_timeout(c, left < 1 ? 1 : (int)left);
        r = br_client_check_password(c, password, len, &a, &err);
    }
    if (r < 0) {
        char detail[160];
        out->kind = DM_ERROR;
        safe_text(err.text[0] ? err.text : strerror(-r), detail, sizeof(detail));
        snprintf(out->reason, sizeof(out->reason), "%s (%.140s)", error_reason(r), detail);
    } else if (a.kind == BR_ANSWER_CLEAN) {
        out->kind = DM_CLEAN;
    } else if (a.kind == BR_ANSWER_PWNED) {
        out->kind = DM_PWNED;
        out->count = a.count;
    } else if (a.kind == BR_ANSWER_UNKNOWN) {
        out->kind = DM_UNKNOWN;
        first_word(a.detail, out->reason, sizeof(out->reason));
    } else {
        char code[48];
        out->kind = DM_ERROR;
        first_word(a.detail, code, sizeof(code));
        snprintf(out->reason, sizeof(out->reason), "unexpected answer %s %s",
                 br_answer_kind_name(a.kind), a.kind == BR_ANSWER_ERROR ? code : "");
    }
    OPENSSL_cleanse(&a, sizeof(a));
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

void dm_decide(const dm_options *o, const dm_answer *a, dm_result *r)
{
    char seen[40];
    memset(r, 0, sizeof(*r));
    switch (a->kind) {
    case DM_CLEAN:
        r->accept = true;
        return;
    case DM_PWNED:
        r->accept = a->count < o->min_count;
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

void dm_check(const dm_options *o, const char *password, size_t len, dm_result *r)
{
    dm_answer a;
    dm_ask(o, password, len, &a);
    dm_decide(o, &a, r);
    OPENSSL_cleanse(&a, sizeof(a));
}
