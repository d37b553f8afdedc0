/* SPDX-License-Identifier: MIT */
/* Offline filter lookups (docs/filter-format.md, "Algorithm 4"): the
 * measured false-positive rate and the time of one lookup.
 *
 *   bench_offline FILE QUERIES [SEED]
 *
 * FILE is an offline password filter (breachctl filter build --offline),
 * or a range filter of the same keys for comparison (maybe-or-no lookups).
 * QUERIES random SHA-1 hashes (absent from the filter but with probability
 * keys / 2^64) are looked up one at a time with br_pwfilter_lookup_count,
 * after a warm-up pass over the file; prints the hits (false positives),
 * the rate against 2^-24, bits per key and ns per lookup: wall time, and
 * this thread's CPU time over the least of 5 passes of up to 2M of the
 * queries (on a loaded machine, the figure other processes inflate least).
 * Then, in the same run, the lookups serialized (no two overlap: one
 * lookup's latency) and the memory floor both ways: one random 8-byte read per query from a second
 * read-only mapping of FILE (the same page cache and 4 KB pages as the
 * filter's), and the lookup's ratio to it. A lookup reads its key's slots
 * independently of each other, so serialized it costs about one such read
 * when the file is far larger than the CPU's caches. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/hash.h"
#include "filter/pwfilter.h"
#include "core/util.h"

static void warm(const br_pwfilter *pf, uint64_t n)
{
    uint64_t s = 1, count;
    uint8_t h[BR_SHA1_LEN] = {0};
    for (uint64_t i = 0; i < n; i++) {
        br_store_le64(h, br_splitmix64(&s));
        (void)br_pwfilter_lookup_count(pf, h, &count);
    }
}

/* This thread's CPU time: what the machine's other load does not add. */
static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Single lookups of q keys from seed, the least CPU time of 5 passes. */
static double single_cpu_ns(const br_pwfilter *pf, uint64_t q, uint64_t seed)
{
    uint64_t best = UINT64_MAX, count;
    uint8_t h[BR_SHA1_LEN] = {0};
    for (int pass = 0; pass < 5; pass++) {
        uint64_t s = seed, t0 = cpu_ns();
        for (uint64_t i = 0; i < q; i++) {
            br_store_le64(h, br_splitmix64(&s));
            (void)br_pwfilter_lookup_count(pf, h, &count);
        }
        best = BR_MIN(best, cpu_ns() - t0);
    }
    return (double)best / (double)q;
}

/* A serialized pass lets no query start before the previous one's reads
 * are done (x86's lfence; elsewhere only the data dependency below, which
 * branch prediction may bypass): the latency of one query, where a free
 * pass lets the CPU overlap the memory reads of several (the throughput).
 * The lookup's answer comes from a comparison, so a data dependency alone
 * would not hold it back: the CPU predicts the branch and goes on. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SERIALIZE() _mm_lfence()
#else
#define SERIALIZE() __asm__ volatile("" ::: "memory")
#endif

/* Least thread CPU ns per query of 5 passes of q queries. */
#define LEAST_OF_5(q, body)                                                                        \
    do {                                                                                           \
        uint64_t best_ = UINT64_MAX;                                                               \
        for (int pass_ = 0; pass_ < 5; pass_++) {                                                  \
            uint64_t t_ = cpu_ns();                                                                \
            body;                                                                                  \
            best_ = BR_MIN(best_, cpu_ns() - t_);                                                  \
        }                                                                                          \
        ns_ = (double)best_ / (double)(q);                                                         \
    } while (0)

/* One lookup at a time, serialized. */
static double serial_lookup_ns(const br_pwfilter *pf, uint64_t q, uint64_t seed)
{
    uint64_t count = 0, dep = 0;
    uint8_t h[BR_SHA1_LEN] = {0};
    double ns_;
    LEAST_OF_5(q, {
        uint64_t s = seed;
        for (uint64_t i = 0; i < q; i++) {
            br_store_le64(h, br_splitmix64(&s) ^ dep);
            dep = (uint64_t)br_pwfilter_lookup_count(pf, h, &count) + count;
            SERIALIZE();
        }
    });
    return ns_;
}

/* One random 8-byte read of words[0..n) per query, serialized or free. */
static double floor_read_ns(const uint64_t *words, uint64_t n, uint64_t q, uint64_t seed,
                            bool serial)
{
    uint64_t v = 0, sink = 0;
    double ns_;
    LEAST_OF_5(q, {
        uint64_t s = seed;
        for (uint64_t i = 0; i < q; i++) {
            v = words[(br_splitmix64(&s) ^ (serial ? v : 0)) % n];
            sink += v;
            if (serial)
                SERIALIZE();
        }
    });
    __asm__ volatile("" : : "r"(sink));
    return ns_;
}

/* The memory floor of a lookup, measured in this run from a fresh
 * read-only mapping of path (every page touched first), against the
 * lookup's own figures: free (lookup_cpu, from single_cpu_ns) and
 * serialized. */
