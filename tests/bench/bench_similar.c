/* SPDX-License-Identifier: MIT */
/* bench_similar: what the similar-password check (lib/similar/,
 * docs/similar.md) refuses, and what it costs per password.
 *
 *   bench_similar --base FILE | --filter FILE [--min-count N]
 *                 [--tweaks FILE] [--words FILE]
 *                 [--passphrases N] [--sep S] [--random12 N]
 *                 [--adversarial N] [--nt]
 *                 [--misses N] [--seed S]
 *
 * The popular passwords are --base (one a line; "#!comment" lines skipped:
 * john-data's password.lst, the list data/demo/make-corpus builds the test
 * corpus from). An exact in-memory set of their SHA-1s stands in for the
 * offline filter of popular passwords: a binary fuse filter answers the
 * same plus false positives (at most 2^-24 per key with 24-bit
 * fingerprints), so with at most BR_SIMILAR_MAX keys per password the
 * rates below move by less than 2048 * 2^-24 = 0.012% at most.
 *
 * --filter FILE asks an offline password filter instead (breachctl filter
 * build --offline, e.g. of the whole corpus at --min-count N: what breachd
 * answers SIMILAR from): a hash is in the set when the filter holds it
 * with a count of at least --min-count (default 1, as the client's
 * --similar-min-count; bench-min-count.sh).
 *
 * Each candidate is refused when one of its variants' SHA-1s is in the
 * set. Candidates that are themselves in the set (an exact check refuses
 * them) are counted apart and left out of the share. Candidates:
 *   --tweaks FILE    one a line (bench-similar.sh: john's wordlist rules
 *                    over the same base list);
 *   --passphrases N  N random passphrases of 4 words of --words (lowercase
 *                    ASCII words only), joined with --sep (default " ");
 *   --random12 N     N random passwords of 12 printable ASCII characters;
 *   --adversarial N  N passwords that reach the bound (2048 variants) and
 *                    4 KiB ones, for the time only.
 * Time: br_similar_hashes alone (generation and hashing, SHA-1, and NT too
 * with --nt), per password, p50 / p99 / p99.9 / max, wall clock and this
 * thread's CPU time (on a shared machine the wall clock's tail is other
 * processes' turns). --misses N prints N tweaks that were not refused
 * and N random candidates that were (john's output and random strings,
 * not secrets). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/hash.h"
#include "filter/pwfilter.h"
#include "similar/similar.h"
#include "core/util.h"

struct set {
    uint8_t (*h)[BR_SHA1_LEN];
    size_t n, cap;
    br_pwfilter *pf;    /* --filter: the offline filter instead of h */
    uint64_t min_count; /* with pf: a hit counts from this count */
};

struct run {
    br_similar *sim;
    const struct set *base;
    uint8_t (*sha1)[BR_SHA1_LEN];
    uint8_t (*nt)[BR_NT_LEN];
    uint64_t *ns, *cpu;
    size_t ns_cap, n, exact, refused, variants, misses, shown;
    bool tweaks; /* show what is not refused; else what is */
};

static int cmp_hash(const void *a, const void *b)
{
    return memcmp(a, b, BR_SHA1_LEN);
}

/* This thread's CPU time: what the machine's other load does not add. */
static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool in_set(const struct set *s, const uint8_t *h)
{
    uint64_t count = 0;
    if (s->pf)
        return br_pwfilter_lookup_count(s->pf, h, &count) > 0 && count >= s->min_count;
    return bsearch(h, s->h, s->n, BR_SHA1_LEN, cmp_hash) != NULL;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_similar: %s\n", what);
    exit(2);
}

/* Lines of a file, without their end; fn(line, len, ctx). */
static void each_line(const char *path, void (*fn)(const char *, size_t, void *), void *ctx)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path);
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) >= 0) {
        size_t len = (size_t)got;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (len >= 9 && memcmp(line, "#!comment", 9) == 0)
            continue;
        fn(line, len, ctx);
    }
    free(line);
    fclose(f);
}

static void add_base(const char *line, size_t len, void *ctx)
{
    struct set *s = ctx;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4096;
        s->h = realloc(s->h, s->cap * BR_SHA1_LEN);
        if (!s->h)
            die("out of memory");
    }
    if (br_sha1(line, len, s->h[s->n++]) < 0)
        die("SHA-1");
}

