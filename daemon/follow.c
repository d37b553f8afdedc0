/* SPDX-License-Identifier: MIT */
/* [urls], [passwords] and [ntlm] follow: poll, verify, fetch, install,
 * reload (follow.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <event2/event.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/hash.h"
#include "core/random.h"
#include "core/util.h"
#include "download/fetch_file.h"
#include "filter/filter_file.h"
#include "filter/filter_sign.h"
#include "filter/pwfilter.h"
#include "follow.h"
#include "log.h"

/* DIR/set: what the host holds, base first. */
typedef struct held {
    int64_t published; /* of the manifest it came from; -1: none */
    size_t n;
    br_manifest_file f[1024];
} held;

/* The followed sections (breachd.conf(5)): their keys, and the one kind of
 * filter their manifests, bases and deltas must be. */
typedef struct section {
    bd_kind kind;
    const char *name, *what; /* "urls", "URL" */
    uint32_t filter_kind;
    size_t follow_off, interval_off, pubkey_off;
} section;

#define CFG_(m) offsetof(breachd_config, m)
#define SECTION_(k, sec, what, fk)                                                                 \
    {                                                                                              \
        k, #sec, what, fk, CFG_(sec.follow), CFG_(sec.follow_interval_s), CFG_(sec.pubkey)         \
    }
static const section sections[] = {
    SECTION_(BD_KIND_PW, passwords, "password", BR_KIND_PASSWORD_SHA1),
    SECTION_(BD_KIND_NT, ntlm, "NTLM", BR_KIND_PASSWORD_NTLM),
    SECTION_(BD_KIND_URL, urls, "URL", BR_KIND_URL_SHA256),
};

static const section *section_of(bd_kind k)
{
    for (size_t i = 0; i < BR_ARRAY_SIZE(sections); i++)
        if (sections[i].kind == k)
            return &sections[i];
    return NULL;
}

void bd_follow_config_of(const breachd_config *cfg, bd_kind k, bd_follow_config *out)
{
    const section *sec = section_of(k);
    *out =
        (bd_follow_config){.section = sec ? sec->name : NULL,
                           .url = sec ? BD_KIND_CFG_(cfg, sec->follow_off, char *) : "",
                           .dir = bd_kind_filter_path(cfg, k),
                           .pubkey = sec ? BD_KIND_CFG_(cfg, sec->pubkey_off, char *) : "",
                           .interval_s = sec ? BD_KIND_CFG_(cfg, sec->interval_off, int64_t) : 0};
    if (!out->url)
        out->url = "";
}

/* Where to follow: the section's follow, filter (the directory) and pubkey. */
typedef struct where {
    char dir[4096], url[4096], pubkey[4096];
} where;

/* The loop schedules the polls (a timer, so that breachd-testclock's
 * driven time moves it too); the thread does them, one at a time. */
struct bd_follow {
    const section *sec;
    struct event *timer;
    bool on;              /* the loop's view: following */
    bool first;           /* the next poll is the first after turning on */
    int64_t interval_ms;  /* follow_interval */
    int64_t last_poll_ms; /* real clock: the last poll asked */
    uint16_t lag_draw;    /* this host's place in [cycle/6, cycle/2] */
    /* shared, under mu */
    pthread_t thread;
    bool started, stop, poll_asked;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    where want;
    int64_t published, cycle_s; /* of the newest manifest accepted */
    /* the thread's */
    where cur;
    br_sign_key *key;
    br_fetch_validators val;
};

static void path_in(const char *dir, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", dir, name);
}

static void read_held(const char *dir, held *h)
{
    char path[4200], *save = NULL;
    uint8_t *text = NULL;
    size_t len;
    memset(h, 0, sizeof(*h));
    h->published = -1;
    path_in(dir, "set", path, sizeof(path));
    if (br_read_whole(path, 1 << 20, &text, &len) < 0)
        return;
    for (char *s = strtok_r((char *)text, "\n", &save); s; s = strtok_r(NULL, "\n", &save)) {
        char hex[80];
        br_manifest_file *f = &h->f[h->n];
        if (sscanf(s, "published %" SCNd64, &h->published) == 1)
            continue;
        if (h->n < BR_ARRAY_SIZE(h->f) &&
            sscanf(s, "file %64s %" SCNu64 " %79s", f->name, &f->generation, hex) == 3 &&
            strlen(hex) == 64 && br_hex_decode(hex, 32, f->sha256))
            h->n++;
    }
    free(text);
}

