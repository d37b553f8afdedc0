/* SPDX-License-Identifier: MIT */
/* The server's life cycle: set-up and tear-down, the metrics endpoint that
 * follows the configuration, reloads (config and filters loaded in a thread,
 * swapped on the loop), signals and the draining stop. Connections and the
 * listening socket are in server.c. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "core/clock.h"
#include "conn.h"
#include "conn_out.h"
#include "http.h"
#include "log.h"
#include "notify.h"
#include "server.h"
#include "stats.h"

/* ---- metrics endpoint follows the config ---- */

static void metrics_apply(bd_server *srv)
{
    const breachd_config *cfg = srv->state->cfg;
    char want[64] = "";
    if (cfg->daemon.metrics_port)
        snprintf(want, sizeof(want), "%s:%u", cfg->daemon.metrics_host, cfg->daemon.metrics_port);
    if (strcmp(want, srv->metrics_addr) == 0)
        return;
    bd_metrics_stop(srv->metrics);
    srv->metrics = NULL;
    srv->metrics_addr[0] = '\0';
    if (!want[0])
        return;
    int r = bd_metrics_start(srv->base, srv, cfg->daemon.metrics_host, cfg->daemon.metrics_port,
                             &srv->metrics);
    if (r < 0) {
        const char *name = strerrorname_np(-r);
        bd_log(LOG_ERR, "metrics_listen %s: cannot listen: %s (%s)", cfg->daemon.metrics_listen,
               strerror(-r), name ? name : "?");
        return;
    }
    snprintf(srv->metrics_addr, sizeof(srv->metrics_addr), "%s", want);
    bd_log(LOG_INFO, "metrics at http://%s/metrics", cfg->daemon.metrics_listen);
}

/* ---- reload ---- */

static void *reload_thread_main(void *arg)
{
    bd_server *srv = arg;
    srv->reload_err.text[0] = '\0';
    srv->reload_result =
        bd_state_files_load(srv->config_path, &srv->reload_files, &srv->reload_err);
    char b = 1;
    ssize_t w = write(srv->reload_pipe[1], &b, 1);
    (void)w;
    return NULL;
}

static void reload_answer_list(bd_waiter *w, int r, const char *why)
{
    while (w) {
        bd_waiter *next = w->next;
        if (r >= 0)
            bd_conn_reply(w->conn, w->id, "RELOADED");
        else
            bd_conn_reply_error(w->conn, w->id, BR_PERR_RELOAD_FAILED, why);
        bd_waiter_free(w);
        w = next;
    }
}

static void reload_answer(bd_server *srv, int r, const char *why)
{
    bd_waiter *w = srv->reload_waiters;
    srv->reload_waiters = NULL;
    reload_answer_list(w, r, why);
}

static void reload_start(bd_server *srv);

/* A reload asked for while the last one ran starts now, for the files as
 * they are now (the last one may have read them before they changed). */
static void reload_follow_up(bd_server *srv)
{
    if (!srv->reload_again)
        return;
    srv->reload_again = false;
    srv->reload_waiters = srv->reload_next_waiters;
    srv->reload_next_waiters = NULL;
    reload_start(srv);
}

static void reload_done_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    bd_server *srv = arg;
    char b;
    while (read(fd, &b, 1) > 0) {
    }
    pthread_join(srv->reload_thread, NULL);
    srv->reloading = false;
    int r = srv->reload_result;
    bd_state *next = NULL;
    if (r >= 0)
        r = bd_state_new(srv->base, &srv->reload_files, srv->state, &next, &srv->reload_err);
    else
        bd_state_files_clear(&srv->reload_files);
    if (r < 0) {
        srv->counters.reload_failures++;
        bd_log(LOG_ERR, "reload failed, the previous configuration and filters keep serving: %s",
               srv->reload_err.text);
        bd_notify("READY=1\nSTATUS=reload failed: %s", srv->reload_err.text);
        reload_answer(srv, r, srv->reload_err.text);
        reload_follow_up(srv);
        return;
    }
    if (!srv->socket_activated && strcmp(next->cfg->daemon.socket, srv->state->cfg->daemon.socket))
        bd_log(LOG_WARNING, "[daemon] socket changed: takes effect at the next restart");
    bd_state *old = srv->state;
    srv->state = next;
    bd_limits_from_config(&srv->limits, next->cfg);
    bd_state_unref(old); /* in-flight requests keep it until they are answered */
    bd_log_set_level(next->cfg->daemon.log_level);
    br_error lerr = {{0}};
    if (bd_log_to_file(next->cfg->daemon.log_file, &lerr) < 0) /* reopened: logrotate */
        bd_log(LOG_ERR, "%s: log lines go where they went before", lerr.text);
    metrics_apply(srv);
    br_error herr = {{0}};
    if (bd_http_apply(srv, &herr) < 0)
        bd_log(LOG_ERR, "%s: the range endpoint is off", herr.text);
    srv->counters.reloads++;
    bd_log(LOG_INFO, "reloaded %s", srv->config_path);
    bd_state_log_filters(next);
    if (srv->reloaded)
        srv->reloaded(srv->reloaded_ctx);
    bd_notify("READY=1\nSTATUS=serving (reloaded)");
    reload_answer(srv, 0, NULL);
    reload_follow_up(srv);
}

void bd_server_reload(bd_server *srv, bd_waiter *waiter)
{
    /* During a reload, SIGHUP or RELOAD asks for one more after it (however
     * many arrive meanwhile), and a request gets that one's result
     * (docs/protocol.md, RELOAD). */
    if (srv->reloading) {
        srv->reload_again = true;
        if (waiter) {
            waiter->next = srv->reload_next_waiters;
            srv->reload_next_waiters = waiter;
        }
        return;
    }
    if (waiter) {
        waiter->next = srv->reload_waiters;
        srv->reload_waiters = waiter;
    }
    reload_start(srv);
}

