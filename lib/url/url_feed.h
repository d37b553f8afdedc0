/* SPDX-License-Identifier: MIT */
/* URL blocklist feeds: parse plain URL lists, hosts files and domain lists
 * into the SHA-256 keys of Safe Browsing lookup expressions, each with a
 * category, for `breachctl filter build|add --kind url-sha256`.
 *
 * Line rules (every format):
 *  - LF or CRLF line ends; a UTF-8 byte-order mark at the start is skipped;
 *  - leading and trailing spaces and tabs are ignored; blank lines and lines
 *    whose first character is '#' are comments;
 *  - a '#' preceded by a space or tab starts a trailing comment (a URL's own
 *    fragment '#' follows no blank); in hosts files every '#' starts one.
 * Formats:
 *  - urls: one URL per line, scheme optional. Entry = the URL's most specific
 *    lookup expression (canonicalize, then host + path + query);
 *  - hosts: "ADDRESS NAME [NAME...]" (hosts(5)); ADDRESS any IPv4 or IPv6
 *    address (0.0.0.0 and 127.0.0.1 in practice). Each NAME blocks every URL
 *    under it: entry = "host/". Names of the loopback and local kind
 *    (localhost, localhost.localdomain, local, broadcasthost, ip6-localhost,
 *    ip6-loopback, ip6-localnet, ip6-mcastprefix, ip6-allnodes,
 *    ip6-allrouters, ip6-allhosts, 0.0.0.0) are ignored and counted;
 *  - domains: one domain (or IP address) per line: entry = "host/".
 *  - adblock, dnsmasq, unbound, rpz, urlhaus, phishtank, csv: see
 *    url_feed_formats.h; domain-style formats (adblock, dnsmasq, unbound,
 *    rpz) give "host/" entries like domain lists, the CSV and JSON ones URLs;
 *  - auto (per file), from the first 100 entry lines: one of the formats of
 *    url_feed_formats.h when it is clearly that (br_fmt_detect); else hosts
 *    when most look like hosts lines (two or more fields, the first an IP
 *    address); else the urls rule, reported as "domains" when those sample
 *    lines are all bare names (a bare name gives the same entry under both
 *    rules), when at least half of them look like URLs (one field, no ',' or
 *    '"'). Otherwise the read fails with -EINVAL, naming the formats tried
 *    and the --format values, whatever skip_bad says.
 * Checks:
 *  - an entry that is an e-mail address or a mailto: URL (br_url_is_email,
 *    url_secret.h: any spelling) refuses the whole read with -EPERM and
 *    "FILE:LINE: secret-class data (e-mail address) is never indexed",
 *    whatever skip_bad says;
 *  - a URL that merely holds an address (path, query; url_secret.h) is
 *    indexed as its most specific expression free of it (the query, or the
 *    path from the segment holding it, dropped: "host/" at the least); it is
 *    counted (cut) and reported to on_cut as "FILE:LINE: " BR_FEED_CUT_TEXT,
 *    never with its content;
 *  - any other bad line (not a URL, a host that is not a DNS name or IP
 *    address, a domain entry with a path, two fields in a URL list, ...) is
 *    -EINVAL "FILE:LINE: reason", or with skip_bad counted and passed to
 *    on_bad. Hosts must be made of [a-z0-9._-] after canonicalization (IDN
 *    in punycode), or be an IP address: a wildcard like "*.example.com" is
 *    refused rather than indexed as a literal host.
 * Categories and duplicates:
 *  - CATEGORY matches [a-z0-9_-]{1,32} (what a range response may carry);
 *    BR_FEED_DEFAULT_CATEGORY when a feed names none; at most 255 per set;
 *  - the same expression twice keeps its FIRST occurrence: the first feed in
 *    read (command-line) order, then the first line; a later one with another
 *    category is counted as a conflict. Order feeds by priority. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/util.h"

#define BR_FEED_DEFAULT_CATEGORY "malware"
#define BR_FEED_CATEGORY_MAX 32
#define BR_FEED_MAX_CATEGORIES 255
#define BR_FEED_SECRET_TEXT "secret-class data (e-mail address) is never indexed"
#define BR_FEED_CUT_TEXT                                                                           \
    "the URL holds an e-mail address: indexed as its longest expression free of it"

/* Every feed format, once, in enum order: X(ID, NAME). This list makes the
 * enum and the names (br_feed_format_name, BR_FEED_FORMAT_NAMES);
 * url_feed_formats.c holds the table of parsers and detectors, a row per
 * format in detection order (a format without one cannot be read: a unit
 * test checks there is none). A new format goes at the end (the values are
 * fuzz corpus bytes) and gets its row there. */
