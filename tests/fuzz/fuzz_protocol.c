/* SPDX-License-Identifier: MIT */
/* Fuzz target for the daemon's request-line parser, br_request_parse
 * (lib/proto/protocol.h, docs/protocol.md): what local clients send over the
 * socket. The input is one line without its LF (the daemon hands the parser
 * up to 8193 bytes; longer inputs reach the parser's own length check).
 *
 * Checked on every input, against the grammar of docs/protocol.md written
 * independently here (a violation aborts):
 *   - no crash or sanitizer report;
 *   - the parser accepts exactly the lines of the grammar
 *       ID SP VERB [SP ARG] [CR], ID = 1..16 of [A-Za-z0-9._-], at most 8192
 *       bytes before the CR, VERB one of the verbs of the protocol's table
 *       (BR_VERBS in protocol.h; case-sensitive), with an argument of the
 *       kind the table gives it: none, a SHA-1 of 40 hex digits (PW), an NT
 *       hash of 32 (NT), 1+ bytes with no space or control byte (URL),
 *       "bulk" or "interactive" (LANE);
 *   - a refusal has an error the daemon can answer with: a code among
 *     bad-request, bad-id, unknown-verb, line-too-long, a short printable
 *     text, and the id of the line when it starts with a valid one, else "-"
 *     (bad-id exactly when it does not; line-too-long exactly when over 8192
 *     bytes; unknown-verb only for a verb that is not in the table); the
 *     answer br_format_error builds is that one line, also when truncated;
 *   - an accepted request has a valid id that starts the line, a verb in
 *     range whose name is on the line, an argument inside the line exactly
 *     for the verbs that take one, the decoded hash of a SHA-1 or NT hash,
 *     the lane of a lane, and re-serialised (with and without CR, a SHA-1
 *     also in lowercase hex) it parses to the same request;
 *   - br_url_is_email (the e-mail rule) of a URL argument: true for mailto: in any case,
 *     false without an '@'. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "protocol.h"
#include "url_secret.h"

#define FUZZ_NAME "fuzz_protocol"
#include "fuzz_check.h"

/* The verbs and the kind of each one's argument come from the protocol's
 * one table (BR_VERBS, protocol.h): a verb added there is fuzzed at once.
 * Each kind's grammar is modelled here, independently of the parser. */
static br_verb_arg kind_of(int verb)
{
    return br_verb_arg_kind((br_verb)verb);
}

static bool id_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

static bool ctl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

/* The line as the grammar sees it. */
typedef struct ref {
    size_t len;    /* without the final CR */
    size_t id_len; /* of the first token (up to the first space) */
    bool id_ok;    /* that token is a valid id */
    int verb;      /* the br_verb named by the second token, -1 when none */
    bool accept;   /* the whole line is a valid request */
    uint8_t sha1[20];
    uint8_t nt[16];
} ref;

static void ref_parse(const char *s, size_t len, ref *r)
{
    memset(r, 0, sizeof(*r));
    r->verb = -1;
    if (len > 0 && s[len - 1] == '\r')
        len--;
    r->len = len;
    while (r->id_len < len && s[r->id_len] != ' ')
        r->id_len++;
    r->id_ok = r->id_len >= 1 && r->id_len <= BR_PROTO_MAX_ID;
    for (size_t i = 0; i < r->id_len; i++)
        r->id_ok = r->id_ok && id_char((unsigned char)s[i]);
    if (!r->id_ok || r->id_len == len)
        return;
    const char *v = s + r->id_len + 1;
    size_t rest = len - r->id_len - 1, vl = 0;
    while (vl < rest && v[vl] != ' ')
        vl++;
    for (int k = 0; k < BR_VERB_COUNT_; k++)
        if (strlen(br_verb_name((br_verb)k)) == vl && memcmp(br_verb_name((br_verb)k), v, vl) == 0)
            r->verb = k;
    if (r->verb < 0 || len > BR_PROTO_MAX_LINE)
        return;
    br_verb_arg kind = kind_of(r->verb);
    if (kind == BR_ARG_NONE) {
        r->accept = vl == rest;
        return;
    }
    if (vl == rest)
        return;
    const char *a = v + vl + 1;
    size_t al = rest - vl - 1;
    if (al == 0)
        return;
    if (kind == BR_ARG_SHA1 || kind == BR_ARG_NT) {
        size_t digits = kind == BR_ARG_SHA1 ? 40 : 32;
        uint8_t *out = kind == BR_ARG_SHA1 ? r->sha1 : r->nt;
        if (al != digits)
            return;
        for (size_t i = 0; i < digits; i++) {
            int hi = hexval((unsigned char)a[i]);
            if (hi < 0)
                return;
            if (i & 1)
                out[i / 2] |= (uint8_t)hi;
            else
                out[i / 2] = (uint8_t)(hi << 4);
        }
        r->accept = true;
        return;
    }
    if (kind == BR_ARG_LANE) {
        r->accept = (al == 4 && memcmp(a, "bulk", 4) == 0) ||
                    (al == 11 && memcmp(a, "interactive", 11) == 0);
        return;
    }
    CHECK(kind == BR_ARG_URL); /* a kind this model does not know yet */
    for (size_t i = 0; i < al; i++)
        if (a[i] == ' ' || ctl((unsigned char)a[i]))
            return;
    r->accept = true;
}

