/* SPDX-License-Identifier: MIT */
/* The range servers of the integration tests (rtest.h): nginx serving
 * files, with or without TLS, and the fault server. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "rtest.h"
#include "rtest_int.h"

/* ---- nginx ------------------------------------------------------------------- */

static void make_cert(rt_nginx *n)
{
    n->cert = rt_fmt("%s/cert.pem", n->dir);
    char *key = rt_fmt("%s/key.pem", n->dir);
    char *argv[] = {"/usr/bin/openssl",
                    "req",
                    "-x509",
                    "-newkey",
                    "ec",
                    "-pkeyopt",
                    "ec_paramgen_curve:prime256v1",
                    "-nodes",
                    "-subj",
                    "/CN=127.0.0.1",
                    "-addext",
                    "subjectAltName=IP:127.0.0.1",
                    "-days",
                    "2",
                    "-keyout",
                    key,
                    "-out",
                    n->cert,
                    NULL};
    pid_t pid = rt_spawn(argv, NULL, true);
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        DIE("openssl req failed");
    free(key);
}

void rt_nginx_start(rt_nginx *n, const char *dir, bool tls)
{
    rt_nginx_start_ex(n, dir, tls, true);
}

void rt_nginx_start_ex(rt_nginx *n, const char *dir, bool tls, bool gzip)
{
    rt_nginx_opts o = {.tls = tls, .no_gzip = !gzip};
    rt_nginx_start_opts(n, dir, &o);
}

void rt_nginx_start_opts(rt_nginx *n, const char *dir, const rt_nginx_opts *o)
{
    bool tls = o->tls, gzip = !o->no_gzip;
    int workers = o->workers > 0 ? o->workers : 1;
    memset(n, 0, sizeof(*n));
    n->dir = strdup(dir);
    n->tls = tls;
    n->www = rt_fmt("%s/www", dir);
    n->access_log = rt_fmt("%s/access.log", dir);
    char *range = rt_fmt("%s/range", n->www), *tmp = rt_fmt("%s/tmp", dir);
    mkdir(n->www, 0755);
    mkdir(range, 0755);
    mkdir(tmp, 0700);
    if (tls)
        make_cert(n);

    for (int attempt = 0; attempt < 5; attempt++) {
        n->port = rt_free_port();
        char *listen =
            tls ? rt_fmt("listen 127.0.0.1:%d ssl http2;\n        ssl_certificate %s/cert.pem;\n"
                         "        ssl_certificate_key %s/key.pem;",
                         n->port, dir, dir)
                : rt_fmt("listen 127.0.0.1:%d;", n->port);
        char *access = o->no_access_log ? strdup("off") : rt_fmt("%s rt", n->access_log);
        char *conf =
            rt_fmt("daemon off;\n"
                   "master_process %s;\n"
                   "worker_processes %d;\n"
                   "pid %s/nginx.pid;\n"
                   "error_log %s/error.log warn;\n"
                   "events { worker_connections %d; }\n"
                   "http {\n"
                   "    log_format rt '$status $request_uri $connection "
                   "$connection_requests $server_protocol "
                   "$http_add_padding $http_user_agent';\n"
                   "    access_log %s;\n"
                   "    client_body_temp_path %s/body;\n"
                   "    proxy_temp_path %s/proxy;\n"
                   "    fastcgi_temp_path %s/fastcgi;\n"
                   "    uwsgi_temp_path %s/uwsgi;\n"
                   "    scgi_temp_path %s/scgi;\n"
                   "    default_type text/plain;\n"
                   "    keepalive_requests 100000;\n"
                   "    keepalive_timeout 60s;\n"
                   "    etag on;\n"
                   "    gzip %s;\n"
                   "    gzip_types text/plain;\n"
                   "    gzip_min_length 64;\n"
                   "    %s\n"
                   "    server {\n"
                   "        %s\n"
                   "        root %s;\n"
                   "        location = /range/EEEEE { return 500; }\n"
                   "        location /range/ { try_files $uri.txt =404; %s }\n"
                   "    }\n"
                   "}\n",
                   workers > 1 ? "on" : "off", workers, dir, dir,
                   o->worker_connections > 0 ? o->worker_connections : 1024, access, tmp, tmp, tmp,
                   tmp, tmp, gzip ? "on" : "off", o->http_extra ? o->http_extra : "", listen,
                   n->www, o->location_extra ? o->location_extra : "");
        free(access);
        char *conf_path = rt_fmt("%s/nginx.conf", dir);
        rt_write_file(conf_path, conf, strlen(conf));
        char *errlog = rt_fmt("%s/error.log", dir);
        char *argv[] = {"/usr/sbin/nginx", "-p", n->dir, "-e", errlog, "-c", conf_path, NULL};
        n->pid = rt_spawn(argv, NULL, false);
        bool up = rt_wait_port(n->port, 5000);
        free(conf);
        free(conf_path);
        free(errlog);
        free(listen);
        if (up) {
            int st;
            if (waitpid(n->pid, &st, WNOHANG) == 0)
                break; /* ours is the one listening */
        }
        rt_stop(n->pid);
        n->pid = 0;
    }
    if (!n->pid)
        DIE("nginx did not start (see %s/error.log)", dir);
    free(range);
    free(tmp);
}

