/* SPDX-License-Identifier: MIT */
/* Socket protocol v1 (docs/protocol.md): one request per line,
 *   request  = ID SP VERB [SP ARG]          ID = 1..16 of [A-Za-z0-9._-]
 *   response = ID SP STATUS [SP FIELDS]
 * This module only parses and formats lines, requests (the daemon's side)
 * and answers (the clients' side); it never logs, and its error texts never
 * echo an argument (a request argument may be a hash). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"
#include "core/nthash.h"
#include "core/lane.h"

#define BR_PROTO_VERSION 1
#define BR_PROTO_MAX_LINE 8192 /* bytes, without the LF */
#define BR_PROTO_MAX_ID 16
#define BR_PROTO_NO_ID "-"

/* The verbs of docs/protocol.md, one row each, in the order of their
 * br_verb values (and of the requests_VERB figures of STATS): the verb, the
 * kind of its argument (br_verb_arg), and the texts of ERR bad-request when
 * the argument is missing and when it is malformed (NULL for NONE). This is
 * the only list of verbs: the enum below, the parser and its "verbs are"
 * text, and the daemon's handler table (daemon/dispatch.c, which does not
 * compile without a handler for every row) are made from it. Adding a verb:
 * docs/architecture.md, "Adding a verb". */
#define BR_VERBS(X)                                                                                \
    X(PING, NONE, NULL, NULL)                                                                      \
    X(VERSION, NONE, NULL, NULL)                                                                   \
    X(PW, SHA1, "PW needs a SHA-1 (40 hex digits)", "PW takes a SHA-1 of 40 hex digits")           \
    X(URL, URL, "URL needs a URL", "a URL cannot contain a space (percent-encode it)")             \
    X(STATS, NONE, NULL, NULL)                                                                     \
    X(RELOAD, NONE, NULL, NULL)                                                                    \
    X(NT, NT, "NT needs an NT hash (32 hex digits)", "NT takes an NT hash of 32 hex digits")       \
    X(LANE, LANE, "LANE needs bulk or interactive", "LANE takes bulk or interactive")              \
    X(SIMILAR, SIMILAR, "SIMILAR needs sha1 or nt and hashes",                                     \
      "SIMILAR takes sha1 or nt and 1 to 128 hashes")                                              \
    X(BANNED, INDEX, "BANNED needs the index of the first term (0: from the start)",               \
      "BANNED takes a term index of 1 to 5 digits")

/* clang-format off */
typedef enum br_verb {
#define BR_VERB_ENUM_(name, arg, missing, bad) BR_VERB_##name,
    BR_VERBS(BR_VERB_ENUM_)
#undef BR_VERB_ENUM_
    BR_VERB_COUNT_,
} br_verb;
/* clang-format on */

/* The kinds of argument a verb takes: each is one rule of the parser
 * (protocol.c, parse_arg), shared by every verb of that kind. */
typedef enum br_verb_arg {
    BR_ARG_NONE,    /* no argument */
    BR_ARG_SHA1,    /* 40 hex digits, any case: req->sha1 */
    BR_ARG_NT,      /* 32 hex digits, any case: req->nt */
    BR_ARG_URL,     /* 1+ bytes without a space: req->arg (judged by the daemon) */
    BR_ARG_LANE,    /* "bulk" or "interactive": req->lane */
    BR_ARG_SIMILAR, /* "sha1 " or "nt " and more: req->arg (protocol_similar.h reads it) */
    BR_ARG_INDEX,   /* 1..5 decimal digits: req->index */
    BR_ARG_COUNT_,
} br_verb_arg;

/* Error codes of `ERR <code> <text>`. */
typedef enum br_proto_err {
    BR_PERR_NONE = 0,
    BR_PERR_BAD_REQUEST,
    BR_PERR_BAD_ID,
    BR_PERR_UNKNOWN_VERB,
    BR_PERR_LINE_TOO_LONG,
    BR_PERR_SECRET_CLASS,
    BR_PERR_BUSY,
    BR_PERR_FORBIDDEN,
    BR_PERR_RELOAD_FAILED,
    BR_PERR_SHUTTING_DOWN,
    BR_PERR_COUNT_,
} br_proto_err;

