/* SPDX-License-Identifier: MIT */
/* The range endpoint's clients and their rates (http_rate.c; breachd.conf(5)
 * [http] rate, ipv6_prefix): what client an address counts as, and a token
 * bucket per client. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* [http] ipv6_prefix's default: an IPv6 client is its /64 (what one host
 * or one customer usually gets; it can take any address in it). */
#define BD_HTTP_DEFAULT_IPV6_PREFIX 64

/* The client a peer address counts as, for the rate, the connection caps
 * and the cache partitions: an IPv4 address (IPv4-mapped), or the first
 * v6_bits bits of an IPv6 address, the rest zero, in key. false for other
 * families (Unix sockets). */
bool bd_http_client_key(const struct sockaddr *sa, unsigned v6_bits, uint8_t key[16]);

/* The client a peer address counts as for the limits ([http] rate,
 * max_connections_per_client): bd_http_client_key's, except that every
 * loopback address (127.0.0.0/8, ::1, and 127.0.0.0/8 IPv4-mapped) is one
 * client, since any local user can send from any of them. */
bool bd_http_limit_key(const struct sockaddr *sa, unsigned v6_bits, uint8_t key[16]);

typedef struct bd_rate_table bd_rate_table;
/* A table with ipv6_prefix at its default. */
bd_rate_table *bd_rate_new(void);
void bd_rate_free(bd_rate_table *t);
/* Count IPv6 clients by their first bits bits (0..128); a change empties
 * the table. */
void bd_rate_set_ipv6_prefix(bd_rate_table *t, unsigned bits);
/* Take a token from the bucket of sa's client (bd_http_limit_key; rate per
 * second, as deep as
 * one second's worth) at now_ms. 0: allowed; else the milliseconds until
 * the next token. When the table is full of busy clients (a flood of new
 * addresses), the clients it cannot track share one overflow bucket. */
uint32_t bd_rate_take(bd_rate_table *t, const struct sockaddr *sa, uint32_t rate, uint64_t now_ms);
