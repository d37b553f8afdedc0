/* SPDX-License-Identifier: MIT */
/* Exemptions (pam_breachd(8), EXEMPTIONS): skip_users, skip_groups and
 * only_groups. Groups come from NSS (getpwnam_r, getgrouplist,
 * getgrnam_r), so LDAP and sssd groups count as local ones do. A user or
 * group NSS cannot find is logged and counts as no membership. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <security/pam_ext.h>

#include "pam_breachd.h"

#define NSS_BUF_MAX (1u << 20)
#define GROUPS_MAX 65536

/* Is name one of the comma-separated names in list? */
static bool list_has(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len;
        p += *p == ',';
    }
    return false;
}

/* A gid through NSS: of the group named name (group), else of the user
 * named name's primary group. 0, or -errno (-ENOENT: no such user or
 * group). */
static int nss_gid(const char *name, bool group, gid_t *gid)
{
    for (size_t size = 4096; size <= NSS_BUF_MAX; size *= 2) {
        char *buf = malloc(size);
        if (!buf)
            return -ENOMEM;
        struct passwd pw, *pw_res = NULL;
        struct group gr, *gr_res = NULL;
        int r = group ? getgrnam_r(name, &gr, buf, size, &gr_res)
                      : getpwnam_r(name, &pw, buf, size, &pw_res);
        bool found = group ? gr_res != NULL : pw_res != NULL;
        if (r == 0 && found)
            *gid = group ? gr.gr_gid : pw.pw_gid;
        free(buf);
        if (r == ERANGE)
            continue;
        return r ? -r : found ? 0 : -ENOENT;
    }
    return -ERANGE;
}

/* Every group of user (primary and supplementary), malloc'ed into *out. */
static int user_groups(const char *user, gid_t **out, int *count)
{
    gid_t primary = 0;
    int r = nss_gid(user, false, &primary);
    if (r < 0)
        return r;
    int n = 64;
    for (int tries = 0; tries < 4; tries++) {
        gid_t *g = calloc((size_t)n, sizeof(*g));
        if (!g)
            return -ENOMEM;
        int got = n;
        if (getgrouplist(user, primary, g, &got) >= 0) {
            *out = g, *count = got;
            return 0;
        }
        free(g);
        if (got <= n || got > GROUPS_MAX)
            break;
        n = got; /* the number needed, set by glibc */
    }
    return -E2BIG;
}

/* Is any group named in list one of the n gids? Unknown names are logged. */
static bool member_of_any(pam_handle_t *pamh, const char *list, const gid_t *gids, int n)
{
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        char name[256];
        if (len < sizeof(name)) {
            memcpy(name, p, len);
            name[len] = '\0';
            gid_t gid;
            int r = nss_gid(name, true, &gid);
            if (r < 0)
                pb_syslog(pamh, LOG_WARNING, "group %s: %s", name,
                          r == -ENOENT ? "no such group" : strerror(-r));
            for (int i = 0; r == 0 && i < n; i++)
                if (gids[i] == gid)
                    return true;
        }
        p += len;
        p += *p == ',';
    }
    return false;
}

bool pb_exempt(pam_handle_t *pamh, const pb_options *o, const char *user)
{
    pb_user_buf ub;
    if (user && o->skip_users && list_has(o->skip_users, user)) {
        if (o->debug)
            pb_syslog(pamh, LOG_DEBUG, "user %s: in skip_users: not checked",
                      pb_user_name(pamh, &ub));
        return true;
    }
    if (!o->skip_groups && !o->only_groups)
        return false;
    gid_t *gids = NULL;
    int n = 0;
    int r = user ? user_groups(user, &gids, &n) : -ENOENT;
    if (r < 0)
        pb_syslog(pamh, LOG_WARNING, "user %s: cannot find the groups: %s", pb_user_name(pamh, &ub),
                  r == -ENOENT ? "no such user" : strerror(-r));
    const char *why = NULL;
    if (o->skip_groups && member_of_any(pamh, o->skip_groups, gids, n))
        why = "a member of skip_groups";
    else if (o->only_groups && !member_of_any(pamh, o->only_groups, gids, n))
        why = "not a member of only_groups";
    free(gids);
    if (why && o->debug)
        pb_syslog(pamh, LOG_DEBUG, "user %s: %s: not checked", pb_user_name(pamh, &ub), why);
    return why != NULL;
}
