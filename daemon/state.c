/* SPDX-License-Identifier: MIT */
/* The daemon's reloadable state (state.h): configuration, verified filters,
 * the cache and the resolver, built off to the side and swapped in whole. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "core/clock.h"

#include "filter/filter_file.h"

#include "log.h"
#include "follow.h"
#include "offline.h"
#include "state.h"
#include "state_filters.h"

/* Live states, so that shutdown can reach old ones still held by requests. */
static bd_state *live_states;
/* Figures of the resolvers already freed. */
static bd_totals retired;
/* Frees states whose last reference went (see bd_state_unref). */
static struct event *reap_ev;

/* Reload sums and the current state's gauges, from the libraries' figure
 * lists (core/figures.h): a new figure is summed or copied as its row says. */
static void add_resolver(br_resolver_stats *a, const br_resolver_stats *b)
{
    BR_RESOLVER_FIGURES(BR_FIGURE_ADD)
}

static void resolver_gauges(br_resolver_stats *a, const br_resolver_stats *b)
{
    BR_RESOLVER_FIGURES(BR_FIGURE_SET_NOW)
}

static void add_upstream(br_upstream_stats *a, const br_upstream_stats *b)
{
    BR_UPSTREAM_FIGURES(BR_FIGURE_ADD)
}

/* The figures of "now" (not added up): the current state's only. */
static void upstream_gauges(br_upstream_stats *a, const br_upstream_stats *b)
{
    BR_UPSTREAM_FIGURES(BR_FIGURE_SET_NOW)
}

/* b's figures added into a (gauges: copied too when now), for each kind
 * that has a range API of its own. */
static void add_totals(bd_totals *a, const bd_totals *b, bool now)
{
    add_resolver(&a->resolver, &b->resolver);
    if (now)
        resolver_gauges(&a->resolver, &b->resolver);
    for (int k = 0; k < BD_KINDS_; k++) {
        if (!bd_kinds[k].upstream_figures)
            continue;
        add_upstream(&a->upstream[k], &b->upstream[k]);
        if (now)
            upstream_gauges(&a->upstream[k], &b->upstream[k]);
    }
}

static void state_figures(bd_state *s, bd_totals *t);
static void set_stale_after(bd_state *s);
static void reap_cb(evutil_socket_t fd, short what, void *arg);

/* Free a state's resolver (answering what is pending on it), keeping its figures. */
static void retire_resolver(bd_state *s)
{
    if (!s->resolver)
        return;
    bd_totals one;
    state_figures(s, &one);
    add_totals(&retired, &one, false);
    /* Detach first: freeing answers pending lookups, whose callbacks may
     * drop the last reference to this very state. */
    br_resolver *r = s->resolver;
    s->resolver = NULL;
    br_resolver_free(r); /* flushes pending cache writes */
}

static void state_figures(bd_state *s, bd_totals *t)
{
    memset(t, 0, sizeof(*t));
    if (!s->resolver)
        return;
    br_resolver_get_stats(s->resolver, &t->resolver);
    for (int k = 0; k < BD_KINDS_; k++) {
        /* a kind that shares another's range API has no figures of its own */
        br_upstream *up = bd_kinds[k].upstream_figures
                              ? br_resolver_upstream(s->resolver, bd_kinds[k].range)
                              : NULL;
        if (up)
            br_upstream_get_stats(up, &t->upstream[k]);
    }
}

void bd_state_totals(const bd_state *current, bd_totals *t)
{
    *t = retired;
    for (bd_state *s = live_states; s; s = s->next) {
        bd_totals one;
        state_figures(s, &one);
        add_totals(t, &one, s == current);
    }
}

/* A followed section (follow.h): the set its follower installed in the
 * section's filter directory, loaded from its row (bd_filters_load_kind). */
