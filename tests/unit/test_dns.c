/* SPDX-License-Identifier: MIT */
/* libbreachd-dns (client/dns/, docs/dns.md): query names as filter keys
 * (escapes, binary and empty labels, length limits), the lookup rules
 * (the name and its parents, never the bare TLD, allow wins, per-category
 * actions), the file checks (signature, Bloom filters refused), following
 * a replaced filter and keeping the last good one, fail-open counting, no
 * allocation per lookup, and no name in any log line or counter; lookups
 * in threads while the filter is swapped many times, and while it is
 * truncated in place (no crash: the library's SIGBUS guard). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "builder/pwfilter_build.h"
#include "builder/urlfilter_save.h"
#include "breachd-dns.h"
#include "core/hash.h"
#include "dns_name.h"
#include "dns_sigbus.h"
#include "filter/filter_sign.h"
#include "filter/offline_codes.h"
#include "filter/pwfilter.h"
#include "filter/urlfilter.h"
#include "testutil.h"
#include "url/url_expr.h"

/* ---- counting allocations (a lookup must make none) ----
 * Under ASan through its allocator hook; otherwise by interposing
 * malloc, calloc and realloc. Only the counting thread's: the watcher
 * thread starting late on a loaded machine allocates in ASan's runtime. */

static _Atomic int counting;
static _Atomic long allocations;
static pthread_t counting_thread;

static bool counts(void)
{
    return counting && pthread_equal(pthread_self(), counting_thread);
}

#if defined(__SANITIZE_ADDRESS__)
/* sanitizer/allocator_interface.h, which GCC does not ship */
int __sanitizer_install_malloc_and_free_hooks(void (*on_alloc)(const volatile void *, size_t),
                                              void (*on_dealloc)(const volatile void *));

static void on_malloc(const volatile void *p, size_t n)
{
    (void)p;
    (void)n;
    if (counts())
        allocations++;
}

static void on_free(const volatile void *p)
{
    (void)p;
}

static void count_allocations(void)
{
    __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}
#else
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

void *malloc(size_t n)
{
    if (counts())
        allocations++;
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    if (counts())
        allocations++;
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    if (counts())
        allocations++;
    return __libc_realloc(p, n);
}

static void count_allocations(void) {}
#endif

/* ---- fixtures ---- */

typedef struct entry {
    const char *domain; /* indexed as "domain/" */
    const char *category;
} entry;

static int by_key(const void *a, const void *b)
{
    return memcmp(a, b, BR_SHA256_LEN);
}

/* An offline URL filter of the domain entries e[0..n) at path (written
 * beside it and renamed in, as filters are replaced). Entries of the
 * category allow go to the exact table, as the feed builder puts them
 * (docs/filter-format.md, "The exact table"). */
static void build(const char *path, const entry *e, size_t n, uint64_t generation)
{
    br_category_table t = {0};
    br_keyset *ks = NULL;
    br_error err = {{0}};
    assert_int_equal(br_keyset_new(NULL, 0, &ks, &err), 0);
    unsigned labels = 0;
    uint8_t allow[16][BR_SHA256_LEN];
    size_t n_allow = 0;
    for (size_t i = 0; i < n; i++) {
        char expr[300];
        uint8_t key[BR_SHA256_LEN];
        snprintf(expr, sizeof(expr), "%s/", e[i].domain);
        assert_int_equal(br_url_expr_hash(expr, key), 0);
        unsigned l = 1;
        for (const char *p = e[i].domain; *p; p++)
            l += *p == '.';
        labels = l > labels ? l : labels;
        if (strcmp(e[i].category, BR_URL_ALLOW_CATEGORY) == 0) {
            assert_true(n_allow < 16);
            memcpy(allow[n_allow++], key, BR_SHA256_LEN);
            continue;
        }
        int code = br_category_code(&t, e[i].category);
        assert_true(code > 0);
        assert_int_equal(br_keyset_add_counted(ks, br_hash_key64(key), (uint64_t)code, &err), 0);
    }
    qsort(allow, n_allow, BR_SHA256_LEN, by_key);
    br_pwfilter_build_opts o = {.kind = BR_KIND_URL_SHA256,
                                .generation = generation,
                                .source = "unit",
                                .build_time = 1764892800,
                                .categories = &t,
                                .max_domain_labels = labels,
                                .allow = (const uint8_t(*)[32])allow,
                                .n_allow = n_allow};
    char *tmp = tu_path("%s.new", path);
    if (br_pwfilter_build(ks, &o, tmp, NULL, &err) < 0)
        fail_msg("build %s: %s", tmp, err.text);
    br_keyset_free(ks);
    assert_int_equal(rename(tmp, path), 0);
    free(tmp);
}

