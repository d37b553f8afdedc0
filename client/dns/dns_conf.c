/* SPDX-License-Identifier: MIT */
/* [dns] of breachd.conf (dns_conf.h): the checks of each key, shared with
 * breachd --check-config, and a reader of the few keys the library needs. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dns_conf.h"

static const char *const action_names[] = {"nxdomain", "nodata", "sinkhole", "redirect", "log"};
#define N_ACTIONS (sizeof(action_names) / sizeof(action_names[0]))
#define EXPECTED_ACTION "expected nxdomain, nodata, sinkhole, redirect or log, not"

/* The fixed keys, their bit in bdns_conf.seen. */
static const char *const fixed_keys[] = {"filter", "action", "sinkhole", "redirect"};

const char *breachd_dns_action_name(int action)
{
    if (action < 0 || (size_t)action >= N_ACTIONS)
        return NULL;
    return action_names[action];
}

int bdns_action_parse(const char *s)
{
    for (size_t i = 0; i < N_ACTIONS; i++)
        if (strcasecmp(s, action_names[i]) == 0)
            return (int)i;
    return -1;
}

void bdns_conf_defaults(bdns_conf *c)
{
    memset(c, 0, sizeof(*c));
    c->action = BREACHD_DNS_NXDOMAIN;
    memcpy(c->sinkhole4, "0.0.0.0", sizeof("0.0.0.0"));
    memcpy(c->sinkhole6, "::", sizeof("::"));
}

static int bad(br_error *why, const char *what, const char *v)
{
    return br_error_set(why, -EINVAL, "%s%s%s%s", what, v ? " \"" : "", v ? v : "", v ? "\"" : "");
}

static int copy(char *dst, size_t n, const char *v, br_error *why)
{
    size_t len = strlen(v);
    if (len >= n)
        return bad(why, "too long", NULL);
    memcpy(dst, v, len + 1);
    return 0;
}

/* "0.0.0.0, ::": at most one address of each family. */
static int set_sinkhole(bdns_conf *c, const char *v, br_error *why)
{
    char buf[256];
    if (copy(buf, sizeof(buf), v, why) < 0)
        return -EINVAL;
    c->sinkhole4[0] = c->sinkhole6[0] = '\0';
    char *save = NULL;
    for (char *t = strtok_r(buf, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
        unsigned char a[16];
        if (inet_pton(AF_INET, t, a) == 1 && !c->sinkhole4[0])
            copy(c->sinkhole4, sizeof(c->sinkhole4), t, why);
        else if (inet_pton(AF_INET6, t, a) == 1 && !c->sinkhole6[0])
            copy(c->sinkhole6, sizeof(c->sinkhole6), t, why);
        else
            return bad(why, "expected at most one IPv4 and one IPv6 address, comma-separated, not",
                       t);
    }
    return 0;
}

static int set_category_action(bdns_conf *c, const char *key, const char *v, br_error *why)
{
    const char *cat = key + strlen("action.");
    size_t n = strlen(cat);
    if (n == 0 || n > BREACHD_DNS_CATEGORY_MAX ||
        strspn(cat, "abcdefghijklmnopqrstuvwxyz0123456789_-") != n)
        return bad(why, "a category is 1 to 32 of a-z 0-9 _ -", NULL);
    int a = bdns_action_parse(v);
    if (a < 0)
        return bad(why, EXPECTED_ACTION, v);
    for (unsigned i = 0; i < c->n_cat; i++)
        if (strcmp(c->cat[i].name, cat) == 0)
            return bad(why, "set twice", NULL);
    if (c->n_cat >= BDNS_MAX_CATEGORY_ACTIONS)
        return bad(why, "more than 64 action.CATEGORY keys", NULL);
    memcpy(c->cat[c->n_cat].name, cat, n + 1);
    c->cat[c->n_cat++].action = a;
    return 0;
}

/* A list of absolute paths, as breachd's [urls] filter. */
static int set_filter(char *dst, size_t n, const char *v, br_error *why)
{
    for (const char *s = v; *s;) {
        s += strspn(s, " \t,");
        if (*s && *s != '/')
            return bad(why, "expected absolute paths, comma-separated, not", v);
        s += strcspn(s, ",");
    }
    return copy(dst, n, v, why);
}

static int set_fixed(bdns_conf *c, unsigned k, const char *v, br_error *why)
{
    switch (k) {
    case 0:
        return set_filter(c->dns_filter, sizeof(c->dns_filter), v, why);
    case 1:
        return (c->action = bdns_action_parse(v)) < 0 ? bad(why, EXPECTED_ACTION, v) : 0;
    case 2:
        return set_sinkhole(c, v, why);
    default: {
        size_t n = strlen(v);
        if (n > BREACHD_DNS_NAME_MAX ||
            strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != n)
            return bad(why, "expected a host name, not", v);
        return copy(c->redirect, sizeof(c->redirect), v, why);
    }
    }
}

int bdns_conf_key(bdns_conf *c, const char *key, const char *v, br_error *why)
{
    if (strncmp(key, "action.", 7) == 0)
        return set_category_action(c, key, v, why);
    for (unsigned k = 0; k < sizeof(fixed_keys) / sizeof(fixed_keys[0]); k++) {
        if (strcmp(key, fixed_keys[k]) != 0)
            continue;
        if (c->seen & (1u << k))
            return bad(why, "set twice", NULL);
        c->seen |= 1u << k;
        return set_fixed(c, k, v, why);
    }
    return bad(why, "unknown key (filter, action, action.CATEGORY, sinkhole, redirect)", NULL);
}

/* ---- the reader: sections, "key = value" lines, whole-line comments ---- */

typedef struct reader {
    bdns_conf *c;
    char section[64];
    char urls_filter[BDNS_LIST_MAX];
} reader;

static char *trim(char *s, char *end)
{
    while (*s == ' ' || *s == '\t')
        s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
        *--end = '\0';
    return s;
}

/* One line; -EINVAL with why set for a fault in a key of the library's. */
static int read_line(reader *r, char *line, size_t len, const char **key, br_error *why)
{
    char *s = trim(line, line + len);
    *key = NULL;
    if (!*s || *s == '#' || *s == ';')
        return 0;
    if (*s == '[') {
        char *close = strchr(s, ']');
        size_t n = close ? (size_t)(close - s - 1) : 0;
        if (n >= sizeof(r->section))
            n = 0;
        memcpy(r->section, s + 1, n);
        r->section[n] = '\0';
        return 0;
    }
    bool dns = strcmp(r->section, "dns") == 0, urls = strcmp(r->section, "urls") == 0;
    char *eq = strchr(s, '=');
    if (!eq)
        return dns ? bad(why, "expected \"key = value\"", NULL) : 0;
    *eq = '\0';
    *key = trim(s, eq);
    const char *v = trim(eq + 1, eq + 1 + strlen(eq + 1));
    if (dns)
        return bdns_conf_key(r->c, *key, v, why);
    if (urls && strcmp(*key, "filter") == 0)
        return set_filter(r->urls_filter, sizeof(r->urls_filter), v, why);
    if (urls && strcmp(*key, "pubkey") == 0)
        return copy(r->c->pubkey, sizeof(r->c->pubkey), v, why);
    return 0; /* breachd's keys: breachd checks them */
}

static int read_file(reader *r, FILE *f, br_error *err)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    for (unsigned lineno = 1; rc == 0 && (n = getline(&line, &cap, f)) >= 0; lineno++) {
        br_error why = {{0}};
        const char *key = NULL;
        if (read_line(r, line, (size_t)n, &key, &why) < 0)
            rc = key ? br_error_set(err, -EINVAL, "%s:%u: [%s] %s: %s", r->c->path, lineno,
                                    r->section, key, why.text)
                     : br_error_set(err, -EINVAL, "%s:%u: %s", r->c->path, lineno, why.text);
    }
    if (rc == 0 && ferror(f))
        rc = br_error_set(err, -EIO, "%s: read error", r->c->path);
    free(line);
    return rc;
}