static void check(struct run *r, const char *pw, size_t len)
{
    uint8_t exact[BR_SHA1_LEN];
    br_sha1(pw, len, exact);
    if (in_set(r->base, exact)) {
        r->exact++;
        return;
    }
    uint64_t c0 = cpu_ns(), t0 = br_now_ns();
    int n = br_similar_hashes(r->sim, pw, len, r->sha1, r->nt, BR_SIMILAR_MAX);
    uint64_t t1 = br_now_ns(), c1 = cpu_ns();
    if (n < 0)
        die("br_similar_hashes failed");
    bool hit = false;
    for (int i = 0; i < n && !hit; i++)
        hit = in_set(r->base, r->sha1[i]);
    if (r->n == r->ns_cap) {
        r->ns_cap = r->ns_cap ? 2 * r->ns_cap : 65536;
        r->ns = realloc(r->ns, r->ns_cap * sizeof(*r->ns));
        r->cpu = realloc(r->cpu, r->ns_cap * sizeof(*r->cpu));
        if (!r->ns || !r->cpu)
            die("out of memory");
    }
    r->cpu[r->n] = c1 - c0;
    r->ns[r->n++] = t1 - t0;
    r->variants += (size_t)n;
    r->refused += hit;
    if (hit != r->tweaks && r->shown < r->misses) {
        r->shown++;
        printf("  %s: %.*s\n", hit ? "refused" : "not refused", (int)len, pw);
    }
}

static void check_line(const char *line, size_t len, void *ctx)
{
    check(ctx, line, len);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void times(const char *what, uint64_t *t, size_t n)
{
    qsort(t, n, sizeof(*t), cmp_u64);
    printf("  %-4s us/password: p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n", what, t[n / 2] / 1e3,
           t[(size_t)((double)n * 0.99)] / 1e3, t[(size_t)((double)n * 0.999)] / 1e3,
           t[n - 1] / 1e3);
}

static void report(const char *what, struct run *r)
{
    if (r->n == 0)
        return;
    printf("%s: candidates %zu, exact hits (left out) %zu, refused %zu of %zu = %.4f%%, "
           "variants/password %.0f\n",
           what, r->n + r->exact, r->exact, r->refused, r->n,
           100.0 * (double)r->refused / (double)r->n, (double)r->variants / (double)r->n);
    times("wall", r->ns, r->n);
    times("cpu", r->cpu, r->n);
    r->n = r->exact = r->refused = r->variants = r->shown = 0;
}

static uint64_t rng_state;
static uint64_t rng(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

struct words {
    char **w;
    size_t n, cap;
};

static void add_word(const char *line, size_t len, void *ctx)
{
    struct words *w = ctx;
    for (size_t i = 0; i < len; i++)
        if (line[i] < 'a' || line[i] > 'z')
            return;
    if (len == 0)
        return;
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 65536;
        w->w = realloc(w->w, w->cap * sizeof(*w->w));
        if (!w->w)
            die("out of memory");
    }
    w->w[w->n++] = strndup(line, len);
}

static void passphrases(struct run *r, const struct words *w, size_t count, const char *sep)
{
    char buf[1024];
    for (size_t i = 0; i < count; i++) {
        size_t len = 0;
        for (int k = 0; k < 4; k++)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", k ? sep : "",
                                    w->w[rng() % w->n]);
        check(r, buf, len);
    }
}

/* Inputs that reach the bound (2048 variants) or are long. */
static void adversarial(struct run *r, size_t count)
{
    static const char *worst[] = {"|||0bi1|s!al$al$!abb1!1!1!1", "||bs1s@$|!a|1a@1lb!!!!!!1!1"};
    static char big[4096];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = "P@ssw0rd1!"[i % 10];
    for (size_t i = 0; i < count; i++) {
        if (i % 4 == 3)
            check(r, big, sizeof(big));
        else
            check(r, worst[i % 2], strlen(worst[i % 2]));
    }
}

static void random12(struct run *r, size_t count)
{
    char buf[12];
    for (size_t i = 0; i < count; i++) {
        for (int k = 0; k < 12; k++)
            buf[k] = (char)(0x21 + rng() % 94);
        check(r, buf, sizeof(buf));
    }
}