static const entry base_entries[] = {
    {"evil.example", "malware"},
    {"good.evil.example", "allow"},
    {"phish.test", "phishing"},
    {"ads.tracker.test", "ads"},
    {"test", "malware"}, /* a bare TLD: never looked up */
    {"a.b.c.d.e.f.g.deep.test", "malware"},
};

typedef struct fx {
    char *dir, *filter, *conf;
    breachd_dns *h;
    char log[8192];
} fx;

static void log_cb(int level, const char *line, void *ctx)
{
    fx *f = ctx;
    (void)level;
    size_t n = strlen(f->log);
    snprintf(f->log + n, sizeof(f->log) - n, "%s\n", line);
}

static void write_conf(fx *f, const char *extra)
{
    char *text =
        tu_path("[urls]\nfilter = %s\n[dns]\naction = nxdomain\n"
                "action.phishing = sinkhole\naction.ads = log\nsinkhole = 10.0.0.1, ::1\n%s",
                f->filter, extra);
    char *tmp = tu_path("%s.new", f->conf);
    assert_int_equal(tu_write_file(tmp, text, strlen(text)), 0);
    assert_int_equal(rename(tmp, f->conf), 0);
    free(tmp);
    free(text);
}

static int setup(void **state)
{
    setenv("BREACHD_TRUST_OWN_FILTERS", "1", 1);
    fx *f = calloc(1, sizeof(*f));
    f->dir = tu_mkdtemp();
    f->filter = tu_path("%s/urls.bf", f->dir);
    f->conf = tu_path("%s/breachd.conf", f->dir);
    build(f->filter, base_entries, BR_ARRAY_SIZE(base_entries), 10);
    write_conf(f, "");
    *state = f;
    return 0;
}

static void open_fx(fx *f)
{
    char err[512];
    breachd_dns_set_log(NULL, log_cb, f);
    f->h = breachd_dns_open(f->conf, err, sizeof(err));
    if (!f->h)
        fail_msg("open: %s", err);
}

static int teardown(void **state)
{
    fx *f = *state;
    breachd_dns_close(f->h);
    tu_rmrf(f->dir);
    free(f->dir);
    free(f->filter);
    free(f->conf);
    free(f);
    return 0;
}

static int check(fx *f, const char *name, breachd_dns_result *res)
{
    return breachd_dns_check(f->h, name, strlen(name), res);
}

static void want_block(fx *f, const char *name, const char *category, const char *domain,
                       int action)
{
    breachd_dns_result res;
    if (check(f, name, &res) != BREACHD_DNS_BLOCK)
        fail_msg("%s: pass (reason %d), expected a block", name, res.reason);
    assert_string_equal(res.category, category);
    assert_string_equal(res.domain, domain);
    assert_int_equal(res.action, action);
}

static void want_pass(fx *f, const char *name, int reason)
{
    breachd_dns_result res;
    if (check(f, name, &res) != BREACHD_DNS_PASS)
        fail_msg("%s: blocked (%s %s), expected a pass", name, res.category, res.domain);
    if (res.reason != reason)
        fail_msg("%s: pass reason %d, expected %d", name, res.reason, reason);
}

/* Wait (up to 10 s: the watcher polls every 200 ms) until name's verdict is v. */
static bool wait_verdict(fx *f, const char *name, int v)
{
    for (int i = 0; i < 200; i++) {
        breachd_dns_result res;
        if (check(f, name, &res) == v)
            return true;
        usleep(50000);
    }
    return false;
}

static uint64_t stat_of(fx *f, const char *key)
{
    char buf[4096];
    breachd_dns_stats(f->h, buf, sizeof(buf));
    size_t kl = strlen(key);
    for (char *p = buf; *p; p = strchr(p, '\n') + 1)
        if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
            return strtoull(p + kl + 1, NULL, 10);
    fail_msg("no counter %s in:\n%s", key, buf);
    return 0;
}

/* ---- names ---- */

static void keys_of(const char *name, int want, const char *host, size_t n)
{
    bdns_keys k;
    int r = bdns_name_keys(name, strlen(name), 5, &k);
    if (r != want)
        fail_msg("'%s': %d, expected %d", name, r, want);
    if (r == 0) {
        assert_int_equal(k.host_len, strlen(host));
        assert_memory_equal(k.host, host, k.host_len);
        assert_string_equal(k.host + k.host_len, "/");
        assert_int_equal(k.n, n);
    }
}

