/* SPDX-License-Identifier: MIT */
/* Upstream fetcher: the libcurl <-> libevent glue. libcurl's multi-socket API
 * tells which sockets to watch (up_curl_socket_cb) and when to call it back
 * (up_curl_timer_cb); one libevent event per socket and one timer do that, and
 * after every curl_multi_socket_action() finished transfers are handled. */
#include <stdlib.h>

#include "upstream_int.h"

typedef struct sockctx sockctx;
struct sockctx {
    sockctx *prev, *next;
    struct event *ev;
    short kind; /* what ev watches; 0: not added */
};

static void sock_event_cb(evutil_socket_t fd, short what, void *arg)
{
    br_upstream *up = arg;
    int action =
        ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    int running = 0;
    curl_multi_socket_action(up->multi, fd, action, &running);
    up_check_multi_info(up);
}

void up_curl_timer_event_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    br_upstream *up = arg;
    int running = 0;
    curl_multi_socket_action(up->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    up_check_multi_info(up);
}

/* libcurl stops watching a keep-alive connection after each transfer and
 * watches it again for the next one: the sockctx and its event are kept on a
 * spare list and reused (event_assign), and a change that leaves the events
 * as they are touches nothing, instead of an allocation and an event_new /
 * event_free per request. */
static sockctx *sock_get(br_upstream *up)
{
    sockctx *sc = up->spare_socks;
    if (sc) {
        up->spare_socks = sc->next;
    } else {
        sc = calloc(1, sizeof(*sc));
        if (!sc)
            return NULL;
        sc->ev = event_new(up->base, -1, 0, sock_event_cb, up);
        if (!sc->ev) {
            free(sc);
            return NULL;
        }
    }
    sc->prev = NULL;
    sc->next = up->socks;
    if (up->socks)
        up->socks->prev = sc;
    up->socks = sc;
    sc->kind = 0;
    return sc;
}

static void sock_put(br_upstream *up, sockctx *sc)
{
    if (sc->kind)
        event_del(sc->ev);
    sc->kind = 0;
    if (sc->prev)
        sc->prev->next = sc->next;
    else
        up->socks = sc->next;
    if (sc->next)
        sc->next->prev = sc->prev;
    sc->prev = NULL;
    sc->next = up->spare_socks;
    up->spare_socks = sc;
}

int up_curl_socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)e;
    br_upstream *up = userp;
    sockctx *sc = socketp;

    if (what == CURL_POLL_REMOVE) {
        if (sc) {
            sock_put(up, sc);
            curl_multi_assign(up->multi, s, NULL);
        }
        return 0;
    }
    short kind = EV_PERSIST | ((what & CURL_POLL_IN) ? EV_READ : 0) |
                 ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
    if (!sc) {
        sc = sock_get(up);
        if (!sc)
            return -1;
        curl_multi_assign(up->multi, s, sc);
    } else if (sc->kind == kind && event_get_fd(sc->ev) == s) {
        return 0;
    } else if (sc->kind) {
        event_del(sc->ev);
        sc->kind = 0;
    }
    if (event_assign(sc->ev, up->base, s, kind, sock_event_cb, up) < 0 ||
        event_add(sc->ev, NULL) < 0)
        return -1;
    sc->kind = kind;
    return 0;
}

int up_curl_timer_cb(CURLM *m, long timeout_ms, void *userp)
{
    (void)m;
    br_upstream *up = userp;
    if (timeout_ms < 0) {
        event_del(up->curl_timer);
    } else {
        struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
        event_add(up->curl_timer, &tv);
    }
    return 0;
}

static void socks_free_list(sockctx *sc)
{
    while (sc) {
        sockctx *next = sc->next;
        event_free(sc->ev); /* deletes it first when pending */
        free(sc);
        sc = next;
    }
}

void up_socks_free(br_upstream *up)
{
    socks_free_list(up->socks);
    socks_free_list(up->spare_socks);
    up->socks = up->spare_socks = NULL;
}