static int memory_floor(const char *path, const br_pwfilter *pf, uint64_t q, uint64_t seed,
                        double lookup_cpu)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < 4096) {
        perror(path);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    const uint64_t *words = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (words == MAP_FAILED) {
        perror("mmap");
        return -1;
    }
    uint64_t n = size / 8, touch = 0;
    for (uint64_t i = 0; i < n; i += 512)
        touch += words[i];
    __asm__ volatile("" : : "r"(touch));
    double serial = serial_lookup_ns(pf, q, seed);
    double floor_free = floor_read_ns(words, n, q, seed, false);
    double floor_serial = floor_read_ns(words, n, q, seed, true);
    printf("lookup serialized (no two overlap), thread CPU: %.1f ns\n", serial);
    printf("memory floor, one random 8-byte read of the file per query, thread CPU: "
           "%.1f ns free, %.1f ns serialized\n",
           floor_free, floor_serial);
    printf("lookup / floor: %.2f free, %.2f serialized\n", lookup_cpu / floor_free,
           serial / floor_serial);
    munmap((void *)words, size);
    return 0;
}

/* The same random queries against a range filter: maybe-or-no only. */
static void range_lookups(const br_pwfilter *pf, uint64_t q, uint64_t seed)
{
    enum { BATCH = 1024 };
    static uint64_t keys[BATCH];
    static bool out[BATCH];
    uint64_t s = seed, maybes = 0, t0 = br_now_ns();
    for (uint64_t i = 0; i < q; i++)
        maybes += br_pwfilter_contains_key(pf, br_splitmix64(&s));
    uint64_t ns = br_now_ns() - t0;
    s = seed;
    t0 = br_now_ns();
    for (uint64_t i = 0; i < q; i += BATCH) {
        size_t k = (size_t)BR_MIN((uint64_t)BATCH, q - i);
        for (size_t j = 0; j < k; j++)
            keys[j] = br_splitmix64(&s);
        br_pwfilter_contains_batch(pf, keys, k, out);
    }
    uint64_t ns_b = br_now_ns() - t0;
    printf("range filter: keys %" PRIu64 ", %" PRIu64 " maybes in %" PRIu64 " queries\n",
           br_pwfilter_header(pf)->key_count, maybes, q);
    printf("lookup %.1f ns one at a time, %.1f ns in batches of %d\n", (double)ns / (double)q,
           (double)ns_b / (double)q, BATCH);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_offline FILE QUERIES [SEED]\n");
        return 2;
    }
    uint64_t q = strtoull(argv[2], NULL, 10), seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 25;
    br_pwfilter *pf = NULL;
    br_error err = {{0}};
    if (br_pwfilter_open(argv[1], &pf, &err) < 0) {
        fprintf(stderr, "bench_offline: %s: %s\n", argv[1], err.text);
        return 2;
    }
    if (!br_pwfilter_offline(pf)) { /* a range filter of the same keys: the comparison */
        range_lookups(pf, q, seed);
        br_pwfilter_free(pf);
        return 0;
    }
    uint64_t keys = br_pwfilter_header(pf)->key_count;
    warm(pf, keys / 2 + 1000000);
    uint8_t h[BR_SHA1_LEN] = {0};
    uint64_t hits = 0, count = 0, sink = 0, t0 = br_now_ns();
    for (uint64_t i = 0; i < q; i++) {
        br_store_le64(h, br_splitmix64(&seed));
        if (br_pwfilter_lookup_count(pf, h, &count) > 0) {
            hits++;
            sink += count;
        }
    }
    uint64_t ns = br_now_ns() - t0;
    /* the same queries in batches of 1024 (prefetched) */
    enum { BATCH = 1024 };
    static uint64_t keys_b[BATCH], counts_b[BATCH];
    uint64_t hits_b = 0, s3 = argc > 3 ? strtoull(argv[3], NULL, 10) : 25, t1 = br_now_ns();
    for (uint64_t i = 0; i < q; i += BATCH) {
        size_t k = (size_t)BR_MIN((uint64_t)BATCH, q - i);
        for (size_t j = 0; j < k; j++) {
            br_store_le64(h, br_splitmix64(&s3));
            keys_b[j] = br_hash_key64(h);
        }
        if (br_pwfilter_count_batch(pf, keys_b, k, counts_b) < 0)
            return 2;
        for (size_t j = 0; j < k; j++)
            hits_b += counts_b[j] != 0;
    }
    uint64_t ns_b = br_now_ns() - t1;
    printf("keys %" PRIu64 "  bits/key %.2f (slots) %.2f (file)\n", keys,
           8.0 * (double)br_pwfilter_fingerprint_bytes(pf) / (double)keys,
           8.0 * (double)br_pwfilter_file_size(pf) / (double)keys);
    printf("queries %" PRIu64 "  false positives %" PRIu64
           "  rate %.3g (2^-24 = %.3g)  sum %" PRIu64 "\n",
           q, hits, (double)hits / (double)q, 1.0 / 16777216.0, sink);
    printf("lookup %.1f ns one at a time, %.1f ns in batches of %d (%" PRIu64 " hits)\n",
           (double)ns / (double)q, (double)ns_b / (double)q, BATCH, hits_b);
    uint64_t qc = BR_MIN(q, (uint64_t)2000000);
    double cpu = single_cpu_ns(pf, qc, s3 + 1);
    printf("lookup one at a time, thread CPU: %.1f ns (least of 5 passes of %" PRIu64 ")\n", cpu,
           qc);
    int r = memory_floor(argv[1], pf, qc, s3 + 2, cpu);
    br_pwfilter_free(pf);
    return r < 0 ? 2 : 0;
}
