/* SPDX-License-Identifier: MIT */
/* Banned terms (lib/banned/, docs/banned.md): the share of candidate
 * passwords refused, and the time per check. bench-banned.sh runs it.
 *
 *   bench_banned --terms FILE [--name TEXT]... [--time] [--show N] < CANDIDATES
 *
 * --terms: a terms file (banned_terms' format); --name: the user's own
 * names (each added as br_banned_add_name does: the whole and its parts);
 * the candidates, one a line on standard input. Prints one line:
 * "candidates N refused R (P%)", and with --time the wall time per check
 * (p50, p99, max, in microseconds; clock_gettime around each check).
 * --show N prints up to N refused candidates (or with --accepted, N
 * accepted ones) to standard error, for a look at what the rule does. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "banned/banned.h"

typedef struct opts {
    const char *terms;
    const char *names[8];
    int n_names;
    bool time, accepted;
    long show;
} opts;

static int parse(int argc, char **argv, opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--time") == 0)
            o->time = true;
        else if (strcmp(a, "--accepted") == 0)
            o->accepted = true;
        else if (strcmp(a, "--terms") == 0 && v)
            o->terms = argv[++i];
        else if (strcmp(a, "--name") == 0 && v && o->n_names < 8)
            o->names[o->n_names++] = argv[++i];
        else if (strcmp(a, "--show") == 0 && v)
            o->show = strtol(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_banned --terms FILE [--name TEXT]... [--time] "
                            "[--show N [--accepted]] < CANDIDATES\n");
            return -1;
        }
    }
    return o->terms ? 0 : -1;
}

static void on_bad(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "%s\n", msg);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    opts o = {0};
    br_error err = {{0}};
    if (parse(argc, argv, &o) < 0)
        return 2;
    br_banned *terms = br_banned_new(), *names = br_banned_new();
    if (!terms || !names ||
        br_banned_load(terms, BR_BANNED_TERM, o.terms, on_bad, NULL, &err) < 0) {
        fprintf(stderr, "bench_banned: %s\n", err.text[0] ? err.text : "out of memory");
        return 2;
    }
    for (int i = 0; i < o.n_names; i++)
        br_banned_add_name(names, o.names[i], strlen(o.names[i]));
    const br_banned *lists[] = {terms, names};
    size_t cap = 1 << 16, n = 0, refused = 0;
    uint64_t *ns = malloc(cap * sizeof(*ns));
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    while (ns && (len = getline(&line, &lcap, stdin)) >= 0) {
        if (len && line[len - 1] == '\n')
            line[--len] = '\0';
        br_banned_result r;
        uint64_t t0 = now_ns();
        br_banned_check(lists, 2, line, (size_t)len, 0, &r);
        uint64_t t = now_ns() - t0;
        if (n == cap && !(ns = realloc(ns, (cap *= 2) * sizeof(*ns))))
            break;
        ns[n++] = t;
        refused += r.refused;
        if (o.show > 0 && r.refused != o.accepted) {
            fprintf(stderr, "%s: %s (score %d, %u terms)\n", r.refused ? "refused" : "accepted",
                    line, r.score, r.terms);
            o.show--;
        }
    }
    printf("candidates %zu refused %zu (%.3f%%)", n, refused, n ? 100.0 * refused / n : 0.0);
    if (o.time && n) {
        qsort(ns, n, sizeof(*ns), cmp_u64);
        printf(" terms %zu per check p50 %.1f us p99 %.1f us max %.1f us", br_banned_count(terms),
               ns[n / 2] / 1e3, ns[n * 99 / 100] / 1e3, ns[n - 1] / 1e3);
    }
    printf("\n");
    free(line);
    free(ns);
    br_banned_free(terms);
    br_banned_free(names);
    return 0;
}