static void check_id(const char *id)
{
    size_t n = strnlen(id, BR_PROTO_MAX_ID + 1);
    CHECK(n >= 1 && n <= BR_PROTO_MAX_ID);
    for (size_t i = 0; i < n; i++)
        CHECK(id_char((unsigned char)id[i]));
}

/* The answer the daemon sends, in full and truncated to a buffer of cut bytes. */
static void check_answer(const br_request *req, const br_proto_error *e, size_t cut)
{
    char want[512], buf[512];
    const char *name = br_proto_err_name(e->code);
    CHECK(strcmp(name, "?") != 0 && strcmp(name, "none") != 0);
    int wn = snprintf(want, sizeof(want), "%s ERR %s %s\n", req->id, name, e->text);
    CHECK(wn > 0 && (size_t)wn < sizeof(want));
    size_t n = br_format_error(buf, sizeof(buf), req->id, e->code, e->text);
    CHECK(n == (size_t)wn && memcmp(buf, want, n) == 0);
    for (size_t i = 0; i + 1 < n; i++)
        CHECK(!ctl((unsigned char)buf[i]));
    CHECK(buf[n - 1] == '\n');
    cut = 2 + cut % ((size_t)wn + 2); /* 2 .. wn + 3 */
    memset(buf, 'Z', sizeof(buf));
    n = br_format_error(buf, cut, req->id, e->code, e->text);
    if ((size_t)wn < cut) {
        CHECK(n == (size_t)wn && memcmp(buf, want, n + 1) == 0);
    } else {
        CHECK(n == cut - 1 && buf[n - 1] == '\n' && buf[n] == '\0');
        CHECK(memcmp(buf, want, n - 1) == 0);
        CHECK(buf[cut] == 'Z');
    }
}

static void check_same(const br_request *a, const br_request *b)
{
    CHECK(strcmp(a->id, b->id) == 0);
    CHECK(a->verb == b->verb);
    CHECK(a->arg_len == b->arg_len);
    CHECK((a->arg == NULL) == (b->arg == NULL));
    if (a->arg)
        CHECK(memcmp(a->arg, b->arg, a->arg_len) == 0);
    CHECK(memcmp(a->sha1, b->sha1, sizeof(a->sha1)) == 0);
    CHECK(memcmp(a->nt, b->nt, sizeof(a->nt)) == 0);
    CHECK(a->lane == b->lane);
}