static int write_held(const char *dir, const held *h)
{
    char path[4200], *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return -ENOMEM;
    fprintf(f, "published %" PRId64 "\n", h->published);
    for (size_t i = 0; i < h->n; i++) {
        char hex[65];
        br_hex_encode_upper(h->f[i].sha256, 32, hex);
        fprintf(f, "file %s %" PRIu64 " %s\n", h->f[i].name, h->f[i].generation, hex);
    }
    fclose(f);
    path_in(dir, "set", path, sizeof(path));
    int r = br_write_atomic(path, text, len);
    free(text);
    return r;
}

/* The list "DIR/a, DIR/b" of what h holds (malloc'ed). */
static char *held_list(const char *dir, const held *h)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    for (size_t i = 0; i < h->n; i++)
        fprintf(f, "%s%s/%s", i ? ", " : "", dir, h->f[i].name);
    fclose(f);
    return text;
}

int bd_follow_read(const char *dir, char **list, br_manifest *m)
{
    *list = NULL;
    memset(m, 0, sizeof(*m));
    held *h = malloc(sizeof(*h));
    if (!h)
        return -ENOMEM;
    read_held(dir, h);
    *list = h->n ? held_list(dir, h) : NULL;
    int r = h->n && !*list ? -ENOMEM : 0;
    free(h);
    char path[4200];
    uint8_t *text = NULL;
    size_t len;
    br_error ignored = {{0}};
    path_in(dir, "manifest", path, sizeof(path));
    if (r == 0 && br_read_whole(path, BR_MANIFEST_MAX_BYTES, &text, &len) == 0 &&
        br_manifest_parse((const char *)text, len, m, &ignored) < 0)
        memset(m, 0, sizeof(*m));
    free(text);
    return r;
}

/* ---- one poll ---- */

/* url's directory + name. */
static void sibling(const char *url, const char *name, char *out, size_t len)
{
    const char *slash = strrchr(url, '/');
    snprintf(out, len, "%.*s/%s", (int)(slash ? slash - url : 0), url, name);
}

/* gzip for the bases and deltas (docs/fleet.md: the publisher writes
 * NAME.gz beside them), not for the manifest: an idle poll stays small. */
static int fetch(const char *url, const char *path, const br_fetch_validators *have,
                 br_fetch_result *res, uint64_t max, bool gz, br_error *err)
{
    br_fetch_opts o = {.url = url,
                       .have = have,
                       .connect_timeout_ms = 10000,
                       .stall_timeout_ms = 30000,
                       .max_bytes = max,
                       .accept_gzip = gz,
                       .drop_cache = gz}; /* a base or delta, not the manifest */
    memset(res, 0, sizeof(*res));
    unlink(path);
    return br_fetch_file(path, &o, res, err);
}

/* Fetch one file of the manifest into DIR/NAME (and NAME.sig): its
 * SHA-256 the manifest's, an offline file of the section's kind and that
 * generation, signed by key. */
static int fetch_member(bd_follow *fw, const br_sign_key *key, const br_manifest_file *mf,
                        bool base, br_error *err)
{
    char url[4400], part[4300], sig[4400], final[4300], fsig[4400];
    snprintf(part, sizeof(part), "%s/%s.part", fw->cur.dir, mf->name);
    snprintf(sig, sizeof(sig), "%s.sig", part);
    br_fetch_result res;
    sibling(fw->cur.url, mf->name, url, sizeof(url));
    int r = fetch(url, part, NULL, &res, mf->bytes, true, err);
    strncat(url, ".sig", sizeof(url) - strlen(url) - 1);
    if (r == 0)
        r = fetch(url, sig, NULL, &res, BR_SIG_SIZE, false, err);
    uint8_t *data = NULL;
    size_t len = 0;
    uint8_t sum[32];
    if (r == 0 && (r = br_read_whole(part, mf->bytes, &data, &len)) < 0)
        br_error_set(err, r, "%s: %s", part, strerror(-r));
    if (r == 0 && (br_sha256(data, len, sum) < 0 || memcmp(sum, mf->sha256, 32) != 0))
        r = br_error_set(err, -EINVAL, "%s: its SHA-256 is not the manifest's", mf->name);
    free(data);
    br_filter_header h;
    if (r == 0 && (r = br_filter_header_read(part, &h)) < 0)
        br_error_set(err, r, "%s: not a filter file", mf->name);
    if (r == 0 &&
        (h.kind != fw->sec->filter_kind || h.algorithm != BR_ALGO_FUSE_OFFLINE ||
         h.generation != mf->generation || h.role != (base ? BR_ROLE_FULL : BR_ROLE_DELTA)))
        r = br_error_set(err, -EINVAL,
                         "%s: a %s file of generation %" PRIu64
                         ", not the offline %s %s of generation %" PRIu64 " the manifest names",
                         mf->name, br_filter_kind_name(h.kind), h.generation,
                         br_filter_kind_name(fw->sec->filter_kind), base ? "base" : "delta",
                         mf->generation);
    if (r == 0 && (r = br_filter_sig_verify(key, part, &h, err)) < 0)
        br_error_prefix(err, r, "%s", mf->name);
    path_in(fw->cur.dir, mf->name, final, sizeof(final));
    snprintf(fsig, sizeof(fsig), "%s.sig", final);
    if (r == 0 && (rename(sig, fsig) < 0 || rename(part, final) < 0))
        r = br_error_set(err, -errno, "%s: %s", final, strerror(errno));
    unlink(part);
    unlink(sig);
    return r;
}

