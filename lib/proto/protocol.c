/* SPDX-License-Identifier: MIT */
/* Socket protocol v1 lines: requests parsed, errors formatted (the
 * daemon's side), answers parsed (the clients' side). See protocol.h. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "protocol.h"

/* One row of BR_VERBS (protocol.h). */
typedef struct verb_row {
    const char *name;
    size_t name_len;
    br_verb_arg arg;
    const char *missing; /* ERR bad-request text: no argument */
    const char *bad;     /* ERR bad-request text: a malformed one */
} verb_row;

static const verb_row verbs[BR_VERB_COUNT_] = {
#define VERB_ROW_(name, arg, missing, bad)                                                         \
    [BR_VERB_##name] = {#name, sizeof(#name) - 1, BR_ARG_##arg, missing, bad},
    BR_VERBS(VERB_ROW_)
#undef VERB_ROW_
};

/* The text of ERR unknown-verb: every verb, in the table's order. */
#define VERB_WORD_(name, arg, missing, bad) " " #name
static const char unknown_verb_text[] = "verbs are" BR_VERBS(VERB_WORD_);
#undef VERB_WORD_

static const char *const err_names[BR_PERR_COUNT_] = {
    [BR_PERR_NONE] = "none",
    [BR_PERR_BAD_REQUEST] = "bad-request",
    [BR_PERR_BAD_ID] = "bad-id",
    [BR_PERR_UNKNOWN_VERB] = "unknown-verb",
    [BR_PERR_LINE_TOO_LONG] = "line-too-long",
    [BR_PERR_SECRET_CLASS] = "secret-class",
    [BR_PERR_BUSY] = "busy",
    [BR_PERR_FORBIDDEN] = "forbidden",
    [BR_PERR_RELOAD_FAILED] = "reload-failed",
    [BR_PERR_SHUTTING_DOWN] = "shutting-down",
};

const char *br_verb_name(br_verb v)
{
    return v < BR_VERB_COUNT_ ? verbs[v].name : "?";
}

br_verb_arg br_verb_arg_kind(br_verb v)
{
    return v < BR_VERB_COUNT_ ? verbs[v].arg : BR_ARG_NONE;
}

const char *br_proto_err_name(br_proto_err e)
{
    return e < BR_PERR_COUNT_ ? err_names[e] : "?";
}

/* The bytes an id may hold (docs/protocol.md): A-Z a-z 0-9 . _ - */
static const bool id_chars[256] = {
    ['A' ... 'Z'] = true, ['a' ... 'z'] = true, ['0' ... '9'] = true,
    ['.'] = true,         ['_'] = true,         ['-'] = true,
};

static bool is_id_char(unsigned char c)
{
    return id_chars[c];
}

static bool fail(br_proto_error *e, br_proto_err code, const char *text)
{
    e->code = code;
    e->text = text;
    return false;
}

/* LANE's argument: the lane's name, exactly (case-sensitive, like verbs). */
static bool parse_lane(const char *arg, size_t len, br_lane *out)
{
    for (int l = BR_LANE_INTERACTIVE; l <= BR_LANE_BULK; l++) {
        const char *name = br_lane_name((br_lane)l);
        if (strlen(name) == len && memcmp(name, arg, len) == 0) {
            *out = (br_lane)l;
            return true;
        }
    }
    return false;
}

/* True when one of the n bytes at p is a control byte (below 0x20, or
 * 0x7f), eight bytes at a time: a byte below 0x20 borrows in x - 0x20..
 * where x's own top bit is clear (the "has less" test of Bit Twiddling
 * Hacks, exact as a yes or no); 0x7f is a zero of x ^ 0x7f.. . Every
 * request line goes through this. */
static bool has_control(const char *p, size_t n)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        uint64_t x, y;
        memcpy(&x, p + k, 8);
        y = x ^ (ones * 0x7f);
        if ((((x - ones * 0x20) & ~x) | ((y - ones) & ~y)) & highs)
            return true;
    }
    for (; k < n; k++) {
        unsigned char c = (unsigned char)p[k];
        if (c < 0x20 || c == 0x7f)
            return true;
    }
    return false;
}

/* BANNED's argument: 1 to 5 decimal digits. */
static bool parse_index(const char *arg, size_t len, uint32_t *out)
{
    uint32_t v = 0;
    if (len == 0 || len > 5)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (arg[i] < '0' || arg[i] > '9')
            return false;
        v = v * 10 + (uint32_t)(arg[i] - '0');
    }
    *out = v;
    return true;
}

