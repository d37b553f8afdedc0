/* SPDX-License-Identifier: MIT */
/* A connection's answers on their way out, whole lines at a time.
 *
 * docs/protocol.md: every answer is one line. A peer may stop reading; when
 * breachd then closes the connection (the drain timeout of a SIGTERM, the
 * exit), the peer must find whole lines and EOF, never the start of a line.
 * What reached the socket cannot be taken back, so no write may end inside
 * a line: each write is at most BD_OUT_CHUNK bytes of whole lines, and a
 * Unix stream socket takes a non-blocking write that small whole or not at
 * all (unix(7); the kernel queues it as one buffer).
 *
 * The answers of one read are written with one write at its end (server.c),
 * and EV_WRITE is armed only when the socket is full, as Redis does: no
 * epoll_ctl per answer. An answer made outside a read (an upstream answer,
 * a reload) makes the write event active once for the loop's next turn. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "conn_out.h"
#include "core/util.h"

/* The first allocation of a connection's output: one batch's answers fit,
 * and malloc's per-thread cache serves a block this small at once. The
 * output is freed whenever it is all written: an idle connection holds
 * none (10,000 idle connections, tests/integration/test_daemon_load.py). */
#define OUT_MIN 512

void bd_conn_out_fini(bd_conn *c)
{
    free(c->out);
    c->out = NULL;
    c->out_off = c->out_len = c->out_cap = 0;
}

size_t bd_conn_out_unsent(const bd_conn *c)
{
    return c->out_len - c->out_off;
}

/* Room for len more bytes at out_len: the written front dropped, or more
 * memory. False when out of memory. */
static bool out_reserve(bd_conn *c, size_t len)
{
    if (c->out_off > 0 && c->out_len + len > c->out_cap) {
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
    }
    if (c->out_len + len <= c->out_cap)
        return true;
    size_t cap = c->out_cap ? c->out_cap : OUT_MIN;
    while (cap < c->out_len + len)
        cap *= 2;
    char *p = realloc(c->out, cap);
    if (!p)
        return false;
    c->out = p;
    c->out_cap = cap;
    return true;
}

char *bd_conn_out_room(bd_conn *c, size_t len)
{
    if (out_reserve(c, len))
        return c->out + c->out_len;
    c->broken = true; /* an answer lost: the connection ends (server.c) */
    c->closing = true;
    return NULL;
}

void bd_conn_out_added(bd_conn *c, size_t len)
{
    c->out_len += len;
    if (!c->serving && !c->flush_queued && c->wev) {
        c->flush_queued = true;
        event_active(c->wev, EV_WRITE, 1);
    }
}

void bd_conn_out_add(bd_conn *c, const char *line, size_t len)
{
    char *p = bd_conn_out_room(c, len);
    if (p)
        memcpy(p, line, len);
    bd_conn_out_added(c, p ? len : 0);
}

/* How many bytes of whole lines from out_off one write takes. */
static size_t chunk_len(const bd_conn *c)
{
    size_t n = c->out_len - c->out_off;
    if (n <= BD_OUT_CHUNK)
        return n; /* answers are added whole: ends with an LF */
    const char *p = c->out + c->out_off;
    const char *lf = memrchr(p, '\n', BD_OUT_CHUNK);
    return lf ? (size_t)(lf - p) + 1 : BD_OUT_CHUNK; /* a line is < BD_OUT_CHUNK */
}

static int out_arm(bd_conn *c, bool on)
{
    if (c->wev_armed == on)
        return 0;
    if ((on ? event_add(c->wev, NULL) : event_del(c->wev)) < 0)
        return -ENOMEM;
    c->wev_armed = on;
    return 0;
}

/* Write whole lines until all is written: 0, or -errno (-EAGAIN: the
 * socket is full). */
static int out_write_some(bd_conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t w = write(c->fd, c->out + c->out_off, chunk_len(c));
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno == EWOULDBLOCK ? -EAGAIN : -errno;
        c->out_off += (size_t)w;
    }
    return 0;
}

int bd_conn_out_write(bd_conn *c)
{
    int r = out_write_some(c);
    if (r == -EAGAIN) {
        r = out_arm(c, true);
        return r < 0 ? r : 1;
    }
    if (r < 0)
        return r;
    bd_conn_out_fini(c); /* all written */
    return out_arm(c, false);
}

/* At exit: write what the socket takes now without blocking, whole lines
 * only. */
void bd_conn_out_flush_now(bd_conn *c)
{
    (void)out_write_some(c);
}