/* The set h + m's files from plan opens (the kinds, the chain of bases). */
static int try_set(bd_follow *fw, const held *h, br_error *err)
{
    const char *paths[BR_ARRAY_SIZE(h->f)];
    char buf[BR_ARRAY_SIZE(h->f)][300];
    for (size_t i = 0; i < h->n; i++) {
        snprintf(buf[i], sizeof(buf[i]), "%.200s/%s", fw->cur.dir, h->f[i].name);
        paths[i] = buf[i];
    }
    br_pwfilter *pf = NULL;
    int r = br_pwfilter_open_set(paths, h->n, &pf, NULL, err);
    br_pwfilter_free(pf);
    return r;
}

static int install(bd_follow *fw, const br_sign_key *key, const br_manifest *m, held *h,
                   br_error *err)
{
    br_manifest_plan plan;
    int r = br_manifest_plan_for(m, h->n > 0, h->n ? h->f[0].sha256 : NULL,
                                 h->n ? h->f[h->n - 1].generation : 0, h->published, &plan, err);
    if (r < 0)
        return r;
    if (plan.take_base) {
        h->n = 0;
        if ((r = fetch_member(fw, key, &m->base, true, err)) < 0)
            return r;
        h->f[h->n++] = m->base;
    }
    for (size_t i = plan.first_delta; i < m->n_deltas && h->n < BR_ARRAY_SIZE(h->f); i++) {
        if ((r = fetch_member(fw, key, &m->deltas[i], false, err)) < 0)
            return r;
        h->f[h->n++] = m->deltas[i];
    }
    h->published = m->published;
    return try_set(fw, h, err);
}

/* Files of sets before h (and their .sig): the served state keeps its
 * mappings of them until it is replaced. */
static void remove_old(const char *dir, const held *h)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, "base-", 5) != 0 && strncmp(e->d_name, "delta-", 6) != 0)
            continue;
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".sig") == 0)
            len -= 4;
        bool used = false;
        for (size_t i = 0; !used && i < h->n; i++)
            used = strlen(h->f[i].name) == len && strncmp(h->f[i].name, e->d_name, len) == 0;
        if (!used)
            unlinkat(dirfd(d), e->d_name, 0);
    }
    if (d)
        closedir(d);
}

