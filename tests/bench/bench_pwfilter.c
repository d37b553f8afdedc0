/* SPDX-License-Identifier: MIT */
/* Sharded password filter benchmark: for each N on the command line
 * (default 1M and 10M; suffixes K, M, G), generate N random 64-bit keys
 * (splitmix64), build a filter file in a temporary directory through
 * br_keyset + br_pwfilter_build (default threads, 16-bit, default arity or -a), open it
 * with br_pwfilter_open and report:
 *
 *   bits/key    fingerprint bytes and whole-file bytes, times 8, over N
 *   build       wall ns/key from the first br_keyset_add to the renamed,
 *               fsynced file; "per core" = wall * threads used / N, and the
 *               process CPU time (user+sys) over N; a 1-thread build too for
 *               N <= --single-max (default 10M)
 *   query       ns/op of br_pwfilter_contains_key (single) and of
 *               br_pwfilter_contains_batch (throughput) over Q random present
 *               keys and Q random absent keys (best of 3 passes); "single"
 *               calls are independent, so the CPU overlaps their cache
 *               misses. "latency" chains each call to the previous answer
 *               (one lookup at a time, as a server answering one request)
 *   FPR         positives over F absent keys (batch mode), also as a multiple
 *               of 2^-16
 *   peak RSS    getrusage(RUSAGE_SELF).ru_maxrss of a child process that does
 *               one N: it includes the generated key array (8N bytes) and the
 *               query arrays (16Q bytes), so it is not the RSS of a build
 *               (tests/bench/bench-filter-cli.sh measures that).
 *
 * Usage: bench_pwfilter [-q Q] [-f F] [-t THREADS] [--single-max N] [N...]
 * Temporary files go under $TMPDIR (else /var/tmp) and are removed. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "builder/pwfilter_build.h"
#include "filter/pwfilter.h"
#include "core/util.h"

#define MAX_SIZES 16

typedef struct opts {
    size_t q;          /* queries per kind (present, absent) */
    size_t f;          /* absent keys for the FPR */
    unsigned threads;  /* 0: every online CPU */
    unsigned arity;    /* 0: the library's default */
    size_t single_max; /* 1-thread build for N up to this */
    const char *tmp;
} opts;

/* One row of the table, passed from the child to the parent through a pipe. */
typedef struct row {
    uint64_t n, keys;
    uint32_t shards;
    unsigned threads_used;
    double bits_fp, bits_file;
    double add_ns, build_ns, cpu_ns; /* per key */
    double build1_ns;                /* 1-thread build, per key; < 0 when not run */
    double single_present, single_absent, batch_present, batch_absent; /* ns/op */
    double lat_present, lat_absent;                                    /* ns/op */
    uint64_t fp_hits, fp_tries;
    uint64_t hits_present; /* present keys answered "maybe" (must be all) */
    long maxrss_kib;
    int ok;
} row;

static volatile uint64_t sink; /* results go here so no query is optimized away */
static volatile uint64_t zero; /* 0, but the compiler cannot know it */

static double cpu_ns_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

static unsigned online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

/* Build keys[0..n) into path; wall and CPU ns spent in total, and in adding. */
static int build_file(const uint64_t *keys, size_t n, unsigned threads, unsigned arity,
                      const char *tmp, const char *path, br_pwfilter_build_stats *bs,
                      uint64_t *add_ns, uint64_t *wall_ns, double *cpu_ns)
{
    br_error err = {{0}};
    _cleanup_(br_keyset_freep) br_keyset *ks = NULL;
    double c0 = cpu_ns_now();
    uint64_t t0 = br_now_ns();
    int r = br_keyset_new(tmp, 0, &ks, &err);
    for (size_t i = 0; r >= 0 && i < n; i++)
        r = br_keyset_add(ks, keys[i], &err);
    uint64_t t1 = br_now_ns();
    br_pwfilter_build_opts o = {
        .threads = threads, .arity = arity, .build_time = 0, .source = "bench_pwfilter"};
    if (r >= 0)
        r = br_pwfilter_build(ks, &o, path, bs, &err);
    uint64_t t2 = br_now_ns();
    *cpu_ns = cpu_ns_now() - c0;
    if (r < 0) {
        fprintf(stderr, "bench_pwfilter: build of %zu keys: %s\n", n,
                err.text[0] ? err.text : strerror(-r));
        return -1;
    }
    *add_ns = t1 - t0;
    *wall_ns = t2 - t0;
    return 0;
}

