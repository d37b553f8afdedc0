/* SPDX-License-Identifier: MIT */
/* [dns] of breachd.conf (dns_conf.h). */
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "dns_conf.h"

static const char *const action_names[] = {"nxdomain", "nodata", "sinkhole", "redirect", "log"};

const char *breachd_dns_action_name(int action)
{
    if (action < 0 || (size_t)action >= sizeof(action_names) / sizeof(action_names[0]))
        return NULL;
    return action_names[action];
}

int bdns_action_parse(const char *s)
{
    for (size_t i = 0; i < sizeof(action_names) / sizeof(action_names[0]); i++)
        if (strcasecmp(s, action_names[i]) == 0)
            return (int)i;
    return -1;
}

typedef struct parse {
    bdns_conf *c;
    br_error *err;
    int rc;
    char dns_filter[BDNS_LIST_MAX], urls_filter[BDNS_LIST_MAX];
} parse;

static int fail(parse *p, const char *section, const char *key, const char *what, const char *v)
{
    if (p->rc == 0)
        p->rc = br_error_set(p->err, -EINVAL, "%s: [%s] %s: %s%s%s%s", p->c->path, section, key,
                             what, v ? " \"" : "", v ? v : "", v ? "\"" : "");
    return 0;
}

static int copy(parse *p, const char *section, const char *key, char *dst, size_t n, const char *v)
{
    if (strlen(v) >= n)
        return fail(p, section, key, "too long", NULL);
    snprintf(dst, n, "%s", v);
    return 1;
}

/* "0.0.0.0, ::": at most one address of each family. */
static int set_sinkhole(parse *p, const char *v)
{
    p->c->sinkhole4[0] = p->c->sinkhole6[0] = '\0';
    char buf[256];
    if (strlen(v) >= sizeof(buf))
        return fail(p, "dns", "sinkhole", "too long", NULL);
    snprintf(buf, sizeof(buf), "%s", v);
    char *save = NULL;
    for (char *t = strtok_r(buf, ", \t", &save); t; t = strtok_r(NULL, ", \t", &save)) {
        unsigned char a[16];
        if (inet_pton(AF_INET, t, a) == 1 && !p->c->sinkhole4[0])
            snprintf(p->c->sinkhole4, sizeof(p->c->sinkhole4), "%s", t);
        else if (inet_pton(AF_INET6, t, a) == 1 && !p->c->sinkhole6[0])
            snprintf(p->c->sinkhole6, sizeof(p->c->sinkhole6), "%s", t);
        else
            return fail(p, "dns", "sinkhole",
                        "expected at most one IPv4 and one IPv6 address, comma-separated, not", t);
    }
    return 1;
}

static int set_category_action(parse *p, const char *key, const char *v)
{
    const char *cat = key + strlen("action.");
    size_t n = strlen(cat);
    if (n == 0 || n > BREACHD_DNS_CATEGORY_MAX ||
        strspn(cat, "abcdefghijklmnopqrstuvwxyz0123456789_-") != n)
        return fail(p, "dns", key, "a category is 1 to 32 of a-z 0-9 _ -", NULL);
    int a = bdns_action_parse(v);
    if (a < 0)
        return fail(p, "dns", key, "expected nxdomain, nodata, sinkhole, redirect or log, not", v);
    bdns_conf *c = p->c;
    for (unsigned i = 0; i < c->n_cat; i++)
        if (strcmp(c->cat[i].name, cat) == 0)
            return fail(p, "dns", key, "set twice", NULL);
    if (c->n_cat >= BDNS_MAX_CATEGORY_ACTIONS)
        return fail(p, "dns", key, "more than 64 action.CATEGORY keys", NULL);
    snprintf(c->cat[c->n_cat].name, sizeof(c->cat[0].name), "%s", cat);
    c->cat[c->n_cat++].action = a;
    return 1;
}

/* A list of absolute paths, as breachd's [urls] filter. */
static int set_filter(parse *p, const char *section, char *dst, size_t n, const char *v)
{
    for (const char *s = v; *s;) {
        s += strspn(s, " \t,");
        if (*s && *s != '/')
            return fail(p, section, "filter", "expected absolute paths, comma-separated, not", v);
        s += strcspn(s, ",");
    }
    return copy(p, section, "filter", dst, n, v);
}

static int dns_key(parse *p, const char *key, const char *v)
{
    bdns_conf *c = p->c;
    if (strcmp(key, "filter") == 0)
        return set_filter(p, "dns", p->dns_filter, sizeof(p->dns_filter), v);
    if (strcmp(key, "action") == 0) {
        if ((c->action = bdns_action_parse(v)) < 0)
            return fail(p, "dns", key, "expected nxdomain, nodata, sinkhole, redirect or log, not",
                        v);
        return 1;
    }
    if (strncmp(key, "action.", 7) == 0)
        return set_category_action(p, key, v);
    if (strcmp(key, "sinkhole") == 0)
        return set_sinkhole(p, v);
    if (strcmp(key, "redirect") == 0) {
        size_t n = strlen(v);
        if (n > BREACHD_DNS_NAME_MAX ||
            strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != n)
            return fail(p, "dns", key, "expected a host name, not", v);
        return copy(p, "dns", key, c->redirect, sizeof(c->redirect), v);
    }
    return fail(p, "dns", key, "unknown key (filter, action, action.CATEGORY, sinkhole, redirect)",
                NULL);
}

static int handler(void *user, const char *section, const char *key, const char *v)
{
    parse *p = user;
    if (p->rc < 0)
        return 1;
    if (strcmp(section, "dns") == 0)
        return dns_key(p, key, v), 1; /* errors stop at the first, in p->rc */
    if (strcmp(section, "urls") == 0 && strcmp(key, "filter") == 0)
        return set_filter(p, "urls", p->urls_filter, sizeof(p->urls_filter), v);
    if (strcmp(section, "urls") == 0 && strcmp(key, "pubkey") == 0)
        return copy(p, "urls", key, p->c->pubkey, sizeof(p->c->pubkey), v);
    return 1; /* breachd's keys: breachd checks them */
}

int bdns_conf_load(const char *path, bdns_conf *c, br_error *err)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->path, sizeof(c->path), "%s", path);
    c->action = BREACHD_DNS_NXDOMAIN;
    snprintf(c->sinkhole4, sizeof(c->sinkhole4), "0.0.0.0");
    snprintf(c->sinkhole6, sizeof(c->sinkhole6), "::");
    FILE *f = fopen(path, "re");
    if (!f)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    parse *p = &(parse){.c = c, .err = err};
    int r = ini_parse_file(f, handler, p);
    fclose(f);
    if (p->rc < 0)
        return p->rc;
    if (r != 0)
        return br_error_set(err, -EINVAL, "%s:%d: cannot parse this line", path, r);
    memcpy(c->filter, p->dns_filter[0] ? p->dns_filter : p->urls_filter, sizeof(c->filter));
    return 0;
}

int bdns_conf_action(const bdns_conf *c, const char *category)
{
    for (unsigned i = 0; i < c->n_cat; i++)
        if (strcmp(c->cat[i].name, category) == 0)
            return c->cat[i].action;
    return c->action;
}