#define BR_FEED_FORMAT_LIST(X)                                                                     \
    X(URLS, "urls")           /* one URL per line */                                               \
    X(HOSTS, "hosts")         /* hosts(5) lines: ADDRESS NAME... */                                \
    X(DOMAINS, "domains")     /* one domain per line */                                            \
    X(ADBLOCK, "adblock")     /* AdBlock / uBlock Origin / AdGuard ||domain^ rules */              \
    X(DNSMASQ, "dnsmasq")     /* address=/domain/..., server=/domain/ */                           \
    X(UNBOUND, "unbound")     /* local-zone:, local-data: */                                       \
    X(RPZ, "rpz")             /* DNS response policy zone file */                                  \
    X(URLHAUS, "urlhaus")     /* URLhaus CSV: the url column */                                    \
    X(PHISHTANK, "phishtank") /* PhishTank CSV or JSON: url */                                     \
    X(CSV, "csv")             /* any CSV: --column N|NAME */                                       \
    X(WILDCARD, "wildcard")   /* *.domain per line */

#define BR_FEED_ENUM_(id, name) BR_FEED_##id,
typedef enum br_feed_format {
    BR_FEED_AUTO = 0, /* "auto": detect per file (br_feedset_read) */
    BR_FEED_FORMAT_LIST(BR_FEED_ENUM_) BR_FEED_FORMAT_COUNT
} br_feed_format;
#undef BR_FEED_ENUM_
#define BR_FEED_FORMAT_LAST (BR_FEED_FORMAT_COUNT - 1)
/* The --format values, for messages: "auto, urls, ..., wildcard". */
#define BR_FEED_NAME_(id, name) ", " name
#define BR_FEED_FORMAT_NAMES "auto" BR_FEED_FORMAT_LIST(BR_FEED_NAME_)
const char *br_feed_format_name(br_feed_format f);
/* "auto", "urls", "hosts", "domains", "adblock", ...: 0, or -EINVAL. */
int br_feed_format_from_name(const char *name, br_feed_format *out);

/* Rules a format has but a URL filter does not index, counted by kind. */
typedef enum br_feed_skip {
    BR_FEED_SKIP_EXCEPTION, /* adblock @@ */
    BR_FEED_SKIP_OPTIONS,   /* adblock $options */
    BR_FEED_SKIP_PATH,      /* adblock rule with a path */
    BR_FEED_SKIP_RULE,      /* adblock cosmetic, regex, wildcard, ... rules */
    BR_FEED_SKIP_PASSTHRU,  /* rpz-passthru. */
    BR_FEED_SKIP_RECORD,    /* rpz SOA, NS and other records */
    BR_FEED_SKIP_TRIGGER,   /* rpz-ip, rpz-nsdname, ... triggers */
    BR_FEED_SKIP_ALLOW,     /* non-blocking: unbound transparent zones, dnsmasq forwarding */
    BR_FEED_SKIP_OTHER,     /* other dnsmasq / unbound options */
    BR_FEED_SKIP_KINDS
} br_feed_skip;
/* "exception (@@)", "with $options", ...: for reports. */
const char *br_feed_skip_name(br_feed_skip k);
/* [a-z0-9_-]{1,32} */
bool br_feed_category_valid(const char *s);

/* Split "PATH=CATEGORY", "PATH=CATEGORY:FORMAT" or "PATH=:FORMAT" at the
 * last '=': when there is one, the part after it must be a valid category,
 * or empty before a ":FORMAT" (the default category), and FORMAT one of
 * BR_FEED_FORMAT_NAMES (-EINVAL otherwise); *path_out is a malloc'd copy of
 * the part before. Without '=' the path is the whole argument and the
 * category BR_FEED_DEFAULT_CATEGORY. cat_out holds BR_FEED_CATEGORY_MAX + 1
 * bytes; *format_out is the FORMAT, BR_FEED_AUTO when none was given.
 * format_out NULL: a ":FORMAT" is refused. */
int br_feed_split_input(const char *arg, char **path_out, char *cat_out, br_feed_format *format_out,
                        br_error *err);

/* The expression one entry stands for (malloc'd into *expr): for urls the
 * most specific lookup expression of the canonical URL free of e-mail
 * addresses; for hosts and domains "host/". 0, or 1 when the URL held an
 * address and was cut (see Checks); -EPERM for secret-class data, -EINVAL
 * with a reason. */