static void test_names(void **state)
{
    (void)state;
    keys_of("www.Example.COM.", 0, "www.example.com", 2);
    keys_of("a.b.c.d.e.f.example.com", 0, "a.b.c.d.e.f.example.com", 5);
    keys_of("\\119ww.example.com", 0, "www.example.com", 2);   /* \DDD */
    keys_of("\\www.example.com", 0, "www.example.com", 2);     /* \X */
    keys_of("_dmarc.example.com", 0, "_dmarc.example.com", 2); /* '_' labels are names */
    keys_of("1.2.3.4", 0, "1.2.3.4", 1);                       /* an address: no parents */
    keys_of("com", 0, "com", 1);                               /* never the bare TLD but itself */
    keys_of("", -EINVAL, NULL, 0);
    keys_of(".", -EINVAL, NULL, 0);
    keys_of("a..example.com", -EINVAL, NULL, 0);
    keys_of(".example.com", -EINVAL, NULL, 0);
    keys_of("bad\\000.example.com", -EINVAL, NULL, 0); /* a binary label */
    keys_of("bad\\255.example.com", -EINVAL, NULL, 0);
    keys_of("bad\\256.example.com", -EINVAL, NULL, 0); /* not an escape */
    keys_of("bad\\1", -EINVAL, NULL, 0);
    keys_of("trailing\\", -EINVAL, NULL, 0);
    keys_of("a\\.b.example.com", -EINVAL, NULL, 0); /* an escaped dot in a label */
    keys_of("sp ace.example.com", -EINVAL, NULL, 0);
    keys_of("slash/x.example.com", -EINVAL, NULL, 0); /* would be a path in a URL */
    keys_of("at@x.example.com", -EINVAL, NULL, 0);
    keys_of("\xc3\xa9.example.com", -EINVAL, NULL, 0); /* raw UTF-8: punycode on the wire */
    char label[70], name[600];
    memset(label, 'a', 64);
    label[64] = '\0';
    snprintf(name, sizeof(name), "%s.example.com", label);
    keys_of(name, -EINVAL, NULL, 0); /* a 64-byte label */
    label[63] = '\0';
    snprintf(name, sizeof(name), "%s.example.com", label);
    keys_of(name, 0, name, 2);
    /* 253 bytes pass, 254 do not (the trailing dot not counted) */
    memset(name, 0, sizeof(name));
    for (size_t i = 0; i < 253; i++)
        name[i] = i % 2 ? '.' : 'a';
    keys_of(name, 0, name, 5);
    char host[600];
    snprintf(host, sizeof(host), "%s", name);
    strcat(name, ".");
    keys_of(name, 0, host, 5);
    name[253] = 'a';
    name[254] = '\0';
    keys_of(name, -EINVAL, NULL, 0);
}

/* The suffixes and probes of a name against br_url_host_suffixes and each
 * "SUFFIX/" of the canonical host and its XXH3, for many label counts:
 * the plain names' path finds the suffixes from its own scan. */
static void suffixes_match(const char *name, unsigned labels)
{
    bdns_keys k;
    if (bdns_name_keys(name, strlen(name), labels, &k) < 0)
        return;
    size_t start[BR_URL_MAX_HOST_LABELS];
    size_t n = br_url_host_suffixes(k.host, k.host_len, labels, start);
    if (n != k.n)
        fail_msg("'%s' labels %u: %zu suffixes, expected %zu", name, labels, k.n, n);
    for (size_t i = 0; i < n; i++) {
        char expr[BR_URL_MAX_HOST + 2];
        size_t len = k.host_len - start[i];
        assert_int_equal(k.start[i], start[i]);
        memcpy(expr, k.host + start[i], len);
        expr[len] = '/';
        assert_int_equal(k.probe[i].len, len + 1);
        assert_memory_equal(k.probe[i].expr, expr, len + 1);
        assert_true(k.probe[i].has_xxh3 && !k.probe[i].hashed);
        assert_true(k.probe[i].xxh3 == br_xxh3_64(expr, len + 1));
    }
}

static void test_name_suffixes(void **state)
{
    (void)state;
    static const char *const names[] = {
        "com",
        "example.com",
        "www.example.com.",
        "A.B.C.D.E.F.G.H.example.COM",
        "1.2.3.4",
        "10.0.0.1.in-addr.arpa",
        "x.0x7f.1",
        "xn--e1afmkfd.xn--p1ai",
        "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.0.1.2.3.4.5.6.7.8.9.net",
        "\\119ww.example.com",
        "_dmarc.example.com",
        "deadbeef.cafe",
        "a.b.c.dead",
    };
    static const unsigned labels[] = {0, 2, 5, 6, 9, 30, 126, 127, 200};
    char many[300];
    for (size_t i = 0; i < 252; i++)
        many[i] = i % 2 ? '.' : 'q';
    many[252] = 'q';
    many[253] = '\0';
    for (size_t l = 0; l < sizeof(labels) / sizeof(labels[0]); l++) {
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            suffixes_match(names[i], labels[l]);
        suffixes_match(many, labels[l]);
    }
}

