/* SPDX-License-Identifier: MIT */
/* breachd.conf [http] values: the listen list (TCP addresses and Unix socket
 * paths) and allowed_networks (CIDR lists), and the client check made with
 * them (breachd.conf(5) "[http] SECTION"). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "conf_int.h"

#define MAX_LISTEN 16
#define MAX_NETWORKS 256
#define ITEM_MAX 512

/* The start of a list for next_item: NULL when v is empty or blank. */
static const char *list_start(const char *v)
{
    for (const char *s = v; *s; s++)
        if (!is_blank(*s))
            return v;
    return NULL;
}

/* The next comma-separated item of *p, blanks trimmed, into item (ITEM_MAX
 * bytes). false at the end of the list; -1 in *bad for an empty (a comma
 * too many) or over-long item. */
static bool next_item(const char **p, char item[ITEM_MAX], int *bad)
{
    const char *s = *p;
    if (!s)
        return false;
    const char *comma = strchr(s, ',');
    const char *end = comma ? comma : s + strlen(s);
    *p = comma ? comma + 1 : NULL;
    while (s < end && is_blank(*s))
        s++;
    while (end > s && is_blank(end[-1]))
        end--;
    if (end == s || (size_t)(end - s) >= ITEM_MAX) {
        *bad = -1;
        return true;
    }
    memcpy(item, s, (size_t)(end - s));
    item[end - s] = '\0';
    return true;
}

/* ---- listen ------------------------------------------------------------------- */

