/* SPDX-License-Identifier: MIT */
/* bench_arity [N [ROUNDS]]: the 3-wise and the 4-wise password filter of the
 * same N random keys (default 100M, 11 rounds), built into files in $TMPDIR
 * (default /var/tmp) and opened as breachd opens them; then
 * br_pwfilter_contains_batch over 4M present and 4M absent keys, the two
 * filters alternated round after round so that both see the same machine
 * load. Prints min and median ns/op of each and the 4-wise / 3-wise ratios.
 * Memory: 8 bytes a key for the key array plus both files. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder/pwfilter_build.h"
#include "filter/pwfilter.h"
#include "core/util.h"

#define QUERIES ((size_t)4 << 20)
#define MAX_ROUNDS 101

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int build_open(const char *dir, unsigned arity, const uint64_t *keys, size_t n,
                      br_pwfilter **out)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/bench_arity.%ld.%u.bfuse", dir, (long)getpid(), arity);
    br_error err = {{0}};
    br_keyset *ks = NULL;
    int r = br_keyset_new(dir, 0, &ks, &err);
    for (size_t i = 0; r >= 0 && i < n; i++)
        r = br_keyset_add(ks, keys[i], &err);
    br_pwfilter_build_opts o = {.arity = arity, .build_time = 0, .source = "bench_arity"};
    if (r >= 0)
        r = br_pwfilter_build(ks, &o, path, NULL, &err);
    br_keyset_free(ks);
    if (r >= 0)
        r = br_pwfilter_open(path, out, &err);
    unlink(path); /* the mapping stays */
    if (r < 0)
        fprintf(stderr, "bench_arity: %u-wise: %s\n", arity, err.text[0] ? err.text : strerror(-r));
    return r;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 11;
    if (n == 0 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "Usage: bench_arity [N [ROUNDS (1..%d)]]\n", MAX_ROUNDS);
        return 2;
    }
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/var/tmp";
    uint64_t st = 42;
    uint64_t *keys = malloc(n * sizeof(*keys));
    uint64_t *q[2] = {malloc(QUERIES * sizeof(uint64_t)), malloc(QUERIES * sizeof(uint64_t))};
    bool *out = malloc(QUERIES);
    if (!keys || !q[0] || !q[1] || !out)
        return 1;
    for (size_t i = 0; i < n; i++)
        keys[i] = br_splitmix64(&st);
    for (size_t i = 0; i < QUERIES; i++) {
        q[0][i] = keys[br_splitmix64(&st) % n]; /* present */
        q[1][i] = br_splitmix64(&st);           /* absent (but for 1 in 2^64/n) */
    }
    br_pwfilter *pf[2] = {NULL, NULL};
    for (unsigned a = 0; a < 2; a++)
        if (build_open(dir, 3 + a, keys, n, &pf[a]) < 0)
            return 1;
    free(keys);

    static double t[2][2][MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        for (unsigned a = 0; a < 2; a++) {
            for (unsigned k = 0; k < 2; k++) {
                uint64_t t0 = br_now_ns();
                br_pwfilter_contains_batch(pf[a], q[k], QUERIES, out);
                uint64_t t1 = br_now_ns();
                size_t hits = 0;
                for (size_t i = 0; i < QUERIES; i++)
                    hits += out[i];
                if (k == 0 && hits != QUERIES) {
                    fprintf(stderr, "bench_arity: %u-wise: a false negative\n", 3 + a);
                    return 1;
                }
                t[a][k][r] = (double)(t1 - t0) / (double)QUERIES;
            }
        }
    }
    printf(
        "bench_arity: %zu keys, batch of %zu present and %zu absent keys, %d rounds alternated\n\n",
        n, QUERIES, QUERIES, rounds);
    printf("| arity | present min ns | present median | absent min | absent median "
           "|\n|---:|---:|---:|---:|---:|\n");
    for (unsigned a = 0; a < 2; a++) {
        for (unsigned k = 0; k < 2; k++)
            qsort(t[a][k], (size_t)rounds, sizeof(double), cmp_double);
        printf("| %u | %.1f | %.1f | %.1f | %.1f |\n", 3 + a, t[a][0][0], t[a][0][rounds / 2],
               t[a][1][0], t[a][1][rounds / 2]);
    }
    printf("\n4-wise / 3-wise: min %.2f present, %.2f absent; median %.2f present, %.2f absent\n",
           t[1][0][0] / t[0][0][0], t[1][1][0] / t[0][1][0],
           t[1][0][rounds / 2] / t[0][0][rounds / 2], t[1][1][rounds / 2] / t[0][1][rounds / 2]);
    br_pwfilter_free(pf[0]);
    br_pwfilter_free(pf[1]);
    free(q[0]);
    free(q[1]);
    free(out);
    return 0;
}
