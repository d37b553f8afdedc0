/* SPDX-License-Identifier: MIT */
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

/* The id of an over-long line from its first bytes (p, n), when they hold a
 * usable one. */
static void id_of_prefix(const char *p, size_t n, char id[BR_PROTO_MAX_ID + 1])
{
    strcpy(id, BR_PROTO_NO_ID);
    const char *sp = memchr(p, ' ', BR_MIN(n, (size_t)BR_PROTO_MAX_ID + 1));
    if (!sp)
        return;
    /* Parse just "ID PING" to validate the id with the same rules. */
    size_t i = (size_t)(sp - p);
    char probe[BR_PROTO_MAX_ID + 8];
    br_request req;
    br_proto_error e;
    memcpy(probe, p, i);
    memcpy(probe + i, " PING", 5);
    if (br_request_parse(probe, i + 5, &req, &e))
        memcpy(id, req.id, sizeof(req.id));
}

/* What one read works on: the connection's carried input, then what the
 * read brought, contiguous, so that lines are parsed where they lie. The
 * loop has one thread and works on one connection at a time, so one buffer
 * serves every connection; it is wiped after each use (a request line may
 * hold a hash). Carried input is at most a line's start while reading
 * (BR_PROTO_MAX_LINE + 1), or what one use left when paused. */
#define IN_SIZE (BD_READ + BR_PROTO_MAX_LINE + 2)
static char in_buf[IN_SIZE];

/* A batch of lines framed in in_buf, on their way to dispatch.c. */
typedef struct batch {
    const char *line[BD_BATCH];
    size_t len[BD_BATCH];
    size_t n;
    unsigned full; /* full batches dispatched in this use of in_buf */
} batch;

static void conn_flush(bd_conn *c);

/* Dispatch the batch. After the 1st, 2nd, 4th, 8th ... full batch of one
 * read, its answers, and those before it, go out now, so that the peer (a
 * Squid helper forwarding them, a client sending more as answers come)
 * works while the next batches are worked on, instead of waiting for the
 * whole read: the pipeline overlaps instead of alternating. Doubling groups
 * keep a long read at a few writes (and a few wake-ups of the peer), not one
 * per batch. Not while draining (the drain's end is seen after the read)
 * nor when paused (the framing stops then anyway). */
static void batch_dispatch(bd_conn *c, batch *b)
{
    if (b->n == 0)
        return;
    bool full = b->n == BD_BATCH;
    bd_dispatch_batch(c, b->line, b->len, b->n);
    b->n = 0;
    if (!full)
        return;
    unsigned k = ++b->full;
    if ((k & (k - 1)) == 0 && c->open && !c->paused && !c->srv->draining) {
        c->srv->counters.writes_early++;
        conn_flush(c);
    }
}

/* An over-long line starts at p (avail bytes here, LF at lf or none): the
 * longest acceptable line is 8192 bytes plus an optional CR. A line of
 * 8193 bytes is too long unless its last byte is that CR: caught here too,
 * so that every over-long line gets the id of its start (br_request_parse
 * would answer it with "-"). */
static bool too_long(const char *p, size_t avail, const char *lf)
{
    size_t max = BR_PROTO_MAX_LINE + 1;
    if (!lf)
        return avail > max;
    size_t len = (size_t)(lf - p);
    return len > max || (len == max && p[max - 1] != '\r');
}

/* Frame buf's complete lines into batches and dispatch them, until the
 * input ends, c pauses or closes. Returns the bytes used up; the rest (a
 * line's start, or all that was left when paused) is carried. */
static size_t frame_lines(bd_conn *c, const char *buf, size_t len)
{
    batch b = {.n = 0};
    size_t off = 0;
    while (off < len && c->open && !c->paused) {
        const char *p = buf + off;
        size_t avail = len - off;
        const char *lf = memchr(p, '\n', avail);
        if (c->discarding) {
            off = lf ? off + (size_t)(lf - p) + 1 : len;
            c->discarding = !lf;
            continue;
        }
        if (too_long(p, avail, lf)) {
            batch_dispatch(c, &b); /* the lines before it first */
            char id[BR_PROTO_MAX_ID + 1];
            id_of_prefix(p, avail, id);
            bd_conn_reply_error(c, id, BR_PERR_LINE_TOO_LONG,
                                "line longer than 8192 bytes; skipped up to the next LF");
            c->discarding = true;
            continue;
        }
        if (!lf)
            break; /* wait for the rest of the line */
        b.line[b.n] = p;
        b.len[b.n++] = (size_t)(lf - p);
        off += (size_t)(lf - p) + 1;
        if (b.n == BD_BATCH)
            batch_dispatch(c, &b);
    }
    batch_dispatch(c, &b);
    return off;
}

/* Keep buf's unused rest for the next use (wiped by the caller). */
static void carry_keep(bd_conn *c, const char *rest, size_t n)
{
    if (n == 0 || !c->open)
        return;
    c->carry = malloc(n);
    if (!c->carry) {
        bd_conn_close(c); /* losing requests silently is worse */
        return;
    }
    memcpy(c->carry, rest, n);
    c->carry_len = n;
}

