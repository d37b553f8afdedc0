/* SPDX-License-Identifier: MIT */
/* loadgen's shared declarations (see loadgen.c for what it does): options,
 * the run's shared state, connections and worker threads (loadgen_conn.c),
 * the latency histogram, the daemon's STATS and CPU accounting and the
 * report (loadgen_report.c). The histogram's hot path (h_add) and the clock
 * are inline here: they run once per answer. */
#pragma once

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "filter/pwfilter.h"

#define IN_CAP 65536
#define REQ_MAX 64 /* "ID PW <40 hex>\n" with an id of at most 5 digits */

/* ---- time ---- */

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- histogram: log-linear buckets of nanoseconds ---- */

#define H_SUB_BITS 7
#define H_SUB (1u << H_SUB_BITS)
#define H_BUCKETS ((64 - H_SUB_BITS) * H_SUB + H_SUB)

typedef struct hist {
    uint64_t n, sum, min, max;
    uint64_t count[H_BUCKETS];
} hist;

static inline unsigned h_index(uint64_t v)
{
    if (v < H_SUB)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= H_SUB_BITS */
    unsigned k = e - H_SUB_BITS;
    return k * H_SUB + (unsigned)(v >> k);
}

static inline void h_add(hist *h, uint64_t v)
{
    h->count[h_index(v)]++;
    h->n++;
    h->sum += v;
    if (v > h->max)
        h->max = v;
    if (h->n == 1 || v < h->min)
        h->min = v;
}

void h_merge(hist *into, const hist *h);
/* The value at quantile q (0..1): the upper bound of its bucket, at most max. */
uint64_t h_quantile(const hist *h, double q);

/* ---- random hashes (loadgen_conn.c) ---- */

typedef struct rng {
    uint64_t s[4];
} rng;

void rng_seed(rng *r, uint64_t seed);

/* --absent: a pool of ABSENT_POOL hashes the filter says definitely-no to,
 * made before the run; requests draw from it (NULL: random hashes). */
#define ABSENT_POOL (1u << 20)
extern uint8_t (*g_pool)[20];
extern uint64_t g_pool_rejected; /* maybes left out of the pool */
int make_pool(const br_pwfilter *pf, uint64_t seed);

/* --urls: the URLs, and the longest request line they make (loadgen.c). */
extern char **g_urls;
extern size_t g_n_urls, g_req_max;

/* --hashes: PW hashes (40 hex) taken in turn instead of random ones. */
extern char **g_hashes;
extern size_t g_n_hashes;

/* --mix: weights of PW, URL, PING and STATS requests (sum > 0: mixed load). */
enum { MIX_PW, MIX_URL, MIX_PING, MIX_STATS, MIX_KINDS };
extern unsigned g_mix[MIX_KINDS], g_mix_sum;

/* ---- options and shared state (loadgen.c) ---- */

typedef struct loadgen_opts {
    const char *socket;
    unsigned conns, depth, threads;
    double duration, warmup;
    uint64_t requests; /* 0: run for duration */
    uint64_t seed;
    bool quiet, idle, stats;
    const char *absent_path, *ready_file, *urls_path, *hashes_path;
} loadgen_opts;
extern loadgen_opts opt;

extern uint64_t g_measure_ns, g_end_ns; /* window of the measurement */
extern atomic_bool g_failed;
extern volatile sig_atomic_t g_stop;

/* ---- connections and workers (loadgen_conn.c) ---- */

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
    size_t next_hash;       /* --hashes: the next hash this worker sends */
    uint64_t outstanding;
    hist h;
    uint64_t answered, clean, pwned, unknown, err;
    uint64_t other; /* --mix: PONG and STATS answers */
} worker;

int connect_unix(const char *path, bool nonblock);
/* Report an error on stderr and mark the run failed. */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *worker_main(void *arg); /* a worker's epoll loop (pthread start routine) */
int run_idle(void);           /* --idle */

/* ---- the daemon's STATS, CPU time, the report (loadgen_report.c) ---- */

typedef struct daemon_stats {
    bool ok;
    uint64_t pw_filter_no, pw_filter_maybe, requests_pw;
    uint64_t url_filter_no, url_filter_maybe;
} daemon_stats;

daemon_stats read_stats(void);
extern pid_t g_daemon_pid; /* the daemon's pid (SO_PEERCRED), 0 when unknown */
/* Nanoseconds task tid of pid spent runnable but waiting for a CPU; -1 when unreadable. */
int64_t run_delay_ns(pid_t pid, pid_t tid);
int64_t proc_cpu_ticks(pid_t pid); /* utime + stime in clock ticks; -1 when unreadable */
double self_cpu_s(void);           /* loadgen's CPU time */

/* What run_load() measured over the window (-n: the whole run). */
typedef struct measure {
    uint64_t t0, t1;        /* start and end of the run */
    int64_t dcpu0, dcpu1;   /* the daemon's CPU ticks at the window's start and end (-1) */
    int64_t dwait0, dwait1; /* its loop thread's run-queue delay, ns (-1) */
    double scpu0, scpu1;    /* loadgen's CPU seconds */
    daemon_stats before, after;
} measure;

/* Merge the workers' counts and print the report and the RESULT line;
 * -1 when out of memory. */
int report(const worker *ws, unsigned nthreads, const measure *m);