/* One poll: 1 when a new set was installed, 0 when nothing is new. */
static int poll_once(bd_follow *fw, const br_sign_key *key, br_error *err)
{
    char mpath[4200], spath[4200], surl[4200];
    snprintf(mpath, sizeof(mpath), "%s/manifest.part", fw->cur.dir);
    snprintf(spath, sizeof(spath), "%s/manifest.sig.part", fw->cur.dir);
    snprintf(surl, sizeof(surl), "%s.sig", fw->cur.url);
    br_fetch_result res;
    int r = fetch(fw->cur.url, mpath, fw->val.etag[0] ? &fw->val : NULL, &res,
                  BR_MANIFEST_MAX_BYTES, false, err);
    if (r < 0 || res.status == BR_FETCH_NOT_MODIFIED)
        return r;
    br_fetch_validators got = res.got;
    if ((r = fetch(surl, spath, NULL, &res, BR_MANIFEST_SIG_SIZE, false, err)) < 0)
        return r;
    uint8_t *text = NULL, *sig = NULL;
    size_t len = 0, slen = 0;
    br_manifest m = {0};
    held *h = malloc(sizeof(*h));
    r = h ? br_read_whole(mpath, BR_MANIFEST_MAX_BYTES, &text, &len) : -ENOMEM;
    if (r == 0)
        r = br_read_whole(spath, BR_MANIFEST_SIG_SIZE, &sig, &slen);
    if (r == 0)
        r = br_manifest_verify(key, (const char *)text, len, sig, slen, err);
    if (r == 0)
        r = br_manifest_parse((const char *)text, len, &m, err);
    if (r == 0 && m.kind != fw->sec->filter_kind) /* another section's set */
        r = br_error_set(err, -EINVAL, "a manifest of kind %s, not %s ([%s] follow)",
                         br_filter_kind_name(m.kind), br_filter_kind_name(fw->sec->filter_kind),
                         fw->sec->name);
    if (r == 0) {
        read_held(fw->cur.dir, h);
        r = install(fw, key, &m, h, err);
    }
    char final[4200];
    path_in(fw->cur.dir, "manifest", final, sizeof(final));
    if (r == 0 && (r = br_write_atomic(final, text, len)) == 0 &&
        (r = write_held(fw->cur.dir, h)) == 0) {
        fw->val = got;
        remove_old(fw->cur.dir, h);
        pthread_mutex_lock(&fw->mu);
        fw->published = m.published;
        fw->cycle_s = m.cycle_s;
        pthread_mutex_unlock(&fw->mu);
        r = 1;
    }
    unlink(mpath);
    unlink(spath);
    br_manifest_fini(&m);
    free(text);
    free(sig);
    free(h);
    return r;
}

/* ---- the thread: polls when the loop asks ---- */

/* Take the loop's settings: another manifest URL or directory starts
 * without validators, another pubkey is read again. false: no key. */
static bool take_settings(bd_follow *fw, const where *w)
{
    if (strcmp(w->url, fw->cur.url) != 0 || strcmp(w->dir, fw->cur.dir) != 0) {
        memset(&fw->val, 0, sizeof(fw->val));
        fw->val.last_modified = -1;
    }
    if (!fw->key || strcmp(w->pubkey, fw->cur.pubkey) != 0) {
        br_sign_key_free(fw->key);
        fw->key = NULL;
        br_error err = {{0}};
        if (br_sign_key_load_public(w->pubkey, &fw->key, &err) < 0)
            bd_log(LOG_ERR, "[%s] follow: [%s] pubkey: %s; not polling", fw->sec->name,
                   fw->sec->name, err.text);
    }
    fw->cur = *w;
    return fw->key != NULL;
}

static void *follow_main(void *arg)
{
    bd_follow *fw = arg;
    where *w = malloc(sizeof(*w));
    for (;;) {
        pthread_mutex_lock(&fw->mu);
        while (!fw->stop && !fw->poll_asked)
            pthread_cond_wait(&fw->cv, &fw->mu);
        bool stop = fw->stop;
        fw->poll_asked = false;
        if (w)
            *w = fw->want;
        pthread_mutex_unlock(&fw->mu);
        if (stop)
            break;
        if (!w || !take_settings(fw, w))
            continue;
        br_error err = {{0}};
        int r = poll_once(fw, fw->key, &err);
        if (r < 0)
            bd_log(LOG_WARNING, "[%s] follow %s: refused, the %s filter in use stays: %s",
                   fw->sec->name, fw->cur.url, fw->sec->what,
                   err.text[0] ? err.text : strerror(-r));
        else if (r > 0) {
            bd_log(LOG_INFO, "[%s] follow: a new set in %s; reloading", fw->sec->name, fw->cur.dir);
            kill(getpid(), SIGHUP); /* the ordinary reload swaps the new set in */
        }
    }
    free(w);
    br_sign_key_free(fw->key);
    fw->key = NULL;
    return NULL;
}

/* ---- the schedule, on the loop ---- */