/* One use of in_buf: the carried input, then (when read) what one read()
 * brings; frame and dispatch its lines; carry the rest; wipe in_buf once. */
static void conn_take_input(bd_conn *c, bool read_more)
{
    size_t len = c->carry_len;
    if (len)
        memcpy(in_buf, c->carry, len);
    bd_conn_carry_drop(c);
    if (read_more && len < IN_SIZE) {
        ssize_t r = read(c->fd, in_buf + len, BR_MIN((size_t)BD_READ, IN_SIZE - len));
        if (r > 0) {
            len += (size_t)r;
        } else if (r == 0) {
            c->eof = true; /* answer what was asked, then close */
            bd_conn_set_reading(c, false);
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            br_wipe(in_buf, len);
            bd_conn_close(c);
            return;
        }
    }
    c->serving = true;
    size_t used = frame_lines(c, in_buf, len);
    c->serving = false;
    carry_keep(c, in_buf + used, len - used);
    br_wipe(in_buf, len);
}

/* Write the answers made so far; a failed write ends the connection. */
static void conn_flush(bd_conn *c)
{
    if (!c->open)
        return;
    if (c->broken || bd_conn_out_write(c) < 0)
        bd_conn_close(c);
}

/* After answers were written: a paused connection reads again once half of
 * max_unread is read by its peer, first what it carried. True when it did. */
static bool conn_resume(bd_conn *c)
{
    if (!c->open || !c->paused || bd_conn_out_unsent(c) > c->srv->limits.max_unread / 2)
        return false;
    c->paused = false;
    if (!c->eof && !c->closing)
        bd_conn_set_reading(c, true);
    return true;
}

/* Work on c's input (reading once when read_more), write the answers with
 * one write, and go on while that unpaused c; then close c if it is done. */
static void conn_serve(bd_conn *c, bool read_more)
{
    c->refs++; /* dispatch may close c */
    do {
        conn_take_input(c, read_more);
        read_more = false;
        conn_flush(c);
    } while (conn_resume(c));
    bd_conn_maybe_close(c);
    bd_server *srv = c->srv;
    bd_conn_unref(c);
    bd_maybe_finish_drain(srv);
}

static void idle_rearm(bd_conn *c)
{
    struct timeval tv = {c->srv->limits.idle_timeout_ms / 1000,
                         (c->srv->limits.idle_timeout_ms % 1000) * 1000};
    evtimer_add(c->idle, &tv);
}

static void conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bd_conn *c = arg;
    idle_rearm(c);
    conn_serve(c, true);
}

/* The socket takes more (EV_WRITE armed after EAGAIN), or answers made
 * outside a read wait (the event made active). */
static void conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bd_conn *c = arg;
    c->flush_queued = false;
    c->refs++;
    conn_flush(c);
    if (conn_resume(c))
        conn_serve(c, false);
    bd_conn_maybe_close(c);
    bd_server *srv = c->srv;
    bd_conn_unref(c);
    bd_maybe_finish_drain(srv); /* this connection's answers are all written */
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
        bd_conn_set_reading(c, false);
    }
    idle_rearm(c);
}

/* Refuse a connection with one line, then close it once written. */
static void refuse(bd_conn *c, br_proto_err code, const char *text)
{
    bd_conn_reply_error(c, BR_PROTO_NO_ID, code, text);
    c->closing = true;
    bd_conn_set_reading(c, false);
}

/* A new bd_conn for fd with its events (not reading yet), or NULL (fd
 * closed). */
static bd_conn *conn_new(bd_server *srv, evutil_socket_t fd)
{
    bd_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return NULL;
    }
    c->srv = srv;
    c->fd = fd;
    c->refs = 1;
    c->open = true;
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    srv->n_conns++;
    c->rev = event_new(srv->base, fd, EV_READ | EV_PERSIST, conn_read_cb, c);
    c->wev = event_new(srv->base, fd, EV_WRITE | EV_PERSIST, conn_write_cb, c);
    c->idle = evtimer_new(srv->base, conn_idle_cb, c);
    if (!c->rev || !c->wev || !c->idle) {
        bd_conn_close(c);
        return NULL;
    }
    idle_rearm(c);
    return c;
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    (void)l;
    (void)sa;
    (void)salen;
    bd_server *srv = arg;
    srv->counters.connections_total++;
    bd_conn *c = conn_new(srv, fd);
    if (!c) {
        bd_log(LOG_ERR, "out of memory accepting a connection");
        srv->counters.connections_refused++;
        return;
    }

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
        bd_log(LOG_NOTICE,
               "refused a connection from uid %u (pid %d): not in allowed_users or "
               "allowed_groups",
               (unsigned)cred.uid, (int)cred.pid);
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
        return;
    }
    bd_conn_set_reading(c, true);
    if (!c->reading)
        bd_conn_close(c); /* out of memory for the event */
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
