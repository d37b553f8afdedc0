/* SPDX-License-Identifier: MIT */
/* The socket server (server.h): the listening socket, connections, line
 * framing, peer credentials, idle timeouts and backpressure. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "conn.h"
#include "conn_out.h"
#include "dispatch.h"
#include "log.h"
#include "notify.h"
#include "server.h"
#include "startup.h"
#include "core/util.h"

void bd_limits_from_config(bd_limits *l, const breachd_config *cfg)
{
    l->max_connections = cfg->limits.max_connections;
    l->max_inflight = cfg->limits.max_inflight;
    l->idle_timeout_ms = cfg->limits.idle_timeout_ms;
    l->max_unread = (size_t)cfg->limits.max_unread;
    l->drain_timeout_ms = cfg->limits.drain_timeout_ms;
}

/* ---- connections ---- */

/* The id of an over-long line, when its start holds a usable one. */
static void id_of_prefix(struct evbuffer *in, char id[BR_PROTO_MAX_ID + 1])
{
    char head[BR_PROTO_MAX_ID + 1];
    ev_ssize_t n = evbuffer_copyout(in, head, sizeof(head));
    strcpy(id, BR_PROTO_NO_ID);
    for (ev_ssize_t i = 0; i < n; i++) {
        if (head[i] == ' ') {
            br_request req;
            br_proto_error e;
            /* Parse just "ID PING" to validate the id with the same rules. */
            char probe[BR_PROTO_MAX_ID + 8];
            memcpy(probe, head, (size_t)i);
            memcpy(probe + i, " PING", 5);
            if (br_request_parse(probe, (size_t)i + 5, &req, &e))
                memcpy(id, req.id, sizeof(req.id));
            break;
        }
    }
    br_wipe(head, sizeof(head)); /* may hold the start of an argument */
}

/* Complete lines taken from a connection for one dispatch: the loop has one
 * thread, so one buffer serves every connection. */
static char batch_lines[BD_BATCH][BD_LINE_BUF];
static size_t batch_lens[BD_BATCH];

static void dispatch_taken(bd_conn *c, size_t n)
{
    if (n == 0)
        return;
    bd_dispatch_batch(c, batch_lines, batch_lens, n);
    /* A request line may hold a hash: don't leave it in memory. */
    for (size_t i = 0; i < n; i++)
        br_wipe(batch_lines[i], batch_lens[i] + 1);
}

/* A full batch taken from the middle of one read: its answers, and those
 * before it, go out now when this is the 1st, 2nd, 4th, 8th ... batch of
 * the read, so that the peer (a Squid helper forwarding them, a client
 * sending more as answers come) works while the next batches are worked
 * on, instead of waiting for the whole read: the pipeline overlaps instead
 * of alternating. Doubling groups keep a long read at a few writes (and a
 * few wake-ups of the peer), not one per batch. Not while draining (the
 * drain's end is seen from conn_write_cb) nor when paused (the loop below
 * stops then anyway). */
static void dispatch_full_batch(bd_conn *c, unsigned *batches)
{
    dispatch_taken(c, BD_BATCH);
    unsigned b = ++*batches;
    if ((b & (b - 1)) == 0 && c->open && !c->paused && !c->srv->draining) {
        c->srv->counters.writes_early++;
        bd_conn_out_write_early(c);
    }
}

/* The complete lines of ordinary length at the front of the input's first
 * chunk, into the batch from *n on without a search of the buffer each;
 * how many bytes they took (drained by the caller). A line near the limit,
 * or cut by the end of the chunk, is left to the careful path below. */
static size_t take_lines_fast(const bd_conn *c, struct evbuffer *in, size_t *n)
{
    struct evbuffer_iovec v;
    if (c->discarding || evbuffer_peek(in, -1, NULL, &v, 1) < 1)
        return 0;
    const char *p = v.iov_base;
    size_t off = 0;
    while (*n < BD_BATCH) {
        const char *lf = memchr(p + off, '\n', v.iov_len - off);
        size_t len = lf ? (size_t)(lf - (p + off)) : 0;
        if (!lf || len >= BR_PROTO_MAX_LINE)
            break;
        memcpy(batch_lines[*n], p + off, len + 1);
        batch_lens[(*n)++] = len;
        off += len + 1;
    }
    return off;
}

