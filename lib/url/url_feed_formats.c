/* SPDX-License-Identifier: MIT */
/* The table of feed formats (one row per format: its parser and how
 * detection tells it), the parser state, the dispatch of a line to its
 * format's parser (url_feed_lines.c, url_feed_csv.c) and detection; rules in
 * url_feed_formats.h and docs/breachctl.1 ("INPUT FORMATS"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "url_feed_formats.h"
#include "util.h"

/* ---- the table of formats ---- */

typedef enum fmt_parse {
    PARSE_NONE = 0, /* unset: the format cannot be read */
    PARSE_PLAIN,    /* urls, hosts, domains: url_feed_read.c's own rules */
    PARSE_LINE,     /* line() on each line trimmed of blanks */
    PARSE_RAW,      /* line() on each line as it is (rpz: the owner column) */
    PARSE_CSV,      /* url_feed_csv.c */
} fmt_parse;

typedef enum fmt_vote { VOTE_NO, VOTE_FITS, VOTE_YES } fmt_vote;

/* One row per format (as OpenSMTPD has one backend struct per table type):
 * how its lines are read and how detection (br_fmt_detect) tells it. The
 * rows are in detection order: marks are tried row by row on each sample
 * line, then the votes row by row. */
typedef struct fmt_def {
    br_feed_format format;
    fmt_parse parse;
    void (*line)(br_fmt_zone *z, const char *s, size_t n, br_fmt_result *res);
    /* A line that alone tells the format (first: no entry line before it);
     * *json for PhishTank's JSON form. */
    bool (*marks)(const char *s, size_t n, bool first, bool *json);
    /* An entry line's vote: YES counts for the format; it wins with more
     * than half of the sample lines, or with unanimous set with a YES and
     * every other line FITS. */
    fmt_vote (*votes)(const char *s, size_t n);
    bool unanimous;
    /* A comment mark no other format has ('!'): a sample with such comment
     * lines is this format when one line votes YES or every line FITS. */
    char comment;
    const char *tried; /* in "cannot tell ... (tried ...)" */
} fmt_def;

static bool phishtank_marks(const char *s, size_t n, bool first, bool *json)
{
    if (first && (s[0] == '{' || (s[0] == '[' && (n == 1 || s[1] == '{' || s[1] == ']' ||
                                                  br_fmt_is_blank(s[1]))))) {
        *json = true;
        return true;
    }
    return first && br_fmt_starts(s, n, "phish_id,");
}

static bool adblock_marks(const char *s, size_t n, bool first, bool *json)
{
    (void)json;
    /* A list headed by `!` comments (`! Title:`, ...) is one: no other format
     * writes them, and its rules may be mostly plain hostnames. */
    return br_fmt_starts(s, n, "[Adblock") || br_fmt_starts(s, n, "[AdGuard") ||
           br_fmt_starts(s, n, "[uBlock") || (first && s[0] == '!');
}

static bool urlhaus_marks(const char *s, size_t n, bool first, bool *json)
{
    (void)first, (void)json;
    return s[0] == '#' && (memmem(s, n, "URLhaus", 7) || br_fmt_starts(s, n, "# id,dateadded,url"));
}

static bool rpz_marks(const char *s, size_t n, bool first, bool *json)
{
    (void)first, (void)json;
    return br_fmt_starts(s, n, "$ORIGIN") || br_fmt_starts(s, n, "$TTL");
}

static fmt_vote yes_if(bool b)
{
    return b ? VOTE_YES : VOTE_NO;
}

static fmt_vote adblock_votes(const char *s, size_t n)
{
    if (br_fmt_starts(s, n, "||") || br_fmt_starts(s, n, "@@"))
        return VOTE_YES;
    return br_fmt_is_plain_hostname(s, n) ? VOTE_FITS : VOTE_NO;
}

static fmt_vote dnsmasq_votes(const char *s, size_t n)
{
    return yes_if(br_fmt_starts(s, n, "address=/") || br_fmt_starts(s, n, "server=/") ||
                  br_fmt_starts(s, n, "local=/"));
}

