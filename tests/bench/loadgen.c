/* SPDX-License-Identifier: MIT */
/* loadgen: a load generator for breachd's socket protocol v1 (issue 4).
 *
 *   loadgen [--socket PATH] [-c N] [-P DEPTH] [-d SECONDS | -n COUNT]
 *           [-w WARMUP] [-t THREADS] [--absent FILTER] [--seed S] [-q]
 *   loadgen --idle [--socket PATH] [-c N] [-d SECONDS] [--ready-file FILE]
 *
 * Load: N connections (-c, default 50), each keeping DEPTH requests
 * outstanding (-P, default 16): "ID PW <40 hex>" with random hashes (with a
 * 16-bit filter, a random hash is a filter "maybe" 1 time in 65,536). With
 * --absent FILTER only hashes that FILTER (the daemon's filter file) says
 * "definitely not" to are sent: a pool of 2^20 of them is made before the
 * run (screening during the run would pull the very filter lines the daemon
 * reads next into the shared L3: the file's pages are the same memory), and
 * each request draws one at random. Runs for -d seconds (default 10) after -w
 * seconds of warm-up (default 1), or until -n requests are answered.
 *
 * An id is the request's slot on its connection (0..DEPTH-1): a slot is
 * reused only once its answer came, so answers may come in any order. The
 * latency of a request is from the write() that sent it to the read() that
 * brought its answer (one clock reading per batch of each), kept in a
 * log-linear histogram (128 sub-buckets per power of two: under 0.8% error),
 * per thread, merged at the end. Sockets are non-blocking, one epoll loop
 * per thread (-t, default 1); connection i belongs to thread i mod T.
 *
 * Throughput counts the answers that arrived in the measured window, after
 * the warm-up. The daemon's STATS (pw_filter_no / pw_filter_maybe) are read
 * before and after, so the report says how many requests were filter maybes.
 * Over the window, the daemon's CPU time (its pid from SO_PEERCRED,
 * /proc/PID/stat) gives its CPU ns per answer, and the run-queue delay of its
 * main (event-loop) thread and of loadgen's threads (schedstat) says how much
 * of the time other work on the machine took from them.
 *
 * --urls FILE: "ID URL <url>" requests instead, the URLs of FILE (one a
 * line, e.g. tests/bench/bench_url --emit) taken in turn, each thread from
 * its own offset; SAFE and BLOCKED are counted as CLEAN and PWNED are, and
 * the daemon's url_filter_no / url_filter_maybe give the maybes (issue 5).
 *
 * --idle: open N connections, send one PING on each and read its PONG, then
 * hold them open, doing nothing, for -d seconds (default: until SIGINT or
 * SIGTERM); --ready-file is created once every connection answered. For
 * measuring the daemon's memory with many idle clients.
 *
 * The last line of a load run is machine-readable:
 *   RESULT conns=50 depth=16 threads=1 seconds=10.000 answered=... rps=...
 *          p50_us=... p90_us=... p99_us=... p999_us=... max_us=... clean=...
 *          pwned=... unknown=... err=... maybes=... daemon_cpu_pct=...
 *          daemon_ns_per_req=... loadgen_cpu_pct=... daemon_runq_pct=...
 *          loadgen_runq_pct=...          (-1: not available)
 *
 * Exit status: 0, 1 on a protocol or connection error, 2 on a usage error. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "pwfilter.h"

#define IN_CAP 65536
#define REQ_MAX 64 /* "ID PW <40 hex>\n" with an id of at most 5 digits */

/* ---- time ---- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Nanoseconds task tid of pid spent runnable but waiting for a CPU (the
 * second field of /proc/PID/task/TID/schedstat); -1 when unreadable. */
static int64_t run_delay_ns(pid_t pid, pid_t tid)
{
    char path[96];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    unsigned long long run, wait;
    int n = fscanf(f, "%llu %llu", &run, &wait);
    fclose(f);
    return n == 2 ? (int64_t)wait : -1;
}

/* ---- histogram: log-linear buckets of nanoseconds ---- */

#define H_SUB_BITS 7
#define H_SUB (1u << H_SUB_BITS)
#define H_BUCKETS ((64 - H_SUB_BITS) * H_SUB + H_SUB)

typedef struct hist {
    uint64_t n, sum, min, max;
    uint64_t count[H_BUCKETS];
} hist;

static unsigned h_index(uint64_t v)
{
    if (v < H_SUB)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= H_SUB_BITS */
    unsigned k = e - H_SUB_BITS;
    return k * H_SUB + (unsigned)(v >> k);
}

