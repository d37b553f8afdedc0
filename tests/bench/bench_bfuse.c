/* SPDX-License-Identifier: MIT */
/* Binary fuse filter timing: build ns/key and query ns/op (single and batch)
 * at 4M keys (or argv[1] keys), for 3-wise and 4-wise 16-bit filters. The
 * build is also timed in thread CPU (the least of the 3 builds): on a
 * loaded machine, the figure other processes inflate least. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "filter/bfuse.h"
#include "core/util.h"

/* This thread's CPU time. */
static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double ns_per(uint64_t t0, uint64_t t1, size_t n)
{
    return (double)(t1 - t0) / (double)n;
}

static int bench(unsigned arity, unsigned fp_bits, size_t n)
{
    size_t nq = 4 * n;
    uint64_t st = 0x5eed;
    uint64_t *keys = malloc(n * sizeof(*keys));
    uint64_t *copy = malloc(n * sizeof(*copy));
    uint64_t *q = malloc(nq * sizeof(*q));
    bool *out = malloc(nq);
    if (!keys || !copy || !q || !out)
        return -1;
    for (size_t i = 0; i < n; i++)
        keys[i] = br_splitmix64(&st);
    for (size_t i = 0; i < nq; i++) /* half members, half (almost surely) not */
        q[i] = (i & 1) ? keys[br_splitmix64(&st) % n] : br_splitmix64(&st);

    br_bfuse f;
    if (br_bfuse_layout(&f, arity, fp_bits, n) < 0)
        return -1;
    void *fp = malloc(br_bfuse_bytes(&f) ? br_bfuse_bytes(&f) : 1);
    double best = 1e30, best_cpu = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        memcpy(copy, keys, n * sizeof(*keys));
        uint64_t c0 = cpu_ns(), t0 = br_now_ns();
        int r = br_bfuse_build(&f, copy, n, 42, fp);
        uint64_t t1 = br_now_ns(), c1 = cpu_ns();
        if (r < 0) {
            fprintf(stderr, "build failed: %d\n", r);
            return -1;
        }
        if (ns_per(t0, t1, n) < best)
            best = ns_per(t0, t1, n);
        if (ns_per(c0, c1, n) < best_cpu)
            best_cpu = ns_per(c0, c1, n);
    }

    size_t hits = 0;
    uint64_t t0 = br_now_ns();
    for (size_t i = 0; i < nq; i++)
        hits += br_bfuse_contains(&f, q[i]);
    uint64_t t1 = br_now_ns();
    br_bfuse_contains_batch(&f, q, nq, out);
    uint64_t t2 = br_now_ns();
    size_t hits2 = 0;
    for (size_t i = 0; i < nq; i++)
        hits2 += out[i];

    printf("%u-wise %2u-bit n=%zu: %.2f bits/key, build %.1f ns/key (thread CPU %.1f), "
           "contains %.1f ns/op, batch %.1f ns/op (hits %zu/%zu)\n",
           arity, fp_bits, n, 8.0 * (double)br_bfuse_bytes(&f) / (double)n, best, best_cpu,
           ns_per(t0, t1, nq), ns_per(t1, t2, nq), hits, hits2);
    free(keys);
    free(copy);
    free(q);
    free(out);
    free(fp);
    return hits == hits2 ? 0 : -1;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)4 << 20;
    int r = 0;
    r |= bench(3, 16, n);
    r |= bench(4, 16, n);
    r |= bench(3, 8, n);
    r |= bench(3, 32, n);
    return r ? 1 : 0;
}
