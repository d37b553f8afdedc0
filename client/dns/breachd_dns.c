/* SPDX-License-Identifier: MIT */
/* libbreachd-dns: the handle, the lookup and the watcher thread
 * (breachd-dns.h, docs/dns.md).
 *
 * The filter being served is a generation: the opened set and the settings
 * it was loaded with. Lookups read the current generation through one
 * atomic pointer and take no lock. The watcher thread stats the
 * configuration and the filter files every BDNS_POLL_MS; when they changed
 * it loads a new generation beside the old one and publishes it with one
 * atomic exchange, then frees the old one once no lookup can still read it
 * (dns_readers.h: lookups are counted in and out, and the watcher waits
 * for two grace steps). A generation that fails to load is logged and the
 * old one keeps serving. A file of the generation served that is changed
 * or truncated in place is noticed at the next poll (and a fault in it is
 * repaired by dns_sigbus.h at once): the set answers "unfiltered" until a
 * good file loads. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "breachd-dns.h"
#include "config.h"
#include "core/clock.h"
#include "dns_conf.h"
#include "dns_load.h"
#include "dns_name.h"
#include "dns_readers.h"
#include "dns_sigbus.h"
#include "filter/offline_codes.h"

#define BDNS_POLL_MS 200
/* grace steps tried per poll, yielding between them (dns_readers.h) */
#define BDNS_GRACE_TRIES 64
#define BDNS_FAIL_OPEN_LOG_S 60
#define BDNS_MAX_CATEGORIES 256 /* the category table's 255, and one spare */
/* The category an allow-list is built with: it wins over every other
 * (docs/filter-format.md, "Allow-lists"). */
#define BDNS_ALLOW_CATEGORY BR_URL_ALLOW_CATEGORY

typedef struct gen {
    br_pwfilter *set; /* NULL: none configured or none could load */
    bdns_ids ids;     /* what each file of conf.filter held (dns_load.h) */
    bdns_conf conf;
    unsigned labels;
    /* per category code of the set (br_pwfilter_lookup_code): its name in
     * cats, its action, and 1 + its counter in cat_hits (0: none); made
     * when the generation loads, so a lookup compares no names */
    const br_category_table *cats;
    uint8_t action_of[BDNS_MAX_CATEGORIES];
    uint16_t hits_of[BDNS_MAX_CATEGORIES];
    uint64_t generation;
    bool damage_noted; /* the watcher logged a file changed in place */
    struct gen *next_retired;
    uint64_t retired_phase; /* bdns_readers_phase() after it was swapped out */
} gen;

/* The watcher's counters; the lookups' are in their reader slots
 * (dns_readers.h): */
typedef struct counters {
    _Atomic uint64_t reloads, reload_failures;
} counters;

/* The lookups' counters, by their index in a reader slot; a lookup is
 * either passed or blocked, so "lookups" is their sum. */
enum { K_BLOCKED, K_PASSED, K_ALLOWED, K_LOGGED, K_INVALID, K_UNFILTERED, K_COUNT };
_Static_assert(K_COUNT <= BDNS_SLOT_COUNTERS, "the lookups' counters fit a reader slot");