/* The highest value that falls in bucket i. */
static uint64_t h_upper(unsigned i)
{
    if (i < 2 * H_SUB)
        return i;
    unsigned k = i / H_SUB - 1;
    uint64_t m = i - (uint64_t)k * H_SUB;
    return ((m + 1) << k) - 1;
}

static void h_add(hist *h, uint64_t v)
{
    h->count[h_index(v)]++;
    h->n++;
    h->sum += v;
    if (v > h->max)
        h->max = v;
    if (h->n == 1 || v < h->min)
        h->min = v;
}

static void h_merge(hist *into, const hist *h)
{
    if (!h->n)
        return;
    for (unsigned i = 0; i < H_BUCKETS; i++)
        into->count[i] += h->count[i];
    if (!into->n || h->min < into->min)
        into->min = h->min;
    if (h->max > into->max)
        into->max = h->max;
    into->n += h->n;
    into->sum += h->sum;
}

/* The value at quantile q (0..1): the upper bound of its bucket, at most max. */
static uint64_t h_quantile(const hist *h, double q)
{
    if (!h->n)
        return 0;
    double qr = q * (double)h->n;
    uint64_t rank = (uint64_t)qr;
    if ((double)rank < qr)
        rank++; /* ceil */
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < H_BUCKETS; i++) {
        seen += h->count[i];
        if (seen >= rank) {
            uint64_t u = h_upper(i);
            return u < h->max ? u : h->max;
        }
    }
    return h->max;
}

/* ---- random hashes ---- */

typedef struct rng {
    uint64_t s[4];
} rng;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng *r) /* xoshiro256** */
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* --absent: hashes screened before the run (so that the screening neither
 * costs loadgen CPU during the run nor warms the shared cache with the very
 * filter lines the daemon is about to read: the filter file's pages are the
 * same physical memory in both processes). Requests pick from it at random. */
#define ABSENT_POOL (1u << 20)
static uint8_t (*g_pool)[20];
static uint64_t g_pool_rejected;

static void random_sha1_raw(rng *r, uint8_t h[20])
{
    uint64_t a = rng_next(r), b = rng_next(r), c = rng_next(r);
    memcpy(h, &a, 8);
    memcpy(h + 8, &b, 8);
    memcpy(h + 16, &c, 4);
}

static int make_pool(const br_pwfilter *pf, uint64_t seed)
{
    g_pool = malloc(sizeof(*g_pool) * ABSENT_POOL);
    if (!g_pool)
        return -1;
    rng r;
    rng_seed(&r, seed ^ UINT64_C(0xABCDEF));
    for (unsigned i = 0; i < ABSENT_POOL; i++) {
        do
            random_sha1_raw(&r, g_pool[i]);
        while (br_pwfilter_maybe(pf, g_pool[i]) && ++g_pool_rejected);
    }
    return 0;
}

static void random_sha1(rng *r, uint8_t h[20])
{
    if (g_pool)
        memcpy(h, g_pool[rng_next(r) & (ABSENT_POOL - 1)], 20);
    else
        random_sha1_raw(r, h);
}

/* --urls: the URLs, and the longest request line they make. */
static char **g_urls;
static size_t g_n_urls, g_req_max = REQ_MAX;

static int load_urls(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "loadgen: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0, alloc = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0)
            continue;
        if (g_n_urls == alloc) {
            alloc = alloc ? alloc * 2 : 1024;
            char **u = realloc(g_urls, alloc * sizeof(*u));
            if (!u)
                return -1;
            g_urls = u;
        }
        if (!(g_urls[g_n_urls++] = strdup(line)))
            return -1;
        if ((size_t)n + 16 > g_req_max)
            g_req_max = (size_t)n + 16; /* "ID URL " + LF, ids of at most 5 digits */
    }
    free(line);
    fclose(f);
    if (g_n_urls == 0) {
        fprintf(stderr, "loadgen: %s: no URL\n", path);
        return -1;
    }
    return 0;
}

/* ---- options and shared state ---- */

static struct {
    const char *socket;
    unsigned conns, depth, threads;
    double duration, warmup;
    uint64_t requests; /* 0: run for duration */
    uint64_t seed;
    bool quiet, idle, stats;
    const char *absent_path, *ready_file, *urls_path;
} opt = {
    .conns = 50, .depth = 16, .threads = 1, .duration = 10, .warmup = 1, .seed = 2026, .stats = true,
};

static uint64_t g_measure_ns, g_end_ns; /* window of the measurement */
static atomic_bool g_failed;
static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