/* ---- lookups ---- */

static void test_rules(void **state)
{
    fx *f = *state;
    open_fx(f);
    want_block(f, "evil.example", "malware", "evil.example", BREACHD_DNS_NXDOMAIN);
    want_block(f, "x.y.EVIL.example.", "malware", "evil.example", BREACHD_DNS_NXDOMAIN);
    want_pass(f, "example", BREACHD_DNS_UNLISTED);          /* a parent of a listed name */
    want_pass(f, "good.evil.example", BREACHD_DNS_ALLOWED); /* allow wins over its parent */
    want_pass(f, "www.good.evil.example", BREACHD_DNS_ALLOWED);
    want_pass(f, "unlisted.example", BREACHD_DNS_UNLISTED);
    want_pass(f, "other.test", BREACHD_DNS_UNLISTED); /* "test/" listed: never looked up */
    want_block(f, "www.phish.test", "phishing", "phish.test", BREACHD_DNS_SINKHOLE);
    /* a domain entry of 7 labels blocks names longer than Safe Browsing's 5 */
    want_block(f, "z.a.b.c.d.e.f.g.deep.test", "malware", "a.b.c.d.e.f.g.deep.test",
               BREACHD_DNS_NXDOMAIN);
    want_pass(f, "b.c.d.e.f.g.deep.test", BREACHD_DNS_UNLISTED);
    want_pass(f, "bad\\000.evil.example", BREACHD_DNS_INVALID);
    breachd_dns_result res;
    assert_int_equal(check(f, "ads.tracker.test", &res), BREACHD_DNS_PASS); /* action log */
    assert_int_equal(res.reason, BREACHD_DNS_LOGGED);
    assert_string_equal(res.category, "ads");
    assert_int_equal(check(f, "phish.test", &res), BREACHD_DNS_BLOCK);
    assert_string_equal(res.sinkhole4, "10.0.0.1");
    assert_string_equal(res.sinkhole6, "::1");
    assert_int_equal(stat_of(f, "blocked_phishing"), 2);
    assert_int_equal(stat_of(f, "blocked_ads"), 1);
    assert_int_equal(stat_of(f, "allowed"), 2);
    assert_int_equal(stat_of(f, "invalid"), 1);
    assert_int_equal(stat_of(f, "lookups"), 13);
}

static void test_no_allocation(void **state)
{
    fx *f = *state;
    open_fx(f);
    const char *names[] = {"evil.example", "a.b.good.evil.example", "unlisted.example",
                           "bad\\000.x",   "www.phish.test",        "1.2.3.4"};
    breachd_dns_result res;
    count_allocations();
    check(f, "warm.example", &res); /* one-time set-up (OpenSSL's digest) */
    allocations = 0;
    counting_thread = pthread_self();
    counting = 1;
    for (int i = 0; i < 1000; i++)
        check(f, names[i % 6], &res);
    counting = 0;
    assert_int_equal(allocations, 0);
}

/* No log line and no counter holds a name looked up. */
static void test_names_never_logged(void **state)
{
    fx *f = *state;
    open_fx(f);
    const char *secret = "secret-name-7f3a.evil.example";
    breachd_dns_result res;
    check(f, secret, &res);
    check(f, "secret-name-7f3a.unlisted.example", &res);
    build(f->filter, base_entries, 3, 11); /* a reload: its log lines too */
    assert_true(wait_verdict(f, "a.b.c.d.e.f.g.deep.test", BREACHD_DNS_PASS));
    char stats[4096];
    breachd_dns_stats(f->h, stats, sizeof(stats));
    assert_null(strstr(f->log, "secret-name"));
    assert_null(strstr(stats, "secret-name"));
    assert_non_null(strstr(f->log, "generation 11"));
}

