/* SPDX-License-Identifier: MIT */
/* A connection as the verbs see it: answers, admission, waiters, and the
 * connection's life that answering touches. See conn.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "conn.h"
#include "conn_out.h"
#include "core/util.h"

/* noinline: GCC 12 at -O3 sees a false use-after-free through the callers' refs. */
__attribute__((noinline)) void bd_conn_unref(bd_conn *c)
{
    if (--c->refs > 0)
        return;
    free(c);
}

/* Draining ends once every request is answered and every answer written
 * (the drain timer bounds the wait for clients that do not read). */
void bd_maybe_finish_drain(bd_server *srv)
{
    if (!srv->draining || srv->inflight > 0 || srv->http_unsent > 0)
        return;
    for (bd_conn *c = srv->conns; c; c = c->next)
        if (bd_conn_out_unsent(c) > 0)
            return;
    event_base_loopexit(srv->base, NULL);
}

void bd_conn_set_reading(bd_conn *c, bool on)
{
    if (c->reading == on || !c->rev)
        return;
    if ((on ? event_add(c->rev, NULL) : event_del(c->rev)) == 0)
        c->reading = on;
}

void bd_conn_carry_drop(bd_conn *c)
{
    if (c->carry)
        br_wipe(c->carry, c->carry_len);
    free(c->carry);
    c->carry = NULL;
    c->carry_len = 0;
}

void bd_conn_close(bd_conn *c)
{
    if (!c->open)
        return;
    bd_server *srv = c->srv;
    c->open = false;
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv->n_conns--;
    bd_conn_carry_drop(c);
    if (c->rev)
        event_free(c->rev); /* deletes it too */
    if (c->wev)
        event_free(c->wev);
    c->rev = c->wev = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    bd_conn_out_fini(c);
    if (c->idle)
        event_free(c->idle);
    c->idle = NULL;
    bd_conn_unref(c);
    bd_accept_pause_resume(&srv->accept); /* a descriptor is free again */
}

/* Close when nothing more is owed to the peer. */
void bd_conn_maybe_close(bd_conn *c)
{
    if (!c->open)
        return;
    bool owed = c->inflight > 0 || bd_conn_out_unsent(c) > 0;
    if ((c->closing || c->eof) && !owed)
        bd_conn_close(c);
}

static void conn_check_pressure(bd_conn *c)
{
    size_t unread = bd_conn_out_unsent(c);
    if (!c->paused && unread > c->srv->limits.max_unread) {
        c->paused = true;
        bd_conn_set_reading(c, false);
    }
}

/* Every answer goes through here: the line is put together in one buffer
 * and added with one copy (no second printf pass). */
void bd_conn_reply(bd_conn *c, const char *id, const char *fmt, ...)
{
    if (!c->open)
        return;
    char line[BR_PROTO_MAX_ID + 1 + BR_PROTO_MAX_LINE + 64];
    size_t idl = strnlen(id, BR_PROTO_MAX_ID);
    memcpy(line, id, idl);
    line[idl] = ' ';
    size_t room = sizeof(line) - idl - 2; /* for the text and its NUL; 1 byte kept for the LF */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + idl + 1, room, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = idl + 1 + ((size_t)n < room ? (size_t)n : room - 1);
    line[len++] = '\n';
    bd_conn_out_add(c, line, len);
    conn_check_pressure(c);
}

void bd_conn_reply_n(bd_conn *c, const char *id, const char *text, size_t tl)
{
    if (!c->open)
        return;
    if (tl > 64) {
        bd_conn_reply(c, id, "%.*s", (int)tl, text);
        return;
    }
    size_t idl = strnlen(id, BR_PROTO_MAX_ID);
    char *p = bd_conn_out_room(c, idl + tl + 2); /* put together in place: one copy */
    if (p) {
        memcpy(p, id, idl);
        p[idl] = ' ';
        memcpy(p + idl + 1, text, tl);
        p[idl + 1 + tl] = '\n';
    }
    bd_conn_out_added(c, p ? idl + tl + 2 : 0);
    conn_check_pressure(c);
}

void bd_conn_reply_error(bd_conn *c, const char *id, br_proto_err code, const char *text)
{
    c->srv->counters.errors[code]++;
    if (!c->open)
        return;
    char line[BR_PROTO_MAX_ID + 1 + BR_PROTO_MAX_LINE + 64];
    bd_conn_out_add(c, line, br_format_error(line, sizeof(line), id, code, text));
    conn_check_pressure(c);
}

bd_waiter *bd_waiter_new(bd_conn *c, const br_request *req)
{
    bd_waiter *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->conn = c;
    c->refs++;
    c->inflight++;
    c->srv->inflight++;
    w->bulk = c->lane == BR_LANE_BULK;
    c->srv->bulk_pending += w->bulk;
    w->state = bd_state_ref(c->srv->state);
    memcpy(w->id, req->id, sizeof(w->id));
    w->verb = req->verb;
    return w;
}

void bd_waiter_free(bd_waiter *w)
{
    bd_conn *c = w->conn;
    bd_server *srv = c->srv;
    c->inflight--;
    srv->inflight--;
    srv->bulk_pending -= w->bulk;
    bd_state_unref(w->state);
    free(w);
    bd_conn_maybe_close(c);
    bd_conn_unref(c);
    bd_maybe_finish_drain(srv);
}

const char *bd_conn_admit(const bd_conn *c)
{
    const bd_server *srv = c->srv;
    if (c->lane == BR_LANE_BULK)
        return srv->bulk_pending >= srv->state->cfg->upstream.bulk_queue
                   ? "the bulk queue is full ([upstream] bulk_queue)"
                   : NULL;
    return c->inflight >= srv->limits.max_inflight
               ? "too many requests in flight on this connection"
               : NULL;
}
