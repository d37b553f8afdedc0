/* SPDX-License-Identifier: MIT */
/* The feed formats read line by line: the line parsers of the AdBlock,
 * dnsmasq, unbound, RPZ and wildcard-domain formats and the small helpers
 * they share, then the table of formats (one row per format: its parser
 * and how detection tells it), the parser state, the dispatch of a line to
 * its format's parser (here, or url_feed_csv.c) and detection; rules in
 * url_feed_formats.h and docs/breachctl.1 ("INPUT FORMATS"). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "url_feed_formats.h"
#include "core/util.h"

/* ---- the line parsers ---- */

#define MAX_TOKENS 16

/* A token quoted in a reason, at most max bytes of it. Nothing that holds
 * an e-mail address is ever shown (docs/privacy.md), and a token could make
 * one with the text around it ("mailto:" and the closing quote), so one
 * with an '@', a '%' (an escaped '@'), a byte >= 0x80 (a fullwidth '@') or
 * "mailto" is not shown at all: a placeholder stands for it. */
#define HIDDEN_TOKEN "(not shown: it may hold an e-mail address)"
static bool may_show(const br_fmt_entry *t)
{
    for (size_t i = 0; i < t->n; i++) {
        unsigned char c = (unsigned char)t->s[i];
        if (c == '@' || c == '%' || c >= 0x80 ||
            ((c == 'm' || c == 'M') && t->n - i >= 6 && strncasecmp(t->s + i, "mailto", 6) == 0))
            return false;
    }
    return true;
}

static const char *shown(const br_fmt_entry *t)
{
    return may_show(t) ? t->s : HIDDEN_TOKEN;
}

static int shown_len(const br_fmt_entry *t, size_t max)
{
    return may_show(t) ? (int)BR_MIN(t->n, max) : (int)strlen(HIDDEN_TOKEN);
}

const char *br_feed_skip_name(br_feed_skip k)
{
    static const char *const names[BR_FEED_SKIP_KINDS] = {
        [BR_FEED_SKIP_EXCEPTION] = "exception (@@)",
        [BR_FEED_SKIP_OPTIONS] = "with $options",
        [BR_FEED_SKIP_PATH] = "with a path",
        [BR_FEED_SKIP_RULE] = "other rule (cosmetic, regex, wildcard, ...)",
        [BR_FEED_SKIP_PASSTHRU] = "passthru",
        [BR_FEED_SKIP_RECORD] = "SOA, NS or other record",
        [BR_FEED_SKIP_TRIGGER] = "IP or name-server trigger",
        [BR_FEED_SKIP_ALLOW] = "non-blocking",
        [BR_FEED_SKIP_OTHER] = "other option",
    };
    return (unsigned)k < BR_FEED_SKIP_KINDS ? names[k] : "?";
}

/* ---- small helpers ---- */

static bool br_fmt_is_blank(char c)
{
    return c == ' ' || c == '\t';
}

void br_fmt_trim(const char **s, size_t *n)
{
    while (*n > 0 && br_fmt_is_blank(**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && br_fmt_is_blank((*s)[*n - 1]))
        (*n)--;
}

/* s starts with prefix, ignoring ASCII case. */
static bool br_fmt_starts(const char *s, size_t n, const char *prefix)
{
    size_t p = strlen(prefix);
    return n >= p && strncasecmp(s, prefix, p) == 0;
}

/* t is word, ignoring ASCII case. */
static bool br_fmt_token_is(const br_fmt_entry *t, const char *word)
{
    return t->n == strlen(word) && strncasecmp(t->s, word, t->n) == 0;
}

/* Split on blanks into at most max tokens; their number. */
static size_t br_fmt_tokens(const char *s, size_t n, br_fmt_entry *t, size_t max)
{
    size_t nt = 0;
    for (size_t i = 0; i < n && nt < max;) {
        while (i < n && br_fmt_is_blank(s[i]))
            i++;
        size_t b = i;
        while (i < n && !br_fmt_is_blank(s[i]))
            i++;
        if (i > b)
            t[nt++] = (br_fmt_entry){s + b, i - b};
    }
    return nt;
}

static void set_kind(br_fmt_result *res, br_fmt_kind k)
{
    res->kind = k;
}

static void skip(br_fmt_result *res, br_feed_skip why)
{
    res->kind = BR_FMT_SKIP;
    res->skip = why;
}

static void bad(br_fmt_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(br_fmt_result *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->reason, sizeof(res->reason), fmt, ap);
    va_end(ap);
    res->kind = BR_FMT_BAD;
}

static void entry(br_fmt_result *res, const char *s, size_t n)
{
    res->kind = BR_FMT_ENTRIES;
    res->rule = BR_FEED_DOMAINS;
    if (res->n < BR_FMT_MAX_ENTRIES)
        res->e[res->n++] = (br_fmt_entry){s, n};
}
/* ---- AdBlock / AdGuard ---- */

static bool is_cosmetic(const char *s, size_t n)
{
    static const char *const marks[] = {"##", "#@#", "#?#", "#$#", "#%#", "$$"};
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < BR_ARRAY_SIZE(marks); k++)
            if (br_fmt_starts(s + i, n - i, marks[k]))
                return true;
    return false;
}