static fmt_vote unbound_votes(const char *s, size_t n)
{
    return yes_if(br_fmt_starts(s, n, "local-zone:") || br_fmt_starts(s, n, "local-data:") ||
                  (n == 7 && br_fmt_starts(s, n, "server:")));
}

static fmt_vote rpz_votes(const char *s, size_t n)
{
    br_fmt_entry t[4];
    size_t nt = br_fmt_tokens(s, n, t, 4);
    for (size_t k = 1; k < nt; k++)
        if (br_fmt_token_is(&t[k], "CNAME") || br_fmt_token_is(&t[k], "SOA"))
            return VOTE_YES;
    return VOTE_NO;
}

/* One name of [A-Za-z0-9_.-] with a dot. */
static bool is_bare_name(const char *s, size_t n)
{
    if (!memchr(s, '.', n))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(br_fmt_is_alnum(s[i]) || s[i] == '.' || s[i] == '-' || s[i] == '_'))
            return false;
    return true;
}

static fmt_vote wildcard_votes(const char *s, size_t n)
{
    if (br_fmt_starts(s, n, "*."))
        return VOTE_YES; /* a malformed one too: its line is then named */
    return is_bare_name(s, n) ? VOTE_FITS : VOTE_NO;
}

static const fmt_def defs[] = {
    {.format = BR_FEED_PHISHTANK,
     .parse = PARSE_CSV,
     .marks = phishtank_marks,
     .tried = "phishtank (JSON or CSV)"},
    {.format = BR_FEED_ADBLOCK,
     .parse = PARSE_LINE,
     .line = br_fmt_adblock_line,
     .marks = adblock_marks,
     .votes = adblock_votes,
     .comment = '!',
     .tried = "adblock"},
    {.format = BR_FEED_URLHAUS, .parse = PARSE_CSV, .marks = urlhaus_marks, .tried = "urlhaus"},
    {.format = BR_FEED_DNSMASQ,
     .parse = PARSE_LINE,
     .line = br_fmt_dnsmasq_line,
     .votes = dnsmasq_votes,
     .tried = "dnsmasq"},
    {.format = BR_FEED_UNBOUND,
     .parse = PARSE_LINE,
     .line = br_fmt_unbound_line,
     .votes = unbound_votes,
     .tried = "unbound"},
    {.format = BR_FEED_RPZ,
     .parse = PARSE_RAW,
     .line = br_fmt_rpz_line,
     .marks = rpz_marks,
     .votes = rpz_votes,
     .tried = "rpz"},
    {.format = BR_FEED_WILDCARD,
     .parse = PARSE_RAW,
     .line = br_fmt_wildcard_line,
     .votes = wildcard_votes,
     .unanimous = true,
     .tried = "wildcard"},
    /* never guessed: it needs --column */
    {.format = BR_FEED_CSV, .parse = PARSE_CSV},
    /* url_feed_read.c's own rules and detection, after these */
    {.format = BR_FEED_HOSTS, .parse = PARSE_PLAIN, .tried = "hosts"},
    {.format = BR_FEED_DOMAINS, .parse = PARSE_PLAIN, .tried = "domains"},
    {.format = BR_FEED_URLS, .parse = PARSE_PLAIN, .tried = "urls"},
};
_Static_assert(BR_ARRAY_SIZE(defs) == BR_FEED_FORMAT_COUNT - 1, "one row per format");

static const fmt_def *def_of(br_feed_format f)
{
    for (size_t i = 0; i < BR_ARRAY_SIZE(defs); i++)
        if (defs[i].format == f)
            return &defs[i];
    return NULL;
}

br_fmt_reader br_fmt_reader_of(br_feed_format f)
{
    const fmt_def *d = def_of(f);
    if (!d || d->parse == PARSE_NONE)
        return BR_FMT_READER_NONE;
    return d->parse == PARSE_PLAIN ? BR_FMT_READER_PLAIN : BR_FMT_READER_LINES;
}

void br_fmt_tried(char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < BR_ARRAY_SIZE(defs) && len < size; i++)
        if (defs[i].tried) {
            int w = snprintf(out + len, size - len, "%s%s", len ? ", " : "", defs[i].tried);
            len += w > 0 ? (size_t)w : 0;
        }
}

/* ---- the parser state ---- */