static int load_followed(bd_state_files *out, bd_kind k, br_error *err)
{
    const breachd_config *c = out->cfg;
    bd_follow_config fc;
    bd_follow_config_of(c, k, &fc);
    if (!fc.pubkey[0] || !fc.dir[0] || strchr(fc.dir, ','))
        return br_error_set(err, -EINVAL,
                            "%s: [%s] follow needs [%s] pubkey (what every followed file is "
                            "verified against) and [%s] filter, one directory for the "
                            "followed files",
                            c->path, fc.section, fc.section, fc.section);
    for (int o = 0; o < BD_KINDS_; o++) { /* each keeps its own DIR/set, DIR/manifest */
        bd_follow_config oc;
        bd_follow_config_of(c, (bd_kind)o, &oc);
        if (o != (int)k && oc.url[0] && strcmp(oc.dir, fc.dir) == 0)
            return br_error_set(err, -EINVAL,
                                "%s: [%s] filter and [%s] filter are both %s: each followed "
                                "section needs a directory of its own",
                                c->path, fc.section, oc.section, fc.dir);
    }
    char *list = NULL;
    int r = bd_follow_read(fc.dir, &list, &out->follow[k]);
    if (r == 0 && list)
        r = bd_filters_load_kind(out->cfg, k, list, true, &out->filter[k], &out->filter_ids, err);
    free(list);
    return r;
}

static bool followed(const bd_state_files *f, bd_kind k)
{
    bd_follow_config fc;
    bd_follow_config_of(f->cfg, k, &fc);
    return fc.url[0] != 0;
}

/* [urls] filter, when not followed: an offline set or a range filter (the
 * one kind with two forms: s->urlfilter is the range one). */
static int load_urls(bd_state_files *f, br_error *err)
{
    if (bd_offline_urls_configured(f->cfg))
        return bd_filters_load_kind(f->cfg, BD_KIND_URL, NULL, false, &f->filter[BD_KIND_URL],
                                    &f->filter_ids, err);
    return bd_filters_load_urls(f->cfg, &f->urlfilter, &f->filter_ids, err);
}

/* A kind whose filter loads its own way (kinds.h); the others load with
 * bd_filters_load_kind, from their row. */
static int (*const own_loader[BD_KINDS_])(bd_state_files *, br_error *) = {
    [BD_KIND_URL] = load_urls,
};

/* Kind k's filter: the set its follower installed (or none yet), its own
 * loader's, or the one its row describes. */
static int load_kind(bd_state_files *f, bd_kind k, br_error *err)
{
    if (followed(f, k))
        return load_followed(f, k, err);
    if (own_loader[k])
        return own_loader[k](f, err);
    return bd_filters_load_kind(f->cfg, k, NULL, false, &f->filter[k], &f->filter_ids, err);
}

int bd_state_files_load(const char *config_path, bd_state_files *out, br_error *err)
{
    memset(out, 0, sizeof(*out));
    int r = breachd_config_load(config_path, &out->cfg, err);
    if (r < 0)
        return r;
    /* [http] without an upstream: refused; upstream = none: warned */
    r = bd_offline_check_config(out->cfg, err);
    for (int k = 0; r >= 0 && k < BD_KINDS_; k++)
        r = load_kind(out, (bd_kind)k, err);
    if (r >= 0)
        r = bd_banned_load(out->cfg, &out->banned, &out->banned_generation, err);
    if (r < 0) {
        bd_state_files_clear(out);
        return r;
    }
    bd_offline_warn(out->cfg, (const br_pwfilter *const *)out->filter);
    if (out->cfg->daemon.trust_own_filters)
        bd_log(LOG_WARNING,
               "[daemon] trust_own_filters = yes: filter files owned by uid %u (breachd's own "
               "user) are accepted besides root's, so that user could rewrite the filters it "
               "answers from; for development only (breachd.conf(5))",
               (unsigned)geteuid());
    return 0;
}

void bd_state_files_clear(bd_state_files *f)
{
    for (int k = 0; k < BD_KINDS_; k++)
        br_pwfilter_free(f->filter[k]);
    br_banned_free(f->banned);
    br_urlfilter_free(f->urlfilter);
    for (int k = 0; k < BD_KINDS_; k++)
        br_manifest_fini(&f->follow[k]);
    breachd_config_free(f->cfg);
    bd_filter_ids_clear(&f->filter_ids);
    memset(f, 0, sizeof(*f));
}