/* A line uBlock Origin reads as `||NAME^`: a plain hostname, that is
 * [A-Za-z0-9_.-] with a dot, starting with a letter or digit and ending with
 * a letter (an IP address or a bare word stays a substring rule, as there). */
static bool is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* ASCII letter or digit. */
static bool br_fmt_is_alnum(char c)
{
    return is_letter(c) || (c >= '0' && c <= '9');
}

/* A line uBlock Origin reads as `||s^`: a plain hostname ([A-Za-z0-9_.-]
 * with a dot, a letter or digit first, a letter last). */
static bool br_fmt_is_plain_hostname(const char *s, size_t n)
{
    if (n < 3 || !br_fmt_is_alnum(s[0]) || !is_letter(s[n - 1]) || !memchr(s, '.', n))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(br_fmt_is_alnum(s[i]) || s[i] == '.' || s[i] == '-' || s[i] == '_') ||
            (s[i] == '.' && s[i - 1] == '.'))
            return false;
    return true;
}

/* One line each (res cleared by the caller); adblock, dnsmasq and unbound
 * get it trimmed of blanks, rpz and wildcard as it is. */
static void br_fmt_adblock_line(br_fmt_zone *st, const char *s, size_t n, br_fmt_result *res)
{
    (void)st;
    if (n == 0 || s[0] == '!' || (s[0] == '[' && s[n - 1] == ']') ||
        (s[0] == '#' && !is_cosmetic(s, n)))
        return set_kind(res, BR_FMT_COMMENT);
    if (br_fmt_starts(s, n, "@@"))
        return skip(res, BR_FEED_SKIP_EXCEPTION);
    if (is_cosmetic(s, n))
        return skip(res, BR_FEED_SKIP_RULE);
    if (br_fmt_is_plain_hostname(s, n))
        return entry(res, s, n); /* as `||s^` */
    if (!br_fmt_starts(s, n, "||"))
        return skip(res, BR_FEED_SKIP_RULE); /* |anchor|, /regex/, substrings */
    const char *h = s + 2;
    size_t rest = n - 2, hn = 0;
    while (hn < rest && !strchr("^/$|*", h[hn]))
        hn++;
    if (memchr(h, '$', rest))
        return skip(res, BR_FEED_SKIP_OPTIONS);
    if (hn < rest && h[hn] == '*')
        return skip(res, BR_FEED_SKIP_RULE);
    if (hn == 0)
        return bad(res, "no domain after '||'");
    size_t after = hn;
    if (after < rest && h[after] == '^')
        after++;
    if (after < rest && h[after] == '|' && after + 1 == rest)
        after++;
    if (after < rest)
        return skip(res, BR_FEED_SKIP_PATH);
    entry(res, h, hn);
}

/* ---- dnsmasq ---- */

