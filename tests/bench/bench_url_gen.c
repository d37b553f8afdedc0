/* SPDX-License-Identifier: MIT */
/* bench_url's data: a generated blocklist and URL stream (bench_url_gen.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench_url_gen.h"
#include "core/util.h"

static uint64_t g_rng;

static uint64_t rnd(uint64_t n)
{
    return br_splitmix64(&g_rng) % n;
}

static bool chance(unsigned percent)
{
    return rnd(100) < percent;
}

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p) {
            perror("realloc");
            exit(1);
        }
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_puts(sbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    sb_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static const char *const onsets[] = {
    "b", "c", "d",  "f",  "g",  "h",  "j",  "k",  "l",  "m",  "n",  "p",  "r", "s",  "t",  "v",
    "w", "z", "ch", "sh", "th", "st", "tr", "br", "pl", "gr", "kr", "fl", "",  "qu", "sp", "dr"};
static const char *const vowels[] = {"a", "e", "i", "o", "u", "a", "e", "o", "ai", "ou", "ea", "y"};
static const char *const codas[] = {"", "", "", "", "n", "r", "s", "l", "m", "x", "t", "ck"};

static void word(sbuf *b, unsigned min_syl, unsigned max_syl)
{
    unsigned n = min_syl + (unsigned)rnd(max_syl - min_syl + 1);
    for (unsigned i = 0; i < n; i++) {
        sb_puts(b, onsets[rnd(sizeof(onsets) / sizeof(*onsets))]);
        sb_puts(b, vowels[rnd(sizeof(vowels) / sizeof(*vowels))]);
        if (i + 1 == n || chance(20))
            sb_puts(b, codas[rnd(sizeof(codas) / sizeof(*codas))]);
    }
}

/* TLDs, weighted by repetition. */
static const char *const tlds[] = {"com",    "com", "com",  "com", "com", "com", "com", "com",
                                   "net",    "net", "org",  "org", "de",  "de",  "ru",  "ru",
                                   "uk",     "io",  "info", "fr",  "jp",  "br",  "xyz", "top",
                                   "online", "nl",  "it",   "pl",  "es",  "cn"};
static const char *const subs[] = {"www", "www", "www",  "www",  "cdn",   "static", "img", "mail",
                                   "api", "m",   "news", "shop", "login", "secure", "app", "blog"};

/* A registrable name: "word.tld", "word-word.tld" or "word.co.uk". */
static void domain(sbuf *b)
{
    word(b, 3, 5);
    if (chance(15)) {
        sb_puts(b, "-");
        word(b, 1, 3);
    }
    if (chance(3))
        sb_printf(b, "%u", (unsigned)rnd(100));
    sb_puts(b, ".");
    if (chance(4))
        sb_puts(b, "co.uk");
    else
        sb_puts(b, tlds[rnd(sizeof(tlds) / sizeof(*tlds))]);
}

/* A host of 2 to 4 labels. */
static void host(sbuf *b)
{
    unsigned r = (unsigned)rnd(100);
    unsigned extra = r < 40 ? 0 : r < 85 ? 1 : 2;
    for (unsigned i = 0; i < extra; i++) {
        if (i == 0 && chance(60))
            sb_puts(b, subs[rnd(sizeof(subs) / sizeof(*subs))]);
        else
            word(b, 1, 3);
        sb_puts(b, ".");
    }
    domain(b);
}

static const char *const exts[] = {".html", ".php", ".js",  ".css",  ".png",
                                   ".jpg",  ".gif", ".htm", ".aspx", ".json"};

static void segment(sbuf *b)
{
    if (chance(15))
        sb_printf(b, "%u", (unsigned)rnd(100000));
    else
        word(b, 1, 4);
}

/* "/a/b/file.ext" with 0..4 segments (0: "/"). */
static void path(sbuf *b, unsigned max_segs)
{
    unsigned r = (unsigned)rnd(100);
    unsigned n = r < 20 ? 0 : r < 50 ? 1 : r < 75 ? 2 : r < 90 ? 3 : 4;
    if (n > max_segs)
        n = max_segs;
    sb_puts(b, "/");
    for (unsigned i = 0; i < n; i++) {
        segment(b);
        if (i + 1 < n)
            sb_puts(b, "/");
        else if (chance(50))
            sb_puts(b, exts[rnd(sizeof(exts) / sizeof(*exts))]);
        else if (chance(50))
            sb_puts(b, "/");
    }
}

static void query(sbuf *b)
{
    switch (rnd(5)) {
    case 0:
        sb_printf(b, "?id=%u", (unsigned)rnd(1000000));
        break;
    case 1:
        sb_puts(b, "?q=");
        word(b, 1, 3);
        sb_puts(b, "%20");
        word(b, 1, 3);
        sb_printf(b, "&page=%u", (unsigned)rnd(20));
        break;
    case 2:
        sb_puts(b, "?utm_source=");
        word(b, 1, 2);
        sb_puts(b, "&utm_medium=email&utm_campaign=");
        word(b, 2, 3);
        break;
    case 3:
        sb_printf(b, "?v=%u.%u", (unsigned)rnd(10), (unsigned)rnd(100));
        break;
    default:
        sb_printf(b, "?session=%016llx&lang=en", (unsigned long long)br_splitmix64(&g_rng));
        break;
    }
}

/* Upper-case a few letters of the host part of b->p[from..]. */
static void shout(sbuf *b, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (b->p[i] >= 'a' && b->p[i] <= 'z' && chance(30))
            b->p[i] = (char)(b->p[i] - 32);
}

const char *str_at(const strs *s, size_t i)
{
    return s->buf + s->off[i];
}