static void cache_unref(bd_cache *c)
{
    if (!c || --c->refs > 0)
        return;
    br_range_cache_free(c->cache);
    free(c->path);
    free(c);
}

/* [cache] partition_share (0, a config built by hand: no bound but max_size). */
static void set_share(const breachd_config *cfg, br_range_cache *c)
{
    unsigned pct = cfg->cache.partition_share_pct;
    (void)br_range_cache_set_partition_share(c, pct ? pct : 100);
}

static int cache_get(const breachd_config *cfg, const bd_state *old, bd_cache **out, br_error *err)
{
    /* The open cache is kept, unless it was damaged (range_cache.h,
     * "Truncation while mapped"): then a reload opens the path again. */
    if (old && old->cache && strcmp(old->cache->path, cfg->cache.path) == 0 &&
        !br_range_cache_damaged(old->cache->cache)) {
        old->cache->refs++;
        *out = old->cache;
        set_share(cfg, old->cache->cache); /* a reload may change it */
        return 0;
    }
    bd_cache *c = calloc(1, sizeof(*c));
    if (!c || !(c->path = strdup(cfg->cache.path))) {
        free(c);
        return -ENOMEM;
    }
    int r = br_range_cache_open(cfg->cache.path, cfg->cache.max_size, &c->cache, err);
    if (r < 0) {
        free(c->path);
        free(c);
        return br_error_prefix(err, r, "[cache] path");
    }
    set_share(cfg, c->cache);
    c->refs = 1;
    *out = c;
    return 0;
}

static void resolver_config(const breachd_config *cfg, br_resolver_config *rc)
{
    memset(rc, 0, sizeof(*rc));
    rc->password_upstream = bd_upstream_template(cfg->passwords.upstream);
    rc->url_upstream = bd_upstream_template(cfg->urls.upstream);
    rc->ntlm_upstream = bd_upstream_template(cfg->ntlm.upstream);
    rc->upstream.timeout_ms = cfg->upstream.timeout_ms;
    rc->upstream.max_inflight = cfg->upstream.max_inflight;
    rc->upstream.rate = cfg->upstream.rate;
    rc->upstream.proxy = cfg->upstream.proxy;
    rc->upstream.ca_file = cfg->upstream.ca_file;
    rc->upstream.bulk_share = cfg->upstream.bulk_share_pct / 100.0;
    rc->upstream.http_share = cfg->upstream.http_share_pct / 100.0;
    rc->upstream.breaker_cooldown_ms = cfg->upstream.breaker_cooldown_ms;
    rc->upstream.log = bd_log_sink;
    rc->ttl_s = cfg->cache.ttl_s;
    rc->max_stale_s = cfg->cache.max_stale_s > 0 ? cfg->cache.max_stale_s : -1;
    rc->decoys = cfg->upstream.decoys;
    rc->log = bd_log_sink;
}

int bd_state_new(struct event_base *base, bd_state_files *files, const bd_state *old,
                 bd_state **out, br_error *err)
{
    int r = bd_filters_check_order(&files->filter_ids, old ? &old->filter_ids : NULL, err);
    bd_state *s = r < 0 ? NULL : calloc(1, sizeof(*s));
    if (!s) {
        bd_state_files_clear(files);
        return r < 0 ? r : -ENOMEM;
    }
    s->refs = 1;
    s->next = live_states;
    if (live_states)
        live_states->prev = s;
    live_states = s;
    s->cfg = files->cfg;
    memcpy(s->filter, files->filter, sizeof(s->filter));
    s->banned = files->banned;
    s->banned_generation = files->banned_generation;
    s->urlfilter = files->urlfilter;
    memcpy(s->follow, files->follow, sizeof(s->follow));
    s->filter_ids = files->filter_ids;
    memset(files, 0, sizeof(*files));
    set_stale_after(s);
    s->loaded_at = br_clock_now_real();
    if (!reap_ev && !(reap_ev = event_new(base, -1, 0, reap_cb, NULL)))
        r = -ENOMEM;
    if (r >= 0)
        r = cache_get(s->cfg, old, &s->cache, err);
    if (r >= 0) {
        br_resolver_config rc;
        resolver_config(s->cfg, &rc);
        /* URL decoys are drawn from the prefixes the URL filter lists. */
        rc.url_decoy_bitmap = s->urlfilter ? br_urlfilter_prefix_bitmap(s->urlfilter) : NULL;
        /* Ranges cached before this filter was built may predate its
         * entries: revalidated (a 304 re-stamps them), not trusted. */
        rc.url_fresh_after = s->urlfilter ? br_urlfilter_header(s->urlfilter)->build_time : 0;
        r = br_resolver_new(base, &rc, s->cache->cache, &s->resolver, err);
    }
    if (r < 0) {
        bd_state_unref(s);
        return r;
    }
    *out = s;
    return 0;
}