/* The id at the start of the line into req->id; *end: where it ends. */
static bool parse_id(const char *line, size_t len, br_request *req, size_t *end, br_proto_error *e)
{
    size_t i = 0;
    /* one pass while the id is well formed (every request goes through it) */
    while (i < len && i <= BR_PROTO_MAX_ID && is_id_char((unsigned char)line[i]))
        i++;
    if (i == 0 || i > BR_PROTO_MAX_ID || i == len || line[i] != ' ') {
        /* the error, if any, in the order of the rules */
        while (i < len && line[i] != ' ')
            i++;
        if (i == 0)
            return fail(e, BR_PERR_BAD_ID, "the line does not start with an id");
        if (i > BR_PROTO_MAX_ID)
            return fail(e, BR_PERR_BAD_ID, "id longer than 16 characters");
        for (size_t k = 0; k < i; k++)
            if (!is_id_char((unsigned char)line[k]))
                return fail(e, BR_PERR_BAD_ID, "id characters must be A-Z a-z 0-9 . _ -");
    }
    memcpy(req->id, line, i);
    req->id[i] = '\0';
    *end = i;
    return true;
}

/* The n bytes at a and b are the same (n is a verb's length: a loop beats
 * a call of memcmp). */
static bool same_bytes(const char *a, const char *b, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (a[k] != b[k])
            return false;
    return true;
}

/* The verb from line[vs], up to the next space or the end (*end). */
static bool parse_verb(const char *line, size_t vs, size_t len, br_verb *verb, size_t *end,
                       br_proto_error *e)
{
    size_t ve = vs;
    while (ve < len && line[ve] != ' ')
        ve++;
    if (ve == vs)
        return fail(e, BR_PERR_BAD_REQUEST, "fields must be separated by one space");
    size_t vlen = ve - vs;
    for (int v = 0; v < BR_VERB_COUNT_; v++) {
        if (verbs[v].name_len == vlen && same_bytes(verbs[v].name, line + vs, vlen)) {
            *verb = (br_verb)v;
            *end = ve;
            return true;
        }
    }
    return fail(e, BR_PERR_UNKNOWN_VERB, unknown_verb_text);
}

/* The argument of req->verb (arg[0..alen), after its one space), by the
 * rule of its kind. */
static bool parse_arg(const char *arg, size_t alen, br_request *req, br_proto_error *e)
{
    if (alen == 0 || arg[0] == ' ')
        return fail(e, BR_PERR_BAD_REQUEST, "fields must be separated by one space");
    bool ok = false;
    switch (verbs[req->verb].arg) {
    case BR_ARG_SHA1:
        ok = alen == 2 * BR_SHA1_LEN && br_hex_decode(arg, BR_SHA1_LEN, req->sha1);
        break;
    case BR_ARG_NT:
        ok = alen == 2 * BR_NT_LEN && br_hex_decode(arg, BR_NT_LEN, req->nt);
        break;
    case BR_ARG_LANE:
        ok = parse_lane(arg, alen, &req->lane);
        break;
    case BR_ARG_URL:
        ok = !memchr(arg, ' ', alen);
        break;
    case BR_ARG_SIMILAR: /* the kind here; the hashes read by br_similar_request_parse */
        ok = (alen > 5 && memcmp(arg, "sha1 ", 5) == 0) || (alen > 3 && memcmp(arg, "nt ", 3) == 0);
        break;
    case BR_ARG_INDEX:
        ok = parse_index(arg, alen, &req->index);
        break;
    case BR_ARG_NONE:
    case BR_ARG_COUNT_:
        break; /* not reached: br_request_parse refuses an argument first */
    }
    if (!ok)
        return fail(e, BR_PERR_BAD_REQUEST, verbs[req->verb].bad);
    req->arg = arg;
    req->arg_len = alen;
    return true;
}

/* The verb after the id (line[i] is its space), then its argument. */
static bool parse_verb_and_arg(const char *line, size_t i, size_t len, br_request *req,
                               br_proto_error *e)
{
    size_t ve;
    if (!parse_verb(line, i + 1, len, &req->verb, &ve, e))
        return false;
    bool takes_arg = br_verb_arg_kind(req->verb) != BR_ARG_NONE;
    if (ve == len) {
        if (takes_arg)
            return fail(e, BR_PERR_BAD_REQUEST, verbs[req->verb].missing);
        return true;
    }
    if (!takes_arg)
        return fail(e, BR_PERR_BAD_REQUEST, "this verb takes no argument");
    return parse_arg(line + ve + 1, len - ve - 1, req, e);
}