int br_feed_entry_expression(br_feed_format format, const char *entry, size_t len, char **expr,
                             br_error *err);

typedef struct br_feed_entry {
    uint8_t hash[BR_SHA256_LEN];
    uint64_t quick;   /* br_xxh3_64 of the expression (a quick filter's key) */
    uint32_t seq;     /* order of appearance over the whole set */
    uint8_t category; /* index into the set's categories */
} br_feed_entry;

typedef void (*br_feed_bad_cb)(void *ctx, const char *message);

typedef struct br_feed_opts {
    br_feed_format format; /* BR_FEED_AUTO: detect per file */
    const char *column;    /* BR_FEED_CSV: "N" (1-based, no header line) or a header name */
    bool skip_bad;
    br_feed_bad_cb on_bad; /* with skip_bad: each bad line's "FILE:LINE: reason" */
    br_feed_bad_cb on_cut; /* each entry cut for an e-mail address (may be NULL) */
    void *ctx;
    /* Each entry read, once its key is in the set: its expression and the
     * index of its category (br_feedset_category). A negative return stops
     * the read with that code. May be NULL (`filter export` keeps the
     * domains). */
    int (*on_entry)(void *entry_ctx, const char *expression, unsigned category);
    void *entry_ctx;
} br_feed_opts;

typedef struct br_feed_stats {
    br_feed_format format; /* the one used (detected or forced) */
    uint64_t lines;
    uint64_t entries;  /* entries read (duplicates included) */
    uint64_t comments; /* blank and comment lines */
    uint64_t ignored;  /* localhost-like hosts-file names */
    uint64_t bad;      /* bad lines skipped (skip_bad) */
    uint64_t cut;      /* URL entries cut for an e-mail address (also in entries) */
    uint64_t skipped[BR_FEED_SKIP_KINDS];       /* rules not indexed, by kind */
    uint64_t first_skipped[BR_FEED_SKIP_KINDS]; /* the line of the first of each kind (0: none) */
} br_feed_stats;

typedef struct br_feedset br_feedset;

int br_feedset_new(br_feedset **out);
void br_feedset_free(br_feedset *fs);
BR_DEFINE_FREEP(br_feedset, br_feedset_free)

/* Read one feed from in (it stays the caller's; breachctl's is a
 * decompressing stream), named name in messages ("FILE:LINE: ..."), into
 * the set under category. st (may be NULL) receives this feed's counts. On
 * error the set may hold part of the feed: callers abandon the whole
 * build. */
int br_feedset_read(br_feedset *fs, FILE *in, const char *name, const char *category,
                    const br_feed_opts *opts, br_feed_stats *st, br_error *err);

typedef struct br_feedset_stats {
    uint64_t distinct;
    uint64_t duplicates; /* repeats with the same category */
    uint64_t conflicts;  /* repeats with another category: the first was kept */
} br_feedset_stats;

/* One expression's key (its SHA-256) straight into the set under category,
 * as if read from a feed: 0, -EINVAL for a bad category name, -E2BIG past
 * BR_FEED_MAX_CATEGORIES entries' categories or entries, -ENOMEM. For sets
 * of crafted keys (keys sharing a range prefix), which no feed text gives. */
int br_feedset_add_key(br_feedset *fs, const uint8_t hash[BR_SHA256_LEN], const char *category,
                       br_error *err);

/* True when every entry was read from feed text, so that its quick is
 * its expression's XXH3; false once br_feedset_add_key added a key alone
 * (then no quick filter can be built: docs/filter-format.md). */
bool br_feedset_has_quick(const br_feedset *fs);

/* Sort by key and keep the first occurrence of each key. No reads after. */
void br_feedset_finish(br_feedset *fs, br_feedset_stats *st);

size_t br_feedset_count(const br_feedset *fs);
/* Sorted by hash (memcmp order) after br_feedset_finish. */
const br_feed_entry *br_feedset_entries(const br_feedset *fs);
const char *br_feedset_category(const br_feedset *fs, unsigned index);
unsigned br_feedset_category_count(const br_feedset *fs);
/* The largest label count among the set's domain entries: every entry read
 * by the hosts or domains rule (and by any format whose entries block their
 * subdomains, read through that rule); 0 without any. The URL filter
 * records it (br_urlfilter_draft_note_domain_labels). */
unsigned br_feedset_max_domain_labels(const br_feedset *fs);
