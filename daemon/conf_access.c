/* SPDX-License-Identifier: MIT */
/* breachd.conf user and group lists (allowed_users, allowed_groups,
 * admin_users): parsing them, names resolved once at load, and the peer
 * policy that checks a client against them. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "conf_int.h"

/* ---- user and group lists ------------------------------------------------------ */

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Resolve one user or group name. 0: found; -ENOENT: no such name; other
 * negative errno: the lookup failed. */
static int lookup_id(const char *name, bool group, uint32_t *id)
{
    if (strcmp(name, "root") == 0) { /* uid and gid 0 everywhere: no NSS lookup */
        *id = 0;
        return 0;
    }
    long hint = sysconf(group ? _SC_GETGR_R_SIZE_MAX : _SC_GETPW_R_SIZE_MAX);
    size_t len = hint > 0 ? (size_t)hint : 1024;
    for (;;) {
        _cleanup_free_ char *buf = malloc(len);
        if (!buf)
            return -ENOMEM;
        int r;
        bool found;
        if (group) {
            struct group gr, *res = NULL;
            r = getgrnam_r(name, &gr, buf, len, &res);
            found = r == 0 && res;
            if (found)
                *id = (uint32_t)gr.gr_gid;
        } else {
            struct passwd pw, *res = NULL;
            r = getpwnam_r(name, &pw, buf, len, &res);
            found = r == 0 && res;
            if (found)
                *id = (uint32_t)pw.pw_uid;
        }
        if (found)
            return 0;
        if (r == ERANGE && len < (1u << 20)) {
            len *= 2;
            continue;
        }
        /* getpwnam(3): 0, ENOENT, ESRCH, EBADF or EPERM all may mean "not found". */
        if (r == 0 || r == ENOENT || r == ESRCH || r == EBADF || r == EPERM)
            return -ENOENT;
        return -r;
    }
}

/* A comma list of names or numeric ids -> a sorted array without duplicates. */
int bd_conf_parse_id_list(const char *v, bool group, uint32_t **out, size_t *n_out, br_error *err)
{
    const char *what = group ? "group" : "user";
    *out = NULL;
    *n_out = 0;
    if (!*v)
        return 0;
    _cleanup_free_ char *copy = strdup(v);
    size_t cap = 1;
    for (const char *p = v; *p; p++)
        cap += *p == ',';
    if (cap > BREACHD_CONF_MAX_LIST)
        return br_error_set(err, -EINVAL, "more than %d entries", BREACHD_CONF_MAX_LIST);
    _cleanup_free_ uint32_t *ids = calloc(cap, sizeof(*ids));
    if (!copy || !ids)
        return -ENOMEM;
    size_t n = 0;
    char *entry = copy;
    for (;;) {
        char *comma = strchr(entry, ',');
        if (comma)
            *comma = '\0';
        char *name = skip_blanks(entry);
        rstrip_blanks(name);
        if (!*name)
            return br_error_set(err, -EINVAL, "empty entry in the %s list (a stray comma?)", what);
        char q[100];
        bd_conf_quote_value(q, sizeof(q), name);
        if (all_digits(name)) {
            const char *p = name;
            uint64_t id;
            if (!bd_conf_take_u64(&p, &id) || id >= UINT32_MAX)
                return br_error_set(err, -EINVAL, "%s id %s is out of range", what, q);
            ids[n++] = (uint32_t)id;
        } else {
            int rc = lookup_id(name, group, &ids[n]);
            if (rc == -ENOENT)
                return br_error_set(err, -EINVAL, "unknown %s %s", what, q);
            if (rc == -ENOMEM)
                return rc;
            if (rc < 0)
                return br_error_set(err, -EINVAL, "cannot look up %s %s: %s", what, q, strerror(-rc));
            n++;
        }
        if (!comma)
            break;
        entry = comma + 1;
    }
    qsort(ids, n, sizeof(*ids), cmp_u32);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || ids[m - 1] != ids[i])
            ids[m++] = ids[i];
    *out = BR_TAKE_PTR(ids);
    *n_out = m;
    return 0;
}

/* ---- peer policy -------------------------------------------------------------- */

static bool in_list(const uint32_t *ids, size_t n, uint32_t id)
{
    return n > 0 && bsearch(&id, ids, n, sizeof(*ids), cmp_u32) != NULL;
}

bool breachd_config_is_admin(const breachd_config *c, uid_t uid)
{
    return in_list(c->daemon.admin_users, c->daemon.n_admin_users, uid);
}

bool breachd_config_may_stats(const breachd_config *c, uid_t uid)
{
    return breachd_config_is_admin(c, uid) || in_list(c->daemon.stats_users, c->daemon.n_stats_users, uid);
}

bool breachd_config_peer_allowed(const breachd_config *c, uid_t uid, gid_t gid, const gid_t *groups,
                                 size_t n_groups)
{
    if (c->daemon.n_allowed_users == 0 && c->daemon.n_allowed_groups == 0)
        return true;
    if (in_list(c->daemon.allowed_users, c->daemon.n_allowed_users, uid) ||
        breachd_config_may_stats(c, uid))
        return true;
    const uint32_t *g = c->daemon.allowed_groups;
    if (in_list(g, c->daemon.n_allowed_groups, gid))
        return true;
    for (size_t i = 0; i < n_groups; i++)
        if (in_list(g, c->daemon.n_allowed_groups, groups[i]))
            return true;
    return false;
}