static void strs_from(strs *s, sbuf *b, size_t *offs, size_t n)
{
    s->buf = b->p;
    s->off = offs;
    s->n = n;
}

void gen(data *d, size_t n_urls, size_t n_list)
{
    size_t n_dom = n_list * 7 / 10, n_url = n_list - n_dom;
    sbuf b = {0};
    size_t *offs = malloc(n_dom * sizeof(size_t));
    /* the list: its own seed, so that it does not follow the stream */
    g_rng = 0x6c697374;
    for (size_t i = 0; i < n_dom; i++) {
        offs[i] = b.len;
        if (chance(10)) {
            word(&b, 1, 3);
            sb_puts(&b, ".");
        }
        domain(&b);
        sb_add(&b, "", 1);
    }
    strs_from(&d->domains, &b, offs, n_dom);
    sbuf u = {0};
    offs = malloc(n_url * sizeof(size_t));
    for (size_t i = 0; i < n_url; i++) {
        offs[i] = u.len;
        host(&u);
        size_t at = u.len;
        path(&u, 3);
        if (u.len == at + 1) { /* "/" alone would be a domain entry */
            segment(&u);
            sb_puts(&u, "/");
        }
        sb_add(&u, "", 1);
    }
    strs_from(&d->urls, &u, offs, n_url);

    g_rng = 0x73747265616d;
    sbuf s = {0};
    offs = malloc(n_urls * sizeof(size_t));
    d->is_hit = calloc(n_urls, 1);
    d->hits = 0;
    for (size_t i = 0; i < n_urls; i++) {
        offs[i] = s.len;
        sb_puts(&s, chance(60) ? "https://" : "http://");
        size_t h0 = s.len;
        unsigned r = (unsigned)rnd(1000);
        if (r < 5) { /* under a listed domain */
            if (chance(50)) {
                sb_puts(&s, subs[rnd(sizeof(subs) / sizeof(*subs))]);
                sb_puts(&s, ".");
            }
            sb_puts(&s, str_at(&d->domains, rnd(n_dom)));
            path(&s, 4);
            d->is_hit[i] = true;
        } else if (r < 10) { /* a listed URL entry, or a file under it */
            const char *e = str_at(&d->urls, rnd(n_url));
            sb_puts(&s, e);
            if (e[strlen(e) - 1] == '/' && chance(50)) {
                word(&s, 1, 3);
                sb_puts(&s, ".html");
            }
            d->is_hit[i] = true;
        } else {
            host(&s);
            size_t h1 = s.len;
            if (chance(3))
                shout(&s, h0, h1);
            if (chance(2))
                sb_printf(&s, ":%u", chance(50) ? 8080u : 443u);
            path(&s, 4);
        }
        if (chance(25))
            query(&s);
        d->hits += d->is_hit[i];
        sb_add(&s, "", 1);
    }
    strs_from(&d->stream, &s, offs, n_urls);
}

/* The Squid comparison's data: n_list domains (a tenth with a subdomain
 * label) and n_urls URLs, a tenth of them on a listed domain (a third of
 * those as is, the others under "www.", "m." or "cdn."), with a path and
 * sometimes a query; the rest random hosts with paths, as gen makes them. */
void gen_squid(data *d, size_t n_urls, size_t n_list)
{
    static const char *const front[] = {"www.", "m.", "cdn."};
    sbuf b = {0}, s = {0};
    size_t *offs = malloc(n_list * sizeof(size_t));
    g_rng = 0x7371756964;
    for (size_t i = 0; i < n_list; i++) {
        offs[i] = b.len;
        if (chance(10)) {
            word(&b, 1, 3);
            sb_puts(&b, ".");
        }
        domain(&b);
        sb_add(&b, "", 1);
    }
    strs_from(&d->domains, &b, offs, n_list);
    d->urls = (strs){.buf = NULL, .off = NULL, .n = 0};
    offs = malloc(n_urls * sizeof(size_t));
    d->is_hit = calloc(n_urls, 1);
    d->hits = 0;
    for (size_t i = 0; i < n_urls; i++) {
        offs[i] = s.len;
        sb_puts(&s, chance(60) ? "https://" : "http://");
        if (chance(10)) {
            unsigned f = (unsigned)rnd(6);
            if (f < 3)
                sb_puts(&s, front[f]);
            sb_puts(&s, str_at(&d->domains, rnd(n_list)));
            d->is_hit[i] = true;
        } else {
            host(&s);
        }
        path(&s, 4);
        if (chance(20))
            query(&s);
        d->hits += d->is_hit[i];
        sb_add(&s, "", 1);
    }
    strs_from(&d->stream, &s, offs, n_urls);
}

int emit(const data *d, const char *dir)
{
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "bench_url: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    const struct {
        const char *name;
        const strs *s;
    } files[] = {
        {"list-domains.txt", &d->domains}, {"list-urls.txt", &d->urls}, {"stream.txt", &d->stream}};
    for (size_t f = 0; f < 3; f++) {
        char p[4096];
        snprintf(p, sizeof(p), "%s/%s", dir, files[f].name);
        FILE *o = fopen(p, "w");
        if (!o) {
            fprintf(stderr, "bench_url: %s: %s\n", p, strerror(errno));
            return 1;
        }
        for (size_t i = 0; i < files[f].s->n; i++) {
            fputs(str_at(files[f].s, i), o);
            fputc('\n', o);
        }
        if (fclose(o) != 0) {
            fprintf(stderr, "bench_url: %s: %s\n", p, strerror(errno));
            return 1;
        }
    }
    printf("wrote %s/{list-domains.txt (%zu), list-urls.txt (%zu), stream.txt (%zu URLs, %zu under "
           "the list)}\n",
           dir, d->domains.n, d->urls.n, d->stream.n, d->hits);
    return 0;
}