int bdns_conf_load(const char *path, bdns_conf *c, br_error *err)
{
    bdns_conf_defaults(c);
    if (strlen(path) >= sizeof(c->path))
        return br_error_set(err, -ENAMETOOLONG, "%s: path too long", path);
    memcpy(c->path, path, strlen(path) + 1);
    FILE *f = fopen(path, "re");
    if (!f)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    reader *r = calloc(1, sizeof(*r));
    int rc = r ? (r->c = c, read_file(r, f, err)) : br_error_set(err, -ENOMEM, "out of memory");
    fclose(f);
    if (rc == 0)
        memcpy(c->filter, c->dns_filter[0] ? c->dns_filter : r->urls_filter, sizeof(c->filter));
    free(r);
    return rc;
}

void bdns_conf_dump(const bdns_conf *c, FILE *out)
{
    fprintf(out, "\n[dns]\n# read by libbreachd-dns in resolvers (breachd.conf(5), "
                 "\"THE [dns] SECTION\")\n");
    fprintf(out, "# an offline URL filter, then its deltas (empty: [urls] filter)\n");
    fprintf(out, c->dns_filter[0] ? "filter = %s\n" : "filter =%s\n", c->dns_filter);
    fprintf(out, "# the answer to a blocked name (nxdomain, nodata, sinkhole, redirect, log)\n");
    fprintf(out, "action = %s\n", action_names[c->action]);
    for (unsigned i = 0; i < c->n_cat; i++)
        fprintf(out, "action.%s = %s\n", c->cat[i].name, action_names[c->cat[i].action]);
    fprintf(out, "# the A and AAAA answers of sinkhole\n");
    const char *sep = c->sinkhole4[0] && c->sinkhole6[0] ? ", " : "";
    fprintf(out, c->sinkhole4[0] || c->sinkhole6[0] ? "sinkhole = %s%s%s\n" : "sinkhole =%s%s%s\n",
            c->sinkhole4, sep, c->sinkhole6);
    fprintf(out, "# the block page's host name for redirect\n");
    fprintf(out, c->redirect[0] ? "redirect = %s\n" : "redirect =%s\n", c->redirect);
}

int bdns_conf_action(const bdns_conf *c, const char *category)
{
    for (unsigned i = 0; i < c->n_cat; i++)
        if (strcmp(c->cat[i].name, category) == 0)
            return c->cat[i].action;
    return c->action;
}
