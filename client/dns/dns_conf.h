/* SPDX-License-Identifier: MIT */
/* The library's settings: the [dns] section of breachd.conf, and [urls]
 * filter and pubkey (breachd.conf(5), "[dns]"). breachd reads the rest of
 * the file; this reads only these keys, with libinih, and refuses an
 * unknown [dns] key or a bad value by name. */
#pragma once

#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "breachd-dns.h"
#include "core/error.h"

#define BDNS_MAX_CATEGORY_ACTIONS 64
#define BDNS_LIST_MAX 4096

typedef struct bdns_conf {
    char path[PATH_MAX];
    char filter[BDNS_LIST_MAX]; /* [dns] filter, else [urls] filter: a base then deltas */
    char pubkey[PATH_MAX];      /* [urls] pubkey */
    int action;                 /* [dns] action */
    unsigned n_cat;
    struct {
        char name[BREACHD_DNS_CATEGORY_MAX + 1];
        int action;
    } cat[BDNS_MAX_CATEGORY_ACTIONS]; /* [dns] action.CATEGORY */
    char sinkhole4[INET_ADDRSTRLEN], sinkhole6[INET6_ADDRSTRLEN];
    char redirect[BREACHD_DNS_NAME_MAX + 1];
} bdns_conf;

/* Read path into c (defaults first). 0, or -errno / -EINVAL with err set to
 * "PATH: [dns] KEY: what is wrong". */
int bdns_conf_load(const char *path, bdns_conf *c, br_error *err);
/* The action for category (c->action when it has none of its own). */
int bdns_conf_action(const bdns_conf *c, const char *category);
/* "nxdomain" .. "log" to BREACHD_DNS_NXDOMAIN .., -1 when none. */
int bdns_action_parse(const char *s);