bd_state *bd_state_ref(bd_state *s)
{
    s->refs++;
    return s;
}

static void state_free(bd_state *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        live_states = s->next;
    if (s->next)
        s->next->prev = s->prev;
    retire_resolver(s);
    cache_unref(s->cache);
    for (int k = 0; k < BD_KINDS_; k++)
        br_pwfilter_free(s->filter[k]);
    br_banned_free(s->banned);
    br_urlfilter_free(s->urlfilter);
    for (int k = 0; k < BD_KINDS_; k++)
        br_manifest_fini(&s->follow[k]);
    breachd_config_free(s->cfg);
    bd_filter_ids_clear(&s->filter_ids);
    free(s);
}

/* From the loop: free every state nobody references any more. */
static void reap_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    for (bd_state *s = live_states; s;) {
        if (s->refs > 0) {
            s = s->next;
            continue;
        }
        state_free(s);
        s = live_states; /* freeing may have run callbacks: start over */
    }
}

void bd_state_unref(bd_state *s)
{
    if (!s || --s->refs > 0)
        return;
    if (!s->resolver || !reap_ev) {
        state_free(s);
        return;
    }
    /* The last reference often goes inside one of this state's resolver
     * callbacks (the answer to the last request made on an old state), and
     * a resolver must not be freed from its own callback: free it from the
     * loop instead. It stays on the live list (its figures still count). */
    event_active(reap_ev, 0, 0); /* res 0: a wake-up, not a timeout */
}

void bd_state_shutdown_all(void)
{
    /* Hold every state while their resolvers answer (and so unreference)
     * what is pending, then let go. */
    size_t n = 0;
    for (bd_state *s = live_states; s; s = s->next)
        n++;
    bd_state **all = calloc(n ? n : 1, sizeof(*all));
    if (!all)
        return;
    n = 0;
    for (bd_state *s = live_states; s; s = s->next)
        all[n++] = bd_state_ref(s);
    for (size_t i = 0; i < n; i++)
        retire_resolver(all[i]);
    for (size_t i = 0; i < n; i++)
        bd_state_unref(all[i]); /* frees those already unreferenced */
    free(all);
    /* No more loop: what is unreferenced from now on is freed at once. */
    if (reap_ev) {
        event_free(reap_ev);
        reap_ev = NULL;
    }
}

const br_filter_header *bd_state_filter_header(const bd_state *s, bd_kind k)
{
    if (s->filter[k])
        return br_pwfilter_header(s->filter[k]);
    if (k == BD_KIND_URL && s->urlfilter)
        return br_urlfilter_header(s->urlfilter);
    return NULL;
}

/* When each kind's filter goes stale (bd_state_filter_stale): the time of
 * its data (bd_state_data_time) plus its section's max_filter_age,
 * INT64_MAX for none. */
