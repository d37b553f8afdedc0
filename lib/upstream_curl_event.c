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

int up_curl_socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)e;
    br_upstream *up = userp;
    sockctx *sc = socketp;

    if (what == CURL_POLL_REMOVE) {
        if (sc) {
            event_free(sc->ev);
            if (sc->prev)
                sc->prev->next = sc->next;
            else
                up->socks = sc->next;
            if (sc->next)
                sc->next->prev = sc->prev;
            free(sc);
            curl_multi_assign(up->multi, s, NULL);
        }
        return 0;
    }
    short kind = EV_PERSIST | ((what & CURL_POLL_IN) ? EV_READ : 0) |
                 ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
    if (!sc) {
        sc = calloc(1, sizeof(*sc));
        if (!sc)
            return -1;
        sc->next = up->socks;
        if (up->socks)
            up->socks->prev = sc;
        up->socks = sc;
        curl_multi_assign(up->multi, s, sc);
    } else if (sc->ev) {
        event_free(sc->ev);
        sc->ev = NULL;
    }
    sc->ev = event_new(up->base, s, kind, sock_event_cb, up);
    if (!sc->ev || event_add(sc->ev, NULL) < 0)
        return -1;
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

void up_socks_free(br_upstream *up)
{
    while (up->socks) {
        sockctx *sc = up->socks;
        up->socks = sc->next;
        if (sc->ev)
            event_free(sc->ev);
        free(sc);
    }
}
