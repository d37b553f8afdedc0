/* SPDX-License-Identifier: MIT */
/* loadgen's measurements and report (see loadgen.c): the latency
 * histogram's merge and quantiles, the daemon's STATS (filter maybes), the
 * CPU time and run-queue delay of the daemon and of loadgen from /proc, and
 * the human-readable report with the machine-readable RESULT line. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "loadgen.h"

/* ---- histogram: log-linear buckets of nanoseconds (h_add is in loadgen.h) ---- */

/* The highest value that falls in bucket i. */
static uint64_t h_upper(unsigned i)
{
    if (i < 2 * H_SUB)
        return i;
    unsigned k = i / H_SUB - 1;
    uint64_t m = i - (uint64_t)k * H_SUB;
    return ((m + 1) << k) - 1;
}

void h_merge(hist *into, const hist *h)
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

uint64_t h_quantile(const hist *h, double q)
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

/* ---- the daemon's STATS ---- */

static uint64_t stat_field(const char *line, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = line; (p = strstr(p, key)) != NULL; p += kl)
        if ((p == line || p[-1] == ' ') && p[kl] == '=')
            return strtoull(p + kl + 1, NULL, 10);
    return 0;
}

daemon_stats read_stats(void)
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

pid_t g_daemon_pid;

/* utime + stime of pid in clock ticks; -1 when unreadable. */
int64_t proc_cpu_ticks(pid_t pid)
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

double self_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Nanoseconds task tid of pid spent runnable but waiting for a CPU (the
 * second field of /proc/PID/task/TID/schedstat); -1 when unreadable. */
int64_t run_delay_ns(pid_t pid, pid_t tid)
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

/* ---- the report ---- */

int report(const worker *ws, unsigned nthreads, const measure *m)
{
    unsigned T = nthreads;
    uint64_t t0 = m->t0, t1 = m->t1;
    int64_t dcpu0 = m->dcpu0, dcpu1 = m->dcpu1, dwait0 = m->dwait0, dwait1 = m->dwait1;
    double scpu0 = m->scpu0, scpu1 = m->scpu1;
    daemon_stats before = m->before, after = m->after;
    hist *h = calloc(1, sizeof(hist));
    if (!h)
        return -1;
    uint64_t answered = 0, clean = 0, pwned = 0, unknown = 0, err = 0, issued = 0, other = 0;
    for (unsigned t = 0; t < T; t++) {
        h_merge(h, &ws[t].h);
        answered += ws[t].answered;
        clean += ws[t].clean;
        pwned += ws[t].pwned;
        unknown += ws[t].unknown;
        err += ws[t].err;
        other += ws[t].other;
        issued += ws[t].issued;
    }
    double secs = opt.requests ? (double)(t1 - t0) / 1e9 : opt.duration;
    double rps = secs > 0 ? (double)answered / secs : 0;
    double p50 = (double)h_quantile(h, 0.50) / 1e3, p90 = (double)h_quantile(h, 0.90) / 1e3;
    double p99 = (double)h_quantile(h, 0.99) / 1e3, p999 = (double)h_quantile(h, 0.999) / 1e3;
    double mean = h->n ? (double)h->sum / (double)h->n / 1e3 : 0;
    double dcpu =
        dcpu0 >= 0 && dcpu1 >= 0 ? (double)(dcpu1 - dcpu0) / (double)sysconf(_SC_CLK_TCK) : -1;
    double lcpu = scpu1 - scpu0;
    double dwait = dwait0 >= 0 && dwait1 >= 0 ? (double)(dwait1 - dwait0) / 1e9 : -1;
    double lwait = 0;
    for (unsigned t = 0; t < T; t++)
        lwait = ws[t].wait0 >= 0 && ws[t].wait1 >= 0 && lwait >= 0
                    ? lwait + (double)(ws[t].wait1 - ws[t].wait0) / 1e9
                    : -1;
    double dns =
        dcpu > 0 && answered ? dcpu * 1e9 / (double)answered : -1; /* daemon CPU ns per answer */
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
               g_urls            ? "URLs from --urls"
               : opt.absent_path ? "definite-no hashes (screened with --absent)"
                                 : "random hashes");
        if (opt.requests)
            printf("%" PRIu64 " requests\n", opt.requests);
        else
            printf("%.1f s measured after %.1f s of warm-up\n", opt.duration, opt.warmup);
        printf("  answered   %" PRIu64 " in %.3f s: %.0f req/s\n", answered, secs, rps);
        printf("  answers    %s %" PRIu64 "  %s %" PRIu64 "  UNKNOWN %" PRIu64
               "  ERR/other %" PRIu64 "\n",
               g_urls ? "SAFE" : "CLEAN", clean, g_urls ? "BLOCKED" : "PWNED", pwned, unknown, err);
        if (maybes >= 0)
            printf("  daemon     over the whole run (%" PRIu64
                   " %s sent): filter definitely-no %" PRId64 ", maybe %" PRId64 " (%.4f%%)\n",
                   issued, g_urls ? "URL" : "PW", dnos, maybes,
                   dnos + maybes > 0 ? 100.0 * (double)maybes / (double)(dnos + maybes) : 0.0);
        if (opt.absent_path)
            printf("  screening  a pool of %u random hashes the filter says definitely-no to, made "
                   "before the run"
                   " (%" PRIu64 " maybes left out); requests draw from it\n",
                   ABSENT_POOL, g_pool_rejected);
        if (dcpu >= 0)
            printf("  CPU        breachd (pid %d) %.0f%% of a core, %.0f ns per answer (%.2fM "
                   "answers per CPU-second);"
                   " loadgen %.0f%%\n",
                   (int)g_daemon_pid, 100 * dcpu / secs, dns, dns > 0 ? 1e3 / dns : 0.0,
                   100 * lcpu / secs);
        if (dwait >= 0)
            printf("  run queue  breachd's loop thread waited for a CPU %.0f%% of the time, "
                   "loadgen's thread%s %.0f%%"
                   " (other work on the machine)\n",
                   100 * dwait / secs, T == 1 ? "" : "s", lwait >= 0 ? 100 * lwait / secs : -1.0);
        printf("  latency    min %.1f us  mean %.1f us  p50 %.1f us  p90 %.1f us  p99 %.1f us  "
               "p99.9 %.1f us  "
               "max %.1f us\n",
               (double)h->min / 1e3, mean, p50, p90, p99, p999, (double)h->max / 1e3);
    }
    printf("RESULT conns=%u depth=%u threads=%u seconds=%.3f answered=%" PRIu64
           " rps=%.0f p50_us=%.1f "
           "p90_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f clean=%" PRIu64 " pwned=%" PRIu64
           " unknown=%" PRIu64 " err=%" PRIu64 " maybes=%" PRId64
           " daemon_cpu_pct=%.0f daemon_ns_per_req=%.0f"
           " loadgen_cpu_pct=%.0f daemon_runq_pct=%.0f loadgen_runq_pct=%.0f other=%" PRIu64 "\n",
           opt.conns, opt.depth, T, secs, answered, rps, p50, p90, p99, p999, (double)h->max / 1e3,
           clean, pwned, unknown, err, maybes, dcpu >= 0 ? 100 * dcpu / secs : -1, dns,
           100 * lcpu / secs, dwait >= 0 ? 100 * dwait / secs : -1,
           lwait >= 0 ? 100 * lwait / secs : -1, other);
    free(h);
    return 0;
}