static void set_stale_after(bd_state *s)
{
    for (int k = 0; k < BD_KINDS_; k++) {
        const br_filter_header *h = bd_state_filter_header(s, (bd_kind)k);
        int64_t at;
        if (!h || !bd_kinds[k].max_age_off ||
            __builtin_add_overflow(bd_state_data_time(s, (bd_kind)k),
                                   bd_kind_max_age(s->cfg, (bd_kind)k), &at))
            at = INT64_MAX;
        s->stale_after[k] = at;
    }
}

uint32_t bd_state_partition(const bd_state *s, uid_t uid)
{
    if (s->cfg->cache.partition == BREACHD_PARTITION_NONE || (uint32_t)uid == BD_PARTITION_HTTP ||
        (uint32_t)uid == BD_PARTITION_CANARY)
        return BR_RESOLVER_PARTITION_SHARED;
    return (uint32_t)uid;
}

int64_t bd_state_data_time(const bd_state *s, bd_kind k)
{
    const br_filter_header *h = bd_state_filter_header(s, k);
    if (!h)
        return 0;
    const br_manifest *m = &s->follow[k];
    if (!s->filter[k] || m->published <= 0)
        return h->build_time;
    int64_t t = m->published;
    for (size_t i = 0; i < m->n_feeds; i++) {
        const br_manifest_feed *f = &m->feeds[i];
        t = BR_MIN(t, f->last_success >= 0 ? f->last_success : m->published);
    }
    return t;
}

/* members: the files of the set (a layered file's layers), shown when more
 * than one, so that a delta's loading shows. */
static void log_filter(const char *what, const char *section, const char *path,
                       const br_filter_header *h, size_t members, const char *if_empty)
{
    char set[64] = "", built[40] = "";
    if (members > 1)
        snprintf(set, sizeof(set), " in a set of %zu (a base and its deltas)", members);
    /* the build time as a date: a default generation is a Unix time too */
    time_t t = (time_t)h->build_time;
    struct tm tm;
    if (h->build_time > 0 && gmtime_r(&t, &tm))
        strftime(built, sizeof(built), ", built %Y-%m-%dT%H:%M:%SZ", &tm);
    bd_log(LOG_INFO, "%s filter: generation %llu, %llu keys%s%s", what,
           (unsigned long long)h->generation, (unsigned long long)h->key_count, set, built);
    if (h->key_count == 0)
        bd_log(LOG_WARNING, "[%s] filter %s holds 0 keys: %s", section, path, if_empty);
}

/* Kind k's filter in the log, or, for a kind on without one ([passwords]),
 * what its absence means. */
static void log_kind(const bd_state *s, bd_kind k)
{
    const bd_kind_row *row = &bd_kinds[k];
    const char *path = bd_kind_filter_path(s->cfg, k);
    if (s->filter[k])
        log_filter(k == BD_KIND_URL ? "offline URL" : row->name, row->section, path,
                   br_pwfilter_header(s->filter[k]), br_pwfilter_members(s->filter[k]),
                   row->if_empty);
    else if (k == BD_KIND_URL && s->urlfilter)
        log_filter(row->name, row->section, path, br_urlfilter_header(s->urlfilter),
                   br_urlfilter_members(s->urlfilter), row->if_empty);
    else if (!row->upstream_off || row->off_without_filter)
        return; /* off without a filter (or with another kind's) */
    else if (bd_upstream_none(bd_kind_upstream(s->cfg, k)))
        bd_log(LOG_INFO,
               "no %s filter and [%s] upstream = none: every %s check is answered UNKNOWN "
               "no-upstream",
               row->name, row->section, row->checks);
    else
        bd_log(LOG_INFO, "no %s filter: every %s check goes to the range API", row->name,
               row->checks);
}

void bd_state_log_filters(const bd_state *s)
{
    for (int k = 0; k < BD_KINDS_; k++)
        log_kind(s, (bd_kind)k);
    if (s->banned)
        bd_log(LOG_INFO, "banned terms: %zu (site_terms and banned_terms), min_score %u",
               br_banned_count(s->banned), (unsigned)s->cfg->passwords.min_score);
    const br_pwfilter *url = s->filter[BD_KIND_URL];
    if (url && br_pwfilter_url_fuse_allow(url))
        bd_log(LOG_WARNING,
               "[urls] filter %s: a file written before the exact table holds its allow-list in "
               "its fingerprints, which no longer answer allow (a false positive could release a "
               "blocked URL): rebuild it with breachctl filter build (docs/filter-format.md)",
               s->cfg->urls.filter);
}

