/* SPDX-License-Identifier: MIT */
/* A connection's answers on their way out, whole lines at a time.
 *
 * docs/protocol.md: every answer is one line. A peer may stop reading; when
 * breachd then closes the connection (the drain timeout of a SIGTERM, the
 * exit), the peer must find whole lines and EOF, never the start of a line.
 * What reached the socket cannot be taken back, so no write may end inside
 * a line: the bufferevent's output holds whole lines only and at most
 * BD_OUT_CHUNK bytes (its largest single write), and a Unix stream socket
 * takes a non-blocking write that small whole or not at all. Further
 * answers wait in the connection's backlog and move to the output, whole
 * lines again, each time the output has been written out. */
#include <errno.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "conn_out.h"

int bd_conn_out_init(bd_conn *c)
{
    c->backlog = evbuffer_new();
    if (!c->backlog)
        return -ENOMEM;
    if (bufferevent_set_max_single_write(c->bev, BD_OUT_CHUNK) < 0)
        return -EINVAL;
    return 0;
}

void bd_conn_out_fini(bd_conn *c)
{
    if (c->backlog)
        evbuffer_free(c->backlog);
    c->backlog = NULL;
}

size_t bd_conn_out_unsent(const bd_conn *c)
{
    return evbuffer_get_length(bufferevent_get_output(c->bev)) + evbuffer_get_length(c->backlog);
}

void bd_conn_out_add(bd_conn *c, const char *line, size_t len)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (evbuffer_get_length(c->backlog) == 0 && evbuffer_get_length(out) + len <= BD_OUT_CHUNK)
        evbuffer_add(out, line, len);
    else
        evbuffer_add(c->backlog, line, len);
}

/* Move whole lines from the backlog to an empty-enough output, up to
 * BD_OUT_CHUNK bytes there. True when something moved. */
bool bd_conn_out_refill(bd_conn *c)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    size_t have = evbuffer_get_length(out);
    if (have >= BD_OUT_CHUNK || evbuffer_get_length(c->backlog) == 0)
        return false;
    size_t room = BD_OUT_CHUNK - have, take = 0;
    struct evbuffer_ptr from;
    evbuffer_ptr_set(c->backlog, &from, 0, EVBUFFER_PTR_SET);
    for (;;) {
        struct evbuffer_ptr lf = evbuffer_search(c->backlog, "\n", 1, &from);
        if (lf.pos < 0 || (size_t)lf.pos + 1 > room)
            break;
        take = (size_t)lf.pos + 1;
        if (evbuffer_ptr_set(c->backlog, &from, take, EVBUFFER_PTR_SET) < 0)
            break;
    }
    if (take == 0)
        return false;
    evbuffer_remove_buffer(c->backlog, out, take);
    return true;
}

/* The bufferevent's own write, done now rather than on its next turn of the
 * loop: the same evbuffer_write_atmost of at most BD_OUT_CHUNK bytes of whole
 * lines, with the front of the output unfrozen around it as libevent does.
 * A write error is left for the bufferevent to meet and report. When this
 * leaves the output empty, the bufferevent's next write turn finds nothing
 * and does not call conn_write_cb: hence the refill here. */
void bd_conn_out_write_early(bd_conn *c)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    if (fd < 0)
        return;
    for (;;) {
        if (evbuffer_get_length(out) == 0 && !bd_conn_out_refill(c))
            return;
        evbuffer_unfreeze(out, 1);
        int w = evbuffer_write_atmost(out, fd, BD_OUT_CHUNK);
        evbuffer_freeze(out, 1);
        if (w <= 0 || evbuffer_get_length(out) > 0)
            return; /* the socket is full (or failing): the loop goes on */
    }
}

/* At exit: write what the socket takes now without blocking, whole lines
 * only: the output, then the backlog a chunk at a time. */
void bd_conn_out_flush_now(bd_conn *c)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    /* A bufferevent keeps the front of its output frozen (only it drains
     * it); the bufferevent is freed right after this. */
    evbuffer_unfreeze(out, 1);
    while (fd >= 0) {
        while (evbuffer_get_length(out) > 0 && evbuffer_write(out, fd) > 0) {
        }
        if (evbuffer_get_length(out) > 0 || !bd_conn_out_refill(c))
            break;
    }
}