/* Best-of-3 ns/op of single and batch queries over q; hits of the last pass. */
static void time_queries(const br_pwfilter *pf, const uint64_t *q, size_t nq, bool *out,
                         double *single, double *batch, uint64_t *hits)
{
    *single = *batch = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        uint64_t h1 = 0, h2 = 0;
        uint64_t t0 = br_now_ns();
        for (size_t i = 0; i < nq; i++)
            h1 += br_pwfilter_contains_key(pf, q[i]);
        uint64_t t1 = br_now_ns();
        br_pwfilter_contains_batch(pf, q, nq, out);
        uint64_t t2 = br_now_ns();
        for (size_t i = 0; i < nq; i++)
            h2 += out[i];
        sink += h1 + h2;
        if (h1 != h2) {
            fprintf(stderr,
                    "bench_pwfilter: single and batch disagree (%" PRIu64 " vs %" PRIu64 ")\n", h1,
                    h2);
            exit(1);
        }
        *single = BR_MIN(*single, (double)(t1 - t0) / (double)nq);
        *batch = BR_MIN(*batch, (double)(t2 - t1) / (double)nq);
        *hits = h1;
    }
}

/* Best-of-3 ns/op of lookups that each wait for the previous answer. */
static double time_latency(const br_pwfilter *pf, const uint64_t *q, size_t nq)
{
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        uint64_t z = zero, hit = 0, hits = 0;
        uint64_t t0 = br_now_ns();
        for (size_t i = 0; i < nq; i++) {
            hit = br_pwfilter_contains_key(pf, q[i] ^ (hit * z));
            hits += hit;
        }
        uint64_t t1 = br_now_ns();
        sink += hits;
        best = BR_MIN(best, (double)(t1 - t0) / (double)nq);
    }
    return best;
}