typedef struct conn {
    int fd;
    unsigned idx;
    uint64_t *sent; /* per slot: send time, 0 = free */
    unsigned *free_slots;
    unsigned n_free;
    char *out;
    size_t out_len, out_off, out_cap;
    bool want_out;
    char in[IN_CAP];
    size_t in_len;
} conn;

typedef struct worker {
    pthread_t th;
    int64_t wait0, wait1; /* this thread's run-queue delay at the window's start and end */
    bool wait0_read;
    unsigned id;
    int ep;
    conn **conns;
    unsigned n_conns;
    rng r;
    uint64_t quota, issued; /* -n: requests this worker sends */
    size_t next_url;        /* --urls: the next URL this worker sends */
    uint64_t outstanding;
    hist h;
    uint64_t answered, clean, pwned, unknown, err;
} worker;

static int connect_unix(const char *path, bool nonblock)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    /* Connect blocking (a full backlog then waits instead of EAGAIN). */
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (nonblock)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("loadgen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    atomic_store(&g_failed, true);
}

static const char hexdig[] = "0123456789ABCDEF";

/* Queue new requests on every free slot, when the run allows more. */
static void conn_fill(worker *w, conn *c, uint64_t now)
{
    while (c->n_free > 0) {
        if (opt.requests ? w->issued >= w->quota : now >= g_end_ns)
            return;
        if (c->out_cap - c->out_len < g_req_max) {
            if (c->out_off > 0) {
                memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
                c->out_len -= c->out_off;
                c->out_off = 0;
            }
            if (c->out_cap - c->out_len < g_req_max)
                return; /* cannot happen: out_cap holds every slot */
        }
        unsigned slot = c->free_slots[--c->n_free];
        if (g_urls) {
            const char *u = g_urls[w->next_url];
            w->next_url = w->next_url + 1 == g_n_urls ? 0 : w->next_url + 1;
            c->out_len += (size_t)sprintf(c->out + c->out_len, "%u URL %s\n", slot, u);
            c->sent[slot] = now ? now : 1;
            w->issued++;
            w->outstanding++;
            continue;
        }
        uint8_t h[20];
        random_sha1(&w->r, h);
        char *p = c->out + c->out_len;
        char digits[8];
        int nd = 0;
        unsigned v = slot;
        do
            digits[nd++] = (char)('0' + v % 10);
        while ((v /= 10) != 0);
        while (nd > 0)
            *p++ = digits[--nd];
        memcpy(p, " PW ", 4);
        p += 4;
        for (int i = 0; i < 20; i++) {
            *p++ = hexdig[h[i] >> 4];
            *p++ = hexdig[h[i] & 15];
        }
        *p++ = '\n';
        c->out_len = (size_t)(p - c->out);
        c->sent[slot] = now ? now : 1;
        w->issued++;
        w->outstanding++;
    }
}

static int conn_flush(worker *w, conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                break;
            fail("connection %u: write: %s", c->idx, strerror(errno));
            return -1;
        }
        c->out_off += (size_t)n;
    }
    if (c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    bool want = c->out_len > 0;
    if (want != c->want_out) {
        struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data.ptr = c};
        epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = want;
    }
    return 0;
}

/* One answer line (without its LF). */
static int conn_answer(worker *w, conn *c, const char *line, size_t len, uint64_t now)
{
    const char *sp = memchr(line, ' ', len);
    unsigned slot = 0;
    bool ok = sp && sp > line && sp - line <= 5;
    for (const char *p = line; ok && p < sp; p++) {
        if (*p < '0' || *p > '9')
            ok = false;
        else
            slot = slot * 10 + (unsigned)(*p - '0');
    }
    if (!ok || slot >= opt.depth || !c->sent[slot]) {
        fail("connection %u: unexpected answer: %.*s", c->idx, (int)(len > 80 ? 80 : len), line);
        return -1;
    }
    const char *st = sp + 1;
    size_t st_len = len - (size_t)(st - line);
    if (now >= g_measure_ns && now < g_end_ns) {
        h_add(&w->h, now - c->sent[slot]);
        w->answered++;
        if (st_len >= 5 && memcmp(st, "CLEAN", 5) == 0)
            w->clean++;
        else if (st_len >= 5 && memcmp(st, "PWNED", 5) == 0)
            w->pwned++;
        else if (st_len >= 4 && memcmp(st, "SAFE", 4) == 0)
            w->clean++;
        else if (st_len >= 7 && memcmp(st, "BLOCKED", 7) == 0)
            w->pwned++;
        else if (st_len >= 7 && memcmp(st, "UNKNOWN", 7) == 0)
            w->unknown++;
        else
            w->err++;
    }
    if (st_len >= 3 && memcmp(st, "ERR", 3) == 0 && w->err <= 3)
        fprintf(stderr, "loadgen: connection %u: %.*s\n", c->idx, (int)(len > 120 ? 120 : len), line);
    c->sent[slot] = 0;
    c->free_slots[c->n_free++] = slot;
    w->outstanding--;
    return 0;
}