void rt_nginx_stop(rt_nginx *n)
{
    rt_stop(n->pid);
    n->pid = 0;
    free(n->dir);
    free(n->www);
    free(n->access_log);
    free(n->cert);
    memset(n, 0, sizeof(*n));
}

char **rt_access_lines(const rt_nginx *n, size_t *count)
{
    char *all = rt_read_file(n->access_log, NULL);
    size_t cap = 16, k = 0;
    char **lines = malloc(cap * sizeof(*lines));
    for (char *save = NULL, *l = all ? strtok_r(all, "\n", &save) : NULL; l;
         l = strtok_r(NULL, "\n", &save)) {
        if (k == cap)
            lines = realloc(lines, (cap *= 2) * sizeof(*lines));
        lines[k++] = strdup(l);
    }
    free(all);
    *count = k;
    return lines;
}

void rt_free_lines(char **lines, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(lines[i]);
    free(lines);
}

static size_t access_count_now(const rt_nginx *n, const char *uri)
{
    size_t count, hits = 0;
    char **lines = rt_access_lines(n, &count);
    for (size_t i = 0; i < count; i++) {
        char status[8], u[256];
        if (!uri)
            hits++;
        else if (sscanf(lines[i], "%7s %255s", status, u) == 2 && strcmp(u, uri) == 0)
            hits++;
    }
    rt_free_lines(lines, count);
    return hits;
}

/* nginx writes a log line just after the response leaves: the client can be
 * faster. Wait for `want` lines (3 s at most), then a little longer so that
 * an unexpected extra line shows up too. */
size_t rt_access_count(const rt_nginx *n, const char *uri, size_t want)
{
    double end = rt_now() + 3;
    while (access_count_now(n, uri) < want && rt_now() < end)
        usleep(5000);
    usleep(20000);
    return access_count_now(n, uri);
}

/* ---- fault server ---------------------------------------------------------------- */

void rt_fault_start(rt_fault *f, const char *exe, const char *dir)
{
    memset(f, 0, sizeof(*f));
    f->dir = strdup(dir);
    int out = -1;
    char *argv[] = {(char *)exe, (char *)dir, NULL};
    f->pid = rt_spawn(argv, &out, false);
    char buf[32];
    size_t n = 0;
    while (n < sizeof(buf) - 1) {
        struct pollfd pfd = {.fd = out, .events = POLLIN};
        if (poll(&pfd, 1, 5000) <= 0)
            DIE("fault server did not report its port");
        ssize_t r = read(out, buf + n, 1);
        if (r <= 0)
            DIE("fault server died");
        if (buf[n] == '\n')
            break;
        n++;
    }
    buf[n] = '\0';
    close(out);
    f->port = atoi(buf);
    if (f->port <= 0 || !rt_wait_port(f->port, 5000))
        DIE("fault server not listening");
}

void rt_fault_stop(rt_fault *f)
{
    rt_stop(f->pid);
    free(f->dir);
    memset(f, 0, sizeof(*f));
}

size_t rt_fault_count(const rt_fault *f, const char *mode, uint32_t prefix)
{
    char *path = rt_fmt("%s/requests.log", f->dir);
    char *all = rt_read_file(path, NULL);
    free(path);
    size_t hits = 0;
    char want[6];
    rt_prefix_hex(prefix, want);
    for (char *save = NULL, *l = all ? strtok_r(all, "\n", &save) : NULL; l;
         l = strtok_r(NULL, "\n", &save)) {
        char m[32], p[16];
        if (sscanf(l, "%31s %15s", m, p) != 2)
            continue;
        if (mode && strcmp(m, mode) != 0)
            continue;
        if (prefix <= 0xFFFFF && strcmp(p, want) != 0)
            continue;
        hits++;
    }
    free(all);
    return hits;
}

void rt_fault_set_down(const rt_fault *f, bool down)
{
    char *path = rt_fmt("%s/down", f->dir);
    if (down)
        rt_write_file(path, "", 0);
    else
        unlink(path);
    free(path);
}
