/* SPDX-License-Identifier: MIT */
/* breachctl publish: the configuration and the feeds (publish.h). A feed
 * is polled with a conditional GET (libcurl, lib/download/fetch_file.h);
 * a body that fails, is not a feed, or shrinks past max_shrink keeps the
 * feed's last good entries (docs/fleet.md, "Bad feeds"). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "breachctl.h"
#include "conf_values.h"
#include "core/hash.h"
#include "core/util.h"
#include "filter_url_feeds.h"
#include "publish.h"
#include "url/url_feed.h"

typedef struct conf_ctx {
    pub_conf *c;
    char err[700];
} conf_ctx;

static int set_publish(conf_ctx *x, const char *name, const char *value)
{
    pub_conf *c = x->c;
    br_error e = {{0}};
    int64_t pct;
    if (strcmp(name, "output") == 0)
        snprintf(c->output, sizeof(c->output), "%s", value);
    else if (strcmp(name, "key") == 0)
        snprintf(c->key, sizeof(c->key), "%s", value);
    else if (strcmp(name, "kind") == 0) {
        br_filter_kind kind;
        if (br_filter_kind_from_name(value, &kind) < 0)
            snprintf(x->err, sizeof(x->err),
                     "kind = %s: expected url-sha256, password-sha1 or password-ntlm", value);
        c->kind = kind;
    } else if (strcmp(name, "interval") == 0) {
        if (bd_conf_parse_duration_s(value, 1, 86400, &c->interval_s, &e) < 0)
            snprintf(x->err, sizeof(x->err), "interval: %s", e.text);
    } else if (strcmp(name, "keep") == 0) {
        if (bd_conf_parse_duration_s(value, 60, 90 * 86400, &c->keep_s, &e) < 0)
            snprintf(x->err, sizeof(x->err), "keep: %s", e.text);
    } else if (strcmp(name, "max_shrink") == 0) {
        char *end;
        pct = strtoll(value, &end, 10);
        if (end == value || strcmp(end, "%") != 0 || pct < 1 || pct > 100)
            snprintf(x->err, sizeof(x->err), "max_shrink = %s: expected a share 1%%..100%%", value);
        else
            c->max_shrink_pct = (unsigned)pct;
    } else if (strcmp(name, "quick_filter") == 0) {
        if (strcmp(value, "yes") != 0 && strcmp(value, "no") != 0)
            snprintf(x->err, sizeof(x->err), "quick_filter = %s: expected yes or no", value);
        c->quick_filter = strcmp(value, "yes") == 0;
    } else if (strcmp(name, "sha256_keys") == 0) {
        if (strcmp(value, "yes") != 0 && strcmp(value, "no") != 0)
            snprintf(x->err, sizeof(x->err), "sha256_keys = %s: expected yes or no", value);
        c->sha256_keys = strcmp(value, "yes") == 0;
    } else
        snprintf(x->err, sizeof(x->err), "[publish] %s: unknown key", name);
    return x->err[0] ? 0 : 1;
}

static int set_feed(conf_ctx *x, pub_feed *f, const char *name, const char *value)
{
    br_error e = {{0}};
    br_feed_format fmt;
    if (strcmp(name, "url") == 0)
        snprintf(f->url, sizeof(f->url), "%s", value);
    else if (strcmp(name, "format") == 0) {
        if (br_feed_format_from_name(value, &fmt) < 0)
            snprintf(x->err, sizeof(x->err), "format = %s: not a feed format", value);
        snprintf(f->format, sizeof(f->format), "%s", value);
    } else if (strcmp(name, "category") == 0) {
        if (!br_feed_category_valid(value))
            snprintf(x->err, sizeof(x->err), "category = %s: not a category name", value);
        snprintf(f->category, sizeof(f->category), "%s", value);
    } else if (strcmp(name, "interval") == 0) {
        if (bd_conf_parse_duration_s(value, 1, 7 * 86400, &f->interval_s, &e) < 0)
            snprintf(x->err, sizeof(x->err), "interval: %s", e.text);
    } else
        snprintf(x->err, sizeof(x->err), "[feed %s] %s: unknown key", f->name, name);
    return x->err[0] ? 0 : 1;
}

/* [corpus NAME] input = a HIBP corpus file or directory (the forms of
 * breachctl filter build --input). */
