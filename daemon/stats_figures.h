/* SPDX-License-Identifier: MIT */
/* What STATS shows of the libraries' figure lists (core/figures.h): the
 * range API's (BR_UPSTREAM_FIGURES, upstream.h) and the resolver's
 * (BR_RESOLVER_FIGURES, resolver.h). Each figure of a list has one row
 * here, made from the list itself: its STATS key, counter or gauge, and
 * its Prometheus help, or "not shown"; a figure added to a list without a
 * row does not compile. stats.c renders the rows, stats_meta.c answers
 * their metadata. docs/protocol.md "STATS" describes the keys. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "range/resolver.h"
#include "upstream/upstream.h"

#define BD_FIGURE_ENUM_(prefix, name) prefix##name,
#define BD_UPF_ENUM_(type, name, how) BD_FIGURE_ENUM_(BD_UPF_, name)
#define BD_RSF_ENUM_(type, name, how) BD_FIGURE_ENUM_(BD_RSF_, name)
/* BD_UPF_<figure>: the index of each upstream figure. */
typedef enum bd_upstream_figure {
    BR_UPSTREAM_FIGURES(BD_UPF_ENUM_) BD_UPF_COUNT_
} bd_upstream_figure;
/* BD_RSF_<figure>: the index of each resolver figure. */
typedef enum bd_resolver_figure {
    BR_RESOLVER_FIGURES(BD_RSF_ENUM_) BD_RSF_COUNT_
} bd_resolver_figure;

/* How a figure is written: a whole number, "%.6g", or the breaker's state
 * (its name in STATS under key, a number in Prometheus under key_state). */
typedef enum bd_figure_form { BD_FIG_U64, BD_FIG_REAL, BD_FIG_BREAKER } bd_figure_form;

typedef struct bd_figure_meta {
    const char *key; /* NULL: not shown; a kind's upstream: the kind's STATS prefix before it */
    bool counter;
    bd_figure_form form;
    const char *help;   /* a KEY_ms figure: the help of KEY_seconds, its Prometheus name */
    unsigned char into; /* an upstream's: 1 + the bd_upstream_sum it is added into; 0: none */
} bd_figure_meta;

extern const bd_figure_meta bd_upstream_meta[BD_UPF_COUNT_];
extern const bd_figure_meta bd_resolver_meta[BD_RSF_COUNT_];

/* Lines made of several figures of an upstream (those whose row says
 * "into" it). */
typedef enum bd_upstream_sum {
    BD_UPS_ERRORS,          /* upstream_errors: fetches that failed, every way */
    BD_UPS_CIRCUIT_REFUSED, /* upstream_circuit_refused */
    BD_UPS_COUNT_
} bd_upstream_sum;
extern const bd_figure_meta bd_upstream_sum_meta[BD_UPS_COUNT_];

/* A figure's value: u (a whole number) and d (the same as a double). */
typedef struct bd_figure_value {
    uint64_t u;
    double d;
} bd_figure_value;
bd_figure_value bd_upstream_value(const br_upstream_stats *s, bd_upstream_figure f);
uint64_t bd_upstream_sum_value(const br_upstream_stats *s, bd_upstream_sum sum);
bd_figure_value bd_resolver_value(const br_resolver_stats *s, bd_resolver_figure f);

/* The row whose key (or whose KEY_ms for KEY_seconds) is key; NULL: none. */
const bd_figure_meta *bd_figure_meta_find(const char *key);