bool br_request_parse(const char *line, size_t len, br_request *req, br_proto_error *e)
{
    memset(req, 0, sizeof(*req));
    strcpy(req->id, BR_PROTO_NO_ID);
    e->code = BR_PERR_NONE;
    e->text = NULL;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len > BR_PROTO_MAX_LINE)
        return fail(e, BR_PERR_LINE_TOO_LONG, "line longer than 8192 bytes");
    if (len == 0)
        return fail(e, BR_PERR_BAD_REQUEST, "empty line");
    size_t i;
    if (!parse_id(line, len, req, &i, e))
        return false;
    if (i == len)
        return fail(e, BR_PERR_BAD_REQUEST, "no verb after the id");

    /* Control bytes anywhere after the id (tabs, NUL, a stray CR) are refused
     * before anything else is said of the verb or the argument: looked for
     * when the rest did not parse, or parsed by a rule that lets them
     * through. A verb's name and the arguments of the other rules (hex
     * digits, a lane's name, decimal digits) hold none. */
    bool ok = parse_verb_and_arg(line, i, len, req, e);
    bool exact = ok && verbs[req->verb].arg != BR_ARG_URL && verbs[req->verb].arg != BR_ARG_SIMILAR;
    if (!exact && has_control(line + i, len - i))
        return fail(e, BR_PERR_BAD_REQUEST, "control character in the request");
    return ok;
}

size_t br_format_error(char *buf, size_t size, const char *id, br_proto_err code, const char *text)
{
    int n = snprintf(buf, size, "%s ERR %s %s\n", id, br_proto_err_name(code), text);
    if (n < 0)
        return 0;
    if ((size_t)n >= size) {
        buf[size - 2] = '\n';
        return size - 1;
    }
    return (size_t)n;
}

/* ---- answers ---- */

const char *br_answer_kind_name(br_answer_kind k)
{
    static const char *const names[] = {"NONE",    "CLEAN",   "PWNED", "SAFE",
                                        "BLOCKED", "UNKNOWN", "ERR",   "OTHER"};
    return k <= BR_ANSWER_OTHER ? names[k] : "?";
}

/* dst (size bytes) = the first n bytes of src, up to a NUL, cut to fit:
 * snprintf's "%.*s" without its format parsing (an answer line is parsed
 * for every check the Squid helper forwards). */
static void copy_field(char *dst, size_t size, const char *src, size_t n)
{
    n = strnlen(src, n < size - 1 ? n : size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void br_answer_parse(const char *s, size_t len, br_answer *a)
{
    memset(a, 0, offsetof(br_answer, detail) + 1);
    const char *sp = memchr(s, ' ', len);
    size_t slen = sp ? (size_t)(sp - s) : len;
    const char *rest = sp ? sp + 1 : s + len;
    size_t rlen = (size_t)(s + len - rest);
#define IS(word) (slen == strlen(word) && memcmp(s, word, slen) == 0)
    if (IS("CLEAN")) {
        a->kind = BR_ANSWER_CLEAN;
    } else if (IS("PWNED")) {
        a->kind = BR_ANSWER_PWNED;
        /* Within the line: it need not be NUL-terminated. A count too
         * large for 64 bits saturates: it must not wrap to a small one. */
        for (size_t k = 0; k < rlen && rest[k] >= '0' && rest[k] <= '9'; k++) {
            uint64_t d = (uint64_t)(rest[k] - '0');
            a->count = a->count > (UINT64_MAX - d) / 10 ? UINT64_MAX : a->count * 10 + d;
        }
    } else if (IS("SAFE")) {
        a->kind = BR_ANSWER_SAFE;
    } else if (IS("BLOCKED")) {
        a->kind = BR_ANSWER_BLOCKED;
        const char *sp2 = memchr(rest, ' ', rlen);
        size_t clen = sp2 ? (size_t)(sp2 - rest) : rlen;
        copy_field(a->category, sizeof(a->category), rest, clen);
        if (sp2) {
            rest = sp2 + 1;
            rlen = (size_t)(s + len - rest);
        } else {
            rlen = 0;
        }
    } else if (IS("UNKNOWN")) {
        a->kind = BR_ANSWER_UNKNOWN;
    } else if (IS("ERR")) {
        a->kind = BR_ANSWER_ERROR;
    } else {
        a->kind = BR_ANSWER_OTHER;
        rest = s;
        rlen = len;
    }
#undef IS
    if (a->kind == BR_ANSWER_CLEAN || a->kind == BR_ANSWER_PWNED || a->kind == BR_ANSWER_SAFE)
        rlen = 0;
    copy_field(a->detail, sizeof(a->detail), rest, rlen);
}

int br_answer_parse_line(const char *line, size_t len, char id[BR_PROTO_MAX_ID + 1], br_answer *a)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    const char *sp = memchr(line, ' ', len);
    if (!sp || sp == line || (size_t)(sp - line) > BR_PROTO_MAX_ID)
        return -EINVAL;
    memcpy(id, line, (size_t)(sp - line));
    id[sp - line] = '\0';
    br_answer_parse(sp + 1, len - (size_t)(sp - line) - 1, a);
    return 0;
}