static void conn_process_input(bd_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    size_t n = 0;
    unsigned batches = 0; /* full batches of this read */
    while (c->open && !c->paused) {
        size_t took = take_lines_fast(c, in, &n);
        if (took) {
            bd_wipe_drain(in, took);
            if (n == BD_BATCH) {
                dispatch_full_batch(c, &batches);
                n = 0;
            }
            continue;
        }
        struct evbuffer_ptr lf = evbuffer_search(in, "\n", 1, NULL);
        size_t avail = evbuffer_get_length(in);
        if (c->discarding) {
            if (lf.pos < 0) {
                bd_wipe_drain(in, avail);
                break;
            }
            bd_wipe_drain(in, (size_t)lf.pos + 1);
            c->discarding = false;
            continue;
        }
        /* The longest acceptable line is 8192 bytes plus an optional CR. A
         * line of 8193 bytes is too long unless its last byte is that CR:
         * caught here too, so that every over-long line gets the id of its
         * start (br_request_parse would answer it with "-"). */
        size_t max = BR_PROTO_MAX_LINE + 1;
        bool too_long = lf.pos < 0 ? avail > max : (size_t)lf.pos > max;
        if (lf.pos >= 0 && (size_t)lf.pos == max) {
            struct evbuffer_ptr last;
            char cr = 0;
            evbuffer_ptr_set(in, &last, max - 1, EVBUFFER_PTR_SET);
            evbuffer_copyout_from(in, &last, &cr, 1);
            too_long = cr != '\r';
        }
        if (too_long) {
            char id[BR_PROTO_MAX_ID + 1];
            id_of_prefix(in, id);
            bd_conn_reply_error(c, id, BR_PERR_LINE_TOO_LONG,
                                "line longer than 8192 bytes; skipped up to the next LF");
            c->discarding = true;
            continue;
        }
        if (lf.pos < 0)
            break; /* wait for the rest of the line */
        size_t len = (size_t)lf.pos;
        evbuffer_copyout(in, batch_lines[n], len + 1);
        bd_wipe_drain(in, len + 1);
        batch_lens[n++] = len;
        if (n == BD_BATCH) {
            dispatch_full_batch(c, &batches);
            n = 0;
        }
    }
    dispatch_taken(c, n);
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    bd_conn *c = arg;
    struct timeval tv = {c->srv->limits.idle_timeout_ms / 1000,
                         (c->srv->limits.idle_timeout_ms % 1000) * 1000};
    evtimer_add(c->idle, &tv);
    c->refs++; /* dispatch may close c */
    conn_process_input(c);
    bd_conn_maybe_close(c);
    bd_conn_unref(c);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    bd_conn *c = arg;
    bd_server *srv = c->srv;
    c->refs++;
    bd_conn_out_refill(c); /* the output is written out: the next lines */
    if (c->paused && bd_conn_out_unsent(c) <= c->srv->limits.max_unread / 2) {
        c->paused = false;
        if (!c->eof && !c->closing)
            bufferevent_enable(c->bev, EV_READ);
        conn_process_input(c);
    }
    bd_conn_maybe_close(c);
    bd_conn_unref(c);
    bd_maybe_finish_drain(srv); /* this connection's answers are all written */
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    bd_conn *c = arg;
    bd_server *srv = c->srv;
    c->refs++;
    if (what & BEV_EVENT_ERROR) {
        bd_conn_close(c);
    } else if (what & BEV_EVENT_EOF) {
        /* Answer what was asked (a client may shut down its side after
         * pipelining its requests), then close. */
        c->eof = true;
        conn_process_input(c);
        bd_conn_maybe_close(c);
    }
    bd_conn_unref(c);
    bd_maybe_finish_drain(srv); /* a connection that had answers owed is gone */
}

static void conn_idle_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bd_conn *c = arg;
    if (c->inflight == 0) {
        /* Answers still unwritten (one may have been made in this very loop
         * iteration): close once they are written, unless the peer has not
         * read them for a whole idle period already. */
        bool unwritten = bd_conn_out_unsent(c) > 0;
        if (!unwritten || c->closing) {
            bd_log(LOG_DEBUG, "closing an idle connection (uid %u)", (unsigned)c->uid);
            bd_conn_close(c);
            return;
        }
        c->closing = true;
        bufferevent_disable(c->bev, EV_READ);
    }
    struct timeval tv = {c->srv->limits.idle_timeout_ms / 1000,
                         (c->srv->limits.idle_timeout_ms % 1000) * 1000};
    evtimer_add(c->idle, &tv);
}

