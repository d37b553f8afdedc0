/* SPDX-License-Identifier: MIT */
/* libbreachd-dns.so.1: "block or pass" for a DNS query name from an offline
 * URL filter, inside the resolver's process (docs/dns.md,
 * libbreachd-dns(3)). Stable ABI: only what this header declares is
 * exported; structs only grow at their end, and callers pass their size.
 *
 * A name is looked up as breachd looks up the host of a URL: the name and
 * its parent domains (never the bare TLD) as domain entries of the filter
 * ("example.com/"), an entry in the category "allow" wins over every other,
 * and otherwise the most specific listed domain answers. The filter is the
 * [dns] filter of breachd.conf (or [urls] filter when [dns] names none), a
 * base then its deltas, with breachd's checks: ownership, verification
 * record, [urls] pubkey signature. A file replaced on disk is followed
 * within a second by a thread of the library; lookups never wait for it.
 *
 * Thread-safety: breachd_dns_check and breachd_dns_stats may be called
 * from any number of threads at once, with no lock and no allocation.
 * Names are never logged. */
#ifndef BREACHD_DNS_H
#define BREACHD_DNS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BREACHD_DNS_ABI 1

typedef struct breachd_dns breachd_dns;

/* breachd_dns_result.verdict */
enum { BREACHD_DNS_PASS = 0, BREACHD_DNS_BLOCK = 1 };

/* Why a name passed (breachd_dns_result.reason) */
enum {
    BREACHD_DNS_UNLISTED = 0,  /* not in the filter */
    BREACHD_DNS_ALLOWED = 1,   /* the name or a parent is in the category "allow" */
    BREACHD_DNS_INVALID = 2,   /* not a host name (binary label, empty label, too long) */
    BREACHD_DNS_NO_FILTER = 3, /* no filter was ever loaded: fail-open, counted */
    BREACHD_DNS_LOGGED = 4,    /* listed, but its category's action is "log" */
};

/* The configured action of a blocked name's category ([dns] action). */
enum {
    BREACHD_DNS_NXDOMAIN = 0,
    BREACHD_DNS_NODATA = 1,
    BREACHD_DNS_SINKHOLE = 2,
    BREACHD_DNS_REDIRECT = 3,
    BREACHD_DNS_LOG = 4,
};

#define BREACHD_DNS_CATEGORY_MAX 32
#define BREACHD_DNS_NAME_MAX 253

typedef struct breachd_dns_result {
    int verdict; /* BREACHD_DNS_PASS or _BLOCK */
    int reason;  /* a pass: BREACHD_DNS_UNLISTED, ...; a block: 0 */
    int action;  /* the category's action (a block, and BREACHD_DNS_LOGGED) */
    char category[BREACHD_DNS_CATEGORY_MAX + 1]; /* "" for a plain pass */
    char domain[BREACHD_DNS_NAME_MAX + 1];       /* the listed domain that matched, canonical */
    /* A block: what to answer with ([dns] sinkhole: "" when the list has
     * no address of that family; [dns] redirect: "" when unset). */
    char sinkhole4[16], sinkhole6[46];
    char redirect[BREACHD_DNS_NAME_MAX + 1];
} breachd_dns_result;

/* Open the library with the configuration at config_path (NULL:
 * $BREACHD_CONFIG, else /etc/breachd/breachd.conf). Opening the same path
 * again in the process returns the same handle (counted): one mapping and
 * one watcher thread per process, whatever the number of resolver
 * threads. A filter that cannot be loaded is not an error here: lookups
 * pass (fail-open, counted, logged once a minute) until one loads. NULL
 * with a reason in err (errlen bytes, may be 0) when the configuration
 * cannot be read. */
breachd_dns *breachd_dns_open(const char *config_path, char *err, size_t errlen);
/* Drop a reference; the last one stops the watcher and unmaps. */
void breachd_dns_close(breachd_dns *h);

/* Look name up: its presentation form (name[0..len), need not end in NUL;
 * a trailing dot, \DDD and \X escapes are understood; any case). A name
 * that is not a host name passes with reason BREACHD_DNS_INVALID. Returns
 * res->verdict. Never allocates, never takes a lock, never logs. */
int breachd_dns_check(breachd_dns *h, const char *name, size_t len, breachd_dns_result *res);

/* The name of an action ("nxdomain", ...), NULL for an unknown value. */
const char *breachd_dns_action_name(int action);

/* Counters since open, as text: one "NAME VALUE" line per counter
 * (lookups, blocked, passed, allowed, invalid, unfiltered, reloads,
 * reload_failures, generation, and one "blocked_CATEGORY N" per category
 * seen), into buf (len bytes, NUL-terminated, truncated at a line).
 * Returns the bytes the full text needs (without the NUL). Counts only,
 * never names. */
size_t breachd_dns_stats(const breachd_dns *h, char *buf, size_t len);

/* Log lines of the library (a filter refused, a reload, fail-open) go to
 * fn; NULL: standard error, prefixed "breachd-dns: ". level is a syslog
 * priority. Never called with a query name. h NULL: the default for the
 * handles opened after (the lines of their first load included). */
typedef void (*breachd_dns_log_fn)(int level, const char *line, void *ctx);
void breachd_dns_set_log(breachd_dns *h, breachd_dns_log_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