static int run_one(size_t n, const opts *o, row *rw)
{
    memset(rw, 0, sizeof(*rw));
    rw->n = n;
    rw->build1_ns = -1;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/bench_pwfilter.XXXXXX", o->tmp);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "bench_pwfilter: mkdtemp %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char path[4200], path1[4200];
    snprintf(path, sizeof(path), "%s/filter.brf", dir);
    snprintf(path1, sizeof(path1), "%s/filter-1thread.brf", dir);
    int ret = -1;
    uint64_t *keys = malloc(BR_MAX(n, (size_t)1) * sizeof(*keys));
    uint64_t *qp = malloc(o->q * sizeof(*qp));
    uint64_t *qa = malloc(BR_MAX(o->q, (size_t)1 << 20) * sizeof(*qa));
    bool *out = malloc(BR_MAX(o->q, (size_t)1 << 20));
    br_pwfilter *pf = NULL;
    if (!keys || !qp || !qa || !out) {
        fprintf(stderr, "bench_pwfilter: out of memory\n");
        goto done;
    }
    uint64_t st = 0x62656e6368ULL ^ n; /* keys */
    for (size_t i = 0; i < n; i++)
        keys[i] = br_splitmix64(&st);

    br_pwfilter_build_stats bs = {0};
    uint64_t add_ns, wall_ns;
    double cpu;
    if (build_file(keys, n, o->threads, o->arity, o->tmp, path, &bs, &add_ns, &wall_ns, &cpu) < 0)
        goto done;
    unsigned thr = o->threads ? o->threads : online_cpus();
    rw->threads_used = BR_MIN(thr, bs.shards);
    rw->keys = bs.keys;
    rw->shards = bs.shards;
    rw->add_ns = (double)add_ns / (double)n;
    rw->build_ns = (double)wall_ns / (double)n;
    rw->cpu_ns = cpu / (double)n;
    if (n <= o->single_max && rw->threads_used > 1) {
        br_pwfilter_build_stats bs1 = {0};
        if (build_file(keys, n, 1, o->arity, o->tmp, path1, &bs1, &add_ns, &wall_ns, &cpu) < 0)
            goto done;
        rw->build1_ns = (double)wall_ns / (double)n;
        unlink(path1);
    } else if (n <= o->single_max) {
        rw->build1_ns = rw->build_ns; /* the default build used one thread */
    }

    br_error err = {{0}};
    if (br_pwfilter_open(path, &pf, &err) < 0) {
        fprintf(stderr, "bench_pwfilter: open: %s\n", err.text);
        goto done;
    }
    rw->bits_fp = 8.0 * (double)br_pwfilter_fingerprint_bytes(pf) / (double)n;
    rw->bits_file = 8.0 * (double)br_pwfilter_file_size(pf) / (double)n;

    /* Queries: present keys drawn at random from the set, absent keys from
     * another splitmix64 stream (a collision with the set has probability
     * about n / 2^64, negligible). */
    uint64_t qs = 0x7175657279ULL ^ n;
    for (size_t i = 0; i < o->q; i++)
        qp[i] = keys[br_splitmix64(&qs) % n];
    for (size_t i = 0; i < o->q; i++)
        qa[i] = br_splitmix64(&qs);
    free(keys);
    keys = NULL;
    uint64_t hits_absent;
    time_queries(pf, qp, o->q, out, &rw->single_present, &rw->batch_present, &rw->hits_present);
    time_queries(pf, qa, o->q, out, &rw->single_absent, &rw->batch_absent, &hits_absent);
    size_t nlat = BR_MIN(o->q, (size_t)1 << 20);
    rw->lat_present = time_latency(pf, qp, nlat);
    rw->lat_absent = time_latency(pf, qa, nlat);

    /* FPR over f fresh absent keys, in chunks. */
    size_t chunk = BR_MAX(o->q, (size_t)1 << 20);
    uint64_t fps = 0;
    for (size_t done_ = 0; done_ < o->f; done_ += chunk) {
        size_t k = BR_MIN(chunk, o->f - done_);
        for (size_t i = 0; i < k; i++)
            qa[i] = br_splitmix64(&qs);
        br_pwfilter_contains_batch(pf, qa, k, out);
        for (size_t i = 0; i < k; i++)
            fps += out[i];
    }
    rw->fp_hits = fps;
    rw->fp_tries = o->f;
    ret = rw->hits_present == o->q ? 0 : -1;
    if (ret < 0)
        fprintf(stderr, "bench_pwfilter: FALSE NEGATIVES: %" PRIu64 " of %zu present keys found\n",
                rw->hits_present, o->q);
done:
    br_pwfilter_free(pf);
    unlink(path);
    unlink(path1);
    rmdir(dir);
    free(keys);
    free(qp);
    free(qa);
    free(out);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    rw->maxrss_kib = ru.ru_maxrss;
    rw->ok = ret == 0;
    return ret;
}

/* Run one size in a child process so that its peak RSS is its own. */
static int run_child(size_t n, const opts *o, row *rw)
{
    int fd[2];
    if (pipe(fd) < 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fd[0]);
        row r;
        int rc = run_one(n, o, &r);
        ssize_t w = write(fd[1], &r, sizeof(r));
        _exit(rc == 0 && w == (ssize_t)sizeof(r) ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], rw, sizeof(*rw));
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    if (got != (ssize_t)sizeof(*rw) || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return 0;
}

static bool parse_count(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 1)
        return false;
    if (*end == 'k' || *end == 'K')
        v *= 1e3, end++;
    else if (*end == 'm' || *end == 'M')
        v *= 1e6, end++;
    else if (*end == 'g' || *end == 'G')
        v *= 1e9, end++;
    if (*end)
        return false;
    *out = (size_t)v;
    return true;
}

