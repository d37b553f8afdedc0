/* SPDX-License-Identifier: MIT */
/* The daemon's figures (stats.h): the one-line STATS answer and the
 * Prometheus text at metrics_listen. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "core/br_assert.h"
#include "core/clock.h"
#include "server_types.h"
#include "stats.h"
#include "stats_figures.h"
#include "stats_meta.h"

typedef struct render_out {
    char *buf;
    size_t size, len;
    const char *prefix; /* before every key */
    const char *eq;     /* between key and value */
    const char *sep;    /* between pairs */
    bool prom;          /* Prometheus: # HELP and # TYPE lines, counters named _total */
} render_out;

/* a, b and c joined into key (KEY_MAX bytes, cut to fit): a kind's key,
 * its prefix before it, as Prometheus text names it. */
#define KEY_MAX 64
static const char *join_key(char *key, const char *a, const char *b, const char *c)
{
    const char *parts[] = {a, b, c};
    size_t n = 0;
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        size_t len = strnlen(parts[i], KEY_MAX - 1 - n);
        memcpy(key + n, parts[i], len);
        n += len;
    }
    key[n] = '\0';
    return key;
}

/* The start of one Prometheus sample: its # HELP and # TYPE lines and its
 * name (docs/protocol.md "STATS"), pre and key. */
static int prom_head(render_out *o, const char *pre, const char *name)
{
    char buf[KEY_MAX];
    const char *key = pre[0] ? join_key(buf, pre, name, "") : name;
    char help[160];
    bool counter = bd_stats_meta(key, help, sizeof(help));
    size_t kl = strlen(key);
    const char *sfx = counter && !(kl >= 6 && strcmp(key + kl - 6, "_total") == 0) ? "_total" : "";
    return snprintf(o->buf + o->len, o->size - o->len,
                    "%s# HELP %s%s%s %s\n# TYPE %s%s%s %s\n%s%s%s%s", o->len ? o->sep : "",
                    o->prefix, key, sfx, help, o->prefix, key, sfx, counter ? "counter" : "gauge",
                    o->prefix, key, sfx, o->eq);
}

/* s after o's text, as snprintf would put it (cut to fit, o then full):
 * the keys of a STATS line, dozens a request, without printf. */
static bool append(render_out *o, const char *s)
{
    size_t n = strlen(s), room = o->size - 1 - o->len;
    bool fits = n <= room;
    memcpy(o->buf + o->len, s, fits ? n : room);
    o->len = fits ? o->len + n : o->size - 1;
    o->buf[o->len] = '\0';
    return fits;
}

