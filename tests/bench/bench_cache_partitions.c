/* SPDX-License-Identifier: MIT */
/* The eviction signal between cache partitions (docs/privacy.md, "Other
 * local users"): the range cache's size bound and eviction order are shared
 * by all partitions (range_cache.h), so a uid whose own entries fill a full
 * cache can watch them disappear as other uids fetch. This measures how
 * well it can count them: partition A (the watcher) fills the cache with
 * HIBP-sized ranges, then partition B puts ranges one flush at a time while
 * A counts, after each, how many of its entries are still there (what a
 * lookup's latency tells it: a hit in ~0.05 ms, a miss in milliseconds).
 *
 *   bench_cache_partitions [MAX_SIZE_MIB [RANGE_LINES [B_PUTS]]]
 *
 * Defaults: a 16 MiB cache, 800-line ranges (HIBP's are ~800-1,000 lines
 * padded), 400 puts by B. Prints, per eviction round A sees, how many of
 * B's puts it took and how many of A's entries went. Real LMDB in a temp
 * dir under $TMPDIR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "range.h"
#include "range_cache.h"
#include "rtest.h"

#define A_PART 1000
#define B_PART 1001
#define MAX_A 100000

static uint8_t *range_value(uint32_t prefix, size_t lines, size_t *len)
{
    rt_range r;
    rt_range_gen(&r, BR_RANGE_PASSWORD_SHA1, prefix, lines, 0, prefix);
    size_t blen;
    char *body = rt_range_body(&r, 0, &blen);
    uint8_t *v = NULL;
    br_error err = {{0}};
    if (br_range_parse(BR_RANGE_PASSWORD_SHA1, body, blen, 64 << 20, &v, len, &err) < 0) {
        fprintf(stderr, "range: %s\n", err.text);
        exit(1);
    }
    free(body);
    rt_range_free(&r);
    return v;
}

static size_t a_present(br_range_cache *c, size_t n_a, int64_t now)
{
    size_t n = 0;
    for (size_t i = 0; i < n_a; i++) {
        uint8_t h[20] = {0};
        uint32_t p = (uint32_t)i;
        h[0] = (uint8_t)(p >> 12);
        h[1] = (uint8_t)(p >> 4);
        h[2] = (uint8_t)((p & 0xF) << 4);
        br_range_cache_result cr;
        if (br_range_cache_lookup(c, A_PART, BR_RANGE_PASSWORD_SHA1, h, now, 0, &cr) == 0 &&
            cr.state != BR_RANGE_CACHE_MISS)
            n++;
    }
    return n;
}

int main(int argc, char **argv)
{
    uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 16;
    size_t lines = argc > 2 ? strtoull(argv[2], NULL, 10) : 800;
    int b_puts = argc > 3 ? atoi(argv[3]) : 400;
    char *dir = rt_mkdtemp("cachepart");
    br_range_cache *c;
    br_error err = {{0}};
    if (br_range_cache_open(dir, mib << 20, &c, &err) < 0) {
        fprintf(stderr, "open: %s\n", err.text);
        return 1;
    }
    size_t len;
    uint8_t *v = range_value(0x12345, lines, &len);
    int64_t now = 1700000000;
    /* A fills the cache until the first eviction. */
    size_t n_a = 0;
    br_range_cache_usage u;
    for (; n_a < MAX_A; n_a++) {
        br_range_cache_put(c, A_PART, BR_RANGE_PASSWORD_SHA1, (uint32_t)n_a, v, len,
                           now + (int64_t)n_a, now + 86400 * 30, "\"e\"", NULL);
        br_range_cache_flush(c);
        br_range_cache_stats(c, &u);
        if (u.evicted)
            break;
    }
    size_t have = a_present(c, n_a + 1, now + (int64_t)n_a);
    printf("cache %llu MiB, ranges of %zu lines (%zu bytes stored): A holds %zu entries when "
           "full\n",
           (unsigned long long)mib, lines, len, have);
    int last_put = 0, rounds = 0;
    for (int k = 1; k <= b_puts; k++) {
        int64_t t = now + (int64_t)n_a + k;
        br_range_cache_put(c, B_PART, BR_RANGE_PASSWORD_SHA1, (uint32_t)(0x80000 + k), v, len, t,
                           t + 86400 * 30, "\"e\"", NULL);
        br_range_cache_flush(c);
        size_t now_have = a_present(c, n_a + 1, t);
        if (now_have != have) {
            printf("  after B's put %d (%d since the last round): A lost %zu entries\n", k,
                   k - last_put, have - now_have);
            have = now_have;
            last_put = k;
            rounds++;
        }
    }
    printf("%d of B's puts: %d eviction rounds seen by A, A holds %zu entries\n", b_puts, rounds,
           have);
    free(v);
    br_range_cache_free(c);
    rt_rmrf(dir);
    free(dir);
    return 0;
}