static int set_corpus(conf_ctx *x, pub_feed *f, const char *name, const char *value)
{
    if (strcmp(name, "input") == 0) {
        snprintf(f->url, sizeof(f->url), "%s", value);
        snprintf(f->format, sizeof(f->format), "corpus");
    } else
        snprintf(x->err, sizeof(x->err), "[corpus %s] %s: unknown key", f->name, name);
    return x->err[0] ? 0 : 1;
}

static pub_feed *feed_named(conf_ctx *x, const char *name)
{
    pub_conf *c = x->c;
    for (size_t i = 0; i < c->n_feeds; i++)
        if (strcmp(c->feeds[i].name, name) == 0)
            return &c->feeds[i];
    if (!br_manifest_feed_name_ok(name)) {
        snprintf(x->err, sizeof(x->err), "[feed %s]: a feed name is [a-z0-9_], at most 64", name);
        return NULL;
    }
    pub_feed *v = realloc(c->feeds, (c->n_feeds + 1) * sizeof(*v));
    if (!v)
        return NULL;
    c->feeds = v;
    pub_feed *f = &v[c->n_feeds++];
    memset(f, 0, sizeof(*f));
    snprintf(f->name, sizeof(f->name), "%s", name);
    snprintf(f->format, sizeof(f->format), "auto");
    f->interval_s = 300;
    f->last_success = -1;
    f->val.last_modified = -1;
    return f;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
    conf_ctx *x = user;
    if (strcmp(section, "publish") == 0)
        return set_publish(x, name, value);
    if (strncmp(section, "feed ", 5) == 0) {
        pub_feed *f = feed_named(x, section + 5);
        return f ? set_feed(x, f, name, value) : 0;
    }
    if (strncmp(section, "corpus ", 7) == 0) {
        pub_feed *f = feed_named(x, section + 7);
        return f ? set_corpus(x, f, name, value) : 0;
    }
    snprintf(x->err, sizeof(x->err), "[%s]: unknown section", section);
    return 0;
}

int pub_conf_read(const char *path, pub_conf *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->path, sizeof(c->path), "%s", path);
    c->interval_s = 30;
    c->keep_s = 86400;
    c->max_shrink_pct = 50;
    c->quick_filter = true;
    c->kind = BR_KIND_URL_SHA256;
    conf_ctx x = {.c = c};
    int line = ini_parse(path, on_key, &x);
    if (line < 0) {
        ctl_err("publish: %s: %s", path, strerror(errno));
        return -1;
    }
    if (line > 0) {
        ctl_err("publish: %s:%d: %s", path, line, x.err[0] ? x.err : "syntax error");
        pub_conf_free(c);
        return -1;
    }
    const char *missing = !c->output[0] ? "[publish] output" : !c->key[0] ? "[publish] key" : NULL;
    bool pw = c->kind != BR_KIND_URL_SHA256;
    for (size_t i = 0; !missing && i < c->n_feeds; i++)
        if (pw != (strcmp(c->feeds[i].format, "corpus") == 0))
            missing = pw ? "[feed NAME] sections only for kind = url-sha256"
                         : "[corpus NAME] sections only for a password kind";
        else if (!c->feeds[i].url[0] || (!pw && !c->feeds[i].category[0]))
            missing = pw ? "input in every [corpus NAME]" : "url and category in every [feed NAME]";
    if (missing || c->n_feeds == 0) {
        ctl_err("publish: %s: %s", path,
                missing ? missing
                : pw    ? "no [corpus NAME] section"
                        : "no [feed NAME] section");
        pub_conf_free(c);
        return -1;
    }
    snprintf(c->state, sizeof(c->state), "%s.state", c->output);
    return 0;
}

void pub_conf_free(pub_conf *c)
{
    for (size_t i = 0; i < c->n_feeds; i++) {
        free(c->feeds[i].keys);
        free(c->feeds[i].quick);
    }
    free(c->feeds);
    c->feeds = NULL;
}

/* ---- kept state: STATE/feed-NAME.keys (sorted keys), .meta ---- */

static void state_path(const pub_conf *c, const pub_feed *f, const char *ext, char *out, size_t len)
{
    snprintf(out, len, "%s/feed-%s.%s", c->state, f->name, ext);
}