static int conn_read(worker *w, conn *c)
{
    ssize_t n = read(c->fd, c->in + c->in_len, IN_CAP - c->in_len);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : (fail("connection %u: read: %s", c->idx, strerror(errno)), -1);
    if (n == 0) {
        fail("connection %u: breachd closed the connection", c->idx);
        return -1;
    }
    uint64_t now = now_ns();
    c->in_len += (size_t)n;
    char *p = c->in, *end = c->in + c->in_len;
    for (;;) {
        char *lf = memchr(p, '\n', (size_t)(end - p));
        if (!lf)
            break;
        if (conn_answer(w, c, p, (size_t)(lf - p), now) < 0)
            return -1;
        p = lf + 1;
    }
    c->in_len = (size_t)(end - p);
    if (c->in_len == IN_CAP) {
        fail("connection %u: answer line too long", c->idx);
        return -1;
    }
    memmove(c->in, p, c->in_len);
    conn_fill(w, c, now);
    return conn_flush(w, c);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    struct epoll_event evs[256];
    uint64_t now = now_ns();
    for (unsigned i = 0; i < w->n_conns; i++) {
        conn_fill(w, w->conns[i], now);
        if (conn_flush(w, w->conns[i]) < 0)
            return NULL;
    }
    w->wait0 = w->wait1 = -1;
    while (!atomic_load_explicit(&g_failed, memory_order_relaxed) && !g_stop) {
        now = now_ns();
        if (!w->wait0_read && now >= g_measure_ns) {
            w->wait0 = run_delay_ns(getpid(), gettid());
            w->wait0_read = true;
        }
        if (opt.requests ? (w->issued >= w->quota && w->outstanding == 0) : now >= g_end_ns)
            break;
        int timeout = 100;
        if (!opt.requests) {
            uint64_t left_ms = (g_end_ns - now) / 1000000u + 1;
            if (left_ms < (uint64_t)timeout)
                timeout = (int)left_ms;
        }
        int n = epoll_wait(w->ep, evs, 256, timeout);
        if (n < 0 && errno != EINTR) {
            fail("epoll_wait: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                if (conn_read(w, c) < 0)
                    return NULL;
            }
            if ((evs[i].events & EPOLLOUT) && conn_flush(w, c) < 0)
                return NULL;
        }
    }
    w->wait1 = run_delay_ns(getpid(), gettid());
    return NULL;
}

/* ---- the daemon's STATS ---- */

typedef struct daemon_stats {
    bool ok;
    uint64_t pw_filter_no, pw_filter_maybe, requests_pw;
    uint64_t url_filter_no, url_filter_maybe;
} daemon_stats;

static uint64_t stat_field(const char *line, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = line; (p = strstr(p, key)) != NULL; p += kl)
        if ((p == line || p[-1] == ' ') && p[kl] == '=')
            return strtoull(p + kl + 1, NULL, 10);
    return 0;
}

