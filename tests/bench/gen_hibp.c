/* SPDX-License-Identifier: MIT */
/* Fast generator of synthetic HIBP-format input for the filter benchmarks.
 *
 *   gen_hibp hibp N [SEED]       N lines "HASH40:COUNT\r\n", ascending (like the
 *                                real "pwned-passwords-sha1-ordered-by-hash" file)
 *   gen_hibp plain N [SEED]      the same keys as bare "HASH40\n" lines
 *   gen_hibp shuffled N [SEED]   the same lines as hibp, in a scattered order
 *                                (key j*P mod N for j = 0..N-1, P ~ 0.618 N
 *                                coprime to N): unsorted input, same keys
 *   gen_hibp present M N [SEED]  M lines "HASH40\n": keys of the N-key set of
 *                                SEED drawn at random (random order)
 *   gen_hibp absent M [SEED]     M lines "HASH40\n" of random hashes (not in the
 *                                set but with probability ~N/2^64)
 *
 * Key i of the set is computed from (SEED, i) alone, so the same keys can be
 * regenerated in several pipes (breachctl and pwqfilter see the same keys)
 * and sampled at random without storing the set: the top 64 bits of the hash
 * are i*W + r with W = floor((2^64-1)/N) and r uniform in [0, W) (stratified
 * sampling: ascending, distinct in their top 64 bits), the other 96 bits are
 * uniform. Nothing is stored; output goes straight to stdout in large writes. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUT_BUF (1u << 20)

static char out[OUT_BUF + 128];
static size_t out_len;

static void flush_out(void)
{
    size_t off = 0;
    while (off < out_len) {
        ssize_t w = write(STDOUT_FILENO, out + off, out_len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EPIPE)
                perror("gen_hibp: write");
            exit(1);
        }
        off += (size_t)w;
    }
    out_len = 0;
}

/* A counter-based generator: splitmix64's finalizer over (seed, i, j). */
static inline uint64_t rnd(uint64_t seed, uint64_t i, uint64_t j)
{
    uint64_t z = seed + i * UINT64_C(0x9E3779B97F4A7C15) + j * UINT64_C(0xD1B54A32D192ED03);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static inline uint64_t mulhi(uint64_t a, uint64_t b)
{
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

static const char hexd[] = "0123456789ABCDEF";

static inline void put_hex64(char *p, uint64_t v, int digits)
{
    for (int k = digits - 1; k >= 0; k--) {
        p[k] = hexd[v & 15];
        v >>= 4;
    }
}

/* The 160-bit key i: hi (top 64), mid (next 64), lo (last 32). */
static inline void key_of(uint64_t seed, uint64_t n, uint64_t i, uint64_t *hi, uint64_t *mid,
                          uint32_t *lo)
{
    uint64_t w = UINT64_MAX / n;
    *hi = i * w + mulhi(rnd(seed, i, 0), w);
    *mid = rnd(seed, i, 1);
    *lo = (uint32_t)rnd(seed, i, 2);
}

static inline void put_key(uint64_t hi, uint64_t mid, uint32_t lo)
{
    char *p = out + out_len;
    put_hex64(p, hi, 16);
    put_hex64(p + 16, mid, 16);
    put_hex64(p + 32, lo, 8);
    out_len += 40;
}

static inline void put_count(uint64_t c)
{
    char tmp[24];
    int k = 0;
    do {
        tmp[k++] = (char)('0' + c % 10);
        c /= 10;
    } while (c);
    out[out_len++] = ':';
    while (k)
        out[out_len++] = tmp[--k];
}

static uint64_t parse_u64(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end); /* accepts 1e6 */
    uint64_t mult = 1;
    if (*end == 'k' || *end == 'K')
        mult = 1000, end++;
    else if (*end == 'm' || *end == 'M')
        mult = 1000000, end++;
    else if (*end == 'g' || *end == 'G')
        mult = 1000000000, end++;
    if (errno || end == s || *end || v < 0) {
        fprintf(stderr, "gen_hibp: '%s' is not a count\n", s);
        exit(2);
    }
    return (uint64_t)v * mult;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static void usage(void)
{
    fprintf(stderr, "Usage: gen_hibp hibp N [SEED] | plain N [SEED] | shuffled N [SEED] |\n"
                    "                present M N [SEED] | absent M [SEED]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        usage();
    const char *mode = argv[1];
    uint64_t a = parse_u64(argv[2]);
    uint64_t hi, mid;
    uint32_t lo;
    if (!strcmp(mode, "hibp") || !strcmp(mode, "plain") || !strcmp(mode, "shuffled")) {
        if (argc > 4 || a == 0)
            usage();
        uint64_t seed = argc > 3 ? parse_u64(argv[3]) : 1;
        int counted = mode[0] != 'p';
        uint64_t step = 1;
        if (mode[0] == 's') {
            step = (uint64_t)((double)a * 0.6180339887498949) | 1;
            while (gcd(step, a) != 1)
                step++;
        }
        for (uint64_t j = 0; j < a; j++) {
            uint64_t i = step == 1 ? j : (uint64_t)((unsigned __int128)j * step % a);
            key_of(seed, a, i, &hi, &mid, &lo);
            put_key(hi, mid, lo);
            if (counted) {
                put_count(1 + rnd(seed, i, 3) % 100);
                out[out_len++] = '\r';
            }
            out[out_len++] = '\n';
            if (out_len >= OUT_BUF)
                flush_out();
        }
    } else if (!strcmp(mode, "present")) {
        if (argc < 4 || argc > 5)
            usage();
        uint64_t n = parse_u64(argv[3]);
        uint64_t seed = argc > 4 ? parse_u64(argv[4]) : 1;
        if (n == 0)
            usage();
        for (uint64_t j = 0; j < a; j++) {
            uint64_t i = mulhi(rnd(seed ^ UINT64_C(0x70726573656e74), j, 0), n);
            key_of(seed, n, i, &hi, &mid, &lo);
            put_key(hi, mid, lo);
            out[out_len++] = '\n';
            if (out_len >= OUT_BUF)
                flush_out();
        }
    } else if (!strcmp(mode, "absent")) {
        if (argc > 4)
            usage();
        uint64_t seed = (argc > 3 ? parse_u64(argv[3]) : 1) ^ UINT64_C(0x616273656e74);
        for (uint64_t j = 0; j < a; j++) {
            put_key(rnd(seed, j, 0), rnd(seed, j, 1), (uint32_t)rnd(seed, j, 2));
            out[out_len++] = '\n';
            if (out_len >= OUT_BUF)
                flush_out();
        }
    } else {
        usage();
    }
    flush_out();
    return 0;
}