static void reload_start(bd_server *srv)
{
    srv->reloading = true;
    bd_notify("RELOADING=1\nSTATUS=reloading");
    bd_log(LOG_INFO, "reloading %s", srv->config_path);
    if (pthread_create(&srv->reload_thread, NULL, reload_thread_main, srv) != 0) {
        srv->reloading = false;
        srv->counters.reload_failures++;
        reload_answer(srv, -EAGAIN, "cannot start the reload thread");
        bd_notify("READY=1");
    }
}

/* ---- signals and draining ---- */

static void drain_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bd_server *srv = arg;
    bd_log(LOG_WARNING, "stopping with %llu requests unanswered (drain timeout)",
           (unsigned long long)srv->inflight);
    event_base_loopexit(srv->base, NULL);
}

void bd_server_drain(bd_server *srv)
{
    if (srv->draining)
        return;
    srv->draining = true;
    bd_notify("STOPPING=1\nSTATUS=stopping");
    bd_log(LOG_INFO, "stopping: answering %llu requests in flight",
           (unsigned long long)srv->inflight);
    /* New connections: our own socket goes on accepting only to refuse them
     * with "- ERR shutting-down" (a clear answer rather than a connection
     * left in the backlog until exit). A systemd socket stops being
     * accepted from: what queues there is for the next instance. */
    if (srv->listener && srv->socket_activated)
        bd_accept_pause_stop(&srv->accept);
    struct timeval tv = {srv->limits.drain_timeout_ms / 1000,
                         (srv->limits.drain_timeout_ms % 1000) * 1000};
    evtimer_add(srv->drain_timer, &tv);
    bd_maybe_finish_drain(srv);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    bd_server *srv = arg;
    if (sig == SIGHUP)
        bd_server_reload(srv, NULL);
    else
        bd_server_drain(srv);
}

int bd_server_init(bd_server *srv, struct event_base *base, const char *config_path,
                   bd_state *state, br_error *err)
{
    memset(srv, 0, sizeof(*srv));
    srv->base = base;
    srv->listen_fd = -1;
    srv->reload_pipe[0] = srv->reload_pipe[1] = -1;
    srv->config_path = strdup(config_path);
    srv->state = state;
    srv->started_at = br_clock_now_real();
    srv->reload = bd_server_reload;
    bd_limits_from_config(&srv->limits, state->cfg);
    if (!srv->config_path)
        return -ENOMEM;
    if (pipe2(srv->reload_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return br_error_set(err, -errno, "pipe: %s", strerror(errno));
    srv->reload_ev =
        event_new(base, srv->reload_pipe[0], EV_READ | EV_PERSIST, reload_done_cb, srv);
    srv->drain_timer = evtimer_new(base, drain_timeout_cb, srv);
    static const int sigs[4] = {SIGHUP, SIGTERM, SIGINT, 0};
    for (int i = 0; sigs[i]; i++) {
        srv->signals[i] = evsignal_new(base, sigs[i], signal_cb, srv);
        if (!srv->signals[i] || evsignal_add(srv->signals[i], NULL) < 0)
            return br_error_set(err, -ENOMEM, "cannot install signal handlers");
    }
    if (!srv->reload_ev || !srv->drain_timer || event_add(srv->reload_ev, NULL) < 0)
        return br_error_set(err, -ENOMEM, "out of memory");
    signal(SIGPIPE, SIG_IGN);
    metrics_apply(srv);
    return bd_http_apply(srv, err);
}

/* Stopping: SIGHUP, SIGTERM and SIGINT change nothing from here to the exit
 * (breachd(8), SIGNALS). Freeing their events gives them back their default
 * action, which would kill the process in its last steps (exit status
 * "killed by SIGHUP"): blocked first, then ignored. */
static void signals_off(bd_server *srv)
{
    static const int sigs[3] = {SIGHUP, SIGTERM, SIGINT};
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < 3; i++)
        sigaddset(&set, sigs[i]);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    for (int i = 0; i < 4; i++)
        if (srv->signals[i])
            event_free(srv->signals[i]);
    for (int i = 0; i < 3; i++)
        signal(sigs[i], SIG_IGN);
}

void bd_server_fini(bd_server *srv)
{
    if (srv->reloading) {
        pthread_join(srv->reload_thread, NULL);
        bd_state_files_clear(&srv->reload_files);
        srv->reloading = false;
    }
    reload_answer(srv, -ECANCELED, "breachd is stopping");
    reload_answer_list(srv->reload_next_waiters, -ECANCELED, "breachd is stopping");
    srv->reload_next_waiters = NULL;
    for (bd_conn *c = srv->conns; c; c = c->next)
        bd_conn_out_flush_now(c);
    while (srv->conns)
        bd_conn_close(srv->conns);
    bd_accept_pause_fini(&srv->accept);
    if (srv->listener)
        evconnlistener_free(srv->listener);
    if (srv->socket_path) {
        unlink(srv->socket_path);
        free(srv->socket_path);
    }
    bd_metrics_stop(srv->metrics);
    bd_http_free(srv->http);
    signals_off(srv);
    if (srv->reload_ev)
        event_free(srv->reload_ev);
    if (srv->drain_timer)
        event_free(srv->drain_timer);
    for (int i = 0; i < 2; i++)
        if (srv->reload_pipe[i] >= 0)
            close(srv->reload_pipe[i]);
    bd_state_unref(srv->state);
    free(srv->config_path);
    memset(srv, 0, sizeof(*srv));
}
