/* SPDX-License-Identifier: MIT */
/* loadgen: a load generator for breachd's socket protocol v1.
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
 * the daemon's url_filter_no / url_filter_maybe give the maybes.
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
 *          loadgen_runq_pct=... other=...   (-1: not available; other: PONG
 *          and STATS answers of --mix)
 *
 * --mix PW,URL,PING,STATS: each request's verb drawn with these weights
 * (URL needs --urls); --hashes FILE: PW requests take FILE's hashes in turn,
 * e.g. hashes the filter holds, so that their answers go through the range
 * cache. For soaks (tests/bench/bench-soak.sh).
 *
 * Files: loadgen.c (options, the modes, setting up and timing a run),
 * loadgen_conn.c (random hashes, connections, the worker threads' epoll
 * loops, --idle), loadgen_report.c (histogram, the daemon's STATS, CPU
 * accounting, the report), loadgen.h (what they share).
 *
 * Exit status: 0, 1 on a protocol or connection error, 2 on a usage error. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "bench_lines.h"
#include "loadgen.h"
#include "filter/pwfilter.h"

/* ---- options and shared state ---- */

loadgen_opts opt = {
    .conns = 50,
    .depth = 16,
    .threads = 1,
    .duration = 10,
    .warmup = 1,
    .seed = 2026,
    .stats = true,
};

uint64_t g_measure_ns, g_end_ns; /* window of the measurement */
atomic_bool g_failed;
volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* --urls: the URLs, and the longest request line they make. */
char **g_urls;
size_t g_n_urls, g_req_max = REQ_MAX;

char **g_hashes;
size_t g_n_hashes;
unsigned g_mix[MIX_KINDS], g_mix_sum;

static int load_hashes(const char *path)
{
    size_t longest;
    if (bench_read_lines("loadgen", path, &g_hashes, &g_n_hashes, &longest) < 0)
        return -1;
    for (size_t i = 0; i < g_n_hashes; i++)
        if (strlen(g_hashes[i]) < 40) {
            fprintf(stderr, "loadgen: %s:%zu: not a 40-hex hash\n", path, i + 1);
            return -1;
        }
    return 0;
}

/* "PW,URL,PING,STATS" weights, e.g. 60,30,9,1. */
static bool parse_mix(const char *s)
{
    unsigned k = 0;
    g_mix_sum = 0;
    while (k < MIX_KINDS) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || end == s || v > 1000000)
            return false;
        g_mix[k++] = (unsigned)v;
        g_mix_sum += (unsigned)v;
        if (*end != ',')
            return !*end && k == MIX_KINDS && g_mix_sum > 0;
        s = end + 1;
    }
    return false;
}

static int load_urls(const char *path)
{
    size_t longest;
    if (bench_read_lines("loadgen", path, &g_urls, &g_n_urls, &longest) < 0)
        return -1;
    if (longest + 16 > g_req_max)
        g_req_max = longest + 16; /* "ID URL " + LF, ids of at most 5 digits */
    return 0;
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
    measure m = {.t0 = t0,
                 .t1 = t1,
                 .dcpu0 = dcpu0,
                 .dcpu1 = dcpu1,
                 .dwait0 = dwait0,
                 .dwait1 = dwait1,
                 .scpu0 = scpu0,
                 .scpu1 = scpu1,
                 .before = before,
                 .after = after};
    if (report(ws, T, &m) < 0)
        return 1;
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
    free(cs);
    free(ws);
    return atomic_load(&g_failed) ? 1 : 0;
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "Usage: loadgen [--socket PATH] [-c N] [-P DEPTH] [-d SECONDS | -n COUNT] [-w WARMUP]\n"
        "               [-t THREADS] [--absent FILTER | --urls FILE] [--seed S] [--no-stats] [-q]\n"
        "       loadgen --idle [--socket PATH] [-c N] [-d SECONDS] [--ready-file FILE]\n"
        "\n"
        "  -s, --socket PATH      breachd's socket (default $BREACHD_SOCKET, else %s)\n"
        "  -c, --connections N    connections (default 50)\n"
        "  -P, --depth P          requests outstanding per connection (default 16)\n"
        "  -d, --duration S       seconds measured (default 10; --idle: hold time, 0 = until a "
        "signal)\n"
        "  -n, --requests N       instead of a duration: send N requests, wait for every answer\n"
        "  -w, --warmup S         seconds before the measurement starts (default 1)\n"
        "  -t, --threads T        threads, one epoll loop each (default 1)\n"
        "      --absent FILTER    send only hashes that FILTER says definitely-no to\n"
        "      --urls FILE        send \"URL <url>\" with the URLs of FILE (one a line) in turn\n"
        "      --hashes FILE      PW requests take the 40-hex hashes of FILE in turn (not random "
        "ones)\n"
        "      --mix W,W,W,W      mixed load: weights of PW, URL (needs --urls), PING and STATS\n"
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
    enum { O_ABSENT = 256, O_SEED, O_NO_STATS, O_IDLE, O_READY, O_URLS, O_HASHES, O_MIX };
    static const struct option lo[] = {
        {"socket", required_argument, NULL, 's'},
        {"connections", required_argument, NULL, 'c'},
        {"depth", required_argument, NULL, 'P'},
        {"duration", required_argument, NULL, 'd'},
        {"requests", required_argument, NULL, 'n'},
        {"warmup", required_argument, NULL, 'w'},
        {"threads", required_argument, NULL, 't'},
        {"absent", required_argument, NULL, O_ABSENT},
        {"seed", required_argument, NULL, O_SEED},
        {"no-stats", no_argument, NULL, O_NO_STATS},
        {"idle", no_argument, NULL, O_IDLE},
        {"ready-file", required_argument, NULL, O_READY},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"urls", required_argument, NULL, O_URLS},
        {"hashes", required_argument, NULL, O_HASHES},
        {"mix", required_argument, NULL, O_MIX},
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
        case O_HASHES:
            opt.hashes_path = optarg;
            break;
        case O_MIX:
            ok = parse_mix(optarg);
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
    if (optind < argc || (opt.requests && duration_set && !opt.idle) ||
        (!opt.idle && opt.duration <= 0 && !opt.requests)) {
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
    if (g_mix_sum && g_mix[MIX_URL] && !g_urls) {
        fprintf(stderr, "loadgen: --mix with URL requests needs --urls\n");
        return 2;
    }
    if (opt.hashes_path && (opt.absent_path || load_hashes(opt.hashes_path) < 0)) {
        if (opt.absent_path)
            fprintf(stderr, "loadgen: --hashes and --absent exclude each other\n");
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
    for (size_t i = 0; i < g_n_hashes; i++)
        free(g_hashes[i]);
    free(g_hashes);
    return rc;
}