/* A replaced filter is followed; a bad replacement keeps the last good. */
static void test_follow_and_keep(void **state)
{
    fx *f = *state;
    open_fx(f);
    want_pass(f, "new.example", BREACHD_DNS_UNLISTED);
    const entry next[] = {{"new.example", "malware"}};
    build(f->filter, next, 1, 11);
    assert_true(wait_verdict(f, "new.example", BREACHD_DNS_BLOCK));
    want_pass(f, "evil.example", BREACHD_DNS_UNLISTED); /* gone in the new one */
    /* truncated, then garbage: refused, the last good one serves */
    uint64_t failures = stat_of(f, "reload_failures");
    size_t len = 0;
    uint8_t *bytes = tu_read_file(f->filter, &len);
    char *tmp = tu_path("%s.new", f->filter);
    assert_int_equal(tu_write_file(tmp, bytes, len / 2), 0);
    assert_int_equal(rename(tmp, f->filter), 0);
    for (int i = 0; i < 200 && stat_of(f, "reload_failures") == failures; i++)
        usleep(50000);
    assert_true(stat_of(f, "reload_failures") > failures);
    want_block(f, "new.example", "malware", "new.example", BREACHD_DNS_NXDOMAIN);
    assert_non_null(strstr(f->log, "the last good filter keeps serving"));
    /* a good one after it is followed */
    build(f->filter, base_entries, BR_ARRAY_SIZE(base_entries), 12);
    assert_true(wait_verdict(f, "evil.example", BREACHD_DNS_BLOCK));
    free(tmp);
    free(bytes);
}

/* No filter ever loaded: every name passes, counted as unfiltered, and a
 * line says so (once a minute at most). */
static void test_fail_open(void **state)
{
    fx *f = *state;
    unlink(f->filter);
    open_fx(f);
    want_pass(f, "evil.example", BREACHD_DNS_NO_FILTER);
    want_pass(f, "evil.example", BREACHD_DNS_NO_FILTER);
    assert_int_equal(stat_of(f, "unfiltered"), 2);
    for (int i = 0; i < 100 && !strstr(f->log, "passed unfiltered"); i++)
        usleep(50000);
    assert_non_null(strstr(f->log, "2 name(s) passed unfiltered"));
    build(f->filter, base_entries, BR_ARRAY_SIZE(base_entries), 10);
    assert_true(wait_verdict(f, "evil.example", BREACHD_DNS_BLOCK));
}

/* With [urls] pubkey, an unsigned or foreign-signed filter is refused;
 * one it signed loads. */
static void test_signature(void **state)
{
    fx *f = *state;
    br_error err = {{0}};
    br_sign_key *ours = NULL, *theirs = NULL;
    assert_int_equal(br_sign_key_generate(&ours, &err), 0);
    assert_int_equal(br_sign_key_generate(&theirs, &err), 0);
    char *sec = tu_path("%s/k.sec", f->dir), *pub = tu_path("%s/k.pub", f->dir);
    char *sec2 = tu_path("%s/t.sec", f->dir), *pub2 = tu_path("%s/t.pub", f->dir);
    assert_int_equal(br_sign_key_save(ours, sec, pub, &err), 0);
    assert_int_equal(br_sign_key_save(theirs, sec2, pub2, &err), 0);
    char *extra = tu_path("[urls]\npubkey = %s\n", pub);
    write_conf(f, extra);
    open_fx(f);
    want_pass(f, "evil.example", BREACHD_DNS_NO_FILTER); /* unsigned */
    assert_non_null(strstr(f->log, "signature"));
    br_filter_header h;
    assert_int_equal(br_filter_header_read(f->filter, &h), 0);
    uint8_t sig[BR_SIG_SIZE];
    assert_int_equal(br_filter_sign(theirs, &h, sig, &err), 0); /* foreign-signed */
    assert_int_equal(br_filter_sig_write(f->filter, sig, &err), 0);
    usleep(600000);
    want_pass(f, "evil.example", BREACHD_DNS_NO_FILTER);
    assert_int_equal(br_filter_sign(ours, &h, sig, &err), 0);
    assert_int_equal(br_filter_sig_write(f->filter, sig, &err), 0);
    assert_true(wait_verdict(f, "evil.example", BREACHD_DNS_BLOCK));
    br_sign_key_free(ours);
    br_sign_key_free(theirs);
    free(sec);
    free(pub);
    free(sec2);
    free(pub2);
    free(extra);
}

/* Sign path with key: path.sig, as `breachctl filter sign` writes it. */
static void sign(const char *path, const br_sign_key *key)
{
    br_error err = {{0}};
    br_filter_header h;
    uint8_t sig[BR_SIG_SIZE];
    assert_int_equal(br_filter_header_read(path, &h), 0);
    assert_int_equal(br_filter_sign(key, &h, sig, &err), 0);
    assert_int_equal(br_filter_sig_write(path, sig, &err), 0);
}