/* offline: the filter answers UNKNOWN filter-damaged from now on (it never
 * falls back to the range API: docs/privacy.md); else it is bypassed. */
static void tell_damage(const char *what, const char *verb, const char *paths, bool offline)
{
    bd_log(LOG_ERR,
           "%s filter %s was truncated or rewritten in place while in use: every %s "
           "check now %s; install a good file by rename and reload",
           what, paths, verb,
           offline ? "answers UNKNOWN filter-damaged (an offline filter never falls back to the "
                     "range API)"
                   : "goes to the range API");
}

/* br_now_ns() at the start of the batch being dispatched. */
static uint64_t batch_now;

void bd_state_batch_begin(void)
{
    batch_now = br_now_ns();
}

/* Found intact at *ok, less than BD_INTACT_RECHECK_NS ago. */
static bool recently_intact(const uint64_t *ok, uint64_t now)
{
    return *ok && now - *ok < BD_INTACT_RECHECK_NS;
}

/* Kind k's filter, whichever its form, damaged or rewritten in place. */
static bool kind_damaged(const bd_state *s, bd_kind k)
{
    return s->filter[k] ? br_pwfilter_damaged(s->filter[k])
                        : k == BD_KIND_URL && br_urlfilter_damaged(s->urlfilter);
}

static bool kind_changed(const bd_state *s, bd_kind k)
{
    return s->filter[k] ? br_pwfilter_changed(s->filter[k])
                        : k == BD_KIND_URL && br_urlfilter_changed(s->urlfilter);
}

bool bd_state_intact(bd_state *s, bd_kind k)
{
    uint64_t now = batch_now ? batch_now : br_now_ns();
    bool none = !s->filter[k] && !(k == BD_KIND_URL && s->urlfilter);
    if (none || (recently_intact(&s->intact[k], now) && !kind_damaged(s, k)))
        return true;
    if (!kind_changed(s, k) && !kind_damaged(s, k)) {
        s->intact[k] = now;
        return true;
    }
    if (!s->told[k]) {
        s->told[k] = true;
        tell_damage(bd_kinds[k].name, bd_kinds[k].checks, bd_kind_filter_path(s->cfg, k),
                    s->filter[k] && br_pwfilter_offline(s->filter[k]));
    }
    return false;
}

bool bd_state_damaged(const bd_state *s, bd_kind k)
{
    return s->told[k] || kind_damaged(s, k);
}

void bd_state_url_recheck(bd_state *s, bool *maybe, size_t n)
{
    bool any_no = false;
    for (size_t i = 0; i < n && !any_no; i++)
        any_no = !maybe[i];
    if ((any_no || br_urlfilter_damaged(s->urlfilter)) && !bd_state_intact(s, BD_KIND_URL))
        for (size_t i = 0; i < n; i++)
            maybe[i] = true;
}

/* Each filter of s: a broken lease let go (no log: not the current state). */
static void release_broken(const bd_state *s)
{
    for (int k = 0; k < BD_KINDS_; k++)
        if (s->filter[k])
            (void)br_pwfilter_changed(s->filter[k]);
    if (s->urlfilter)
        (void)br_urlfilter_changed(s->urlfilter);
}

void bd_state_writers_check(bd_state *current)
{
    for (bd_state *s = live_states; s; s = s->next)
        if (s != current)
            release_broken(s);
    release_broken(current);
    bd_state_check_filters(current);
}

void bd_state_check_filters(bd_state *s)
{
    memset(s->intact, 0, sizeof(s->intact)); /* fstat now */
    batch_now = br_now_ns();
    for (int k = 0; k < BD_KINDS_; k++)
        if (bd_kinds[k].damage_figure)
            (void)bd_state_intact(s, (bd_kind)k);
}