static void check_reparse(const br_request *req)
{
    size_t cap = BR_PROTO_MAX_LINE + 2;
    char *line = malloc(cap);
    CHECK(line);
    int n = snprintf(line, cap, "%s %s%s", req->id, br_verb_name(req->verb), req->arg ? " " : "");
    CHECK(n > 0 && (size_t)n + req->arg_len < cap);
    size_t len = (size_t)n;
    if (req->arg) {
        memcpy(line + len, req->arg, req->arg_len);
        len += req->arg_len;
    }
    br_request again;
    br_proto_error e;
    CHECK(br_request_parse(line, len, &again, &e));
    CHECK(e.code == BR_PERR_NONE);
    check_same(req, &again);
    line[len] = '\r';
    CHECK(br_request_parse(line, len + 1, &again, &e));
    check_same(req, &again);
    if (kind_of(req->verb) == BR_ARG_SHA1) {
        static const char d[] = "0123456789abcdef";
        char *a = line + (size_t)n;
        for (size_t i = 0; i < 20; i++) {
            a[2 * i] = d[req->sha1[i] >> 4];
            a[2 * i + 1] = d[req->sha1[i] & 15];
        }
        CHECK(br_request_parse(line, (size_t)n + 40, &again, &e));
        CHECK(memcmp(again.sha1, req->sha1, 20) == 0);
        CHECK(again.arg_len == 40 && memcmp(again.arg, a, 40) == 0);
    }
    free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes, so that ASan sees any read past the line. */
    char *line = malloc(size ? size : 1);
    CHECK(line);
    if (size)
        memcpy(line, data, size);

    ref r;
    ref_parse(line, size, &r);

    br_request req;
    br_proto_error e;
    memset(&req, 0xA5, sizeof(req));
    bool ok = br_request_parse(line, size, &req, &e);
    if (ok != r.accept)
        fprintf(stderr, "fuzz_protocol: parser %s, grammar %s (%s)\n", ok ? "accepts" : "refuses",
                r.accept ? "accepts" : "refuses", ok ? "-" : e.text);
    CHECK(ok == r.accept);
    CHECK(memchr(req.id, '\0', sizeof(req.id)) != NULL);

    if (!ok) {
        CHECK(e.code == BR_PERR_BAD_REQUEST || e.code == BR_PERR_BAD_ID ||
              e.code == BR_PERR_UNKNOWN_VERB || e.code == BR_PERR_LINE_TOO_LONG);
        CHECK(e.text != NULL);
        size_t tl = strlen(e.text);
        CHECK(tl > 0 && tl < 100);
        for (size_t i = 0; i < tl; i++)
            CHECK(!ctl((unsigned char)e.text[i]) && (unsigned char)e.text[i] < 0x80);
        CHECK((e.code == BR_PERR_LINE_TOO_LONG) == (r.len > BR_PROTO_MAX_LINE));
        if (e.code == BR_PERR_LINE_TOO_LONG || r.len == 0) {
            CHECK(strcmp(req.id, BR_PROTO_NO_ID) == 0);
            CHECK(r.len == 0 ? e.code == BR_PERR_BAD_REQUEST : true);
        } else if (r.id_ok) {
            CHECK(e.code != BR_PERR_BAD_ID);
            CHECK(strlen(req.id) == r.id_len && memcmp(req.id, line, r.id_len) == 0);
            check_id(req.id);
        } else {
            CHECK(e.code == BR_PERR_BAD_ID);
            CHECK(strcmp(req.id, BR_PROTO_NO_ID) == 0);
        }
        if (e.code == BR_PERR_UNKNOWN_VERB)
            CHECK(r.id_ok && r.verb < 0 && r.id_len + 1 < r.len && line[r.id_len + 1] != ' ');
        check_answer(&req, &e, size ? data[size - 1] : 0);
        free(line);
        return 0;
    }

    CHECK(e.code == BR_PERR_NONE && e.text == NULL);
    check_id(req.id);
    CHECK(strlen(req.id) == r.id_len && memcmp(req.id, line, r.id_len) == 0);
    CHECK(line[r.id_len] == ' ');
    CHECK(req.verb < BR_VERB_COUNT_ && (int)req.verb == r.verb);
    const char *vn = br_verb_name(req.verb);
    CHECK(memcmp(line + r.id_len + 1, vn, strlen(vn)) == 0);
    br_verb_arg kind = kind_of(r.verb);
    if (kind != BR_ARG_NONE) {
        CHECK(req.arg != NULL && req.arg_len >= 1);
        CHECK(req.arg >= line && req.arg + req.arg_len <= line + r.len);
        CHECK(req.arg == line + r.id_len + 1 + strlen(vn) + 1);
        CHECK(req.arg + req.arg_len == line + r.len);
        CHECK(memchr(req.arg, ' ', req.arg_len) == NULL);
        for (size_t i = 0; i < req.arg_len; i++)
            CHECK(!ctl((unsigned char)req.arg[i]));
        if (kind == BR_ARG_SHA1) {
            CHECK(req.arg_len == 40);
            CHECK(memcmp(req.sha1, r.sha1, 20) == 0);
        } else if (kind == BR_ARG_NT) {
            CHECK(req.arg_len == 32);
            CHECK(memcmp(req.nt, r.nt, 16) == 0);
        } else if (kind == BR_ARG_LANE) {
            CHECK(strlen(br_lane_name(req.lane)) == req.arg_len &&
                  memcmp(br_lane_name(req.lane), req.arg, req.arg_len) == 0);
        } else {
            bool secret = br_url_is_email(req.arg, req.arg_len);
            if (req.arg_len >= 7 && strncasecmp(req.arg, "mailto:", 7) == 0)
                CHECK(secret);
            else if (!memchr(req.arg, '@', req.arg_len))
                CHECK(!secret);
            CHECK(br_url_is_email(req.arg, req.arg_len) == secret);
        }
    } else {
        CHECK(req.arg == NULL && req.arg_len == 0);
        CHECK(r.len == r.id_len + 1 + strlen(vn));
    }
    check_reparse(&req);
    free(line);
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