static void br_fmt_dnsmasq_line(br_fmt_zone *st, const char *s, size_t n, br_fmt_result *res)
{
    (void)st;
    if (n == 0 || s[0] == '#')
        return set_kind(res, BR_FMT_COMMENT);
    size_t k = 0;
    while (k < n && ((s[k] >= 'a' && s[k] <= 'z') || (s[k] >= '0' && s[k] <= '9') || s[k] == '-'))
        k++;
    if (k == 0 || (k < n && s[k] != '='))
        return bad(res, "not a dnsmasq option (name=value)");
    bool address = k == 7 && strncmp(s, "address", 7) == 0;
    bool server =
        (k == 6 && strncmp(s, "server", 6) == 0) || (k == 5 && strncmp(s, "local", 5) == 0);
    if (!address && !server)
        return skip(res, BR_FEED_SKIP_OTHER);
    const char *v = s + k + 1;
    size_t vn = k < n ? n - k - 1 : 0;
    if (vn == 0 || v[0] != '/') {
        if (address)
            return bad(res, "address= needs /DOMAIN/ (address=/example.com/0.0.0.0)");
        return skip(res, BR_FEED_SKIP_OTHER); /* server=ADDR: the default upstream */
    }
    const char *last = memrchr(v, '/', vn);
    if (last == v)
        return bad(res, "no closing '/' after the domain");
    const char *target = last + 1;
    size_t tn = vn - (size_t)(target - v);
    if (server && tn > 0)
        return skip(res, BR_FEED_SKIP_ALLOW); /* forwarded to a server */
    for (const char *d = v + 1; d < last;) {
        const char *e = memchr(d, '/', (size_t)(last - d));
        if (!e)
            e = last;
        if (e == d)
            return bad(res, "an empty domain between '/'");
        if (e - d == 1 && d[0] == '#')
            return bad(res, "'#' (every domain) is not a blocklist entry");
        entry(res, d, (size_t)(e - d));
        d = e + 1;
    }
}

/* ---- unbound ---- */

static const char *const unbound_blocking[] = {
    "deny",        "refuse",        "static",          "redirect",    "inform_deny",
    "always_deny", "always_refuse", "always_nxdomain", "always_null",
};
static const char *const unbound_passing[] = {
    "transparent", "typetransparent", "inform", "always_transparent", "nodefault", "noview",
};

static bool in_list(const br_fmt_entry *t, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (br_fmt_token_is(t, list[i]))
            return true;
    return false;
}

/* The name in `"name ..."` or `name`, without quotes and a final dot. */
static bool unquote_name(br_fmt_entry *t)
{
    if (t->n > 0 && t->s[0] == '"') {
        t->s++;
        t->n--;
        if (t->n > 0 && t->s[t->n - 1] == '"')
            t->n--;
    }
    if (t->n > 1 && t->s[t->n - 1] == '.')
        t->n--;
    return t->n > 0;
}

static void br_fmt_unbound_line(br_fmt_zone *st, const char *s, size_t n, br_fmt_result *res)
{
    (void)st;
    bool quoted = false;
    for (size_t i = 0; i < n; i++) { /* a '#' comment outside quotes */
        if (s[i] == '"')
            quoted = !quoted;
        else if (s[i] == '#' && !quoted)
            n = i;
    }
    br_fmt_trim(&s, &n);
    if (n == 0)
        return set_kind(res, BR_FMT_COMMENT);
    const char *colon = memchr(s, ':', n);
    if (!colon)
        return bad(res, "not an unbound option (name: value)");
    size_t kn = (size_t)(colon - s);
    const char *v = colon + 1;
    size_t vn = n - kn - 1;
    br_fmt_trim(&v, &vn);
    br_fmt_entry t[MAX_TOKENS];
    size_t nt = br_fmt_tokens(v, vn, t, MAX_TOKENS);
    if (kn == 6 && strncmp(s, "server", 6) == 0 && nt == 0)
        return set_kind(res, BR_FMT_COMMENT); /* the section header */
    if (kn == 10 && strncmp(s, "local-zone", 10) == 0) {
        if (nt != 2)
            return bad(res, "local-zone needs a name and a type");
        if (!unquote_name(&t[0]))
            return bad(res, "local-zone with an empty name");
        if (in_list(&t[1], unbound_passing, BR_ARRAY_SIZE(unbound_passing)))
            return skip(res, BR_FEED_SKIP_ALLOW);
        if (!in_list(&t[1], unbound_blocking, BR_ARRAY_SIZE(unbound_blocking)))
            return bad(res, "unknown local-zone type '%.*s'", shown_len(&t[1], 40), shown(&t[1]));
        return entry(res, t[0].s, t[0].n);
    }
    if (kn == 10 && strncmp(s, "local-data", 10) == 0) {
        if (nt < 2 || t[0].s[0] != '"' || v[vn - 1] != '"')
            return bad(res, "local-data needs a quoted record (\"name A 0.0.0.0\")");
        if (!unquote_name(&t[0]))
            return bad(res, "local-data with an empty name");
        return entry(res, t[0].s, t[0].n);
    }
    for (size_t i = 0; i < kn; i++)
        if (br_fmt_is_blank(s[i]))
            return bad(res, "not an unbound option (name: value)");
    skip(res, BR_FEED_SKIP_OTHER);
}