struct opts {
    const char *base, *filter, *tweaks, *words, *sep;
    size_t passphrases, random12, misses, adversarial;
    uint64_t min_count;
    bool nt;
};

static void parse(int argc, char **argv, struct opts *o)
{
    o->sep = " ";
    rng_state = 2026;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--nt") == 0) {
            o->nt = true;
            continue;
        }
        if (!v)
            die("usage: see the comment at the top of bench_similar.c");
        i++;
        if (strcmp(a, "--base") == 0)
            o->base = v;
        else if (strcmp(a, "--filter") == 0)
            o->filter = v;
        else if (strcmp(a, "--min-count") == 0)
            o->min_count = strtoull(v, NULL, 10);
        else if (strcmp(a, "--tweaks") == 0)
            o->tweaks = v;
        else if (strcmp(a, "--words") == 0)
            o->words = v;
        else if (strcmp(a, "--sep") == 0)
            o->sep = v;
        else if (strcmp(a, "--passphrases") == 0)
            o->passphrases = strtoul(v, NULL, 10);
        else if (strcmp(a, "--random12") == 0)
            o->random12 = strtoul(v, NULL, 10);
        else if (strcmp(a, "--adversarial") == 0)
            o->adversarial = strtoul(v, NULL, 10);
        else if (strcmp(a, "--misses") == 0)
            o->misses = strtoul(v, NULL, 10);
        else if (strcmp(a, "--seed") == 0)
            rng_state = strtoull(v, NULL, 10);
        else
            die("unknown option; see the comment at the top of bench_similar.c");
    }
    if (!o->base == !o->filter)
        die("--base FILE or --filter FILE is needed (one of them)");
}

int main(int argc, char **argv)
{
    struct opts o = {0};
    parse(argc, argv, &o);
    struct set base = {.min_count = o.min_count ? o.min_count : 1};
    br_error err = {{0}};
    if (o.filter && br_pwfilter_open(o.filter, &base.pf, &err) < 0) {
        fprintf(stderr, "bench_similar: %s: %s\n", o.filter, err.text);
        return 2;
    }
    if (o.filter && !br_pwfilter_offline(base.pf))
        die("--filter: not an offline filter (breachctl filter build --offline)");
    if (o.base) {
        each_line(o.base, add_base, &base);
        qsort(base.h, base.n, BR_SHA1_LEN, cmp_hash);
    }
    struct run r = {.base = &base, .misses = o.misses};
    r.sim = br_similar_new(BR_SIMILAR_SHA1 | (o.nt ? BR_SIMILAR_NT : 0), &err);
    r.sha1 = malloc(BR_SIMILAR_MAX * sizeof(*r.sha1));
    r.nt = malloc(BR_SIMILAR_MAX * sizeof(*r.nt));
    if (!r.sim || !r.sha1 || !r.nt)
        die(err.text[0] ? err.text : "out of memory");
    if (base.pf)
        printf("filter: %s, %llu keys, a hit from count %llu, hashes: SHA-1%s\n", o.filter,
               (unsigned long long)br_pwfilter_header(base.pf)->key_count,
               (unsigned long long)base.min_count, o.nt ? " + NT" : "");
    else
        printf("base: %zu popular passwords (%s), hashes: SHA-1%s\n", base.n, o.base,
               o.nt ? " + NT" : "");
    if (o.tweaks) {
        r.tweaks = true;
        each_line(o.tweaks, check_line, &r);
        report("tweaks", &r);
        r.tweaks = false;
    }
    if (o.passphrases && o.words) {
        struct words w = {0};
        each_line(o.words, add_word, &w);
        passphrases(&r, &w, o.passphrases, o.sep);
        char what[64];
        snprintf(what, sizeof(what), "passphrases (sep \"%s\")", o.sep);
        report(what, &r);
    }
    if (o.random12) {
        random12(&r, o.random12);
        report("random 12 characters", &r);
    }
    if (o.adversarial) {
        adversarial(&r, o.adversarial);
        report("adversarial (bound reached, 4 KiB)", &r);
    }
    br_similar_free(r.sim);
    br_pwfilter_free(base.pf);
    return 0;
}
