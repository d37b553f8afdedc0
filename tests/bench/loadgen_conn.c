/* SPDX-License-Identifier: MIT */
/* loadgen's connections (see loadgen.c): the random hashes and the --absent
 * pool, connecting, and per worker thread an epoll loop that keeps every
 * connection's DEPTH slots busy (conn_fill), writes (conn_flush), matches
 * answers to slots and records their latency (conn_read, conn_answer);
 * --idle's connections (run_idle). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "loadgen.h"
#include "filter/pwfilter.h"

/* ---- random hashes ---- */

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

void rng_seed(rng *r, uint64_t seed)
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
uint8_t (*g_pool)[20];
uint64_t g_pool_rejected;

static void random_sha1_raw(rng *r, uint8_t h[20])
{
    uint64_t a = rng_next(r), b = rng_next(r), c = rng_next(r);
    memcpy(h, &a, 8);
    memcpy(h + 8, &b, 8);
    memcpy(h + 16, &c, 4);
}

int make_pool(const br_pwfilter *pf, uint64_t seed)
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

/* ---- connections ---- */

int connect_unix(const char *path, bool nonblock)
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

void fail(const char *fmt, ...)
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
        unsigned kind = g_urls ? MIX_URL : MIX_PW;
        if (g_mix_sum) {
            unsigned x = (unsigned)(rng_next(&w->r) % g_mix_sum);
            for (kind = 0; x >= g_mix[kind]; kind++)
                x -= g_mix[kind];
        }
        if (kind != MIX_PW) {
            char *o = c->out + c->out_len;
            if (kind == MIX_URL) {
                const char *u = g_urls[w->next_url];
                w->next_url = w->next_url + 1 == g_n_urls ? 0 : w->next_url + 1;
                c->out_len += (size_t)sprintf(o, "%u URL %s\n", slot, u);
            } else {
                c->out_len +=
                    (size_t)sprintf(o, "%u %s\n", slot, kind == MIX_PING ? "PING" : "STATS");
            }
            c->sent[slot] = now ? now : 1;
            w->issued++;
            w->outstanding++;
            continue;
        }
        if (g_hashes) {
            const char *hx = g_hashes[w->next_hash];
            w->next_hash = w->next_hash + 1 == g_n_hashes ? 0 : w->next_hash + 1;
            c->out_len += (size_t)sprintf(c->out + c->out_len, "%u PW %.40s\n", slot, hx);
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
        else if ((st_len >= 4 && memcmp(st, "PONG", 4) == 0) ||
                 (st_len >= 6 && memcmp(st, "STATS ", 6) == 0))
            w->other++;
        else
            w->err++;
    }
    if (st_len >= 3 && memcmp(st, "ERR", 3) == 0 && w->err <= 3)
        fprintf(stderr, "loadgen: connection %u: %.*s\n", c->idx, (int)(len > 120 ? 120 : len),
                line);
    c->sent[slot] = 0;
    c->free_slots[c->n_free++] = slot;
    w->outstanding--;
    return 0;
}

static int conn_read(worker *w, conn *c)
{
    ssize_t n = read(c->fd, c->in + c->in_len, IN_CAP - c->in_len);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR
                   ? 0
                   : (fail("connection %u: read: %s", c->idx, strerror(errno)), -1);
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

void *worker_main(void *arg)
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

/* ---- --idle ---- */

int run_idle(void)
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