/* ---- RPZ ---- */

/* Cut a ';' comment (outside double quotes); count parentheses. */
static size_t rpz_cut(br_fmt_zone *st, const char *s, size_t n)
{
    bool quoted = false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            quoted = !quoted;
        else if (!quoted && s[i] == ';')
            return i;
        else if (!quoted && s[i] == '(')
            st->paren++;
        else if (!quoted && s[i] == ')' && st->paren > 0)
            st->paren--;
    }
    return n;
}

static void lower_copy(char *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    out[n] = '\0';
}

static bool is_ttl(const br_fmt_entry *t)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strchr("0123456789smhdwSMHDW", t->s[i]))
            return false;
    return t->s[0] >= '0' && t->s[0] <= '9';
}

static bool has_suffix(const char *name, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n > k && name[n - k - 1] == '.' && strcmp(name + n - k, suffix) == 0;
}

/* The trigger name of an owner into st->entry: the origin removed from an
 * absolute name; 0 = apex, -1 = too long. */
static int rpz_trigger(br_fmt_zone *st, const char *owner, size_t n)
{
    if (n > BR_FMT_NAME_MAX)
        return -1;
    lower_copy(st->entry, owner, n);
    if (n > 0 && st->entry[n - 1] == '.') {
        st->entry[--n] = '\0';
        size_t on = strlen(st->origin);
        if (on > 0 && strcmp(st->entry, st->origin) == 0)
            return 0;
        if (on > 0 && has_suffix(st->entry, n, st->origin)) {
            n -= on + 1;
            st->entry[n] = '\0';
        }
    }
    if (strcmp(st->entry, "@") == 0 || n == 0)
        return 0;
    return (int)n;
}

static void rpz_directive(br_fmt_zone *st, const br_fmt_entry *t, size_t nt, br_fmt_result *res)
{
    if (br_fmt_token_is(&t[0], "$TTL"))
        return set_kind(res, BR_FMT_COMMENT);
    if (!br_fmt_token_is(&t[0], "$ORIGIN"))
        return bad(res, "%.*s is not supported (only $ORIGIN and $TTL)", shown_len(&t[0], 20),
                   shown(&t[0]));
    if (nt != 2 || t[1].n > BR_FMT_NAME_MAX)
        return bad(res, "$ORIGIN needs one domain name");
    lower_copy(st->origin, t[1].s, t[1].n);
    size_t on = t[1].n;
    if (on > 0 && st->origin[on - 1] == '.')
        st->origin[on - 1] = '\0';
    set_kind(res, BR_FMT_COMMENT);
}