/* Refuse a connection with one line, then close it once written. */
static void refuse(bd_conn *c, br_proto_err code, const char *text)
{
    bd_conn_reply_error(c, BR_PROTO_NO_ID, code, text);
    c->closing = true;
    bufferevent_disable(c->bev, EV_READ);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    (void)l;
    (void)sa;
    (void)salen;
    bd_server *srv = arg;
    bd_conn *c = calloc(1, sizeof(*c));
    struct bufferevent *bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
    struct event *idle = NULL;
    if (c && bev)
        idle = evtimer_new(srv->base, conn_idle_cb, c);
    if (!c || !bev || !idle) {
        bd_log(LOG_ERR, "out of memory accepting a connection");
        free(c);
        if (bev)
            bufferevent_free(bev);
        else
            close(fd);
        return;
    }
    c->srv = srv;
    c->bev = bev;
    c->idle = idle;
    c->refs = 1;
    c->open = true;
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    srv->n_conns++;
    srv->counters.connections_total++;
    if (bd_conn_out_init(c) < 0) {
        bd_log(LOG_ERR, "out of memory accepting a connection");
        srv->counters.connections_refused++;
        bd_conn_close(c);
        return;
    }
    bufferevent_setcb(bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    struct timeval tv = {srv->limits.idle_timeout_ms / 1000, (srv->limits.idle_timeout_ms % 1000) * 1000};
    evtimer_add(idle, &tv);

    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        srv->counters.connections_refused++;
        refuse(c, BR_PERR_FORBIDDEN, "peer credentials unavailable; connection closed");
        return;
    }
    c->uid = cred.uid;
    c->pid = cred.pid;
    gid_t groups[256];
    socklen_t glen = sizeof(groups);
    size_t n_groups = 0;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0)
        n_groups = glen / sizeof(gid_t);
    if (!breachd_config_peer_allowed(srv->state->cfg, cred.uid, cred.gid, groups, n_groups)) {
        srv->counters.connections_refused++;
        bd_log(LOG_NOTICE, "refused a connection from uid %u (pid %d): not in allowed_users or "
                           "allowed_groups", (unsigned)cred.uid, (int)cred.pid);
        refuse(c, BR_PERR_FORBIDDEN, "peer not allowed; connection closed");
        return;
    }
    if (srv->n_conns > srv->limits.max_connections) {
        srv->counters.connections_refused++;
        refuse(c, BR_PERR_BUSY, "too many connections; connection closed");
        return;
    }
    if (srv->draining) {
        srv->counters.connections_refused++;
        refuse(c, BR_PERR_SHUTTING_DOWN, "breachd is stopping; connection closed");
    }
}

/* ---- the listening socket ---- */

/* Create the socket at path with mode, replacing a stale socket file safely:
 * bind under a temporary name, chmod, then rename over the path. A live
 * socket (another breachd answering) or a non-socket file is never touched. */
static int create_socket(const char *path, mode_t mode, br_error *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char tmp[sizeof(sa.sun_path)];
    if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) >= (int)sizeof(tmp))
        return br_error_set(err, -ENAMETOOLONG, "socket %s: path too long", path);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return br_error_set(err, -EEXIST, "socket %s: exists and is not a socket", path);
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un ps = {.sun_family = AF_UNIX};
        snprintf(ps.sun_path, sizeof(ps.sun_path), "%s", path);
        int cr = probe >= 0 ? connect(probe, (struct sockaddr *)&ps, sizeof(ps)) : -1;
        int ce = errno;
        if (probe >= 0)
            close(probe);
        if (cr == 0)
            return br_error_set(err, -EADDRINUSE, "socket %s: another daemon is listening on it",
                                path);
        if (ce != ECONNREFUSED && ce != ENOENT)
            return br_error_set(err, -ce, "socket %s: cannot tell whether it is stale: %s", path,
                                strerror(ce));
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return br_error_set(err, -errno, "socket: %s", strerror(errno));
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", tmp);
    unlink(tmp);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(tmp, mode) < 0 ||
        listen(fd, 512) < 0 || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        close(fd);
        return br_error_set(err, -e, "socket %s: %s", path, strerror(e));
    }
    return fd;
}

int bd_server_listen(bd_server *srv, br_error *err)
{
    int fd = bd_listen_fd();
    if (fd < 0 && fd != -ENOENT)
        return br_error_set(err, fd, "socket activation: %s (expected one Unix stream socket)",
                            strerror(-fd));
    if (fd >= 0) {
        srv->socket_activated = true;
        evutil_make_socket_nonblocking(fd);
        evutil_make_socket_closeonexec(fd);
        bd_log(LOG_INFO, "listening on the socket passed by systemd");
    } else {
        const breachd_config *cfg = srv->state->cfg;
        int r = bd_socket_dir_ensure(cfg->daemon.socket, err);
        if (r < 0)
            return r;
        fd = create_socket(cfg->daemon.socket, cfg->daemon.socket_mode, err);
        if (fd < 0)
            return fd;
        srv->socket_path = strdup(cfg->daemon.socket);
        bd_log(LOG_INFO, "listening on %s", cfg->daemon.socket);
    }
    srv->listen_fd = fd;
    srv->listener = evconnlistener_new(srv->base, accept_cb, srv,
                                       LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
    if (!srv->listener) {
        close(fd);
        return br_error_set(err, -ENOMEM, "cannot listen");
    }
    bd_accept_pause_init(&srv->accept, srv->listener, &srv->counters.accept_pauses, "socket");
    return 0;
}