static int64_t now_ms(void)
{
    struct timespec ts;
    br_clock_now_real_ts(&ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void ask_poll(bd_follow *fw)
{
    pthread_mutex_lock(&fw->mu);
    fw->poll_asked = true;
    pthread_cond_signal(&fw->cv);
    pthread_mutex_unlock(&fw->mu);
    fw->last_poll_ms = now_ms();
}

/* Arm the timer for the next poll: the first after turning on at a random
 * phase of the interval (hosts started together spread out), then
 * br_manifest_next_poll_ms. */
static void arm(bd_follow *fw)
{
    br_manifest_when w = {
        .last_poll_ms = fw->last_poll_ms, .interval_ms = fw->interval_ms, .lag_draw = fw->lag_draw};
    pthread_mutex_lock(&fw->mu);
    w.published = fw->published;
    w.cycle_s = fw->cycle_s;
    pthread_mutex_unlock(&fw->mu);
    int64_t at = br_manifest_next_poll_ms(&w);
    if (fw->first && w.cycle_s <= 0) {
        uint64_t phase = 0;
        br_random_bytes(&phase, sizeof(phase));
        at = fw->last_poll_ms + (int64_t)(phase % (uint64_t)fw->interval_ms);
    }
    fw->first = false;
    /* never more than an interval and a cycle away: a wall clock stepped
     * back does not hold the polls off by the step */
    int64_t ms = BR_MAX(at - now_ms(), (int64_t)0);
    ms = BR_MIN(ms, fw->interval_ms + BR_MAX(w.cycle_s, (int64_t)0) * 1000);
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    evtimer_add(fw->timer, &tv);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bd_follow *fw = arg;
    ask_poll(fw);
    arm(fw);
}

bd_follow *bd_follow_new(struct event_base *base, bd_kind k)
{
    const section *sec = section_of(k);
    bd_follow *fw = sec ? calloc(1, sizeof(*fw)) : NULL;
    if (!fw)
        return NULL;
    fw->sec = sec;
    fw->timer = evtimer_new(base, timer_cb, fw);
    if (!fw->timer) {
        free(fw);
        return NULL;
    }
    fw->published = -1;
    br_random_bytes(&fw->lag_draw, sizeof(fw->lag_draw));
    pthread_mutex_init(&fw->mu, NULL);
    pthread_cond_init(&fw->cv, NULL);
    return fw;
}

static bool same_where(const where *a, const where *b)
{
    return !strcmp(a->dir, b->dir) && !strcmp(a->url, b->url) && !strcmp(a->pubkey, b->pubkey);
}

static void follow_off(bd_follow *fw)
{
    if (fw->on)
        bd_log(LOG_INFO, "[%s] follow: off; the %s filter is what [%s] filter names", fw->sec->name,
               fw->sec->what, fw->sec->name);
    fw->on = false;
    evtimer_del(fw->timer);
    pthread_mutex_lock(&fw->mu);
    fw->poll_asked = false;
    pthread_mutex_unlock(&fw->mu);
}

void bd_follow_apply(bd_follow *fw, const breachd_config *cfg)
{
    if (!fw)
        return;
    bd_follow_config c;
    bd_follow_config_of(cfg, fw->sec->kind, &c);
    if (!c.url[0]) {
        follow_off(fw);
        return;
    }
    where w;
    snprintf(w.dir, sizeof(w.dir), "%s", c.dir);
    snprintf(w.url, sizeof(w.url), "%s", c.url);
    snprintf(w.pubkey, sizeof(w.pubkey), "%s", c.pubkey);
    pthread_mutex_lock(&fw->mu);
    bool moved = !fw->on || !same_where(&w, &fw->want);
    fw->want = w;
    pthread_mutex_unlock(&fw->mu);
    fw->interval_ms = (c.interval_s > 0 ? c.interval_s : 30) * 1000;
    if (!fw->started) {
        fw->started = pthread_create(&fw->thread, NULL, follow_main, fw) == 0;
        if (!fw->started) {
            bd_log(LOG_ERR, "[%s] follow: cannot start its thread; not following", fw->sec->name);
            return;
        }
    }
    evtimer_del(fw->timer);
    if (moved) { /* turned on, or elsewhere: a poll now */
        mkdir(w.dir, 0755);
        fw->first = !fw->on;
        fw->on = true;
        ask_poll(fw);
    }
    arm(fw); /* another interval counts from the last poll */
}

void bd_follow_free(bd_follow *fw)
{
    if (!fw)
        return;
    event_free(fw->timer);
    if (fw->started) {
        pthread_mutex_lock(&fw->mu);
        fw->stop = true;
        pthread_cond_signal(&fw->cv);
        pthread_mutex_unlock(&fw->mu);
        pthread_join(fw->thread, NULL);
    }
    pthread_mutex_destroy(&fw->mu);
    pthread_cond_destroy(&fw->cv);
    free(fw);
}