typedef struct br_request {
    char id[BR_PROTO_MAX_ID + 1]; /* "-" when the line had no usable id */
    br_verb verb;
    const char *arg; /* points into the parsed line; NULL when none */
    size_t arg_len;
    uint8_t sha1[BR_SHA1_LEN]; /* PW: the decoded hash */
    uint8_t nt[BR_NT_LEN];     /* NT: the decoded NT hash */
    br_lane lane;              /* LANE: the lane asked for */
    uint32_t index;            /* BANNED: the first term asked for */
} br_request;

typedef struct br_proto_error {
    br_proto_err code;
    const char *text; /* static human text, never the argument */
} br_proto_error;

const char *br_verb_name(br_verb v);
/* The kind of v's argument (BR_ARG_NONE for a value out of range). */
br_verb_arg br_verb_arg_kind(br_verb v);
const char *br_proto_err_name(br_proto_err e);

/* Parse one line without its LF (a final CR is dropped here). On failure
 * returns false with *e set and req->id set to the line's id when it had a
 * valid one, else "-". A URL argument is not judged here (the daemon
 * applies the e-mail rule of url_secret.h to its expressions); a PW
 * argument must be exactly 40 hex digits, an NT argument exactly 32; a LANE
 * argument "bulk" or "interactive"; a BANNED argument 1 to 5 decimal
 * digits. A SIMILAR argument is only taken
 * (arg, arg_len): br_similar_request_parse (protocol_similar.h) reads it. */
bool br_request_parse(const char *line, size_t len, br_request *req, br_proto_error *e);

/* Format "ID ERR code text\n" into buf; returns the length (truncated to
 * fit, the line still ending in LF). The daemon writes its error answers
 * with it (bd_conn_reply_error). */
size_t br_format_error(char *buf, size_t size, const char *id, br_proto_err code, const char *text);

/* ---- answers (the clients' side) ---- */

typedef enum br_answer_kind {
    BR_ANSWER_NONE = 0, /* not answered (yet) */
    BR_ANSWER_CLEAN,    /* PW: not in the corpus */
    BR_ANSWER_PWNED,    /* PW: in the corpus, count set */
    BR_ANSWER_SAFE,     /* URL: not blocked */
    BR_ANSWER_BLOCKED,  /* URL: blocked, category and detail (the expression) set */
    BR_ANSWER_UNKNOWN,  /* a maybe that could not be resolved; detail = reason */
    BR_ANSWER_ERROR,    /* ERR from the daemon; detail = "code text" */
    BR_ANSWER_OTHER,    /* PONG, VERSION, STATS, RELOADED: detail = the rest of the line */
} br_answer_kind;

typedef struct br_answer {
    br_answer_kind kind;
    uint64_t count;
    char category[33];
    char detail[8192];
} br_answer;

const char *br_answer_kind_name(br_answer_kind k);

/* Parse the status and its fields (an answer line after "ID ", not
 * NUL-terminated, len bytes) into a: CLEAN, PWNED <count>, SAFE, BLOCKED
 * <category> <expression>, UNKNOWN <reason>, ERR <code> <text>; any other
 * status is BR_ANSWER_OTHER with the whole text in detail. Fields too long
 * for a are cut. */
void br_answer_parse(const char *s, size_t len, br_answer *a);

/* Parse one response line (without its LF; a final CR is dropped) into the
 * id and the answer, for clients that run their own event loop (the Squid
 * helper). 0, or -EINVAL for a line without "ID SP STATUS". */
int br_answer_parse_line(const char *line, size_t len, char id[BR_PROTO_MAX_ID + 1], br_answer *a);