struct breachd_dns {
    char config_path[PATH_MAX];
    unsigned refs;     /* under registry_lock */
    breachd_dns *next; /* the registry */
    _Atomic(gen *) cur;
    bdns_readers readers; /* lookups in flight, for freeing a retired generation */
    counters k;
    /* Categories seen by the watcher: names written before n is raised
     * (release), never changed after, so lookups read them lock-free. */
    char cat_name[BDNS_MAX_CATEGORIES][BREACHD_DNS_CATEGORY_MAX + 1];
    _Atomic uint64_t cat_hits[BDNS_MAX_CATEGORIES];
    _Atomic unsigned n_cat;
    /* the watcher */
    pthread_t thread;
    bool thread_running;
    _Atomic bool need_thread; /* after a fork: the child has no watcher */
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stop;
    uint64_t stamp;                 /* bdns_files_stamp of the files below */
    char watch_list[BDNS_LIST_MAX]; /* the filter list last read from the config */
    gen *retired;
    int64_t fail_open_logged_ms;
    uint64_t fail_open_logged_count;
    char fail_open_reason[512];
    breachd_dns_log_fn log_fn;
    void *log_ctx;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static breachd_dns *registry;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static breachd_dns_log_fn default_log_fn; /* breachd_dns_set_log(NULL, ...) */
static void *default_log_ctx;

static int64_t now_ms(void)
{
    return (int64_t)(br_clock_now_mono() / 1000000);
}

static void logf_(breachd_dns *h, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(breachd_dns *h, int level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (h->log_fn)
        h->log_fn(level, line, h->log_ctx);
    else if (level <= LOG_NOTICE) /* the default level: what needs a look */
        fprintf(stderr, "breachd-dns: %s\n", line);
}

static void gen_free(gen *g)
{
    if (!g)
        return;
    br_pwfilter_free(g->set);
    bdns_ids_clear(&g->ids);
    free(g);
}

/* ---- categories and counters ---- */

static void note_category(breachd_dns *h, const char *name)
{
    unsigned n = atomic_load_explicit(&h->n_cat, memory_order_relaxed);
    for (unsigned i = 0; i < n; i++)
        if (strcmp(h->cat_name[i], name) == 0)
            return;
    if (n >= BDNS_MAX_CATEGORIES)
        return;
    snprintf(h->cat_name[n], sizeof(h->cat_name[n]), "%s", name);
    atomic_store_explicit(&h->n_cat, n + 1, memory_order_release);
}

/* g's tables by category code (gen), once the names are noted. */
static void code_tables(const breachd_dns *h, gen *g)
{
    unsigned n = atomic_load_explicit(&h->n_cat, memory_order_relaxed);
    for (unsigned c = 1; g->cats && c <= g->cats->count; c++) {
        const char *name = br_category_name(g->cats, (uint8_t)c);
        g->action_of[c] = (uint8_t)bdns_conf_action(&g->conf, name);
        for (unsigned i = 0; i < n && !g->hits_of[c]; i++)
            if (strcmp(h->cat_name[i], name) == 0)
                g->hits_of[c] = (uint16_t)(i + 1);
    }
}

static void count_category(breachd_dns *h, const gen *g, uint8_t code)
{
    if (g->hits_of[code])
        atomic_fetch_add_explicit(&h->cat_hits[g->hits_of[code] - 1], 1, memory_order_relaxed);
}

#define INC(field) atomic_fetch_add_explicit(&h->k.field, 1, memory_order_relaxed)
/* one of the lookups' counters, in the slot of the lookup's token in */
#define COUNT(i) bdns_reader_count(&h->readers, in, (i))

/* ---- loading a generation (the watcher, and open) ---- */

static gen *gen_load(breachd_dns *h, br_error *err, int *rc)
{
    gen *g = calloc(1, sizeof(*g));
    if (!g) {
        *rc = br_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    if ((*rc = bdns_conf_load(h->config_path, &g->conf, err)) < 0) {
        /* not again until the file changes */
        h->stamp = bdns_files_stamp(h->config_path, h->watch_list);
        free(g);
        return NULL;
    }
    /* the stamp before the files are read: a change while they load is
     * seen at the next poll; a refused file is not read again until it
     * changes */
    snprintf(h->watch_list, sizeof(h->watch_list), "%s", g->conf.filter);
    h->stamp = bdns_files_stamp(h->config_path, h->watch_list);
    /* only the watcher publishes: cur stays while it loads */
    const gen *cur = atomic_load_explicit(&h->cur, memory_order_acquire);
    bdns_serving serving = {.list = cur ? cur->conf.filter : "", .ids = cur ? &cur->ids : NULL};
    const bdns_serving *compare = cur && cur->ids.n ? &serving : NULL;
    if ((*rc = bdns_load_set(&g->conf, compare, &g->set, &g->ids, err)) < 0) {
        free(g);
        return NULL;
    }
    if (g->set) {
        g->labels = br_pwfilter_max_domain_labels(g->set);
        g->generation = br_pwfilter_header(g->set)->generation;
        g->cats = br_pwfilter_categories(g->set);
        for (unsigned i = 0; g->cats && i < g->cats->count; i++)
            note_category(h, g->cats->names[i]);
    }
    for (unsigned i = 0; i < g->conf.n_cat; i++)
        note_category(h, g->conf.cat[i].name);
    code_tables(h, g);
    return g;
}

static void publish(breachd_dns *h, gen *g)
{
    gen *old = atomic_exchange_explicit(&h->cur, g, memory_order_seq_cst);
    if (old) {
        old->retired_phase = bdns_readers_phase(&h->readers);
        old->next_retired = h->retired;
        h->retired = old;
    }
}

/* Free the retired generations no lookup can still read: two grace steps
 * after each was swapped out (dns_readers.h); all: at close, when no
 * lookup runs. */
static void reap(breachd_dns *h, bool all)
{
    for (int i = 0; h->retired && !all && i < BDNS_GRACE_TRIES; i++) {
        uint64_t phase = bdns_readers_phase(&h->readers);
        bool pending = false;
        for (const gen *g = h->retired; g && !pending; g = g->next_retired)
            pending = phase < g->retired_phase + 2;
        if (!pending)
            break;
        if (!bdns_readers_advance(&h->readers))
            sched_yield(); /* a lookup in flight: microseconds */
    }
    uint64_t phase = bdns_readers_phase(&h->readers);
    for (gen **p = &h->retired; *p;) {
        gen *g = *p;
        if (all || phase >= g->retired_phase + 2) {
            *p = g->next_retired;
            gen_free(g);
        } else {
            p = &g->next_retired;
        }
    }
}

static void describe_set(breachd_dns *h, const gen *g, const char *what)
{
    if (g->set)
        logf_(h, LOG_INFO, "%s %s: generation %llu, %llu keys, %zu file(s)", what, g->conf.filter,
              (unsigned long long)g->generation,
              (unsigned long long)br_pwfilter_header(g->set)->key_count,
              br_pwfilter_members(g->set));
    else
        logf_(h, LOG_WARNING,
              "%s: no filter configured ([dns] filter and [urls] filter are empty in %s): every "
              "name passes (fail-open)",
              what, h->config_path);
}

static void try_reload(breachd_dns *h)
{
    br_error err = {{0}};
    int rc = 0;
    gen *g = gen_load(h, &err, &rc);
    if (!g) {
        INC(reload_failures);
        gen *cur = atomic_load_explicit(&h->cur, memory_order_acquire);
        bool good = cur && cur->set && !br_pwfilter_damaged(cur->set);
        logf_(h, LOG_ERR, "%s; %s", err.text,
              good ? "the last good filter keeps serving"
                   : "no good filter: every name passes (fail-open)");
        snprintf(h->fail_open_reason, sizeof(h->fail_open_reason), "%s", err.text);
        return;
    }
    INC(reloads);
    describe_set(h, g, "loaded");
    if (!g->set)
        snprintf(h->fail_open_reason, sizeof(h->fail_open_reason), "no filter configured");
    publish(h, g);
}

/* A file of the set served changed or truncated in place (not replaced by
 * rename): the set is damaged from then on (filter/pwfilter.h). It is
 * swapped for a generation with no set, which answers "unfiltered" without
 * reading the damaged mapping (then unmapped as any retired one), and
 * keeps its ids, so that a reload is still held to the generations served
 * (dns_load.h). Said once; a reload is tried at once, and at each change
 * of the files after. */
static void check_in_place(breachd_dns *h)
{
    gen *g = atomic_load_explicit(&h->cur, memory_order_acquire);
    if (!g || !g->set || g->damage_noted)
        return;
    if (!br_pwfilter_changed(g->set) && !br_pwfilter_damaged(g->set))
        return;
    g->damage_noted = true;
    gen *off = calloc(1, sizeof(*off));
    if (off) { /* else the damaged set serves on: it answers "unfiltered" too */
        off->conf = g->conf;
        off->ids = g->ids; /* lookups never read the ids */
        g->ids = (bdns_ids){0};
        off->damage_noted = true;
        publish(h, off);
    }
    logf_(h, LOG_ERR,
          "%s: a file was changed or truncated in place under its mapping (replace filter files "
          "by rename, docs/dns.md): every name passes unfiltered (fail-open, counted) until a "
          "good file loads",
          g->conf.filter);
    snprintf(h->fail_open_reason, sizeof(h->fail_open_reason),
             "the filter served was changed in place under its mapping");
    h->stamp = 0; /* try a reload now */
}

/* Once a minute at most: how many names passed unfiltered since the last
 * line (docs/dns.md, "Fail-open"). */
static void log_fail_open(breachd_dns *h, int64_t now)
{
    uint64_t n = bdns_readers_sum(&h->readers, K_UNFILTERED);
    if (n == h->fail_open_logged_count ||
        (h->fail_open_logged_ms && now - h->fail_open_logged_ms < BDNS_FAIL_OPEN_LOG_S * 1000))
        return;
    logf_(h, LOG_WARNING,
          "%llu name(s) passed unfiltered (fail-open; counter unfiltered, %llu in all): no good "
          "filter: %s",
          (unsigned long long)(n - h->fail_open_logged_count), (unsigned long long)n,
          h->fail_open_reason[0] ? h->fail_open_reason : "?");
    h->fail_open_logged_count = n;
    h->fail_open_logged_ms = now;
}

static void *watch(void *arg)
{
    breachd_dns *h = arg;
    pthread_mutex_lock(&h->stop_lock);
    while (!h->stop) {
        struct timespec ts; /* pthread_cond_timedwait's clock is the wall clock */
        br_clock_now_real_ts(&ts);
        ts.tv_nsec += BDNS_POLL_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&h->stop_cond, &h->stop_lock, &ts);
        if (h->stop)
            break;
        pthread_mutex_unlock(&h->stop_lock);
        check_in_place(h);
        if (bdns_files_stamp(h->config_path, h->watch_list) != h->stamp)
            try_reload(h);
        reap(h, false);
        log_fail_open(h, now_ms());
        pthread_mutex_lock(&h->stop_lock);
    }
    pthread_mutex_unlock(&h->stop_lock);
    return NULL;
}

static void start_watcher(breachd_dns *h)
{
    h->thread_running = pthread_create(&h->thread, NULL, watch, h) == 0;
    if (!h->thread_running)
        logf_(h, LOG_ERR, "cannot start the watcher thread: replaced filters are not followed");
}

/* A forked child has the handles but not their watchers: the first lookup
 * in it starts one again. */
static void atfork_child(void)
{
    for (breachd_dns *h = registry; h; h = h->next) {
        bdns_readers_reset(&h->readers); /* the threads in lookups stayed in the parent */
        h->thread_running = false;
        pthread_mutex_init(&h->stop_lock, NULL);
        pthread_cond_init(&h->stop_cond, NULL);
        atomic_store(&h->need_thread, true);
    }
    pthread_mutex_init(&registry_lock, NULL);
}

static void install_atfork(void)
{
    pthread_atfork(NULL, NULL, atfork_child);
}

/* ---- the ABI ---- */

static breachd_dns *handle_new(const char *path, char *errbuf, size_t errlen)
{
    /* aligned: the reader slots are cache lines of their own */
    size_t size = (sizeof(breachd_dns) + _Alignof(breachd_dns) - 1) / _Alignof(breachd_dns) *
                  _Alignof(breachd_dns);
    breachd_dns *h = aligned_alloc(_Alignof(breachd_dns), size);
    if (h)
        memset(h, 0, size);
    if (!h) {
        snprintf(errbuf, errlen, "out of memory");
        return NULL;
    }
    snprintf(h->config_path, sizeof(h->config_path), "%s", path);
    h->log_fn = default_log_fn;
    h->log_ctx = default_log_ctx;
    pthread_mutex_init(&h->stop_lock, NULL);
    pthread_cond_init(&h->stop_cond, NULL);
    h->refs = 1;
    br_error err = {{0}};
    int rc = 0;
    bdns_conf *probe = malloc(sizeof(*probe));
    if (!probe || bdns_conf_load(path, probe, &err) < 0) {
        snprintf(errbuf, errlen, "%s", probe ? err.text : "out of memory");
        free(probe);
        free(h);
        return NULL;
    }
    free(probe);
    gen *g = gen_load(h, &err, &rc);
    if (g) {
        INC(reloads);
        describe_set(h, g, "loaded");
        if (!g->set)
            snprintf(h->fail_open_reason, sizeof(h->fail_open_reason), "no filter configured");
        publish(h, g);
    } else {
        INC(reload_failures);
        logf_(h, LOG_ERR, "%s; no filter: every name passes (fail-open) until one loads", err.text);
        snprintf(h->fail_open_reason, sizeof(h->fail_open_reason), "%s", err.text);
    }
    start_watcher(h);
    return h;
}

breachd_dns *breachd_dns_open(const char *config_path, char *errbuf, size_t errlen)
{
    char dummy[1];
    if (!errbuf || !errlen) {
        errbuf = dummy;
        errlen = sizeof(dummy);
    }
    errbuf[0] = '\0';
    if (!config_path || !config_path[0])
        config_path = getenv("BREACHD_CONFIG");
    if (!config_path || !config_path[0])
        config_path = BREACHD_CONFIG_PATH;
    pthread_once(&atfork_once, install_atfork);
    int sigbus = bdns_sigbus_install();
    pthread_mutex_lock(&registry_lock);
    breachd_dns *h = registry;
    while (h && strcmp(h->config_path, config_path) != 0)
        h = h->next;
    if (h) {
        h->refs++;
    } else if ((h = handle_new(config_path, errbuf, errlen))) {
        h->next = registry;
        registry = h;
    }
    pthread_mutex_unlock(&registry_lock);
    if (h && sigbus < 0)
        logf_(h, LOG_ERR,
              "cannot install the SIGBUS handler (%s): a filter file truncated in place "
              "would end the process",
              strerror(-sigbus));
    return h;
}

void breachd_dns_close(breachd_dns *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&registry_lock);
    bool last = --h->refs == 0;
    if (last)
        for (breachd_dns **p = &registry; *p; p = &(*p)->next)
            if (*p == h) {
                *p = h->next;
                break;
            }
    pthread_mutex_unlock(&registry_lock);
    if (!last)
        return;
    if (h->thread_running) {
        pthread_mutex_lock(&h->stop_lock);
        h->stop = true;
        pthread_cond_signal(&h->stop_cond);
        pthread_mutex_unlock(&h->stop_lock);
        pthread_join(h->thread, NULL);
    }
    reap(h, true);
    gen_free(atomic_load(&h->cur));
    pthread_mutex_destroy(&h->stop_lock);
    pthread_cond_destroy(&h->stop_cond);
    free(h);
}

void breachd_dns_set_log(breachd_dns *h, breachd_dns_log_fn fn, void *ctx)
{
    if (!h) {
        pthread_mutex_lock(&registry_lock);
        default_log_fn = fn;
        default_log_ctx = ctx;
        pthread_mutex_unlock(&registry_lock);
        return;
    }
    h->log_ctx = ctx;
    h->log_fn = fn;
}

static void restart_watcher(breachd_dns *h)
{
    bool expected = true;
    if (atomic_compare_exchange_strong(&h->need_thread, &expected, false))
        start_watcher(h);
}

static int pass(breachd_dns *h, unsigned in, breachd_dns_result *res, int reason)
{
    res->verdict = BREACHD_DNS_PASS;
    res->reason = reason;
    COUNT(K_PASSED);
    return BREACHD_DNS_PASS;
}

/* The listed suffix found (most specific first), its category's code, and
 * whether the name or a parent is allowed; -1 when nothing is listed. A
 * damaged set answers -2. */
static int find(const gen *g, bdns_keys *keys, uint8_t *category, bool *allowed)
{
    int best = -1;
    bool found[BR_URL_MAX_HOST_LABELS];
    uint8_t code[BR_URL_MAX_HOST_LABELS];
    *allowed = false;
    if (br_pwfilter_lookup_codes(g->set, keys->probe, keys->n, found, code) < 0)
        return -2;
    for (size_t i = 0; i < keys->n; i++) {
        if (found[i] && code[i] == 0)
            *allowed = true; /* an allow-list entry overrides every blocklist */
        else if (found[i] && best < 0) {
            best = (int)i;
            *category = code[i];
        }
    }
    return best;
}

/* src[0..len) into dst[0..n), cut to fit, NUL-terminated (snprintf's
 * "%s" costs more than the rest of a block's answer). */
static void copy_bytes(char *dst, size_t n, const char *src, size_t len)
{
    len = len < n - 1 ? len : n - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

static void copy_str(char *dst, size_t n, const char *src)
{
    copy_bytes(dst, n, src, strnlen(src, n - 1));
}

static void fill_block(const gen *g, const bdns_keys *keys, int best, uint8_t code,
                       breachd_dns_result *res)
{
    const char *name = br_category_name(g->cats, code); /* code <= a member's table */
    copy_str(res->category, sizeof(res->category), name ? name : "");
    copy_bytes(res->domain, sizeof(res->domain), keys->host + keys->start[best],
               keys->host_len - keys->start[best]);
    res->action = g->action_of[code];
    memcpy(res->sinkhole4, g->conf.sinkhole4, sizeof(res->sinkhole4));
    memcpy(res->sinkhole6, g->conf.sinkhole6, sizeof(res->sinkhole6));
    memcpy(res->redirect, g->conf.redirect, sizeof(res->redirect));
}

/* The lookup in generation g, which stays mapped until it returns; in:
 * the lookup's reader token. */
static int check_gen(breachd_dns *h, unsigned in, const gen *g, const char *name, size_t len,
                     breachd_dns_result *res)
{
    if (!g || !g->set) {
        COUNT(K_UNFILTERED);
        return pass(h, in, res, BREACHD_DNS_NO_FILTER);
    }
    bdns_keys keys;
    if (bdns_name_keys(name, len, g->labels, &keys) < 0) {
        COUNT(K_INVALID);
        return pass(h, in, res, BREACHD_DNS_INVALID);
    }
    uint8_t cat = 0;
    bool allowed;
    int best = find(g, &keys, &cat, &allowed);
    if (best == -2) { /* damaged under its mapping: no answer can be trusted */
        COUNT(K_UNFILTERED);
        return pass(h, in, res, BREACHD_DNS_NO_FILTER);
    }
    if (allowed) {
        COUNT(K_ALLOWED);
        copy_str(res->category, sizeof(res->category), BDNS_ALLOW_CATEGORY);
        return pass(h, in, res, BREACHD_DNS_ALLOWED);
    }
    if (best < 0)
        return pass(h, in, res, BREACHD_DNS_UNLISTED);
    fill_block(g, &keys, best, cat, res);
    count_category(h, g, cat);
    if (res->action == BREACHD_DNS_LOG) {
        COUNT(K_LOGGED);
        return pass(h, in, res, BREACHD_DNS_LOGGED);
    }
    COUNT(K_BLOCKED);
    res->verdict = BREACHD_DNS_BLOCK;
    res->reason = 0;
    return BREACHD_DNS_BLOCK;
}

int breachd_dns_check(breachd_dns *h, const char *name, size_t len, breachd_dns_result *res)
{
    res->verdict = BREACHD_DNS_PASS;
    res->reason = BREACHD_DNS_UNLISTED;
    res->action = 0;
    res->category[0] = res->domain[0] = '\0';
    if (atomic_load_explicit(&h->need_thread, memory_order_relaxed))
        restart_watcher(h);
    unsigned in = bdns_reader_enter(&h->readers);
    const gen *g = atomic_load_explicit(&h->cur, memory_order_seq_cst);
    int verdict = check_gen(h, in, g, name, len, res);
    bdns_reader_exit(&h->readers, in);
    return verdict;
}

/* One "name value\n" line into buf at *at, if it fits; *need grows anyway. */
static void line(char *buf, size_t len, size_t *at, size_t *need, const char *prefix,
                 const char *name, uint64_t v)
{
    char l[96];
    int n = snprintf(l, sizeof(l), "%s%s %llu\n", prefix, name, (unsigned long long)v);
    if (n < 0)
        return;
    if (*need == *at && *at + (size_t)n < len) {
        memcpy(buf + *at, l, (size_t)n + 1);
        *at += (size_t)n;
    }
    *need += (size_t)n;
}

size_t breachd_dns_stats(const breachd_dns *h, char *buf, size_t len)
{
    size_t at = 0, need = 0;
    if (len)
        buf[0] = '\0';
    uint64_t k[K_COUNT];
    for (unsigned i = 0; i < K_COUNT; i++)
        k[i] = bdns_readers_sum(&h->readers, i);
    const struct {
        const char *name;
        uint64_t v;
    } rows[] = {
        {"lookups", k[K_BLOCKED] + k[K_PASSED]},
        {"blocked", k[K_BLOCKED]},
        {"passed", k[K_PASSED]},
        {"allowed", k[K_ALLOWED]},
        {"logged", k[K_LOGGED]},
        {"invalid", k[K_INVALID]},
        {"unfiltered", k[K_UNFILTERED]},
        {"reloads", atomic_load(&h->k.reloads)},
        {"reload_failures", atomic_load(&h->k.reload_failures)},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        line(buf, len, &at, &need, "", rows[i].name, rows[i].v);
    bdns_readers *readers = (bdns_readers *)&h->readers; /* counted in, not changed */
    unsigned in = bdns_reader_enter(readers);
    const gen *g = atomic_load_explicit(&h->cur, memory_order_seq_cst);
    uint64_t generation = g ? g->generation : 0;
    bdns_reader_exit(readers, in);
    line(buf, len, &at, &need, "", "generation", generation);
    unsigned n = atomic_load_explicit(&h->n_cat, memory_order_acquire);
    for (unsigned i = 0; i < n; i++)
        if (strcmp(h->cat_name[i], BDNS_ALLOW_CATEGORY) != 0)
            line(buf, len, &at, &need, "blocked_", h->cat_name[i], atomic_load(&h->cat_hits[i]));
    return need;
}