struct br_fmt_state {
    const fmt_def *def; /* the format's row */
    br_csv *csv;
    br_fmt_zone z; /* the line parsers' state */
};

int br_fmt_state_new(br_feed_format f, const char *column, br_fmt_state **out, br_error *err)
{
    const fmt_def *d = def_of(f);
    if (!d || (d->parse != PARSE_CSV && !d->line))
        return br_error_set(err, -EINVAL, "no line parser for the format '%s'",
                            br_feed_format_name(f));
    br_fmt_state *st = calloc(1, sizeof(*st));
    if (!st)
        return br_error_set(err, -ENOMEM, "out of memory");
    st->def = d;
    if (d->parse == PARSE_CSV) {
        int r = br_csv_new(f, column, &st->csv, err);
        if (r < 0) {
            free(st);
            return r;
        }
    }
    *out = st;
    return 0;
}

void br_fmt_state_free(br_fmt_state *st)
{
    if (!st)
        return;
    br_csv_free(st->csv);
    free(st);
}

/* ---- dispatch ---- */

int br_fmt_line(br_fmt_state *st, const char *s, size_t n, uint64_t lineno, br_fmt_result *res)
{
    memset(res, 0, offsetof(br_fmt_result, e));
    res->reason[0] = '\0';
    res->line = lineno;
    if (st->csv)
        return br_csv_line(st->csv, s, n, lineno, res);
    if (st->def->parse == PARSE_LINE)
        br_fmt_trim(&s, &n);
    st->def->line(&st->z, s, n, res);
    if (res->kind == BR_FMT_ENTRIES && res->n == BR_FMT_MAX_ENTRIES) {
        res->kind = BR_FMT_BAD;
        snprintf(res->reason, sizeof(res->reason), "more than %d domains on one line",
                 BR_FMT_MAX_ENTRIES - 1);
    }
    return 0;
}

void br_fmt_finish(br_fmt_state *st, br_fmt_result *res)
{
    memset(res, 0, offsetof(br_fmt_result, e));
    res->kind = BR_FMT_PENDING; /* nothing left */
    if (st->csv)
        br_csv_finish(st->csv, res);
}

/* ---- detection ---- */

/* The format the sample's votes give, in the table's order. */
static br_feed_format decide(size_t sample, const size_t *yes, const size_t *fits,
                             const size_t *commented)
{
    for (size_t k = 0; sample > 0 && k < BR_ARRAY_SIZE(defs); k++) {
        bool all = yes[k] + fits[k] == sample;
        if (commented[k] > 0 && (yes[k] > 0 || all))
            return defs[k].format;
        if (defs[k].unanimous ? yes[k] > 0 && all : 2 * yes[k] > sample)
            return defs[k].format;
    }
    return BR_FEED_AUTO;
}

br_feed_format br_fmt_detect(const char *const *lines, const size_t *lens, size_t n, bool *json)
{
    size_t sample = 0, yes[BR_ARRAY_SIZE(defs)] = {0}, fits[BR_ARRAY_SIZE(defs)] = {0};
    size_t commented[BR_ARRAY_SIZE(defs)] = {0};
    bool first = true;
    *json = false;
    for (size_t i = 0; i < n; i++) {
        const char *s = lines[i];
        size_t len = lens[i];
        br_fmt_trim(&s, &len);
        if (len == 0)
            continue;
        for (size_t k = 0; k < BR_ARRAY_SIZE(defs); k++)
            if (defs[k].marks && defs[k].marks(s, len, first, json))
                return defs[k].format;
        if (s[0] == '#' || s[0] == '!' || s[0] == ';') {
            for (size_t k = 0; k < BR_ARRAY_SIZE(defs); k++)
                commented[k] += defs[k].comment && s[0] == defs[k].comment;
            continue;
        }
        first = false;
        sample++;
        for (size_t k = 0; k < BR_ARRAY_SIZE(defs); k++) {
            fmt_vote v = defs[k].votes ? defs[k].votes(s, len) : VOTE_NO;
            yes[k] += v == VOTE_YES;
            fits[k] += v == VOTE_FITS;
        }
    }
    return decide(sample, yes, fits, commented);
}
