/* SPDX-License-Identifier: MIT */
/* Similar passwords end to end through breachd (bench-similar-daemon.sh):
 * for each password of FILE (one a line), what a client holding it does at
 * change time, timed: the exact check (PW), then its variants made and
 * hashed (lib/similar/) and asked with SIMILAR (br_client_check_similar:
 * ceil(n / 128) requests pipelined) on one connection. Prints the wall time
 * per password (p50, p90, p99, max, in microseconds) of the whole and of
 * the similarity part alone, and how many were SIMILAR / CLEAN / other.
 *
 *   bench_similar_daemon SOCKET FILE [MIN_COUNT]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/client.h"
#include "similar/similar.h"
#include "core/util.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void print_quantiles(const char *what, uint64_t *v, size_t n)
{
    if (n == 0)
        return;
    qsort(v, n, sizeof(v[0]), cmp_u64);
    printf("%-28s p50 %7.1f  p90 %7.1f  p99 %7.1f  max %8.1f us  (%zu passwords)\n", what,
           v[n / 2] / 1e3, v[n * 9 / 10] / 1e3, v[n * 99 / 100] / 1e3, v[n - 1] / 1e3, n);
}

typedef struct run {
    br_client *c;
    br_similar *sim;
    uint8_t (*h)[BR_SHA1_LEN];
    uint64_t min_count;
    size_t similar, clean, pwned, other, variants, requests;
} run;

/* One password: the exact check, then the similarity check. 0 or -errno. */
static int one(run *r, const char *pw, size_t len, uint64_t *total, uint64_t *sim_part)
{
    br_error err = {{0}};
    br_answer a;
    uint64_t t0 = now_ns();
    int e = br_client_check_password(r->c, pw, len, &a, &err);
    uint64_t t1 = now_ns();
    if (e < 0) {
        fprintf(stderr, "bench_similar_daemon: %s\n", err.text);
        return e;
    }
    if (a.kind == BR_ANSWER_PWNED) {
        r->pwned++;
        *total = t1 - t0;
        *sim_part = 0;
        return 1; /* no similarity check after an exact hit */
    }
    int n = br_similar_hashes(r->sim, pw, len, r->h, NULL, BR_SIMILAR_MAX);
    br_similar_answer s;
    e = n < 0 ? n
              : br_client_check_similar(r->c, false, (const uint8_t *)r->h, (size_t)n, &s, &err);
    uint64_t t2 = now_ns();
    br_wipe(r->h, BR_SIMILAR_MAX * BR_SHA1_LEN);
    if (e < 0) {
        fprintf(stderr, "bench_similar_daemon: %s\n", n < 0 ? "hashing failed" : err.text);
        return e;
    }
    r->variants += (size_t)n;
    r->requests += ((size_t)n + 127) / 128;
    if (s.unknown)
        r->other++;
    else if (s.similar && s.count >= r->min_count)
        r->similar++;
    else
        r->clean++;
    *total = t2 - t0;
    *sim_part = t2 - t1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_similar_daemon SOCKET FILE [MIN_COUNT]\n");
        return 2;
    }
    run r = {.min_count = argc > 3 ? strtoull(argv[3], NULL, 10) : 1};
    br_error err = {{0}};
    FILE *f = fopen(argv[2], "r");
    if (!f || br_client_connect(argv[1], 10000, &r.c, &err) < 0 ||
        !(r.sim = br_similar_new(BR_SIMILAR_SHA1, &err))) {
        fprintf(stderr, "bench_similar_daemon: %s\n", f ? err.text : strerror(errno));
        return 2;
    }
    r.h = calloc(BR_SIMILAR_MAX, BR_SHA1_LEN);
    size_t cap = 1u << 16, n = 0, ns = 0;
    uint64_t *total = malloc(cap * sizeof(*total)), *simp = malloc(cap * sizeof(*simp));
    char line[4096];
    while (r.h && total && simp && fgets(line, sizeof(line), f)) {
        size_t len = strcspn(line, "\n");
        if (n == cap) {
            cap *= 2;
            uint64_t *t2 = realloc(total, cap * sizeof(*total));
            uint64_t *s2 = t2 ? realloc(simp, cap * sizeof(*simp)) : NULL;
            if (!t2 || !s2)
                return 2;
            total = t2, simp = s2;
        }
        uint64_t t, s;
        int e = one(&r, line, len, &t, &s);
        if (e < 0)
            return 1;
        total[n++] = t;
        if (e == 0)
            simp[ns++] = s;
    }
    fclose(f);
    printf("SIMILAR %zu, CLEAN %zu, PWNED (exact) %zu, UNKNOWN %zu; %.0f variants and %.2f "
           "requests per similarity check\n",
           r.similar, r.clean, r.pwned, r.other, ns ? (double)r.variants / ns : 0.0,
           ns ? (double)r.requests / ns : 0.0);
    print_quantiles("exact + similar, wall", total, n);
    print_quantiles("similar part alone, wall", simp, ns);
    free(total);
    free(simp);
    free(r.h);
    br_similar_free(r.sim);
    br_client_free(r.c);
    return 0;
}
