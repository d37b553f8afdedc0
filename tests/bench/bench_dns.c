/* SPDX-License-Identifier: MIT */
/* libbreachd-dns in process (docs/dns.md; tests/bench/README.md, "DNS"):
 * bench_dns CONFIG LISTED UNLISTED [N [M]]. CONFIG names the filter ([dns]
 * filter); LISTED and UNLISTED are files of names, one a line. Prints the
 * warm lookup cost (ns per name: listed, unlisted) and the false blocks among N random unlisted
 * names (default 10^7), each of three random labels under .net, so three expressions no other
 * name shares are looked up per name. M (default 2*10^6) lookups each of listed and
 * unlisted names are timed (fewer under callgrind), the least of 5 passes of M / 5. Times are the
 * thread's CPU time. By hand:
 * bench-dns.py makes the data and runs it; bench-dns-fp.py counts false blocks (docs/dns.md,
 * "False blocks"). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "breachd-dns.h"

/* This thread's CPU time: on a shared machine, wall time counts the time
 * the thread waited for a core too. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static char **read_names(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(2);
    }
    size_t cap = 1 << 20;
    char **v = malloc(cap * sizeof(*v));
    char line[512];
    *n = 0;
    while (v && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (*n == cap)
            v = realloc(v, (cap *= 2) * sizeof(*v));
        if (v)
            v[(*n)++] = strdup(line);
    }
    fclose(f);
    if (!v || *n == 0) {
        fprintf(stderr, "%s: no names\n", path);
        exit(2);
    }
    return v;
}

/* ns per lookup over rounds passes of names[0..n), and how many blocked. */
static double time_lookups(breachd_dns *h, char **names, size_t n, size_t total, size_t *blocked)
{
    breachd_dns_result res;
    *blocked = 0;
    double t0 = now_s();
    for (size_t i = 0; i < total; i++) {
        const char *name = names[i % n];
        *blocked += breachd_dns_check(h, name, strlen(name), &res) == BREACHD_DNS_BLOCK;
    }
    return (now_s() - t0) * 1e9 / (double)total;
}

/* The least ns per lookup of 5 passes of total / 5 lookups each: on a
 * shared machine, the pass other processes disturbed least. */
static double least_of_5(breachd_dns *h, char **names, size_t n, size_t total, size_t *blocked)
{
    double best = 0;
    size_t part = total / 5 ? total / 5 : 1;
    for (int pass = 0; pass < 5; pass++) {
        double ns = time_lookups(h, names, n, part, blocked);
        best = pass == 0 || ns < best ? ns : best;
    }
    *blocked *= 5;
    return best;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_dns CONFIG LISTED UNLISTED [N [M]]\n");
        return 2;
    }
    size_t n_random = argc > 4 ? strtoull(argv[4], NULL, 10) : 10000000;
    size_t m = argc > 5 ? strtoull(argv[5], NULL, 10) : 2000000;
    char err[512];
    breachd_dns *h = breachd_dns_open(argv[1], err, sizeof(err));
    if (!h) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    size_t nl, nu, blocked;
    char **listed = read_names(argv[2], &nl), **unlisted = read_names(argv[3], &nu);
    time_lookups(h, listed, nl, nl, &blocked); /* warm: every page touched once */
    double ns_l = least_of_5(h, listed, nl, m, &blocked);
    printf("lookup, listed names:   %.0f ns/name (%zu of %zu blocked; least of 5 passes)\n", ns_l,
           blocked, m / 5 * 5);
    double ns_u = least_of_5(h, unlisted, nu, m, &blocked);
    printf("lookup, unlisted names: %.0f ns/name (%zu of %zu blocked; least of 5 passes)\n", ns_u,
           blocked, m / 5 * 5);
    /* random names: "r<hex>.s<hex>.t<hex>.net", 3 x 64 random bits, none listed */
    uint64_t x = 0x9e3779b97f4a7c15ull, falses = 0, v[3];
    breachd_dns_result res;
    double t0 = now_s();
    for (size_t i = 0; i < n_random; i++) {
        for (int j = 0; j < 3; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            v[j] = x;
        }
        char name[80];
        int len =
            snprintf(name, sizeof(name), "r%016llx.s%016llx.t%016llx.net", (unsigned long long)v[0],
                     (unsigned long long)v[1], (unsigned long long)v[2]);
        if (breachd_dns_check(h, name, (size_t)len, &res) == BREACHD_DNS_BLOCK && !falses++)
            printf("first false block: %s (as %s, %s)\n", name, res.domain, res.category);
    }
    printf("false blocks: %llu in %zu random names (%.0f ns/name)\n", (unsigned long long)falses,
           n_random, (now_s() - t0) * 1e9 / (double)n_random);
    char stats[4096];
    breachd_dns_stats(h, stats, sizeof(stats));
    fputs(stats, stdout);
    breachd_dns_close(h);
    return 0;
}