static void usage(void)
{
    fprintf(stderr, "Usage: bench_pwfilter [-q QUERIES] [-f FPR_QUERIES] [-t THREADS] [-a 3|4] "
                    "[--single-max N] [N...]\n"
                    "  N: keys, e.g. 1M 10M 100M (default 1M 10M)\n");
}

int main(int argc, char **argv)
{
    opts o = {.q = (size_t)4 << 20, .f = (size_t)32 << 20, .single_max = 10000000};
    size_t sizes[MAX_SIZES];
    size_t nsizes = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        size_t v;
        if ((!strcmp(a, "-q") || !strcmp(a, "-f") || !strcmp(a, "-t") || !strcmp(a, "-a") ||
             !strcmp(a, "--single-max")) &&
            i + 1 < argc) {
            if (!parse_count(argv[++i], &v)) {
                usage();
                return 2;
            }
            if (a[1] == 'q')
                o.q = v;
            else if (a[1] == 'f')
                o.f = v;
            else if (a[1] == 't')
                o.threads = (unsigned)v;
            else if (a[1] == 'a' && (v == 3 || v == 4))
                o.arity = (unsigned)v;
            else if (a[1] == 'a') {
                usage();
                return 2;
            } else
                o.single_max = v;
        } else if (parse_count(a, &v) && nsizes < MAX_SIZES) {
            sizes[nsizes++] = v;
        } else {
            usage();
            return 2;
        }
    }
    if (nsizes == 0) {
        sizes[nsizes++] = 1000000;
        sizes[nsizes++] = 10000000;
    }
    o.tmp = getenv("TMPDIR");
    if (!o.tmp || !*o.tmp)
        o.tmp = "/var/tmp";

    printf("bench_pwfilter: %s, 16-bit, %u online CPUs, %zu present + %zu absent queries "
           "(best of 3; latency: the first %zu of each, chained), FPR over %zu absent keys\n",
           o.arity == 3   ? "3-wise"
           : o.arity == 4 ? "4-wise"
                          : "default arity",
           online_cpus(), o.q, o.q, BR_MIN(o.q, (size_t)1 << 20), o.f);
    printf("build = br_keyset_add of all keys + br_pwfilter_build (partition, sort, "
           "construct, write, fsync, rename)\n\n");
    printf("| keys | shards | thr | bits/key fp | bits/key file | build ns/key wall | "
           "ns/key x thr | CPU ns/key | 1-thr ns/key | add ns/key | single present | "
           "single absent | batch present | batch absent | latency present | latency absent | "
           "FPR (x 2^-16) | peak RSS MiB* |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|-"
           "--:|\n");
    int rc = 0;
    for (size_t s = 0; s < nsizes; s++) {
        row r;
        if (run_child(sizes[s], &o, &r) < 0) {
            fprintf(stderr, "bench_pwfilter: run with %zu keys failed\n", sizes[s]);
            rc = 1;
            continue;
        }
        char one[32];
        if (r.build1_ns < 0)
            snprintf(one, sizeof(one), "-");
        else
            snprintf(one, sizeof(one), "%.1f", r.build1_ns);
        double fpr = (double)r.fp_hits / (double)r.fp_tries;
        printf("| %" PRIu64 " | %u | %u | %.3f | %.3f | %.1f | %.1f | %.1f | %s | %.1f | %.1f | "
               "%.1f | %.1f | %.1f | %.1f | %.1f | %.3g (%.2f) | %.0f |\n",
               r.n, r.shards, r.threads_used, r.bits_fp, r.bits_file, r.build_ns,
               r.build_ns * r.threads_used, r.cpu_ns, one, r.add_ns, r.single_present,
               r.single_absent, r.batch_present, r.batch_absent, r.lat_present, r.lat_absent, fpr,
               fpr * 65536.0, (double)r.maxrss_kib / 1024.0);
        fflush(stdout);
    }
    printf("\n* peak RSS of the process for that N: includes the key array (8 B/key) and the "
           "query arrays (%zu MiB); see bench-filter-cli.sh for the RSS of a real build.\n",
           (2 * o.q * sizeof(uint64_t) + o.q) >> 20);
    return rc;
}
