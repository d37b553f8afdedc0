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

#include "range/range_cache.h"
#include "range_cache_walk.h"
#include "rtest.h"
#include "rtest_int.h"
#include "core/util.h"

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

static int count_cb(void *ctx, uint32_t partition, br_range_kind kind, uint32_t prefix20,
                    int64_t fetched_at, int64_t expires_at, const uint8_t *value, size_t len)
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
    rc_walk(c, count_cb, &n);
    return n;
}

typedef struct find_ctx {
    br_range_kind kind;
    uint32_t prefix;
    bool found;
} find_ctx;

static int find_cb(void *ctx, uint32_t partition, br_range_kind kind, uint32_t prefix20,
                   int64_t fetched_at, int64_t expires_at, const uint8_t *value, size_t len)
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
    rc_walk(c, find_cb, &f);
    return f.found;
}

double rt_now(void)
{
    return (double)br_now_ns() / 1e9;
}
