/* SPDX-License-Identifier: MIT */
/* Inside the feed reader (url_feed.c): the blocklist formats beyond URL
 * lists, hosts files and domain lists. Each parser takes one line at a time
 * and says what it is: a comment, a rule skipped on purpose (counted by
 * kind), one or more entries (domains or URLs, which url_feed.c turns into
 * lookup expressions), or a bad line with its reason. No parser logs, keeps
 * a line after the next call, or sees an entry's expression.
 *
 * The line rules of each format (what an entry is, what is skipped) are in
 * docs/breachctl.1 ("INPUT FORMATS") and README.md; in short:
 *  - adblock: `||domain^` (domain and subdomains), and a plain hostname
 *    line read as `||hostname^` as uBlock Origin reads it; `!` lines and
 *    `[...]` headers are comments; `@@` exceptions, `$options`, path rules
 *    and the other rule kinds (cosmetic `##`, `/regex/`, `|` anchors,
 *    wildcards, other substrings) are skipped by kind;
 *  - dnsmasq: `address=/d1/d2/.../[ADDR]` and `server=|local=/d/.../`
 *    (no upstream after the last '/'): each d a domain; `server=/d/ADDR`
 *    (forwarding) is skipped as non-blocking, other options as other;
 *  - unbound: `local-zone: "d" TYPE` with a refusing TYPE, and
 *    `local-data: "d ... "`: domains; transparent-like zones are skipped as
 *    non-blocking, other options as other;
 *  - rpz: a zone file; `$ORIGIN`, `$TTL`, `;` comments, `(` `)` continuation;
 *    SOA and NS records skipped as records; owner names relative or absolute
 *    (the origin suffix removed), `*.d` read as d; `CNAME .`, `CNAME *.`,
 *    `rpz-drop.`, other CNAME targets and A/AAAA data are entries;
 *    `rpz-passthru.` is skipped as passthru; rpz-ip / rpz-nsdname style
 *    triggers as triggers;
 *  - wildcard: `*.example.com` (or a bare domain) per line: the domain;
 *    '#' comments; more than one name, or a '*' elsewhere, is bad;
 *  - urlhaus, phishtank (CSV), csv: RFC 4180 records (url_feed_csv.c);
 *  - phishtank JSON: an array of objects with "url" (url_feed_json.c).
 * The formats are rows of one table (url_feed_formats.c): each row names its
 * parser and how detection tells it; the format list itself is
 * BR_FEED_FORMAT_LIST (url_feed.h). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "url_feed.h"

#define BR_FMT_MAX_ENTRIES 32
#define BR_FMT_REASON_MAX 160

typedef enum br_fmt_kind {
    BR_FMT_COMMENT, /* blank, comment, header */
    BR_FMT_SKIP,    /* a rule not indexed on purpose: res.skip says which */
    BR_FMT_ENTRIES, /* res.n entries under res.rule */
    BR_FMT_BAD,     /* res.reason */
    BR_FMT_PENDING, /* a CSV record goes on on the next line */
} br_fmt_kind;

typedef struct br_fmt_entry {
    const char *s;
    size_t n;
} br_fmt_entry;

typedef struct br_fmt_result {
    br_fmt_kind kind;
    br_feed_skip skip;
    br_feed_format rule; /* BR_FEED_DOMAINS or BR_FEED_URLS */
    uint64_t line;       /* the line to name in a message (a CSV record's first) */
    size_t n;
    br_fmt_entry e[BR_FMT_MAX_ENTRIES]; /* valid until the next call */
    char reason[BR_FMT_REASON_MAX];
} br_fmt_result;

typedef struct br_fmt_state br_fmt_state;

/* Who reads a format's lines: none (BR_FEED_AUTO, or a format without a row
 * in the table: never read as another), url_feed.c's own rules (urls,
 * hosts, domains), or br_fmt_line. */
typedef enum br_fmt_reader {
    BR_FMT_READER_NONE,
    BR_FMT_READER_PLAIN,
    BR_FMT_READER_LINES,
} br_fmt_reader;
br_fmt_reader br_fmt_reader_of(br_feed_format f);
/* The formats detection tries, in its order ("phishtank (JSON or CSV),
 * adblock, ..., urls"), for messages; cut to size. */
void br_fmt_tried(char *out, size_t size);

/* column: for csv, "N" (1-based, no header) or a header name; NULL for the
 * others. -EINVAL (with a reason) for a csv without a usable column or a
 * format br_fmt_line does not read, -ENOMEM. */
int br_fmt_state_new(br_feed_format f, const char *column, br_fmt_state **out, br_error *err);
void br_fmt_state_free(br_fmt_state *st);
/* One line: its line end and a leading byte order mark removed. 0 or -ENOMEM. */
int br_fmt_line(br_fmt_state *st, const char *s, size_t n, uint64_t lineno, br_fmt_result *res);
/* At the end of the input: BR_FMT_BAD for a CSV record left open, else
 * BR_FMT_PENDING (nothing to count). */
void br_fmt_finish(br_fmt_state *st, br_fmt_result *res);

/* Blanks (spaces and tabs) cut off at both ends of s[0..*n). */
void br_fmt_trim(const char **s, size_t *n);

/* The format of these sample lines when one of the formats here is clearly
 * it, else BR_FEED_AUTO. *json: the PhishTank JSON form. */
br_feed_format br_fmt_detect(const char *const *lines, const size_t *lens, size_t n, bool *json);

/* ---- the line parsers' state (url_feed_formats.c) ---- */

#define BR_FMT_NAME_MAX 255 /* a DNS name in text form */

/* What a parser keeps from line to line (rpz: the origin, the last owner,
 * an open parenthesis). */
typedef struct br_fmt_zone {
    char origin[BR_FMT_NAME_MAX + 1]; /* lower case, no final dot; "" when unset */
    char owner[BR_FMT_NAME_MAX + 1];  /* the last owner name, for lines that omit it */
    char entry[BR_FMT_NAME_MAX + 1];  /* the trigger name given out as an entry */
    int paren;                        /* open '(' of a multi-line record */
} br_fmt_zone;

/* ---- CSV records (url_feed_csv.c) ---- */

typedef struct br_csv br_csv;

/* f: BR_FEED_URLHAUS, BR_FEED_PHISHTANK or BR_FEED_CSV (column as above). */
int br_csv_new(br_feed_format f, const char *column, br_csv **out, br_error *err);
void br_csv_free(br_csv *c);
int br_csv_line(br_csv *c, const char *s, size_t n, uint64_t lineno, br_fmt_result *res);
void br_csv_finish(br_csv *c, br_fmt_result *res);

/* ---- PhishTank JSON (url_feed_json.c) ---- */

typedef int (*br_fmt_json_entry_cb)(void *ctx, const char *s, size_t n, uint64_t line);
typedef int (*br_fmt_json_bad_cb)(void *ctx, uint64_t line, const char *reason);

/* Read buf (a whole JSON document: an array of objects, each with a "url"
 * string) and pass each url with the line its object starts on. An element
 * without a url string goes to bad (which may stop the read by returning
 * < 0); JSON that does not parse stops the read: -EINVAL with
 * "NAME:LINE: not valid JSON (reason)" in err. */
int br_fmt_json_read(const char *name, const char *buf, size_t len, br_fmt_json_entry_cb entry,
                     br_fmt_json_bad_cb bad, void *ctx, br_error *err);