static void br_fmt_rpz_line(br_fmt_zone *st, const char *s, size_t n, br_fmt_result *res)
{
    bool continued = st->paren > 0;
    n = rpz_cut(st, s, n);
    bool owner_given = n > 0 && !br_fmt_is_blank(s[0]);
    br_fmt_trim(&s, &n);
    if (continued || n == 0) /* a record's continuation lines go with it */
        return set_kind(res, BR_FMT_COMMENT);
    br_fmt_entry t[MAX_TOKENS];
    size_t nt = br_fmt_tokens(s, n, t, MAX_TOKENS), i = 0;
    if (t[0].s[0] == '$')
        return rpz_directive(st, t, nt, res);
    if (owner_given) {
        if (t[0].n > BR_FMT_NAME_MAX)
            return bad(res, "the owner name is longer than %d characters", BR_FMT_NAME_MAX);
        memcpy(st->owner, t[0].s, t[0].n);
        st->owner[t[0].n] = '\0';
        i = 1;
    } else if (!st->owner[0]) {
        return bad(res, "a record without an owner name");
    }
    for (;
         i < nt && (is_ttl(&t[i]) || br_fmt_token_is(&t[i], "IN") || br_fmt_token_is(&t[i], "CH") ||
                    br_fmt_token_is(&t[i], "HS") || br_fmt_token_is(&t[i], "CS"));
         i++)
        ;
    if (i == nt)
        return bad(res, "no record type");
    const br_fmt_entry *type = &t[i], *rdata = i + 1 < nt ? &t[i + 1] : NULL;
    if (br_fmt_token_is(type, "SOA") || br_fmt_token_is(type, "NS"))
        return skip(res, BR_FEED_SKIP_RECORD);
    int tn = rpz_trigger(st, st->owner, strlen(st->owner));
    if (tn < 0)
        return bad(res, "the owner name is longer than %d characters", BR_FMT_NAME_MAX);
    if (tn == 0)
        return skip(res, BR_FEED_SKIP_RECORD); /* at the zone apex */
    static const char *const triggers[] = {"rpz-ip", "rpz-client-ip", "rpz-nsdname", "rpz-nsip"};
    for (size_t k = 0; k < BR_ARRAY_SIZE(triggers); k++)
        if (has_suffix(st->entry, (size_t)tn, triggers[k]))
            return skip(res, BR_FEED_SKIP_TRIGGER);
    const char *name = st->entry;
    size_t nn = (size_t)tn;
    if (nn > 2 && name[0] == '*' && name[1] == '.') { /* subdomains: see docs/breachctl.1 */
        name += 2;
        nn -= 2;
    }
    if (br_fmt_token_is(type, "CNAME")) {
        if (!rdata)
            return bad(res, "CNAME without a target");
        if (br_fmt_token_is(rdata, "rpz-passthru."))
            return skip(res, BR_FEED_SKIP_PASSTHRU);
        return entry(res, name, nn); /* ".", "*.", rpz-drop., a walled garden */
    }
    if (br_fmt_token_is(type, "A") || br_fmt_token_is(type, "AAAA")) {
        if (!rdata)
            return bad(res, "%.*s without an address", (int)type->n, type->s);
        return entry(res, name, nn);
    }
    skip(res, BR_FEED_SKIP_RECORD);
}

/* ---- wildcard domains ---- */

/* `*.example.com` per line (a bare domain too): the domain, which blocks
 * itself and every name under it like any domain entry. '#' comments. */
static void br_fmt_wildcard_line(br_fmt_zone *st, const char *s, size_t n, br_fmt_result *res)
{
    (void)st;
    for (size_t i = 1; i < n; i++) /* a trailing comment */
        if (s[i] == '#' && br_fmt_is_blank(s[i - 1]))
            n = i;
    br_fmt_trim(&s, &n);
    if (n == 0 || s[0] == '#')
        return set_kind(res, BR_FMT_COMMENT);
    br_fmt_entry t[2];
    if (br_fmt_tokens(s, n, t, 2) > 1)
        return bad(res, "one domain per line (*.example.com)");
    if (n == 1 && s[0] == '*')
        return bad(res, "no domain after '*.'");
    if (br_fmt_starts(s, n, "*.")) {
        s += 2;
        n -= 2;
        if (n == 0)
            return bad(res, "no domain after '*.'");
    }
    if (memchr(s, '*', n))
        return bad(res, "a wildcard is one leading '*.' (*.example.com)");
    entry(res, s, n);
}

/* ---- the table of formats ---- */

typedef enum fmt_parse {
    PARSE_NONE = 0, /* unset: the format cannot be read */
    PARSE_PLAIN,    /* urls, hosts, domains: url_feed.c's own rules */
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
    /* url_feed.c's own rules and detection, after these */
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
