/* SPDX-License-Identifier: MIT */
/* The library's settings: the [dns] section of breachd.conf, and [urls]
 * filter and pubkey (breachd.conf(5), "THE [dns] SECTION"). breachd reads
 * the rest of the file; this reads only these keys and refuses an unknown
 * [dns] key or a bad value by name and line. breachd --check-config checks
 * the [dns] keys with bdns_conf_key, so both name the same FILE:LINE and
 * the same fault. */
#pragma once

#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>

#include "breachd-dns.h"
#include "core/error.h"

#define BDNS_MAX_CATEGORY_ACTIONS 64
#define BDNS_LIST_MAX 4096

typedef struct bdns_conf {
    char path[PATH_MAX];
    char filter[BDNS_LIST_MAX];     /* [dns] filter, else [urls] filter: a base then deltas */
    char dns_filter[BDNS_LIST_MAX]; /* [dns] filter as written ("" when unset) */
    char pubkey[PATH_MAX];          /* [urls] pubkey */
    int action;                     /* [dns] action */
    unsigned n_cat;
    struct {
        char name[BREACHD_DNS_CATEGORY_MAX + 1];
        int action;
    } cat[BDNS_MAX_CATEGORY_ACTIONS]; /* [dns] action.CATEGORY */
    char sinkhole4[INET_ADDRSTRLEN], sinkhole6[INET6_ADDRSTRLEN];
    char redirect[BREACHD_DNS_NAME_MAX + 1];
    unsigned seen; /* the fixed keys set so far, one bit each */
} bdns_conf;

/* c's defaults (no path, no filter, nxdomain, 0.0.0.0 and ::). */
void bdns_conf_defaults(bdns_conf *c);
/* Apply the [dns] key = v (v as written, blanks around it dropped). 0, or
 * -EINVAL with why set to "what is wrong" (no file, line or key: the
 * caller prefixes "FILE:LINE: [dns] KEY: "). */
int bdns_conf_key(bdns_conf *c, const char *key, const char *v, br_error *why);
/* Read path into c (defaults first). 0, or -errno / -EINVAL with err set
 * to "PATH: reason" or "PATH:LINE: [dns] KEY: what is wrong". */
int bdns_conf_load(const char *path, bdns_conf *c, br_error *err);
/* Write c's [dns] section as breachd.conf text (breachd --check-config). */
void bdns_conf_dump(const bdns_conf *c, FILE *out);
/* The action for category (c->action when it has none of its own). */
int bdns_conf_action(const bdns_conf *c, const char *category);
/* "nxdomain" .. "log" to BREACHD_DNS_NXDOMAIN .., -1 when none. */
int bdns_action_parse(const char *s);
