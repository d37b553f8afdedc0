/* SPDX-License-Identifier: MIT */
/* Who may use breachd, asked of a loaded configuration (conf.h): a socket
 * peer by its uid, gid and groups against allowed_users, allowed_groups,
 * stats_users and admin_users; an HTTP client by its address against
 * [http] allowed_networks (breachd.conf(5)). The lists were parsed at load
 * (conf_values.c). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conf.h"

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
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
    return breachd_config_is_admin(c, uid) ||
           in_list(c->daemon.stats_users, c->daemon.n_stats_users, uid);
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

/* ---- [http] allowed_networks ---------------------------------------------------------- */

static bool in_network(const breachd_network *net, int family, const uint8_t *addr)
{
    if (net->family != family)
        return false;
    unsigned full = net->bits / 8, rest = net->bits % 8;
    if (memcmp(net->addr, addr, full) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xFF << (8 - rest));
    return (net->addr[full] & mask) == (addr[full] & mask);
}

bool breachd_config_http_allowed(const breachd_config *cfg, const struct sockaddr *sa)
{
    if (!sa)
        return false;
    int family = sa->sa_family;
    const uint8_t *addr;
    if (family == AF_UNIX)
        return true;
    if (family == AF_INET) {
        addr = (const uint8_t *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    } else if (family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        addr = a6->s6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a6)) {
            family = AF_INET;
            addr += 12;
        }
    } else {
        return false;
    }
    for (size_t i = 0; i < cfg->http.n_allowed_networks; i++)
        if (in_network(&cfg->http.allowed_networks[i], family, addr))
            return true;
    return false;
}
