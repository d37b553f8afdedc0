/* SPDX-License-Identifier: MIT */
/* Pausing a listener out of descriptors (accept_pause.h). */
#include <errno.h>
#include <stddef.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "accept_pause.h"
#include "log.h"
#include "core/util.h"

/* The error callback gets the listener's argument, which belongs to its
 * owner (libevent's evhttp for the HTTP listeners): the pause of a listener
 * is found in this list instead. The loop has one thread. */
static bd_accept_pause *watched;

void bd_accept_pause_resume(bd_accept_pause *p)
{
    if (!p->paused)
        return;
    p->paused = false;
    if (p->timer)
        evtimer_del(p->timer);
    if (!p->stopped)
        evconnlistener_enable(p->listener);
}

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bd_accept_pause_resume(arg);
}

static void error_cb(struct evconnlistener *l, void *arg)
{
    (void)arg;
    int e = EVUTIL_SOCKET_ERROR();
    bd_accept_pause *p = watched;
    while (p && p->listener != l)
        p = p->next;
    if (!p)
        return;
    if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM) {
        bd_log(LOG_WARNING, "%s: accept: %s", p->what, evutil_socket_error_to_string(e));
        return;
    }
    if (!p->timer)
        p->timer = evtimer_new(evconnlistener_get_base(l), resume_cb, p);
    (*p->count)++;
    int64_t now = (int64_t)(br_now_ns() / 1000000000u);
    if (p->logged_at == 0 || now - p->logged_at >= 60) {
        p->logged_at = now;
        bd_log(LOG_WARNING,
               "%s: accept: %s: accepting paused for %d ms at a time (%llu pauses so "
               "far, logged at most once a minute)",
               p->what, evutil_socket_error_to_string(e), BD_ACCEPT_PAUSE_MS,
               (unsigned long long)*p->count);
    }
    if (!p->timer)
        return; /* out of memory: the next error tries again */
    p->paused = true;
    evconnlistener_disable(l);
    struct timeval tv = {0, BD_ACCEPT_PAUSE_MS * 1000};
    evtimer_add(p->timer, &tv);
}

void bd_accept_pause_init(bd_accept_pause *p, struct evconnlistener *listener, uint64_t *count,
                          const char *what)
{
    *p = (bd_accept_pause){.listener = listener, .count = count, .what = what, .next = watched};
    watched = p;
    evconnlistener_set_error_cb(listener, error_cb);
}

void bd_accept_pause_stop(bd_accept_pause *p)
{
    p->stopped = true;
    if (p->listener)
        evconnlistener_disable(p->listener);
}

void bd_accept_pause_fini(bd_accept_pause *p)
{
    for (bd_accept_pause **q = &watched; *q; q = &(*q)->next)
        if (*q == p) {
            *q = p->next;
            break;
        }
    if (p->timer)
        event_free(p->timer);
    p->timer = NULL;
    p->paused = false;
}
