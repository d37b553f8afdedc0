/* SPDX-License-Identifier: MIT */
/* A listener that runs out of descriptors (EMFILE, ENFILE) or memory at
 * accept: its socket stays readable, so libevent would try again at once,
 * spinning the loop and the log until a descriptor frees. The pause stops
 * accepting for BD_ACCEPT_PAUSE_MS instead (or until the owner says a
 * descriptor freed), counts it and logs at most once a minute
 * (docs/protocol.md "Limits"). Used by the protocol socket (server.c), the
 * range endpoint (http.c) and the metrics endpoint (stats.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct event;
struct evconnlistener;

#define BD_ACCEPT_PAUSE_MS 100

typedef struct bd_accept_pause {
    struct evconnlistener *listener;
    struct event *timer; /* ends a pause */
    uint64_t *count;     /* pauses, for STATS */
    const char *what;    /* names the listener in the log */
    int64_t logged_at;   /* when a pause was last logged (s, monotonic), 0 never */
    bool paused;
    bool stopped;                 /* disabled by its owner: a pause's end does not enable it */
    struct bd_accept_pause *next; /* every pause watching a listener */
} bd_accept_pause;

/* Watch listener (its error callback becomes the pause's) until
 * bd_accept_pause_fini, which comes before the listener is freed. count:
 * the counter to add each pause to; what: a static string for the log. */
void bd_accept_pause_init(bd_accept_pause *p, struct evconnlistener *listener, uint64_t *count,
                          const char *what);
void bd_accept_pause_fini(bd_accept_pause *p);
/* A descriptor was freed: end a pause now. */
void bd_accept_pause_resume(bd_accept_pause *p);
/* The owner stops accepting for good (a draining stop): no pause enables
 * the listener again. */
void bd_accept_pause_stop(bd_accept_pause *p);