/* STATE/feed-NAME.quick: the SHA-256 of the .keys file's bytes, then the
 * keys' XXH3s in their order. The two files are replaced one after the
 * other; the hash ties the XXH3s to the keys they were made with, so a
 * crash between the two leaves them unknown (downloaded again), never
 * another key's: a wrong XXH3 would be a listed name let through. */
static int save_quick(const char *path, const pub_feed *f)
{
    size_t len = BR_SHA256_LEN + f->n * sizeof(uint64_t);
    _cleanup_free_ uint8_t *buf = malloc(len);
    if (!buf)
        return -ENOMEM;
    int r = br_sha256(f->keys, f->n * sizeof(pub_key), buf);
    memcpy(buf + BR_SHA256_LEN, f->quick, f->n * sizeof(uint64_t));
    return r < 0 ? r : br_write_atomic(path, buf, len);
}

static void load_quick(const char *path, pub_feed *f)
{
    _cleanup_free_ uint8_t *data = NULL;
    size_t len = 0;
    uint8_t sum[BR_SHA256_LEN];
    if (br_read_whole(path, 1u << 30, &data, &len) < 0 ||
        len != BR_SHA256_LEN + f->n * sizeof(uint64_t) ||
        br_sha256(f->keys, f->n * sizeof(pub_key), sum) < 0 ||
        memcmp(sum, data, BR_SHA256_LEN) != 0)
        return;
    f->quick = malloc(f->n * sizeof(uint64_t) + 1);
    if (f->quick)
        memcpy(f->quick, data + BR_SHA256_LEN, f->n * sizeof(uint64_t));
}

static int save_feed(const pub_conf *c, const pub_feed *f)
{
    char path[4400], meta[600];
    state_path(c, f, "keys", path, sizeof(path));
    int r = br_write_atomic(path, f->keys, f->n * sizeof(pub_key));
    state_path(c, f, "quick", path, sizeof(path));
    if (r >= 0 && f->quick)
        r = save_quick(path, f);
    else if (r >= 0 && unlink(path) < 0 && errno != ENOENT)
        r = -errno;
    int n = snprintf(meta, sizeof(meta), "%" PRId64 " %" PRId64 " %u %" PRIu64 " %" PRId64 "\n%s\n",
                     f->last_success, f->last_poll, f->labels, f->holds, f->val.last_modified,
                     f->val.etag[0] ? f->val.etag : "-");
    state_path(c, f, "meta", path, sizeof(path));
    return r < 0 ? r : br_write_atomic(path, meta, (size_t)n);
}

static void load_feed(const pub_conf *c, pub_feed *f)
{
    char path[4400];
    state_path(c, f, "meta", path, sizeof(path));
    FILE *m = fopen(path, "re");
    if (!m)
        return;
    char etag[300] = "";
    if (fscanf(m, "%" SCNd64 " %" SCNd64 " %u %" SCNu64 " %" SCNd64 " %299s", &f->last_success,
               &f->last_poll, &f->labels, &f->holds, &f->val.last_modified, etag) == 6 &&
        strcmp(etag, "-") != 0)
        snprintf(f->val.etag, sizeof(f->val.etag), "%s", etag);
    fclose(m);
    state_path(c, f, "keys", path, sizeof(path));
    size_t len = 0;
    uint8_t *data = NULL;
    if (br_read_whole(path, 1u << 30, &data, &len) == 0 && len % sizeof(pub_key) == 0) {
        f->keys = (pub_key *)data;
        f->n = len / sizeof(pub_key);
    } else {
        free(data);
        return;
    }
    /* the XXH3s of these keys; anything else (none: an older publisher's
     * state) leaves them unknown, and the next poll downloads the body */
    state_path(c, f, "quick", path, sizeof(path));
    load_quick(path, f);
}