static daemon_stats read_stats(void)
{
    daemon_stats s = {0};
    int fd = connect_unix(opt.socket, false);
    if (fd < 0)
        return s;
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    static const char req[] = "st STATS\n";
    char buf[16384];
    size_t len = 0;
    if (write(fd, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1) {
        while (len < sizeof(buf) - 1) {
            ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
            if (n <= 0)
                break;
            len += (size_t)n;
            if (memchr(buf, '\n', len))
                break;
        }
    }
    close(fd);
    buf[len] = '\0';
    if (strncmp(buf, "st STATS ", 9) != 0)
        return s;
    s.ok = true;
    s.pw_filter_no = stat_field(buf, "pw_filter_no");
    s.url_filter_no = stat_field(buf, "url_filter_no");
    s.url_filter_maybe = stat_field(buf, "url_filter_maybe");
    s.pw_filter_maybe = stat_field(buf, "pw_filter_maybe");
    s.requests_pw = stat_field(buf, "requests_pw");
    return s;
}

/* ---- CPU time of the daemon (its pid from SO_PEERCRED) and of loadgen ---- */

static pid_t g_daemon_pid;

/* utime + stime of pid in clock ticks; -1 when unreadable. */
static int64_t proc_cpu_ticks(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* after "pid (comm)" */
    unsigned long long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (int64_t)(ut + st);
}

static double self_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static void sleep_until(uint64_t t)
{
    uint64_t now;
    while (!g_stop && !atomic_load(&g_failed) && (now = now_ns()) < t) {
        uint64_t d = t - now;
        struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
        nanosleep(&ts, NULL);
    }
}

/* ---- modes ---- */

static void raise_nofile(unsigned want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want + 64) {
        rl.rlim_cur = rl.rlim_max < want + 64 ? rl.rlim_max : want + 64;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int run_idle(void)
{
    int *fds = calloc(opt.conns, sizeof(int));
    if (!fds)
        return 1;
    for (unsigned i = 0; i < opt.conns; i++) {
        fds[i] = connect_unix(opt.socket, false);
        if (fds[i] < 0) {
            fprintf(stderr, "loadgen: connection %u: %s: %s\n", i, opt.socket, strerror(errno));
            return 1;
        }
        struct timeval tv = {10, 0};
        setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (write(fds[i], "p PING\n", 7) != 7) {
            fprintf(stderr, "loadgen: connection %u: write: %s\n", i, strerror(errno));
            return 1;
        }
    }
    for (unsigned i = 0; i < opt.conns; i++) {
        char buf[256];
        size_t len = 0;
        while (!memchr(buf, '\n', len) && len < sizeof(buf)) {
            ssize_t n = read(fds[i], buf + len, sizeof(buf) - len);
            if (n <= 0) {
                fprintf(stderr, "loadgen: connection %u: no answer to PING\n", i);
                return 1;
            }
            len += (size_t)n;
        }
        if (len < 7 || memcmp(buf, "p PONG\n", 7) != 0) {
            fprintf(stderr, "loadgen: connection %u: answer to PING: %.*s\n", i, (int)len, buf);
            return 1;
        }
    }
    if (!opt.quiet)
        printf("loadgen: %u idle connections open, each answered a PING\n", opt.conns);
    fflush(stdout);
    if (opt.ready_file) {
        FILE *f = fopen(opt.ready_file, "w");
        if (f)
            fclose(f);
    }
    uint64_t end = opt.duration > 0 ? now_ns() + (uint64_t)(opt.duration * 1e9) : UINT64_MAX;
    while (!g_stop && now_ns() < end) {
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    for (unsigned i = 0; i < opt.conns; i++)
        close(fds[i]);
    free(fds);
    return 0;
}

static int run_load(void)
{
    unsigned T = opt.threads < opt.conns ? opt.threads : opt.conns;
    worker *ws = calloc(T, sizeof(worker));
    conn *cs = calloc(opt.conns, sizeof(conn));
    if (!ws || !cs)
        return 1;
    for (unsigned t = 0; t < T; t++) {
        ws[t].id = t;
        ws[t].ep = epoll_create1(EPOLL_CLOEXEC);
        ws[t].conns = calloc(opt.conns / T + 1, sizeof(conn *));
        rng_seed(&ws[t].r, opt.seed * 1000003u + t);
        if (opt.requests)
            ws[t].quota = opt.requests / T + (t < opt.requests % T);
        ws[t].next_url = g_n_urls ? (size_t)((uint64_t)g_n_urls * t / T) : 0;
    }
    for (unsigned i = 0; i < opt.conns; i++) {
        conn *c = &cs[i];
        worker *w = &ws[i % T];
        c->idx = i;
        c->fd = connect_unix(opt.socket, true);
        if (c->fd < 0) {
            fprintf(stderr, "loadgen: connection %u: %s: %s\n", i, opt.socket, strerror(errno));
            return 1;
        }
        c->sent = calloc(opt.depth, sizeof(uint64_t));
        c->free_slots = calloc(opt.depth, sizeof(unsigned));
        c->out_cap = (size_t)opt.depth * g_req_max + g_req_max;
        c->out = malloc(c->out_cap);
        if (!c->sent || !c->free_slots || !c->out)
            return 1;
        for (unsigned s = 0; s < opt.depth; s++)
            c->free_slots[c->n_free++] = opt.depth - 1 - s;
        if (i == 0) {
            struct ucred cred;
            socklen_t cl = sizeof(cred);
            if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0)
                g_daemon_pid = cred.pid;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(w->ep, EPOLL_CTL_ADD, c->fd, &ev);
        w->conns[w->n_conns++] = c;
    }

    daemon_stats before = opt.stats ? read_stats() : (daemon_stats){0};
    uint64_t t0 = now_ns();
    if (opt.requests) {
        g_measure_ns = t0;
        g_end_ns = UINT64_MAX;
    } else {
        g_measure_ns = t0 + (uint64_t)(opt.warmup * 1e9);
        g_end_ns = g_measure_ns + (uint64_t)(opt.duration * 1e9);
    }
    for (unsigned t = 0; t < T; t++)
        if (pthread_create(&ws[t].th, NULL, worker_main, &ws[t]) != 0) {
            fprintf(stderr, "loadgen: cannot start a thread\n");
            return 1;
        }
    /* CPU time over the measured window (-n: the whole run). */
    sleep_until(g_measure_ns);
    int64_t dcpu0 = g_daemon_pid ? proc_cpu_ticks(g_daemon_pid) : -1;
    int64_t dwait0 = g_daemon_pid ? run_delay_ns(g_daemon_pid, g_daemon_pid) : -1;
    double scpu0 = self_cpu_s();
    if (!opt.requests)
        sleep_until(g_end_ns);
    for (unsigned t = 0; t < T; t++)
        pthread_join(ws[t].th, NULL);
    int64_t dwait1 = dwait0 >= 0 ? run_delay_ns(g_daemon_pid, g_daemon_pid) : -1;
    uint64_t t1 = now_ns();
    int64_t dcpu1 = dcpu0 >= 0 ? proc_cpu_ticks(g_daemon_pid) : -1;
    double scpu1 = self_cpu_s();
    daemon_stats after = opt.stats ? read_stats() : (daemon_stats){0};

    hist *h = calloc(1, sizeof(hist));
    if (!h)
        return 1;
    uint64_t answered = 0, clean = 0, pwned = 0, unknown = 0, err = 0, issued = 0;
    for (unsigned t = 0; t < T; t++) {
        h_merge(h, &ws[t].h);
        answered += ws[t].answered;
        clean += ws[t].clean;
        pwned += ws[t].pwned;
        unknown += ws[t].unknown;
        err += ws[t].err;
        issued += ws[t].issued;
    }
    double secs = opt.requests ? (double)(t1 - t0) / 1e9 : opt.duration;
    double rps = secs > 0 ? (double)answered / secs : 0;
    double p50 = (double)h_quantile(h, 0.50) / 1e3, p90 = (double)h_quantile(h, 0.90) / 1e3;
    double p99 = (double)h_quantile(h, 0.99) / 1e3, p999 = (double)h_quantile(h, 0.999) / 1e3;
    double mean = h->n ? (double)h->sum / (double)h->n / 1e3 : 0;
    double dcpu = dcpu0 >= 0 && dcpu1 >= 0 ? (double)(dcpu1 - dcpu0) / (double)sysconf(_SC_CLK_TCK) : -1;
    double lcpu = scpu1 - scpu0;
    double dwait = dwait0 >= 0 && dwait1 >= 0 ? (double)(dwait1 - dwait0) / 1e9 : -1;
    double lwait = 0;
    for (unsigned t = 0; t < T; t++)
        lwait = ws[t].wait0 >= 0 && ws[t].wait1 >= 0 && lwait >= 0 ? lwait + (double)(ws[t].wait1 - ws[t].wait0) / 1e9 : -1;
    double dns = dcpu > 0 && answered ? dcpu * 1e9 / (double)answered : -1; /* daemon CPU ns per answer */
    int64_t maybes = -1, dnos = -1;
    if (before.ok && after.ok) {
        maybes = (int64_t)(after.pw_filter_maybe - before.pw_filter_maybe);
        dnos = (int64_t)(after.pw_filter_no - before.pw_filter_no);
        if (g_urls) {
            maybes = (int64_t)(after.url_filter_maybe - before.url_filter_maybe);
            dnos = (int64_t)(after.url_filter_no - before.url_filter_no);
        }
    }
    if (!opt.quiet) {
        printf("loadgen: %u connections x depth %u, %u thread%s, %s, ", opt.conns, opt.depth, T,
               T == 1 ? "" : "s",
               g_urls ? "URLs from --urls" : opt.absent_path ? "definite-no hashes (screened with --absent)" : "random hashes");
        if (opt.requests)
            printf("%" PRIu64 " requests\n", opt.requests);
        else
            printf("%.1f s measured after %.1f s of warm-up\n", opt.duration, opt.warmup);
        printf("  answered   %" PRIu64 " in %.3f s: %.0f req/s\n", answered, secs, rps);
        printf("  answers    %s %" PRIu64 "  %s %" PRIu64 "  UNKNOWN %" PRIu64 "  ERR/other %" PRIu64 "\n",
               g_urls ? "SAFE" : "CLEAN", clean, g_urls ? "BLOCKED" : "PWNED", pwned, unknown, err);
        if (maybes >= 0)
            printf("  daemon     over the whole run (%" PRIu64 " %s sent): filter definitely-no %" PRId64
                   ", maybe %" PRId64 " (%.4f%%)\n",
                   issued, g_urls ? "URL" : "PW", dnos, maybes, dnos + maybes > 0 ? 100.0 * (double)maybes / (double)(dnos + maybes) : 0.0);
        if (opt.absent_path)
            printf("  screening  a pool of %u random hashes the filter says definitely-no to, made before the run"
                   " (%" PRIu64 " maybes left out); requests draw from it\n",
                   ABSENT_POOL, g_pool_rejected);
        if (dcpu >= 0)
            printf("  CPU        breachd (pid %d) %.0f%% of a core, %.0f ns per answer (%.2fM answers per CPU-second);"
                   " loadgen %.0f%%\n",
                   (int)g_daemon_pid, 100 * dcpu / secs, dns, dns > 0 ? 1e3 / dns : 0.0, 100 * lcpu / secs);
        if (dwait >= 0)
            printf("  run queue  breachd's loop thread waited for a CPU %.0f%% of the time, loadgen's thread%s %.0f%%"
                   " (other work on the machine)\n",
                   100 * dwait / secs, T == 1 ? "" : "s", lwait >= 0 ? 100 * lwait / secs : -1.0);
        printf("  latency    min %.1f us  mean %.1f us  p50 %.1f us  p90 %.1f us  p99 %.1f us  p99.9 %.1f us  "
               "max %.1f us\n",
               (double)h->min / 1e3, mean, p50, p90, p99, p999, (double)h->max / 1e3);
    }
    printf("RESULT conns=%u depth=%u threads=%u seconds=%.3f answered=%" PRIu64 " rps=%.0f p50_us=%.1f "
           "p90_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f clean=%" PRIu64 " pwned=%" PRIu64
           " unknown=%" PRIu64 " err=%" PRIu64 " maybes=%" PRId64 " daemon_cpu_pct=%.0f daemon_ns_per_req=%.0f"
           " loadgen_cpu_pct=%.0f daemon_runq_pct=%.0f loadgen_runq_pct=%.0f\n",
           opt.conns, opt.depth, T, secs, answered, rps, p50, p90, p99, p999, (double)h->max / 1e3, clean,
           pwned, unknown, err, maybes, dcpu >= 0 ? 100 * dcpu / secs : -1, dns, 100 * lcpu / secs,
           dwait >= 0 ? 100 * dwait / secs : -1, lwait >= 0 ? 100 * lwait / secs : -1);
    for (unsigned i = 0; i < opt.conns; i++) {
        close(cs[i].fd);
        free(cs[i].sent);
        free(cs[i].free_slots);
        free(cs[i].out);
    }
    for (unsigned t = 0; t < T; t++) {
        close(ws[t].ep);
        free(ws[t].conns);
    }
    free(h);
    free(cs);
    free(ws);
    return atomic_load(&g_failed) ? 1 : 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: loadgen [--socket PATH] [-c N] [-P DEPTH] [-d SECONDS | -n COUNT] [-w WARMUP]\n"
            "               [-t THREADS] [--absent FILTER | --urls FILE] [--seed S] [--no-stats] [-q]\n"
            "       loadgen --idle [--socket PATH] [-c N] [-d SECONDS] [--ready-file FILE]\n"
            "\n"
            "  -s, --socket PATH      breachd's socket (default $BREACHD_SOCKET, else %s)\n"
            "  -c, --connections N    connections (default 50)\n"
            "  -P, --depth P          requests outstanding per connection (default 16)\n"
            "  -d, --duration S       seconds measured (default 10; --idle: hold time, 0 = until a signal)\n"
            "  -n, --requests N       instead of a duration: send N requests, wait for every answer\n"
            "  -w, --warmup S         seconds before the measurement starts (default 1)\n"
            "  -t, --threads T        threads, one epoll loop each (default 1)\n"
            "      --absent FILTER    send only hashes that FILTER says definitely-no to\n"
            "      --urls FILE        send \"URL <url>\" with the URLs of FILE (one a line) in turn\n"
            "      --seed S           random seed (default 2026)\n"
            "      --no-stats         do not read the daemon's STATS before and after\n"
            "      --idle             open the connections, PING each, then hold them idle\n"
            "      --ready-file FILE  --idle: create FILE once every connection answered\n"
            "  -q, --quiet            print only the RESULT line\n",
            "/run/breachd/breachd.sock");
}

static bool parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static bool parse_secs(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0) || v > 1e6)
        return false;
    *out = v;
    return true;
}

