/* SPDX-License-Identifier: MIT */
/* Line parsers of the AdBlock, dnsmasq, unbound and RPZ formats, format
 * detection, and the dispatch to the CSV reader; rules in
 * url_feed_formats.h and docs/breachctl.1 ("INPUT FORMATS"). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "url_feed_formats.h"
#include "util.h"

#define NAME_MAX_LEN 255 /* a DNS name in text form */
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

struct br_fmt_state {
    br_feed_format format;
    br_csv *csv;
    /* rpz */
    char origin[NAME_MAX_LEN + 1]; /* lower case, no final dot; "" when unset */
    char owner[NAME_MAX_LEN + 1];  /* the last owner name, for lines that omit it */
    char entry[NAME_MAX_LEN + 1];  /* the trigger name given out as an entry */
    int paren;                     /* open '(' of a multi-line record */
};

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

bool br_fmt_handles(br_feed_format f)
{
    return f >= BR_FEED_ADBLOCK && f <= BR_FEED_CSV;
}

int br_fmt_state_new(br_feed_format f, const char *column, br_fmt_state **out, br_error *err)
{
    br_fmt_state *st = calloc(1, sizeof(*st));
    if (!st)
        return br_error_set(err, -ENOMEM, "out of memory");
    st->format = f;
    if (f == BR_FEED_URLHAUS || f == BR_FEED_PHISHTANK || f == BR_FEED_CSV) {
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

/* ---- small helpers ---- */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

void br_fmt_trim(const char **s, size_t *n)
{
    while (*n > 0 && is_blank(**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && is_blank((*s)[*n - 1]))
        (*n)--;
}

static bool starts(const char *s, size_t n, const char *prefix)
{
    size_t p = strlen(prefix);
    return n >= p && strncasecmp(s, prefix, p) == 0;
}

static bool token_is(const br_fmt_entry *t, const char *word)
{
    return t->n == strlen(word) && strncasecmp(t->s, word, t->n) == 0;
}

static size_t tokens(const char *s, size_t n, br_fmt_entry *t, size_t max)
{
    size_t nt = 0;
    for (size_t i = 0; i < n && nt < max;) {
        while (i < n && is_blank(s[i]))
            i++;
        size_t b = i;
        while (i < n && !is_blank(s[i]))
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
            if (starts(s + i, n - i, marks[k]))
                return true;
    return false;
}

static void adblock_line(const char *s, size_t n, br_fmt_result *res)
{
    if (n == 0 || s[0] == '!' || (s[0] == '[' && s[n - 1] == ']') ||
        (s[0] == '#' && !is_cosmetic(s, n)))
        return set_kind(res, BR_FMT_COMMENT);
    if (starts(s, n, "@@"))
        return skip(res, BR_FEED_SKIP_EXCEPTION);
    if (is_cosmetic(s, n))
        return skip(res, BR_FEED_SKIP_RULE);
    if (!starts(s, n, "||"))
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

static void dnsmasq_line(const char *s, size_t n, br_fmt_result *res)
{
    if (n == 0 || s[0] == '#')
        return set_kind(res, BR_FMT_COMMENT);
    size_t k = 0;
    while (k < n && ((s[k] >= 'a' && s[k] <= 'z') || (s[k] >= '0' && s[k] <= '9') || s[k] == '-'))
        k++;
    if (k == 0 || (k < n && s[k] != '='))
        return bad(res, "not a dnsmasq option (name=value)");
    bool address = k == 7 && strncmp(s, "address", 7) == 0;
    bool server = (k == 6 && strncmp(s, "server", 6) == 0) || (k == 5 && strncmp(s, "local", 5) == 0);
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
    "deny",         "refuse",        "static",          "redirect",    "inform_deny",
    "always_deny",  "always_refuse", "always_nxdomain", "always_null",
};
static const char *const unbound_passing[] = {
    "transparent", "typetransparent", "inform", "always_transparent", "nodefault", "noview",
};

static bool in_list(const br_fmt_entry *t, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (token_is(t, list[i]))
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

static void unbound_line(const char *s, size_t n, br_fmt_result *res)
{
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
    size_t nt = tokens(v, vn, t, MAX_TOKENS);
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
            return bad(res, "unknown local-zone type '%.*s'", shown_len(&t[1], 40),
                       shown(&t[1]));
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
        if (is_blank(s[i]))
            return bad(res, "not an unbound option (name: value)");
    skip(res, BR_FEED_SKIP_OTHER);
}

/* ---- RPZ ---- */

/* Cut a ';' comment (outside double quotes); count parentheses. */
static size_t rpz_cut(br_fmt_state *st, const char *s, size_t n)
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
static int rpz_trigger(br_fmt_state *st, const char *owner, size_t n)
{
    if (n > NAME_MAX_LEN)
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

static void rpz_directive(br_fmt_state *st, const br_fmt_entry *t, size_t nt, br_fmt_result *res)
{
    if (token_is(&t[0], "$TTL"))
        return set_kind(res, BR_FMT_COMMENT);
    if (!token_is(&t[0], "$ORIGIN"))
        return bad(res, "%.*s is not supported (only $ORIGIN and $TTL)", shown_len(&t[0], 20),
                   shown(&t[0]));
    if (nt != 2 || t[1].n > NAME_MAX_LEN)
        return bad(res, "$ORIGIN needs one domain name");
    lower_copy(st->origin, t[1].s, t[1].n);
    size_t on = t[1].n;
    if (on > 0 && st->origin[on - 1] == '.')
        st->origin[on - 1] = '\0';
    set_kind(res, BR_FMT_COMMENT);
}

static void rpz_line(br_fmt_state *st, const char *s, size_t n, br_fmt_result *res)
{
    bool continued = st->paren > 0;
    n = rpz_cut(st, s, n);
    bool owner_given = n > 0 && !is_blank(s[0]);
    br_fmt_trim(&s, &n);
    if (continued || n == 0) /* a record's continuation lines go with it */
        return set_kind(res, BR_FMT_COMMENT);
    br_fmt_entry t[MAX_TOKENS];
    size_t nt = tokens(s, n, t, MAX_TOKENS), i = 0;
    if (t[0].s[0] == '$')
        return rpz_directive(st, t, nt, res);
    if (owner_given) {
        if (t[0].n > NAME_MAX_LEN)
            return bad(res, "the owner name is longer than %d characters", NAME_MAX_LEN);
        memcpy(st->owner, t[0].s, t[0].n);
        st->owner[t[0].n] = '\0';
        i = 1;
    } else if (!st->owner[0]) {
        return bad(res, "a record without an owner name");
    }
    for (; i < nt && (is_ttl(&t[i]) || token_is(&t[i], "IN") || token_is(&t[i], "CH") ||
                      token_is(&t[i], "HS") || token_is(&t[i], "CS"));
         i++)
        ;
    if (i == nt)
        return bad(res, "no record type");
    const br_fmt_entry *type = &t[i], *rdata = i + 1 < nt ? &t[i + 1] : NULL;
    if (token_is(type, "SOA") || token_is(type, "NS"))
        return skip(res, BR_FEED_SKIP_RECORD);
    int tn = rpz_trigger(st, st->owner, strlen(st->owner));
    if (tn < 0)
        return bad(res, "the owner name is longer than %d characters", NAME_MAX_LEN);
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
    if (token_is(type, "CNAME")) {
        if (!rdata)
            return bad(res, "CNAME without a target");
        if (token_is(rdata, "rpz-passthru."))
            return skip(res, BR_FEED_SKIP_PASSTHRU);
        return entry(res, name, nn); /* ".", "*.", rpz-drop., a walled garden */
    }
    if (token_is(type, "A") || token_is(type, "AAAA")) {
        if (!rdata)
            return bad(res, "%.*s without an address", (int)type->n, type->s);
        return entry(res, name, nn);
    }
    skip(res, BR_FEED_SKIP_RECORD);
}

/* ---- dispatch ---- */

int br_fmt_line(br_fmt_state *st, const char *s, size_t n, uint64_t lineno, br_fmt_result *res)
{
    memset(res, 0, offsetof(br_fmt_result, e));
    res->reason[0] = '\0';
    res->line = lineno;
    if (st->csv)
        return br_csv_line(st->csv, s, n, lineno, res);
    if (st->format == BR_FEED_RPZ) {
        rpz_line(st, s, n, res);
        return 0;
    }
    br_fmt_trim(&s, &n);
    switch (st->format) {
    case BR_FEED_ADBLOCK:
        adblock_line(s, n, res);
        break;
    case BR_FEED_DNSMASQ:
        dnsmasq_line(s, n, res);
        break;
    default:
        unbound_line(s, n, res);
        break;
    }
    if (res->kind == BR_FMT_ENTRIES && res->n == BR_FMT_MAX_ENTRIES)
        bad(res, "more than %d domains on one line", BR_FMT_MAX_ENTRIES - 1);
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

br_feed_format br_fmt_detect(const char *const *lines, const size_t *lens, size_t n, bool *json)
{
    size_t sample = 0, adblock = 0, dnsmasq = 0, unbound = 0, rpz = 0;
    bool first = true;
    *json = false;
    for (size_t i = 0; i < n; i++) {
        const char *s = lines[i];
        size_t len = lens[i];
        br_fmt_trim(&s, &len);
        if (len == 0)
            continue;
        if (first && (s[0] == '{' || (s[0] == '[' && (len == 1 || s[1] == '{' || s[1] == ']' ||
                                                       is_blank(s[1]))))) {
            *json = true;
            return BR_FEED_PHISHTANK;
        }
        if (starts(s, len, "[Adblock") || starts(s, len, "[AdGuard") || starts(s, len, "[uBlock"))
            return BR_FEED_ADBLOCK;
        if (s[0] == '#' && (memmem(s, len, "URLhaus", 7) || starts(s, len, "# id,dateadded,url")))
            return BR_FEED_URLHAUS;
        if (first && starts(s, len, "phish_id,"))
            return BR_FEED_PHISHTANK;
        if (starts(s, len, "$ORIGIN") || starts(s, len, "$TTL"))
            return BR_FEED_RPZ;
        if (s[0] == '#' || s[0] == '!' || s[0] == ';')
            continue;
        first = false;
        sample++;
        br_fmt_entry t[4];
        size_t nt = tokens(s, len, t, 4);
        adblock += starts(s, len, "||") || starts(s, len, "@@");
        dnsmasq += starts(s, len, "address=/") || starts(s, len, "server=/") || starts(s, len, "local=/");
        unbound += starts(s, len, "local-zone:") || starts(s, len, "local-data:") ||
                   (len == 7 && starts(s, len, "server:"));
        for (size_t k = 1; k < nt; k++)
            if (token_is(&t[k], "CNAME") || token_is(&t[k], "SOA"))
                rpz++;
    }
    if (sample == 0)
        return BR_FEED_AUTO;
    if (2 * adblock > sample)
        return BR_FEED_ADBLOCK;
    if (2 * dnsmasq > sample)
        return BR_FEED_DNSMASQ;
    if (2 * unbound > sample)
        return BR_FEED_UNBOUND;
    if (2 * rpz > sample)
        return BR_FEED_RPZ;
    return BR_FEED_AUTO;
}