int pub_feeds_load(pub_conf *c)
{
    if (mkdir(c->state, 0755) < 0 && errno != EEXIST) {
        ctl_err("publish: %s: %s", c->state, strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < c->n_feeds; i++)
        load_feed(c, &c->feeds[i]);
    return 0;
}

/* ---- a poll ---- */

static void hold(pub_feed *f, const char *what, const char *detail)
{
    f->held = true;
    f->holds++;
    /* what, then as much of detail as fits: the reason is one field of the
     * manifest's feed line, cut at its size (copied, not formatted: GCC -O3
     * refuses a snprintf that may cut) */
    size_t a = strnlen(what, sizeof(f->reason) - 1);
    memcpy(f->reason, what, a);
    size_t b = strnlen(detail, sizeof(f->reason) - 1 - a);
    memcpy(f->reason + a, detail, b);
    f->reason[a + b] = '\0';
    for (char *p = f->reason; *p; p++)
        if (*p == '\n')
            *p = ' ';
    fprintf(stderr,
            "publish: feed %s: %s; it keeps its %zu last good entries (held %" PRIu64 " times)\n",
            f->name, f->reason, f->n, f->holds);
}

/* The downloaded body as a feed: its sorted distinct keys, and their
 * expressions' XXH3 (*quick, NULL when the feed set cannot say). */
static int parse_body(const pub_feed *f, const char *path, pub_key **keys, uint64_t **quick,
                      size_t *n, unsigned *labels, br_error *err)
{
    _cleanup_(br_feedset_freep) br_feedset *fs = NULL;
    br_feed_opts o = {.format = BR_FEED_AUTO};
    if (br_feedset_new(&fs) < 0 || br_feed_format_from_name(f->format, &o.format) < 0)
        return -ENOMEM;
    int r = read_feed_file(fs, path, f->category, &o, NULL, err); /* .gz, .bz2 too */
    if (r < 0)
        return r;
    br_feedset_stats st;
    br_feedset_finish(fs, &st);
    *n = br_feedset_count(fs);
    *keys = malloc((*n + 1) * sizeof(pub_key));
    *quick = br_feedset_has_quick(fs) ? malloc((*n + 1) * sizeof(uint64_t)) : NULL;
    if (!*keys || (br_feedset_has_quick(fs) && !*quick))
        return -ENOMEM;
    const br_feed_entry *e = br_feedset_entries(fs);
    for (size_t i = 0; i < *n; i++) {
        memcpy((*keys)[i], e[i].hash, sizeof(pub_key));
        if (*quick)
            (*quick)[i] = e[i].quick;
    }
    *labels = br_feedset_max_domain_labels(fs);
    return 0;
}

bool pub_feed_poll(const pub_conf *c, pub_feed *f, int64_t now)
{
    char path[4400];
    state_path(c, f, "download", path, sizeof(path));
    f->last_poll = now;
    br_fetch_opts o = {.url = f->url,
                       /* unconditional while the entries' XXH3s are unknown */
                       .have =
                           (f->n || f->last_success >= 0) && (f->quick || !f->n) ? &f->val : NULL,
                       .connect_timeout_ms = 10000,
                       .stall_timeout_ms = 30000,
                       .max_bytes = UINT64_C(1) << 30};
    br_fetch_result res = {0};
    br_error err = {{0}};
    bool changed = false;
    pub_key *keys = NULL;
    uint64_t *quick = NULL;
    size_t n = 0;
    unsigned labels = 0;
    if (br_fetch_file(path, &o, &res, &err) < 0) {
        hold(f, "fetch failed: ", err.text);
    } else if (res.status == BR_FETCH_NOT_MODIFIED) {
        f->held = false;
        f->last_success = now;
    } else if (parse_body(f, path, &keys, &quick, &n, &labels, &err) < 0) {
        hold(f, "not a feed: ", err.text[0] ? err.text : "out of memory");
    } else if (f->n && n * 100 < f->n * (100 - (uint64_t)c->max_shrink_pct)) {
        char d[120];
        snprintf(d, sizeof(d), "%zu entries, down from %zu: shrank more than max_shrink = %u%%", n,
                 f->n, c->max_shrink_pct);
        hold(f, "", d);
    } else {
        changed = n != f->n || (n && memcmp(keys, f->keys, n * sizeof(pub_key)) != 0);
        free(f->keys);
        free(f->quick);
        f->keys = BR_TAKE_PTR(keys);
        f->quick = BR_TAKE_PTR(quick);
        f->n = n;
        f->labels = labels;
        f->val = res.got;
        f->held = false;
        f->last_success = now;
    }
    free(keys);
    free(quick);
    unlink(path);
    if (save_feed(c, f) < 0)
        fprintf(stderr, "publish: feed %s: cannot save its state under %s\n", f->name, c->state);
    return changed;
}