/* A copy of from at to (a file kept aside, to be renamed in later). */
static void copy_file(const char *from, const char *to)
{
    size_t len = 0;
    uint8_t *bytes = tu_read_file(from, &len);
    assert_non_null(bytes);
    assert_int_equal(tu_write_file(to, bytes, len), 0);
    free(bytes);
}

/* The attack: an older signed generation (its signature still verifies)
 * renamed over the one being served. It is refused and the newer one keeps
 * serving, as breachd does (docs/filter-format.md, "Generations"); put back
 * on purpose, with the mark `breachctl filter rollback` leaves, it is
 * followed. */
static void test_older_generation_refused(void **state)
{
    fx *f = *state;
    br_error err = {{0}};
    br_sign_key *key = NULL;
    assert_int_equal(br_sign_key_generate(&key, &err), 0);
    char *sec = tu_path("%s/k.sec", f->dir), *pub = tu_path("%s/k.pub", f->dir);
    assert_int_equal(br_sign_key_save(key, sec, pub, &err), 0);
    char *extra = tu_path("[urls]\npubkey = %s\n", pub);
    write_conf(f, extra);
    /* generation 10, signed: kept aside by whoever replays it */
    char *old = tu_path("%s/old.bf", f->dir);
    char *old_sig = br_filter_sig_path(old), *sig = br_filter_sig_path(f->filter);
    build(old, base_entries, BR_ARRAY_SIZE(base_entries), 10);
    sign(old, key);
    sign(f->filter, key);
    open_fx(f);
    want_block(f, "evil.example", "malware", "evil.example", BREACHD_DNS_NXDOMAIN);
    /* generation 11, signed, followed */
    const entry next[] = {{"new.example", "malware"}};
    char *tmp = tu_path("%s/next.bf", f->dir), *tmp_sig = br_filter_sig_path(tmp);
    build(tmp, next, 1, 11);
    sign(tmp, key);
    assert_int_equal(rename(tmp_sig, sig), 0);
    assert_int_equal(rename(tmp, f->filter), 0);
    assert_true(wait_verdict(f, "new.example", BREACHD_DNS_BLOCK));
    assert_int_equal(stat_of(f, "generation"), 11);
    /* the replay: generation 10 and its valid .sig renamed over it */
    uint64_t failures = stat_of(f, "reload_failures");
    char *keep = tu_path("%s/keep.bf", f->dir), *keep_sig = br_filter_sig_path(keep);
    copy_file(old, keep);
    copy_file(old_sig, keep_sig);
    assert_int_equal(rename(keep_sig, sig), 0);
    assert_int_equal(rename(keep, f->filter), 0);
    for (int i = 0; i < 200 && !strstr(f->log, "not newer"); i++) {
        breachd_dns_result res;
        if (check(f, "evil.example", &res) == BREACHD_DNS_BLOCK)
            break;
        usleep(50000);
    }
    want_pass(f, "evil.example", BREACHD_DNS_UNLISTED);
    want_block(f, "new.example", "malware", "new.example", BREACHD_DNS_NXDOMAIN);
    assert_int_equal(stat_of(f, "generation"), 11);
    assert_true(stat_of(f, "reload_failures") > failures);
    assert_non_null(strstr(f->log, "generation 10 is not newer than the generation 11"));
    assert_non_null(strstr(f->log, "the last good filter keeps serving"));
    /* a deliberate rollback: the mark names that file's header SHA-256 */
    br_filter_header h;
    assert_int_equal(br_filter_header_read(f->filter, &h), 0);
    char line[66];
    br_hex_encode_upper(h.header_sha256, 32, line);
    line[64] = '\n';
    char *mark = tu_path("%s.rollback", f->filter);
    assert_int_equal(tu_write_file(mark, line, 65), 0);
    assert_int_equal(chmod(mark, 0664), 0); /* others may write it: ignored */
    usleep(600000);
    want_pass(f, "evil.example", BREACHD_DNS_UNLISTED);
    assert_int_equal(chmod(mark, 0644), 0);
    assert_true(wait_verdict(f, "evil.example", BREACHD_DNS_BLOCK));
    assert_int_equal(stat_of(f, "generation"), 10);
    want_pass(f, "new.example", BREACHD_DNS_UNLISTED);
    br_sign_key_free(key);
    char *frees[] = {sec, pub, extra, old, old_sig, sig, tmp, tmp_sig, keep, keep_sig, mark};
    for (size_t i = 0; i < BR_ARRAY_SIZE(frees); i++)
        free(frees[i]);
}

