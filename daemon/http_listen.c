/* SPDX-License-Identifier: MIT */
/* The range endpoint's listeners (http_listen.h): each [http] listen
 * address bound for evhttp, a TCP address by evhttp itself and a Unix
 * socket made here (mode 0660, a stale socket replaced), each with its
 * accept pause for when descriptors run out (accept_pause.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/http.h>
#include <event2/listener.h>

#include "conf.h"
#include "http_int.h"
#include "http_listen.h"
#include "server_types.h"

#define UNIX_BACKLOG 128

/* A Unix socket at path, mode 0660; a stale socket there is replaced, any
 * other file is an error. The listening descriptor, or a negative errno. */
static int unix_listen(const char *path, br_error *err)
{
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return br_error_set(err, -EEXIST, "[http] listen %s: exists and is not a socket", path);
        unlink(path);
    }
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sun.sun_path))
        return br_error_set(err, -ENAMETOOLONG, "[http] listen %s: path too long", path);
    memcpy(sun.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return br_error_set(err, -errno, "[http] listen %s: socket: %s", path, strerror(errno));
    if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || chmod(path, 0660) < 0 ||
        listen(fd, UNIX_BACKLOG) < 0) {
        int e = errno;
        close(fd);
        return br_error_set(err, -e, "[http] listen %s: %s", path, strerror(e));
    }
    return fd;
}

static int bind_one(bd_http *h, const breachd_config *cfg, const breachd_listen *l, size_t i,
                    br_error *err)
{
    if (l->family != AF_UNIX) {
        errno = 0;
        struct evhttp_bound_socket *b = evhttp_bind_socket_with_handle(h->evh, l->host, l->port);
        if (!b) {
            int e = errno ? errno : EADDRNOTAVAIL; /* bind(2)'s, e.g. EADDRINUSE */
            const char *name = strerrorname_np(e);
            return br_error_set(err, -e, "[http] listen %s%s%s:%u: cannot listen: %s (%s)",
                                l->family == AF_INET6 ? "[" : "", l->host,
                                l->family == AF_INET6 ? "]" : "", l->port, strerror(e),
                                name ? name : "?");
        }
        bd_accept_pause_init(&h->pauses[i], evhttp_bound_socket_get_listener(b),
                             &h->srv->counters.accept_pauses, "[http] listen");
        return 0;
    }
    if (!strcmp(l->path, cfg->daemon.socket))
        return br_error_set(err, -EINVAL, "[http] listen %s is the [daemon] socket", l->path);
    int fd = unix_listen(l->path, err);
    if (fd < 0)
        return fd;
    struct evhttp_bound_socket *b = evhttp_accept_socket_with_handle(h->evh, fd);
    if (!b) {
        close(fd);
        unlink(l->path);
        return br_error_set(err, -ENOMEM, "[http] listen %s: cannot accept", l->path);
    }
    bd_accept_pause_init(&h->pauses[i], evhttp_bound_socket_get_listener(b),
                         &h->srv->counters.accept_pauses, "[http] listen");
    h->unix_paths[i] = strdup(l->path);
    return 0;
}

int bd_http_listen(bd_http *h, const breachd_config *cfg, br_error *err)
{
    for (size_t i = 0; i < cfg->http.n_listens && i < BD_HTTP_MAX_LISTEN; i++) {
        int rc = bind_one(h, cfg, &cfg->http.listens[i], i, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

void bd_http_unlisten(bd_http *h)
{
    for (size_t i = 0; i < BD_HTTP_MAX_LISTEN; i++)
        if (h->unix_paths[i]) {
            unlink(h->unix_paths[i]);
            free(h->unix_paths[i]);
            h->unix_paths[i] = NULL;
        }
}