/* The pair pre key = value (pre: a kind's prefix, or ""). */
static void put_kv(render_out *o, const char *pre, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put_kv(render_out *o, const char *pre, const char *key, const char *fmt, ...)
{
    if (o->len + 1 >= o->size)
        return;
    if (!o->prom) {
        const char *head[] = {o->len ? o->sep : "", o->prefix, pre, key, o->eq};
        for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
            if (!append(o, head[i]))
                return;
    } else {
        int n = prom_head(o, pre, key);
        if (n < 0 || (size_t)n >= o->size - o->len) {
            o->len = o->size - 1;
            return;
        }
        o->len += (size_t)n;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
    va_end(ap);
    o->len = n < 0 || (size_t)n >= o->size - o->len ? o->size - 1 : o->len + (size_t)n;
}

#define put(o, key, ...) put_kv(o, "", key, __VA_ARGS__)

/* A whole number; in Prometheus text a KEY_ms figure is KEY_seconds (the
 * format's base unit). */
static void put_u64(render_out *o, const char *pre, const char *key, uint64_t v)
{
    size_t kl = strlen(key);
    if (!o->prom || kl < 3 || kl > 60 || strcmp(key + kl - 3, "_ms") != 0) {
        put_kv(o, pre, key, "%llu", (unsigned long long)v);
        return;
    }
    char name[64];
    snprintf(name, sizeof(name), "%.*s_seconds", (int)(kl - 3), key);
    put_kv(o, pre, name, "%llu.%03u", (unsigned long long)(v / 1000), (unsigned)(v % 1000));
}

#define U64(o, key, v) put_u64(o, "", key, (uint64_t)(v))
/* A kind's figure: its prefix pre before key. */
#define KIND_U64(o, pre, key, v) put_u64(o, pre, key, (uint64_t)(v))

/* requests_total, then requests_VERB and errors_CODE, lowercase. */
static void render_requests(const bd_counters *k, render_out *o)
{
    uint64_t total = 0;
    for (int v = 0; v < BR_VERB_COUNT_; v++)
        total += k->requests[v];
    U64(o, "requests_total", total);
    char key[64];
    for (int v = 0; v < BR_VERB_COUNT_; v++) {
        snprintf(key, sizeof(key), "requests_%s", br_verb_name((br_verb)v));
        for (char *p = key; *p; p++)
            *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        U64(o, key, k->requests[v]);
    }
    for (int e = 1; e < BR_PERR_COUNT_; e++) {
        snprintf(key, sizeof(key), "errors_%s", br_proto_err_name((br_proto_err)e));
        for (char *p = key; *p; p++)
            *p = *p == '-' ? '_' : *p;
        U64(o, key, k->errors[e]);
    }
}

/* Each kind's answers, then what its filter answered (kinds.h). */
static void render_answers(const bd_counters *k, render_out *o)
{
    for (int i = 0; i < BD_KINDS_; i++) {
        const bd_kind_row *row = &bd_kinds[i];
        for (const bd_answer_row *a = row->answers; a->name; a++)
            KIND_U64(o, row->counts_prefix, a->name, k->answers[i][a->answer]);
        if (!row->counts_filter)
            continue;
        KIND_U64(o, row->counts_prefix, "filter_no", k->filter[i].no);
        KIND_U64(o, row->counts_prefix, "filter_maybe", k->filter[i].maybe);
        KIND_U64(o, row->counts_prefix, "filter_bypassed", k->filter[i].bypassed);
    }
}

/* One filter's figures: PREFIXfilter_loaded, _generation, _keys,
 * _age_seconds (since data_time), _stale (h NULL: no filter loaded). */
static void render_filter(render_out *o, const char *prefix, const br_filter_header *h,
                          int64_t data_time, int64_t now, bool stale)
{
    static const char *const names[] = {"filter_loaded", "filter_generation", "filter_keys",
                                        "filter_age_seconds", "filter_stale"};
    uint64_t v[] = {h != NULL, h ? h->generation : 0, h ? h->key_count : 0,
                    h && now > data_time ? (uint64_t)(now - data_time) : 0, stale};
    char key[64];
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        snprintf(key, sizeof(key), "%s%s", prefix, names[i]);
        U64(o, key, v[i]);
    }
}

/* Raw text into o (Prometheus lines of a labelled metric). */
static void put_raw(render_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_raw(render_out *o, const char *fmt, ...)
{
    if (o->len + 1 >= o->size)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
    va_end(ap);
    o->len = n < 0 || (size_t)n >= o->size - o->len ? o->size - 1 : o->len + (size_t)n;
}

/* [urls] follow (docs/fleet.md): the served generation and each feed's
 * age from the accepted manifest (its last success; the manifest's time
 * when it never had one): STATS feed_age_NAME, metrics
 * breachd_feed_age_seconds{feed="NAME"}. */
static void render_follow(const bd_state *st, render_out *o, int64_t now)
{
    const br_pwfilter *offline = st->filter[BD_KIND_URL];
    U64(o, "urls_generation", offline ? br_pwfilter_header(offline)->generation : 0);
    char key[96];
    const br_manifest *m = &st->follow[BD_KIND_URL];
    for (size_t i = 0; i < m->n_feeds; i++) {
        const br_manifest_feed *f = &m->feeds[i];
        int64_t at = f->last_success >= 0 ? f->last_success : m->published;
        uint64_t age = now > at ? (uint64_t)(now - at) : 0;
        if (!o->prom) {
            snprintf(key, sizeof(key), "feed_age_%s", f->name);
            U64(o, key, age);
            continue;
        }
        if (i == 0)
            put_raw(o,
                    "\n# HELP %sfeed_age_seconds seconds since the feed's last success at the "
                    "publisher ([urls] follow)\n# TYPE %sfeed_age_seconds gauge",
                    o->prefix, o->prefix);
        put_raw(o, "\n%sfeed_age_seconds{feed=\"%s\"} %llu", o->prefix, f->name,
                (unsigned long long)age);
    }
}

/* A figure of a library's list (stats_figures.h) under prefix (a kind's,
 * for its upstream's): a breaker's state is its name in STATS, a number
 * under KEY_state in Prometheus. */
static void put_figure(render_out *o, const char *prefix, const bd_figure_meta *m,
                       bd_figure_value v, bool numeric_only)
{
    char buf[KEY_MAX];
    if (m->form == BD_FIG_REAL)
        put_kv(o, prefix, m->key, "%.6g", v.d);
    else if (m->form == BD_FIG_BREAKER && !numeric_only)
        put_kv(o, prefix, m->key, "%s", br_breaker_state_name((br_breaker_state)v.u));
    else if (m->form == BD_FIG_BREAKER)
        put_u64(o, "", join_key(buf, prefix, m->key, "_state"), v.u);
    else
        put_u64(o, prefix, m->key, v.u);
}

/* One line of a sequence: a figure of a kind's upstream, a sum of them, or
 * a figure of the resolver. */
typedef struct figure_ref {
    enum { REF_UP, REF_SUM, REF_RES } src;
    unsigned char i;
    bd_kind kind; /* REF_UP, REF_SUM */
} figure_ref;

#define UP(k, f)                                                                                   \
    {                                                                                              \
        REF_UP, BD_UPF_##f, BD_KIND_##k                                                            \
    }
#define SUM(k, f)                                                                                  \
    {                                                                                              \
        REF_SUM, BD_UPS_##f, BD_KIND_##k                                                           \
    }
#define RES(f)                                                                                     \
    {                                                                                              \
        REF_RES, BD_RSF_##f, 0                                                                     \
    }

static void render_refs(const bd_totals *t, const figure_ref *refs, size_t n, render_out *o,
                        bool numeric_only)
{
    for (size_t i = 0; i < n; i++) {
        const figure_ref *r = &refs[i];
        const br_upstream_stats *u = &t->upstream[r->kind];
        const char *prefix = r->src == REF_RES ? "" : bd_kinds[r->kind].prefix;
        if (r->src == REF_UP)
            put_figure(o, prefix, &bd_upstream_meta[r->i],
                       bd_upstream_value(u, (bd_upstream_figure)r->i), numeric_only);
        else if (r->src == REF_SUM)
            put_figure(o, prefix, &bd_upstream_sum_meta[r->i],
                       (bd_figure_value){bd_upstream_sum_value(u, (bd_upstream_sum)r->i), 0},
                       numeric_only);
        else
            put_figure(o, prefix, &bd_resolver_meta[r->i],
                       bd_resolver_value(&t->resolver, (bd_resolver_figure)r->i), numeric_only);
    }
}

#define RENDER_REFS(t, refs, o, numeric_only)                                                      \
    render_refs(t, refs, sizeof(refs) / sizeof(refs[0]), o, numeric_only)

/* The order of the STATS line (docs/protocol.md "STATS"): the figures'
 * keys and help are their rows' (stats_figures.c). */
static const figure_ref cache_figures[] = {RES(cache_fresh),   RES(fetches),
                                           RES(stale_answers), RES(revalidations),
                                           RES(not_modified),  RES(cache_errors)};
static const figure_ref upstream_figures[] = {
    UP(PW, fetches),      UP(PW, transfers),      UP(PW, retries),          SUM(PW, ERRORS),
    UP(PW, err_timeout),  RES(parse_errors),      UP(PW, inflight),         UP(PW, queued),
    RES(decoys),          UP(PW, breaker_trips),  SUM(PW, CIRCUIT_REFUSED), UP(NT, fetches),
    SUM(NT, ERRORS),      UP(NT, inflight),       UP(NT, queued),           UP(PW, rate_effective),
    UP(PW, rate_limited), UP(PW, rate_decreases), UP(PW, pauses),           UP(PW, paused_ms),
    UP(PW, pause_left_ms)};
static const figure_ref bulk_figures[] = {UP(PW, bulk_queued),   UP(PW, bulk_inflight),
                                          RES(promoted),         UP(PW, http_queued),
                                          UP(PW, http_inflight), UP(PW, breaker)};
/* the [ntlm] upstream's beyond the four above (all 0 without one) */
static const figure_ref nt_upstream_figures[] = {
    UP(NT, transfers),        UP(NT, retries),        UP(NT, err_timeout),   UP(NT, breaker_trips),
    SUM(NT, CIRCUIT_REFUSED), UP(NT, rate_effective), UP(NT, rate_limited),  UP(NT, rate_decreases),
    UP(NT, pauses),           UP(NT, paused_ms),      UP(NT, pause_left_ms), UP(NT, bulk_queued),
    UP(NT, bulk_inflight),    UP(NT, breaker)};
static const figure_ref breaker_open_figures[] = {UP(PW, breaker_open_ms), UP(NT, breaker_open_ms)};

static void render_cache(const bd_state *st, const bd_totals *t, render_out *o)
{
    RENDER_REFS(t, cache_figures, o, false);
    br_range_cache_usage cu = {0};
    if (st->cache)
        br_range_cache_stats(st->cache->cache, &cu);
    U64(o, "cache_entries", cu.entries);
    U64(o, "cache_bytes", cu.used_bytes);
    U64(o, "cache_max_bytes", cu.max_bytes);
    U64(o, "cache_evicted", cu.evicted);
    figure_ref coalesced = RES(coalesced);
    render_refs(t, &coalesced, 1, o, false);
}

static void render_upstream(bd_server *srv, const bd_totals *t, render_out *o, bool numeric_only)
{
    RENDER_REFS(t, upstream_figures, o, numeric_only);
    U64(o, "bulk_queue_depth", srv->bulk_pending);
    RENDER_REFS(t, bulk_figures, o, numeric_only);
}

/* UNKNOWN answers by reason: unknown_REASON (docs/operations.md). */
static const char *const unknown_names[BD_UNK_COUNT_] = {
    "upstream-unavailable",
    "upstream-error",
    "timeout",
    "rate-limited",
    "circuit-open",
    "shutting-down",
    "filter-unavailable",
    "filter-stale",
    BD_REASON_FILTER_DAMAGED,
    "other",
};

bd_unknown_reason bd_unknown_reason_of(const char *reason)
{
    for (int r = 0; r < BD_UNK_OTHER; r++)
        if (reason && strcmp(reason, unknown_names[r]) == 0)
            return (bd_unknown_reason)r;
    return BD_UNK_OTHER;
}

static void render_unknown(const bd_counters *k, render_out *o)
{
    char key[64];
    for (int r = 0; r < BD_UNK_COUNT_; r++) {
        snprintf(key, sizeof(key), "unknown_%s", unknown_names[r]);
        for (char *p = key; *p; p++)
            *p = *p == '-' ? '_' : *p;
        U64(o, key, k->unknown_by_reason[r]);
    }
}

/* Filters and the cache found truncated or rewritten in place (then a
 * range filter is bypassed, an offline one answers UNKNOWN filter-damaged;
 * the cache is set aside). */
static void render_damage(const bd_state *st, render_out *o)
{
    for (int i = 0; i < BD_KINDS_; i++)
        if (bd_kinds[i].damage_figure)
            KIND_U64(o, bd_kinds[i].prefix, "filter_damaged", bd_state_damaged(st, (bd_kind)i));
    U64(o, "cache_damaged",
        st->cache && st->cache->cache && br_range_cache_damaged(st->cache->cache));
}

/* The canary (canary.h) of each kind: PREFIXcanary=ok|failed|pending|off and
 * PREFIXcanary_reason (STATS only), _ok, _last_time, _runs, _failures. */
static void render_canary(const bd_counters *k, render_out *o, bool numeric_only)
{
    U64(o, "canary_interval_ms", k->canary_interval_ms);
    char key[64];
    for (int i = 0; i < BD_KINDS_; i++) {
        if (!bd_kinds[i].canary_hex && !bd_kinds[i].canary_expr)
            continue;
        const bd_canary_figures *f = &k->canary[i];
        const char *p = bd_kinds[i].prefix;
        if (!numeric_only) {
            snprintf(key, sizeof(key), "%scanary", p);
            put(o, key, "%s",
                !f->configured || !k->canary_interval_ms ? "off"
                : !f->runs                               ? "pending"
                : f->ok                                  ? "ok"
                                                         : "failed");
            snprintf(key, sizeof(key), "%scanary_reason", p);
            put(o, key, "%s", f->runs && !f->ok && f->reason ? f->reason : "none");
        }
        snprintf(key, sizeof(key), "%scanary_ok", p);
        U64(o, key, f->runs && f->ok);
        snprintf(key, sizeof(key), "%scanary_last_time", p);
        U64(o, key, f->last_time > 0 ? (uint64_t)f->last_time : 0);
        snprintf(key, sizeof(key), "%scanary_runs", p);
        U64(o, key, f->runs);
        snprintf(key, sizeof(key), "%scanary_failures", p);
        U64(o, key, f->failures);
    }
}

static void render_http(const bd_counters *k, render_out *o)
{
    U64(o, "http_requests", k->http_requests);
    U64(o, "http_ok", k->http_ok);
    U64(o, "http_not_modified", k->http_not_modified);
    U64(o, "http_bad_requests", k->http_bad_requests);
    U64(o, "http_forbidden", k->http_forbidden);
    U64(o, "http_rate_limited", k->http_rate_limited);
    U64(o, "http_unavailable", k->http_unavailable);
    U64(o, "http_connections_refused", k->http_connections_refused);
    U64(o, "http_header_timeouts", k->http_header_timeouts);
    U64(o, "http_prepared", k->http_prepared);
    U64(o, "http_fast", k->http_fast);
}

/* Each kind's filter figures in STATS: the rows in order, those whose
 * filter_figures_last is set after the others. */
static void render_filters(const bd_state *st, render_out *o, int64_t now)
{
    for (int last = 0; last < 2; last++)
        for (int k = 0; k < BD_KINDS_; k++)
            if (bd_kinds[k].filter_figures_last == last)
                render_filter(o, bd_kinds[k].prefix, bd_state_filter_header(st, (bd_kind)k),
                              bd_state_data_time(st, (bd_kind)k), now,
                              bd_state_filter_stale(st, (bd_kind)k, now));
}

/* Every figure, in the order the STATS line has always had. */
static void render(bd_server *srv, render_out *o, bool numeric_only)
{
    const bd_counters *k = &srv->counters;
    const bd_state *st = srv->state;
    int64_t now = br_clock_now_real();
    U64(o, "uptime_seconds", now - srv->started_at);
    U64(o, "connections", srv->n_conns);
    U64(o, "connections_total", k->connections_total);
    U64(o, "connections_refused", k->connections_refused);
    U64(o, "accept_pauses", k->accept_pauses);
    U64(o, "writes_early", k->writes_early);
    U64(o, "requests_in_flight", srv->inflight);
    render_requests(k, o);
    render_answers(k, o);
    render_filters(st, o, now);
    render_follow(st, o, now);
    bd_totals t;
    bd_state_totals(st, &t);
    render_cache(st, &t, o);
    render_upstream(srv, &t, o, numeric_only);
    RENDER_REFS(&t, nt_upstream_figures, o, numeric_only);
    render_http(k, o);
    U64(o, "reloads", k->reloads);
    U64(o, "reload_failures", k->reload_failures);
    U64(o, "internal_errors", br_assert_failures());
    RENDER_REFS(&t, breaker_open_figures, o, numeric_only);
    render_unknown(k, o);
    render_damage(st, o);
    render_canary(k, o, numeric_only);
}

size_t bd_stats_render(bd_server *srv, char *buf, size_t size)
{
    render_out o = {.buf = buf, .size = size, .prefix = "", .eq = "=", .sep = " "};
    buf[0] = '\0';
    render(srv, &o, false);
    return o.len;
}

/* ---- Prometheus text at /metrics ---- */

struct bd_metrics {
    struct evhttp *http;
    bd_server *srv;
    bd_accept_pause pause; /* its listener out of descriptors */
};

static void metrics_cb(struct evhttp_request *req, void *arg)
{
    bd_metrics *m = arg;
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
        evhttp_send_error(req, 405, "GET only");
        return;
    }
    size_t size = 64 * 1024; /* about 3 times what the figures take */
    char *body = malloc(size);
    struct evbuffer *b = body ? evbuffer_new() : NULL;
    if (!b) {
        free(body);
        evhttp_send_error(req, 500, NULL);
        return;
    }
    render_out o = {
        .buf = body, .size = size, .prefix = "breachd_", .eq = " ", .sep = "\n", .prom = true};
    body[0] = '\0';
    render(m->srv, &o, true);
    evbuffer_add(b, body, o.len);
    evbuffer_add(b, "\n", 1);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
    free(body);
}

static void not_found_cb(struct evhttp_request *req, void *arg)
{
    (void)arg;
    evhttp_send_error(req, 404, "only /metrics");
}

int bd_metrics_start(struct event_base *base, bd_server *srv, const char *host, uint16_t port,
                     bd_metrics **out)
{
    bd_metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->srv = srv;
    m->http = evhttp_new(base);
    errno = 0;
    struct evhttp_bound_socket *b =
        m->http ? evhttp_bind_socket_with_handle(m->http, host, port) : NULL;
    if (!b) {
        int e = errno ? errno : m->http ? EADDRNOTAVAIL : ENOMEM; /* bind(2)'s: EADDRINUSE */
        bd_metrics_stop(m);
        return -e;
    }
    bd_accept_pause_init(&m->pause, evhttp_bound_socket_get_listener(b),
                         &srv->counters.accept_pauses, "metrics_listen");
    evhttp_set_cb(m->http, "/metrics", metrics_cb, m);
    evhttp_set_gencb(m->http, not_found_cb, NULL);
    evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    *out = m;
    return 0;
}

void bd_metrics_stop(bd_metrics *m)
{
    if (!m)
        return;
    bd_accept_pause_fini(&m->pause);
    if (m->http)
        evhttp_free(m->http);
    free(m);
}