/* A Bloom (range) URL filter is refused for DNS, with the reason. */
static void test_bloom_refused(void **state)
{
    fx *f = *state;
    br_urlfilter_draft *d = NULL;
    br_error err = {{0}};
    assert_int_equal(br_urlfilter_draft_new(100, 0.001, &d, &err), 0);
    uint8_t key[BR_SHA256_LEN];
    assert_int_equal(br_url_expr_hash("evil.example/", key), 0);
    br_urlfilter_draft_add(d, key, true);
    br_urlfilter_save_opts o = {.generation = 12, .source = "unit", .build_time = 1764892800};
    assert_int_equal(br_urlfilter_draft_save(d, f->filter, &o, NULL, &err), 0);
    br_urlfilter_draft_free(d);
    open_fx(f);
    want_pass(f, "evil.example", BREACHD_DNS_NO_FILTER);
    assert_non_null(strstr(f->log, "Bloom (range) URL filter: refused for DNS"));
}

/* Opening the same configuration twice shares one handle; a bad [dns]
 * key is refused by name. */
static void test_open(void **state)
{
    fx *f = *state;
    open_fx(f);
    breachd_dns *again = breachd_dns_open(f->conf, NULL, 0);
    assert_ptr_equal(again, f->h);
    breachd_dns_close(again);
    breachd_dns_close(f->h);
    f->h = NULL;
    write_conf(f, "action.Bad = nxdomain\n");
    char err[512];
    assert_null(breachd_dns_open(f->conf, err, sizeof(err)));
    assert_non_null(strstr(err, "[dns] action.Bad: a category is"));
    write_conf(f, "filter = relative/urls.bf\n");
    assert_null(breachd_dns_open(f->conf, err, sizeof(err)));
    assert_non_null(strstr(err, "[dns] filter: expected absolute paths"));
    write_conf(f, "action.x = block\n");
    assert_null(breachd_dns_open(f->conf, err, sizeof(err)));
    assert_non_null(strstr(err, ":8: [dns] action.x: expected nxdomain, nodata, sinkhole"));
    write_conf(f, "action = log\n"); /* write_conf sets action on line 4 */
    assert_null(breachd_dns_open(f->conf, err, sizeof(err)));
    assert_non_null(strstr(err, ":8: [dns] action: set twice"));
    write_conf(f, "[dns]\nsinkhole = 0.0.0.0, nowhere\n"); /* [dns] again: its keys go on */
    assert_null(breachd_dns_open(f->conf, err, sizeof(err)));
    assert_non_null(strstr(err, "[dns] sinkhole: set twice"));
}

/* ---- lookups in threads ---- */

#define HAMMER_THREADS 4

typedef struct hammer {
    fx *f;
    pthread_t t[HAMMER_THREADS];
    _Atomic bool stop;
    _Atomic uint64_t lookups, blocked, unfiltered, other;
} hammer;

/* evil.example, listed as malware in every filter of these tests: a block,
 * or a pass "unfiltered" once the file is damaged; anything else counts
 * as other. */
static void *hammer_loop(void *arg)
{
    hammer *hm = arg;
    while (!atomic_load(&hm->stop)) {
        breachd_dns_result res;
        int v = breachd_dns_check(hm->f->h, "www.evil.example", 16, &res);
        if (v == BREACHD_DNS_BLOCK && strcmp(res.category, "malware") == 0 &&
            strcmp(res.domain, "evil.example") == 0)
            hm->blocked++;
        else if (v == BREACHD_DNS_PASS && res.reason == BREACHD_DNS_NO_FILTER)
            hm->unfiltered++;
        else
            hm->other++;
        hm->lookups++;
    }
    return NULL;
}

/* Until the threads did n more lookups (they never block). */
static void hammer_more(hammer *hm, uint64_t n)
{
    uint64_t until = hm->lookups + n;
    while (hm->lookups < until)
        sched_yield();
}

/* Open f and start the threads (they run a while before this returns). */
static void hammer_start(hammer *hm, fx *f)
{
    open_fx(f);
    memset(hm, 0, sizeof(*hm));
    hm->f = f;
    for (int i = 0; i < HAMMER_THREADS; i++)
        assert_int_equal(pthread_create(&hm->t[i], NULL, hammer_loop, hm), 0);
    hammer_more(hm, 1000);
}

static void hammer_stop(hammer *hm)
{
    hm->stop = true;
    for (int i = 0; i < HAMMER_THREADS; i++)
        pthread_join(hm->t[i], NULL);
}

/* Mappings of path in this process (a retired generation not yet freed
 * shows as a second one, "(deleted)"). */
static int mappings_of(const char *path)
{
    FILE *m = fopen("/proc/self/maps", "re");
    assert_non_null(m);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof(line), m))
        n += strstr(line, path) != NULL;
    fclose(m);
    return n;
}

