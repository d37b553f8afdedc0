/* SPDX-License-Identifier: MIT */
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

#include "range_cache.h"
#include "rtest.h"
#include "util.h"

#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, "rtest: " __VA_ARGS__);                                                    \
        fprintf(stderr, "\n");                                                                     \
        abort();                                                                                   \
    } while (0)

/* ---- files and processes ------------------------------------------------------- */

char *rt_fmt(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        DIE("out of memory");
    return s;
}

char *rt_mkdtemp(const char *tag)
{
    const char *base = getenv("TMPDIR");
    char *p = rt_fmt("%s/breachd-%s.XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(p))
        DIE("mkdtemp: %s", strerror(errno));
    return p;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void rt_rmrf(const char *path)
{
    if (path)
        nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void rt_write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || br_write_all(fd, data, len) < 0)
        DIE("write %s: %s", path, strerror(errno));
    close(fd);
}

char *rt_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    fclose(f);
    if (!buf)
        DIE("out of memory");
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int rt_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) < 0)
        DIE("free port: %s", strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}

bool rt_wait_port(int port, int timeout_ms)
{
    double end = rt_now() + timeout_ms / 1000.0;
    while (rt_now() < end) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
        close(fd);
        if (rc == 0)
            return true;
        usleep(10000);
    }
    return false;
}

pid_t rt_spawn(char *const argv[], int *stdout_fd, bool quiet)
{
    int p[2] = {-1, -1};
    if (stdout_fd && pipe2(p, O_CLOEXEC) < 0)
        DIE("pipe: %s", strerror(errno));
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        DIE("fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            if (quiet) {
                dup2(devnull, 1);
                dup2(devnull, 2);
            }
        }
        if (stdout_fd)
            dup2(p[1], 1);
        execv(argv[0], argv);
        _exit(127);
    }
    if (stdout_fd) {
        close(p[1]);
        *stdout_fd = p[0];
    }
    return pid;
}

void rt_stop(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 300; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

void rt_clean_env(void)
{
    static const char *vars[] = {"http_proxy",     "HTTP_PROXY",    "https_proxy", "HTTPS_PROXY",
                                 "all_proxy",      "ALL_PROXY",     "no_proxy",    "NO_PROXY",
                                 "CURL_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR"};
    for (size_t i = 0; i < BR_ARRAY_SIZE(vars); i++)
        unsetenv(vars[i]);
    signal(SIGPIPE, SIG_IGN);
}

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
        char *conf = rt_fmt("daemon off;\n"
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
                            o->worker_connections > 0 ? o->worker_connections : 1024, access, tmp,
                            tmp, tmp, tmp, tmp, gzip ? "on" : "off",
                            o->http_extra ? o->http_extra : "", listen, n->www,
                            o->location_extra ? o->location_extra : "");
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

/* ---- ranges ---------------------------------------------------------------------- */

void rt_prefix_hex(uint32_t prefix, char out[6])
{
    snprintf(out, 6, "%05X", prefix & 0xFFFFF);
}

void rt_hash_with_prefix(br_range_kind kind, uint32_t prefix, uint64_t seed, uint8_t *out)
{
    uint64_t s = seed ^ ((uint64_t)prefix << 32) ^ (uint64_t)kind;
    size_t hl = br_range_hash_len(kind);
    for (size_t i = 0; i < hl; i++)
        out[i] = (uint8_t)br_splitmix64(&s);
    out[0] = (uint8_t)(prefix >> 12);
    out[1] = (uint8_t)(prefix >> 4);
    out[2] = (uint8_t)(((prefix & 0xF) << 4) | (out[2] & 0xF));
}

void rt_range_gen(rt_range *r, br_range_kind kind, uint32_t prefix, size_t n, size_t npad,
                  uint64_t seed)
{
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->prefix = prefix;
    r->n = n;
    r->npad = npad;
    r->e = calloc(n ? n : 1, sizeof(*r->e));
    r->pad = calloc(npad ? npad : 1, sizeof(*r->pad));
    uint64_t s = seed * 31 + prefix;
    for (size_t i = 0; i < n; i++) {
        rt_hash_with_prefix(kind, prefix, br_splitmix64(&s), r->e[i].hash);
        r->e[i].count = (uint32_t)(br_splitmix64(&s) % 5000000) + 1;
    }
    r->e[0].count = 4294967295u; /* the largest count there is */
    for (size_t i = 0; i < npad; i++)
        rt_hash_with_prefix(kind, prefix, br_splitmix64(&s), r->pad[i].hash);
}

static void hex_suffix(const uint8_t *hash, size_t hash_len, bool lower, char *out)
{
    const char *d = lower ? "0123456789abcdef" : "0123456789ABCDEF";
    size_t k = 0;
    for (size_t i = 5; i < hash_len * 2; i++) {
        uint8_t b = hash[i / 2];
        out[k++] = d[(i & 1) ? (b & 0xF) : (b >> 4)];
    }
    out[k] = '\0';
}

char *rt_range_body(const rt_range *r, unsigned style, size_t *len)
{
    size_t hl = br_range_hash_len(r->kind);
    size_t total = r->n + ((style & RT_PADDED) ? r->npad : 0);
    size_t cap = total * (hl * 2 + 16) + 1, off = 0;
    char *body = malloc(cap);
    const char *eol = (style & RT_LF) ? "\n" : "\r\n";
    for (size_t i = 0; i < total; i++) {
        const rt_entry *e = i < r->n ? &r->e[i] : &r->pad[i - r->n];
        char suf[80];
        hex_suffix(e->hash, hl, style & RT_LOWER, suf);
        bool last = i + 1 == total;
        if (r->kind == BR_RANGE_PASSWORD_SHA1)
            off += (size_t)snprintf(body + off, cap - off, "%s:%u%s", suf, e->count,
                                    last && (style & RT_NO_FINAL_NL) ? "" : eol);
        else
            off += (size_t)snprintf(body + off, cap - off, "%s:cat%u%s", suf, e->count % 7,
                                    last && (style & RT_NO_FINAL_NL) ? "" : eol);
    }
    *len = off;
    return body;
}

void rt_range_write(const rt_range *r, unsigned style, const char *path)
{
    size_t len;
    char *body = rt_range_body(r, style, &len);
    rt_write_file(path, body, len);
    free(body);
}

void rt_range_free(rt_range *r)
{
    free(r->e);
    free(r->pad);
    memset(r, 0, sizeof(*r));
}

void rt_absent_hash(const rt_range *r, uint64_t seed, uint8_t *out)
{
    size_t hl = br_range_hash_len(r->kind);
    for (;;) {
        rt_hash_with_prefix(r->kind, r->prefix, seed++ * 7919 + 17, out);
        bool clash = false;
        for (size_t i = 0; i < r->n && !clash; i++)
            clash = memcmp(r->e[i].hash + 2, out + 2, hl - 2) == 0;
        for (size_t i = 0; i < r->npad && !clash; i++)
            clash = memcmp(r->pad[i].hash + 2, out + 2, hl - 2) == 0;
        if (!clash)
            return;
    }
}

/* ---- answers ----------------------------------------------------------------------- */

void rt_ans_cb(void *ctx, const br_resolve_result *res)
{
    rt_ans *a = ctx;
    a->res = *res;
    a->calls++;
}

int rt_resolve_in(br_resolver *r, uint32_t partition, br_range_kind kind, const uint8_t *hash,
                 rt_ans *a)
{
    memset(a, 0, sizeof(*a));
    int rc = br_resolver_resolve(r, partition, kind, hash, rt_ans_cb, a, &a->res);
    if (rc == 1)
        a->sync = true;
    return rc;
}

int rt_resolve(br_resolver *r, br_range_kind kind, const uint8_t *hash, rt_ans *a)
{
    return rt_resolve_in(r, 0, kind, hash, a);
}

static void noop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

static bool all_done(const rt_ans *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!a[i].sync && a[i].calls == 0)
            return false;
    return true;
}