static int parse_path_item(const char *item, breachd_listen *l, br_error *err)
{
    char q[100];
    bd_conf_quote_value(q, sizeof(q), item);
    if (strlen(item) >= sizeof(l->path) ||
        strlen(item) >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
        return br_error_set(err, -EINVAL, "socket path %s is too long (at most %zu bytes)", q,
                            sizeof(l->path) - 1);
    l->family = AF_UNIX;
    snprintf(l->path, sizeof(l->path), "%s", item);
    return 0;
}

static int parse_addr_item(const char *item, breachd_listen *l, br_error *err)
{
    char q[100];
    bd_conf_quote_value(q, sizeof(q), item);
    char addr[64];
    const char *port_text;
    if (item[0] == '[') {
        const char *close = strchr(item, ']');
        if (!close || close[1] != ':' || (size_t)(close - item - 1) >= sizeof(addr))
            goto bad;
        memcpy(addr, item + 1, (size_t)(close - item - 1));
        addr[close - item - 1] = '\0';
        port_text = close + 2;
        l->family = AF_INET6;
    } else {
        const char *colon = strrchr(item, ':');
        if (!colon || (size_t)(colon - item) >= sizeof(addr) ||
            memchr(item, ':', (size_t)(colon - item)))
            goto bad;
        memcpy(addr, item, (size_t)(colon - item));
        addr[colon - item] = '\0';
        port_text = colon + 1;
        l->family = AF_INET;
    }
    const char *p = port_text;
    uint64_t pn;
    if (!bd_conf_take_u64(&p, &pn) || *p || pn < 1 || pn > 65535)
        return br_error_set(err, -EINVAL, "bad port in %s: expected 1 .. 65535", q);
    uint8_t bin[16];
    if (inet_pton(l->family, addr, bin) != 1)
        return br_error_set(err, -EINVAL,
                            "%s: not a numeric %s address (names are not resolved), e.g. "
                            "10.0.0.5:8080 or [::1]:8080",
                            q, l->family == AF_INET ? "IPv4" : "IPv6");
    inet_ntop(l->family, bin, l->host, sizeof(l->host));
    l->port = (uint16_t)pn;
    return 0;
bad:
    return br_error_set(err, -EINVAL,
                        "bad listen item %s: expected HOST:PORT with a numeric address "
                        "(10.0.0.5:8080, [::1]:8080) or an absolute Unix socket path",
                        q);
}

int bd_conf_parse_listen_list(const char *v, breachd_listen **out, size_t *n_out, br_error *err)
{
    breachd_listen items[MAX_LISTEN];
    size_t n = 0;
    char item[ITEM_MAX];
    int bad = 0;
    for (const char *p = list_start(v); next_item(&p, item, &bad);) {
        if (bad)
            return br_error_set(err, -EINVAL, "an empty or over-long item in the list");
        if (n == MAX_LISTEN)
            return br_error_set(err, -EINVAL, "more than %d items", MAX_LISTEN);
        breachd_listen *l = &items[n];
        memset(l, 0, sizeof(*l));
        int rc = item[0] == '/' ? parse_path_item(item, l, err) : parse_addr_item(item, l, err);
        if (rc < 0)
            return rc;
        for (size_t i = 0; i < n; i++)
            if (items[i].family == l->family && items[i].port == l->port &&
                !strcmp(items[i].host, l->host) && !strcmp(items[i].path, l->path))
                return br_error_set(err, -EINVAL, "\"%s\" is listed twice", item);
        n++;
    }
    *out = NULL;
    *n_out = n;
    if (n == 0)
        return 0;
    *out = malloc(n * sizeof(**out));
    if (!*out)
        return -ENOMEM;
    memcpy(*out, items, n * sizeof(**out));
    return 0;
}

/* ---- allowed_networks ---------------------------------------------------------------- */

static int parse_network(const char *item, breachd_network *net, br_error *err)
{
    char q[100], addr[64];
    bd_conf_quote_value(q, sizeof(q), item);
    const char *slash = strchr(item, '/');
    size_t alen = slash ? (size_t)(slash - item) : strlen(item);
    if (alen >= sizeof(addr))
        return br_error_set(err, -EINVAL, "bad network %s", q);
    memcpy(addr, item, alen);
    addr[alen] = '\0';
    net->family = strchr(addr, ':') ? AF_INET6 : AF_INET;
    unsigned max_bits = net->family == AF_INET ? 32 : 128;
    memset(net->addr, 0, sizeof(net->addr));
    if (inet_pton(net->family, addr, net->addr) != 1)
        return br_error_set(err, -EINVAL,
                            "bad network %s: expected ADDRESS/BITS with a numeric address, "
                            "e.g. 10.0.0.0/8 or fd00::/8",
                            q);
    uint64_t bits = max_bits;
    if (slash) {
        const char *p = slash + 1;
        if (!bd_conf_take_u64(&p, &bits) || *p || bits > max_bits)
            return br_error_set(err, -EINVAL, "bad prefix length in %s: expected 0 .. %u", q,
                                max_bits);
    }
    net->bits = (uint8_t)bits;
    for (unsigned b = (unsigned)bits; b < max_bits; b++)
        if (net->addr[b / 8] & (0x80 >> (b % 8))) {
            char fixed[64];
            for (unsigned c = (unsigned)bits; c < max_bits; c++)
                net->addr[c / 8] &= (uint8_t) ~(0x80 >> (c % 8));
            inet_ntop(net->family, net->addr, fixed, sizeof(fixed));
            return br_error_set(err, -EINVAL, "network %s has host bits set: did you mean %s/%u?",
                                q, fixed, (unsigned)bits);
        }
    return 0;
}

int bd_conf_parse_networks(const char *v, breachd_network **out, size_t *n_out, br_error *err)
{
    *out = NULL;
    *n_out = 0;
    size_t n = 0, cap = 0;
    breachd_network *nets = NULL;
    char item[ITEM_MAX];
    int bad = 0;
    for (const char *p = list_start(v); next_item(&p, item, &bad);) {
        int rc = 0;
        if (bad)
            rc = br_error_set(err, -EINVAL, "an empty or over-long item in the list");
        else if (n == MAX_NETWORKS)
            rc = br_error_set(err, -EINVAL, "more than %d networks", MAX_NETWORKS);
        if (rc == 0 && n == cap) {
            cap = cap ? 2 * cap : 8;
            breachd_network *grown = realloc(nets, cap * sizeof(*nets));
            if (!grown)
                rc = -ENOMEM;
            else
                nets = grown;
        }
        if (rc == 0)
            rc = parse_network(item, &nets[n++], err);
        if (rc < 0) {
            free(nets);
            return rc;
        }
    }
    *out = nets;
    *n_out = n;
    return 0;
}

/* ---- the check ------------------------------------------------------------------------ */

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