/* The filter replaced 30 times (by rename, each a higher generation)
 * under threads that look a listed name up without pause: every answer is
 * the block (a lookup never reads a freed generation; under ASan a read
 * of a freed one is reported), and the old generations are unmapped. */
static void test_swap_under_lookups(void **state)
{
    fx *f = *state;
    hammer hm;
    hammer_start(&hm, f);
    for (uint64_t g = 11; g <= 40; g++) {
        build(f->filter, base_entries, BR_ARRAY_SIZE(base_entries), g);
        for (int i = 0; i < 200 && stat_of(f, "generation") != g; i++)
            usleep(20000);
        assert_int_equal(stat_of(f, "generation"), g);
        hammer_more(&hm, 100);
    }
    for (int i = 0; i < 200 && mappings_of(f->filter) > 1; i++)
        usleep(20000);
    hammer_stop(&hm);
    assert_int_equal(mappings_of(f->filter), 1);
    assert_int_equal(hm.other, 0);
    assert_int_equal(hm.unfiltered, 0);
    assert_true(hm.blocked == hm.lookups);
}

/* The filter truncated in place (not replaced by rename) under threads
 * that look names up: reading its pages would raise SIGBUS and end the
 * process; the library's guard turns them into zero pages and the lookups
 * into passes counted "unfiltered" (fail-open), the watcher says so and
 * unmaps the damaged file, and a good file renamed in serves again. */
static void test_truncated_in_place(void **state)
{
    fx *f = *state;
    hammer hm;
    hammer_start(&hm, f);
    uint64_t failures = stat_of(f, "reload_failures");
    assert_int_equal(truncate(f->filter, 0), 0);
    hammer_more(&hm, 1000);
    for (int i = 0; i < 200 && stat_of(f, "reload_failures") == failures; i++)
        usleep(20000);
    hammer_more(&hm, 1000);
    for (int i = 0; i < 200 && mappings_of(f->filter) > 0; i++) /* the damaged set retired */
        usleep(20000);
    hammer_more(&hm, 1000);
    hammer_stop(&hm);
    assert_int_equal(mappings_of(f->filter), 0);
    assert_int_equal(hm.other, 0);
    assert_true(hm.unfiltered > 0);
    assert_true(stat_of(f, "unfiltered") > 0);
    assert_true(stat_of(f, "reload_failures") > failures);
    want_pass(f, "evil.example", BREACHD_DNS_NO_FILTER);
    /* still held to the generation served: an older file is refused */
    failures = stat_of(f, "reload_failures");
    build(f->filter, base_entries, BR_ARRAY_SIZE(base_entries), 9);
    for (int i = 0; i < 200 && stat_of(f, "reload_failures") == failures; i++)
        usleep(20000);
    assert_true(stat_of(f, "reload_failures") > failures);
    want_pass(f, "evil.example", BREACHD_DNS_NO_FILTER);
    build(f->filter, base_entries, BR_ARRAY_SIZE(base_entries), 11);
    assert_true(wait_verdict(f, "evil.example", BREACHD_DNS_BLOCK));
    assert_non_null(strstr(f->log, "changed or truncated in place"));
}

static _Atomic int theirs_called;

static void theirs(int sig, siginfo_t *si, void *uctx)
{
    (void)sig;
    (void)si;
    (void)uctx;
    theirs_called++;
}

/* A SIGBUS that is not a fault in one of the library's mappings goes to the
 * handler the process had before (here one sent with raise). */
static void test_sigbus_chained(void **state)
{
    (void)state;
    struct sigaction sa, saved;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = theirs;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGBUS, &sa, &saved), 0);
    assert_int_equal(bdns_sigbus_install(), 0);
    struct sigaction now;
    assert_int_equal(sigaction(SIGBUS, NULL, &now), 0);
    assert_true(now.sa_sigaction != theirs); /* the library's, in front */
    assert_int_equal(raise(SIGBUS), 0);
    assert_int_equal(theirs_called, 1);
    assert_int_equal(bdns_sigbus_install(), 0); /* installed: kept, not chained to itself */
    assert_int_equal(raise(SIGBUS), 0);
    assert_int_equal(theirs_called, 2);
    assert_int_equal(sigaction(SIGBUS, &saved, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_name_suffixes),
        cmocka_unit_test(test_sigbus_chained),
        cmocka_unit_test_setup_teardown(test_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_allocation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_names_never_logged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_follow_and_keep, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signature, setup, teardown),
        cmocka_unit_test_setup_teardown(test_older_generation_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bloom_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_swap_under_lookups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_in_place, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