int rt_slow(void)
{
    const char *s = getenv("BREACHD_TEST_SLOW");
    int v = s ? atoi(s) : 1;
    return v >= 1 ? v : 1;
}

bool rt_wait(struct event_base *base, rt_ans *a, size_t n, int timeout_ms)
{
    double end = rt_now() + (double)timeout_ms * rt_slow() / 1000.0;
    struct event *guard = evtimer_new(base, noop_cb, NULL);
    while (!all_done(a, n)) {
        double left = end - rt_now();
        if (left <= 0)
            break;
        struct timeval tv = {.tv_sec = (time_t)left,
                             .tv_usec = (suseconds_t)((left - (double)(time_t)left) * 1e6)};
        evtimer_add(guard, &tv);
        event_base_loop(base, EVLOOP_ONCE);
    }
    event_free(guard);
    return all_done(a, n);
}

br_resolve_result rt_resolve_wait(struct event_base *base, br_resolver *r, br_range_kind kind,
                                  const uint8_t *hash)
{
    rt_ans a;
    int rc = rt_resolve(r, kind, hash, &a);
    if (rc < 0)
        DIE("resolve: %s", strerror(-rc));
    if (!rt_wait(base, &a, 1, 10000))
        DIE("no answer within 10 s");
    if (!a.sync && a.calls != 1)
        DIE("callback called %d times", a.calls);
    return a.res;
}

void rt_run_for(struct event_base *base, int ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

int64_t rt_clock_fn(void *ctx)
{
    return ((rt_clock *)ctx)->now;
}

static int count_cb(void *ctx, uint32_t partition, br_range_kind kind, uint32_t prefix20, int64_t fetched_at,
                    int64_t expires_at, const uint8_t *value, size_t len)
{
    (void)partition;
    (void)kind;
    (void)prefix20;
    (void)fetched_at;
    (void)expires_at;
    (void)value;
    (void)len;
    (*(size_t *)ctx)++;
    return 0;
}

size_t rt_cache_entries(br_range_cache *c)
{
    br_range_cache_flush(c);
    size_t n = 0;
    br_range_cache_foreach(c, count_cb, &n);
    return n;
}

typedef struct find_ctx {
    br_range_kind kind;
    uint32_t prefix;
    bool found;
} find_ctx;

static int find_cb(void *ctx, uint32_t partition, br_range_kind kind, uint32_t prefix20, int64_t fetched_at,
                   int64_t expires_at, const uint8_t *value, size_t len)
{
    (void)partition;
    (void)fetched_at;
    (void)expires_at;
    (void)value;
    (void)len;
    find_ctx *f = ctx;
    if (kind == f->kind && prefix20 == f->prefix)
        f->found = true;
    return 0;
}

bool rt_cache_has(br_range_cache *c, br_range_kind kind, uint32_t prefix)
{
    br_range_cache_flush(c);
    find_ctx f = {.kind = kind, .prefix = prefix};
    br_range_cache_foreach(c, find_cb, &f);
    return f.found;
}

double rt_now(void)
{
    return (double)br_now_ns() / 1e9;
}