int main(int argc, char **argv)
{
    enum { O_ABSENT = 256, O_SEED, O_NO_STATS, O_IDLE, O_READY, O_URLS };
    static const struct option lo[] = {
        {"socket", required_argument, NULL, 's'},      {"connections", required_argument, NULL, 'c'},
        {"depth", required_argument, NULL, 'P'},       {"duration", required_argument, NULL, 'd'},
        {"requests", required_argument, NULL, 'n'},    {"warmup", required_argument, NULL, 'w'},
        {"threads", required_argument, NULL, 't'},     {"absent", required_argument, NULL, O_ABSENT},
        {"seed", required_argument, NULL, O_SEED},     {"no-stats", no_argument, NULL, O_NO_STATS},
        {"idle", no_argument, NULL, O_IDLE},           {"ready-file", required_argument, NULL, O_READY},
        {"quiet", no_argument, NULL, 'q'},             {"help", no_argument, NULL, 'h'},
        {"urls", required_argument, NULL, O_URLS},
        {0},
    };
    opt.socket = getenv("BREACHD_SOCKET");
    if (!opt.socket || !*opt.socket)
        opt.socket = "/run/breachd/breachd.sock";
    bool duration_set = false;
    int ch;
    uint64_t v;
    while ((ch = getopt_long(argc, argv, "s:c:P:d:n:w:t:qh", lo, NULL)) != -1) {
        bool ok = true;
        switch (ch) {
        case 's':
            opt.socket = optarg;
            break;
        case 'c':
            ok = parse_uint(optarg, 1, 100000, &v);
            opt.conns = (unsigned)v;
            break;
        case 'P':
            ok = parse_uint(optarg, 1, 65536, &v);
            opt.depth = (unsigned)v;
            break;
        case 'd':
            ok = parse_secs(optarg, &opt.duration);
            duration_set = true;
            break;
        case 'n':
            ok = parse_uint(optarg, 1, UINT64_MAX, &opt.requests);
            break;
        case 'w':
            ok = parse_secs(optarg, &opt.warmup);
            break;
        case 't':
            ok = parse_uint(optarg, 1, 256, &v);
            opt.threads = (unsigned)v;
            break;
        case O_ABSENT:
            opt.absent_path = optarg;
            break;
        case O_SEED:
            ok = parse_uint(optarg, 0, UINT64_MAX, &opt.seed);
            break;
        case O_NO_STATS:
            opt.stats = false;
            break;
        case O_IDLE:
            opt.idle = true;
            break;
        case O_READY:
            opt.ready_file = optarg;
            break;
        case O_URLS:
            opt.urls_path = optarg;
            break;
        case 'q':
            opt.quiet = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "loadgen: bad value for -%c: %s\n", ch < 256 ? ch : '-', optarg);
            return 2;
        }
    }
    if (optind < argc || (opt.requests && duration_set && !opt.idle) || (!opt.idle && opt.duration <= 0 && !opt.requests)) {
        usage(stderr);
        return 2;
    }
    if (opt.depth > 99999) {
        fprintf(stderr, "loadgen: -P is at most 99999\n");
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    raise_nofile(opt.conns);
    if (opt.idle) {
        if (!duration_set)
            opt.duration = 0;
        return run_idle();
    }
    if (opt.urls_path && (opt.absent_path || load_urls(opt.urls_path) < 0)) {
        if (opt.absent_path)
            fprintf(stderr, "loadgen: --urls and --absent exclude each other\n");
        return 2;
    }
    br_pwfilter *pf = NULL;
    if (opt.absent_path) {
        br_error err = {{0}};
        if (br_pwfilter_open(opt.absent_path, &pf, &err) < 0) {
            fprintf(stderr, "loadgen: %s\n", err.text);
            return 2;
        }
        int pr = make_pool(pf, opt.seed);
        br_pwfilter_free(pf);
        if (pr < 0) {
            fprintf(stderr, "loadgen: out of memory\n");
            return 1;
        }
    }
    int rc = run_load();
    free(g_pool);
    for (size_t i = 0; i < g_n_urls; i++)
        free(g_urls[i]);
    free(g_urls);
    return rc;
}
