/* SPDX-License-Identifier: MIT */
/* breachctl publish --config FILE [--once]: every cycle, poll the feeds
 * that are due, and when the union of their last good entries changed,
 * write a signed delta of the changes (additions, and removals in the
 * exact table) or, once the deltas pass a share of the base, a new base;
 * then a signed manifest naming the base, the deltas since it and each
 * feed's last success (docs/fleet.md, "Publishing and following"). The
 * output directory is served as static files. */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "builder/pwfilter_build.h"
#include "breachctl.h"
#include "core/clock.h"
#include "core/hash.h"
#include "core/util.h"
#include "ctl_opts.h"
#include "filter/filter_file.h"
#include "filter/filter_sign.h"
#include "filter/pwfilter.h"
#include "publish.h"

/* A new base once the deltas since the base hold this share of its bytes. */
#define PUB_BASE_SHARE_PCT 25
/* An unchanged manifest is written again after this long when a feed
 * succeeded since: the hosts' feed ages (and their URL filter's age) stay
 * the age of the data, under breachctl health's 15-minute warning
 * (docs/fleet.md). */
#define PUB_REFRESH_S 300

typedef struct pub_entry {
    pub_key key;
    uint64_t quick; /* its expression's XXH3, where every feed's is known */
    uint8_t code;
} pub_entry;

/* What is published: the set (sorted), its category table, the manifest. */
typedef struct pub_state {
    br_category_table cats;
    pub_entry *set;
    size_t n;
    br_manifest m;
    bool have_manifest;
    bool announce; /* the first cycle of a service: its period in a manifest */
} pub_state;

static const ctl_usage publish_usage_rows[] = {
    {"publish", "--config FILE [--once]",
     "Publishes an offline URL filter for hosts that follow it ([urls] follow): polls the feeds "
     "of FILE, writes signed deltas (additions and removals), bases and a signed manifest into "
     "the output directory, every interval; --once: one cycle with every feed polled. With a "
     "password kind, [corpus NAME] inputs give offline password bases and deltas."},
};

void cmd_publish_summary(FILE *out)
{
    ctl_usage_summary(out, publish_usage_rows, BR_ARRAY_SIZE(publish_usage_rows));
}

static void publish_usage(FILE *out)
{
    ctl_usage_command(out, publish_usage_rows, BR_ARRAY_SIZE(publish_usage_rows), "publish");
}

static int cmp_entry(const void *a, const void *b)
{
    return memcmp(a, b, sizeof(pub_key));
}

/* ---- the state of what was published: STATE/set (33-byte records) ---- */

static void set_path(const pub_conf *c, char *out, size_t len)
{
    snprintf(out, len, "%s/set", c->state);
}

static int save_set(const pub_conf *c, const pub_state *st)
{
    char path[4400];
    set_path(c, path, sizeof(path));
    FILE *f = fopen(path, "we");
    if (!f)
        return -errno;
    fprintf(f, "%u\n", st->cats.count);
    for (unsigned i = 0; i < st->cats.count; i++)
        fprintf(f, "%s\n", st->cats.names[i]);
    for (size_t i = 0; i < st->n; i++) {
        fwrite(st->set[i].key, sizeof(pub_key), 1, f);
        fputc(st->set[i].code, f);
    }
    return fclose(f) == 0 ? 0 : -EIO;
}

static void load_set(const pub_conf *c, pub_state *st)
{
    char path[4400], name[80];
    set_path(c, path, sizeof(path));
    FILE *f = fopen(path, "re");
    unsigned n = 0;
    if (!f)
        return;
    /* lines read whole: a scanf "\n" would also eat the first key's
     * leading bytes that look like white space */
    if (fgets(name, sizeof(name), f) && sscanf(name, "%u", &n) == 1 && n <= BR_CATEGORY_MAX)
        for (unsigned i = 0; i < n && fgets(name, sizeof(name), f); i++) {
            name[strcspn(name, "\n")] = '\0';
            br_category_code(&st->cats, name);
        }
    pub_entry e;
    while (fread(e.key, sizeof(pub_key), 1, f) == 1 && fread(&e.code, 1, 1, f) == 1) {
        pub_entry *v = realloc(st->set, (st->n + 1) * sizeof(*v));
        if (!v)
            break;
        st->set = v;
        st->set[st->n++] = e;
    }
    fclose(f);
}

static void load_manifest(const pub_conf *c, pub_state *st)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/manifest", c->output);
    uint8_t *text = NULL;
    size_t len = 0;
    br_error err = {{0}};
    if (br_read_whole(path, BR_MANIFEST_MAX_BYTES, &text, &len) == 0)
        st->have_manifest = br_manifest_parse((const char *)text, len, &st->m, &err) == 0;
    free(text);
}

/* ---- the union of the feeds' last good entries ---- */

typedef struct tagged {
    pub_key key;
    uint64_t quick;
    uint32_t feed;
} tagged;

static int cmp_tagged(const void *a, const void *b)
{
    const tagged *x = a, *y = b;
    int r = memcmp(x->key, y->key, sizeof(pub_key));
    return r ? r : (x->feed > y->feed) - (x->feed < y->feed);
}

/* Every feed's entries, the first feed's category for a key listed twice. */
static int union_of(const pub_conf *c, pub_state *st, pub_entry **out, size_t *n)
{
    size_t total = 0;
    for (size_t i = 0; i < c->n_feeds; i++)
        total += c->feeds[i].n;
    tagged *t = malloc((total + 1) * sizeof(*t));
    *out = malloc((total + 1) * sizeof(pub_entry));
    if (!t || !*out) {
        free(t);
        return -ENOMEM;
    }
    size_t k = 0;
    for (uint32_t i = 0; i < c->n_feeds; i++)
        for (size_t j = 0; j < c->feeds[i].n; j++) {
            memcpy(t[k].key, c->feeds[i].keys[j], sizeof(pub_key));
            t[k].quick = c->feeds[i].quick ? c->feeds[i].quick[j] : 0;
            t[k++].feed = i;
        }
    qsort(t, total, sizeof(*t), cmp_tagged);
    *n = 0;
    for (size_t i = 0; i < total; i++) {
        if (*n && memcmp((*out)[*n - 1].key, t[i].key, sizeof(pub_key)) == 0)
            continue;
        memcpy((*out)[*n].key, t[i].key, sizeof(pub_key));
        (*out)[*n].quick = t[i].quick;
        (*out)[(*n)++].code = (uint8_t)br_category_code(&st->cats, c->feeds[t[i].feed].category);
    }
    free(t);
    return 0;
}

/* ---- writing a file: a base of cur, or a delta of the changes ---- */

typedef struct changes {
    pub_entry *add; /* new keys, and keys whose category changed */
    pub_key *removed;
    size_t n_add, n_removed;
} changes;

static int diff(const pub_state *st, const pub_entry *cur, size_t n, changes *ch)
{
    ch->add = malloc((n + 1) * sizeof(pub_entry));
    ch->removed = malloc((st->n + 1) * sizeof(pub_key));
    if (!ch->add || !ch->removed)
        return -ENOMEM;
    size_t i = 0, j = 0;
    while (i < n || j < st->n) {
        int r = i == n ? 1 : j == st->n ? -1 : cmp_entry(cur[i].key, st->set[j].key);
        if (r < 0 || (r == 0 && cur[i].code != st->set[j].code))
            ch->add[ch->n_add++] = cur[i];
        else if (r > 0)
            memcpy(ch->removed[ch->n_removed++], st->set[j].key, sizeof(pub_key));
        i += r <= 0;
        j += r >= 0;
    }
    return 0;
}

static bool is_allow(const pub_state *st, uint8_t code)
{
    const char *name = br_category_name(&st->cats, code);
    return name && strcmp(name, BR_URL_ALLOW_CATEGORY) == 0;
}

/* Whether the files get a quick filter (key encoding v6, or v5 with
 * sha256_keys): asked for, and
 * every feed's expressions' XXH3 known (not while a feed's state is an
 * older publisher's, until its next download). */
static bool with_quick(const pub_conf *c)
{
    for (size_t i = 0; i < c->n_feeds; i++)
        if (c->feeds[i].n && !c->feeds[i].quick)
            return false;
    return c->quick_filter;
}

/* Build entries e[0..n) (fingerprints, or the exact table for allow) and
 * removals into path. Key encoding v6: fingerprints keyed by e's XXH3s,
 * the quick filter holds its allow entries'; v5: keyed by SHA-256, the
 * quick filter holds e's XXH3s, what the file holds. A removal needs no
 * quick key: it only takes away what an earlier member lists. */
static int build_file(const pub_conf *c, const pub_state *st, const char *path, uint64_t gen,
                      const pub_entry *e, size_t n, const changes *rm, const uint8_t *base_body,
                      br_error *err)
{
    _cleanup_(br_keyset_freep) br_keyset *ks = NULL;
    _cleanup_free_ pub_key *allow = malloc((n + 1) * sizeof(pub_key));
    _cleanup_free_ uint64_t *quick = with_quick(c) ? malloc((n + 1) * sizeof(uint64_t)) : NULL;
    size_t n_allow = 0, n_quick = 0;
    bool xxh3 = quick && !c->sha256_keys;
    int r = allow && (quick || !with_quick(c)) ? br_keyset_new(NULL, 0, &ks, err) : -ENOMEM;
    for (size_t i = 0; r >= 0 && i < n; i++) {
        bool allowed = is_allow(st, e[i].code);
        if (quick && (allowed || !xxh3))
            quick[n_quick++] = e[i].quick;
        if (allowed)
            memcpy(allow[n_allow++], e[i].key, sizeof(pub_key));
        else
            r = br_keyset_add_counted(ks, xxh3 ? e[i].quick : br_hash_key64(e[i].key), e[i].code,
                                      err);
    }
    unsigned labels = 0;
    for (size_t i = 0; i < c->n_feeds; i++)
        labels = BR_MAX(labels, c->feeds[i].labels);
    br_pwfilter_build_opts o = {.kind = BR_KIND_URL_SHA256,
                                .generation = gen,
                                .source = "breachctl publish",
                                .build_time = -1,
                                .categories = &st->cats,
                                .max_domain_labels = labels,
                                .base_body_sha256 = base_body,
                                .allow = (const uint8_t(*)[32])allow,
                                .n_allow = n_allow,
                                .removed = rm ? (const uint8_t(*)[32])rm->removed : NULL,
                                .n_removed = rm ? rm->n_removed : 0,
                                .quick = quick,
                                .n_quick = n_quick,
                                .xxh3_keys = xxh3};
    return r < 0 ? r : br_pwfilter_build(ks, &o, path, NULL, err);
}

/* NAME.gz beside a base or delta when gzip makes it smaller, for a server
 * that sends it to clients taking gzip (nginx gzip_static; docs/fleet.md):
 * a delta's 4 KiB container header and its exact table compress, the
 * fingerprints hardly. Best effort: without it the file is sent whole. */
static void write_gz(const char *path, const uint8_t *data, size_t len)
{
    uLongf cap = compressBound((uLong)len) + 32, n = cap;
    _cleanup_free_ uint8_t *out = malloc(cap);
    z_stream z = {0};
    if (!out || deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        return;
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int r = deflate(&z, Z_FINISH);
    n = z.total_out;
    deflateEnd(&z);
    char gz[4400];
    size_t pl = strlen(path);
    if (r != Z_STREAM_END || n >= len || pl + 4 > sizeof(gz))
        return;
    memcpy(gz, path, pl);
    memcpy(gz + pl, ".gz", 4);
    br_write_atomic(gz, out, n);
}

/* Sign path (path.sig), write path.gz, and describe it for the manifest. */
int pub_sign_file(const br_sign_key *key, const char *dir, const char *name, uint64_t gen,
                  br_manifest_file *mf, br_error *err)
{
    char path[4400];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    br_filter_header h;
    uint8_t sig[BR_SIG_SIZE];
    int r = br_filter_header_read(path, &h);
    if (r < 0)
        return br_error_set(err, r, "%s: %s", path, strerror(-r));
    if ((r = br_filter_sign(key, &h, sig, err)) < 0 ||
        (r = br_filter_sig_write(path, sig, err)) < 0)
        return r;
    uint8_t *data = NULL;
    size_t len = 0;
    if ((r = br_read_whole(path, SIZE_MAX / 2, &data, &len)) < 0)
        return br_error_set(err, r, "%s: %s", path, strerror(-r));
    br_sha256(data, len, mf->sha256);
    write_gz(path, data, len);
    free(data);
    snprintf(mf->name, sizeof(mf->name), "%.64s", name);
    mf->generation = gen;
    mf->bytes = len;
    return 0;
}

/* The body SHA-256 of the newest file of the manifest: what a delta names. */
static int last_body(const pub_conf *c, const br_manifest *m, uint8_t body[32])
{
    const br_manifest_file *f = m->n_deltas ? &m->deltas[m->n_deltas - 1] : &m->base;
    char path[4400];
    snprintf(path, sizeof(path), "%s/%s", c->output, f->name);
    br_filter_header h;
    int r = br_filter_header_read(path, &h);
    if (r == 0)
        memcpy(body, h.body_sha256, 32);
    return r;
}

bool pub_want_base(const br_manifest *m)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < m->n_deltas; i++)
        bytes += m->deltas[i].bytes;
    return bytes * 100 > m->base.bytes * PUB_BASE_SHARE_PCT;
}

/* Write generation gen: a base of cur, or a delta of ch; updates st->m. */
static int write_generation(const pub_conf *c, pub_state *st, const br_sign_key *key, uint64_t gen,
                            const pub_entry *cur, size_t n, const changes *ch, br_error *err)
{
    bool base = !st->have_manifest || pub_want_base(&st->m);
    char name[80], path[4400];
    snprintf(name, sizeof(name), "%s-%" PRIu64 ".bfuse", base ? "base" : "delta", gen);
    snprintf(path, sizeof(path), "%s/%s", c->output, name);
    uint8_t body[32];
    int r = base ? 0 : last_body(c, &st->m, body);
    if (r < 0)
        return br_error_set(err, r, "the newest published file: %s", strerror(-r));
    r = base ? build_file(c, st, path, gen, cur, n, NULL, NULL, err)
             : build_file(c, st, path, gen, ch->add, ch->n_add, ch, body, err);
    br_manifest_file mf;
    if (r >= 0)
        r = pub_sign_file(key, c->output, name, gen, &mf, err);
    if (r < 0)
        return r;
    if (base) {
        free(st->m.deltas);
        st->m.deltas = NULL;
        st->m.n_deltas = 0;
        st->m.base = mf;
    } else {
        br_manifest_file *v = realloc(st->m.deltas, (st->m.n_deltas + 1) * sizeof(*v));
        if (!v)
            return -ENOMEM;
        st->m.deltas = v;
        v[st->m.n_deltas++] = mf;
    }
    st->m.generation = gen;
    fprintf(stderr,
            "publish: generation %" PRIu64 ": %s, %zu added, %zu removed, %" PRIu64 " bytes\n", gen,
            name, base ? n : ch->n_add, base ? (size_t)0 : ch->n_removed, mf.bytes);
    return 0;
}

/* path's mtime after its previous one (old_mtime), in whole seconds:
 * nginx's ETag and Last-Modified are the mtime in seconds (and the size),
 * so two manifests of one second would look the same to a host's
 * If-None-Match. */
static void later_mtime(const char *path, time_t old_mtime)
{
    time_t t = BR_MAX((time_t)br_clock_now_real(), old_mtime + 1);
    struct timespec ts[2] = {{.tv_sec = t}, {.tv_sec = t}};
    utimensat(AT_FDCWD, path, ts, 0);
}

int pub_write_manifest(const pub_conf *c, br_manifest *m, const br_sign_key *key, int64_t now,
                       br_error *err)
{
    m->kind = c->kind;
    m->published = BR_MAX(now, m->published + 1); /* strictly increasing */
    free(m->feeds);
    m->feeds = calloc(c->n_feeds, sizeof(*m->feeds));
    if (!m->feeds)
        return -ENOMEM;
    m->n_feeds = c->n_feeds;
    for (size_t i = 0; i < c->n_feeds; i++) {
        const pub_feed *f = &c->feeds[i];
        br_manifest_feed *x = &m->feeds[i];
        snprintf(x->name, sizeof(x->name), "%s", f->name);
        x->last_success = f->last_success;
        x->entries = f->n;
        x->held = f->held;
        snprintf(x->reason, sizeof(x->reason), "%s", f->reason);
    }
    char *text = NULL, path[4400];
    size_t len = 0;
    uint8_t sig[BR_MANIFEST_SIG_SIZE];
    int r = br_manifest_format(m, &text, &len);
    if (r == 0)
        r = br_manifest_sign(key, text, len, sig, err);
    /* the signature first: a host reads the manifest, then its signature */
    const struct {
        const char *name;
        const void *data;
        size_t len;
    } files[] = {{"manifest.sig", sig, sizeof(sig)}, {"manifest", text, len}};
    for (size_t i = 0; r == 0 && i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", c->output, files[i].name);
        struct stat old = {0};
        bool had = stat(path, &old) == 0;
        if ((r = br_write_atomic(path, files[i].data, files[i].len)) < 0)
            r = br_error_set(err, r, "%s: %s", path, strerror(-r));
        else if (had)
            later_mtime(path, old.st_mtime);
    }
    free(text);
    return r;
}

/* Files of older generations, once keep has passed since they left the
 * manifest (their mtime). */
void pub_clean_old(const pub_conf *c, const br_manifest *m, int64_t now)
{
    DIR *d = opendir(c->output);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, "base-", 5) && strncmp(e->d_name, "delta-", 6))
            continue;
        bool used = strncmp(e->d_name, m->base.name, strlen(m->base.name)) == 0;
        for (size_t i = 0; !used && i < m->n_deltas; i++)
            used = strncmp(e->d_name, m->deltas[i].name, strlen(m->deltas[i].name)) == 0;
        struct stat sb;
        if (!used && fstatat(dirfd(d), e->d_name, &sb, 0) == 0 && sb.st_mtime + c->keep_s < now)
            unlinkat(dirfd(d), e->d_name, 0);
    }
    if (d)
        closedir(d);
}

/* A feed succeeded after what the manifest says of it, and the manifest
 * is PUB_REFRESH_S old: write it again, so that the hosts see the ages. */
static bool refresh_due(const pub_conf *c, const pub_state *st, int64_t now)
{
    if (!st->have_manifest || now - st->m.published < PUB_REFRESH_S)
        return false;
    for (size_t i = 0; i < c->n_feeds && i < st->m.n_feeds; i++)
        if (c->feeds[i].last_success > st->m.feeds[i].last_success)
            return true;
    return false;
}

/* One cycle: poll the due feeds (all of them: --once), publish what changed. */
static int cycle(const pub_conf *c, pub_state *st, const br_sign_key *key, bool all, int64_t now)
{
    /* status: a feed held or released, or held for another reason */
    bool status = !st->have_manifest, entries = !st->have_manifest;
    for (size_t i = 0; i < c->n_feeds; i++) {
        pub_feed *f = &c->feeds[i];
        if (!all && f->last_poll >= 0 && now < f->last_poll + f->interval_s)
            continue;
        bool was = f->held;
        char reason[sizeof(f->reason)];
        memcpy(reason, f->reason, sizeof(reason));
        entries = pub_feed_poll(c, f, now) || entries;
        status = status || was != f->held || (f->held && strcmp(reason, f->reason) != 0);
    }
    _cleanup_free_ pub_entry *cur = NULL;
    size_t n = 0;
    changes ch = {0};
    br_error err = {{0}};
    int r = entries ? union_of(c, st, &cur, &n) : 0; /* no feed changed: nothing to compare */
    if (r == 0 && entries)
        r = diff(st, cur, n, &ch);
    bool news = ch.n_add || ch.n_removed || !st->have_manifest;
    uint64_t gen = st->have_manifest ? st->m.generation + 1
                                     : (uint64_t)BR_MAX(br_build_time_now(), (int64_t)1);
    if (r == 0 && news)
        r = write_generation(c, st, key, gen, cur, n, &ch, &err);
    if (r == 0 && (news || status || st->announce || refresh_due(c, st, now)))
        st->have_manifest = (r = pub_write_manifest(c, &st->m, key, now, &err)) == 0;
    st->announce = st->announce && r < 0;
    if (r == 0 && news) {
        free(st->set);
        st->set = BR_TAKE_PTR(cur);
        st->n = n;
        if (save_set(c, st) < 0)
            r = br_error_set(&err, -EIO, "%s: cannot save the published set", c->state);
    }
    free(ch.add);
    free(ch.removed);
    if (r < 0) {
        ctl_err("publish: %s", err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    pub_clean_old(c, &st->m, now);
    return 0;
}

static int run(const pub_conf *c, bool once)
{
    _cleanup_(br_sign_key_freep) br_sign_key *key = NULL;
    br_error err = {{0}};
    if (br_sign_key_load_secret(c->key, &key, &err) < 0) {
        ctl_err("publish: [publish] key: %s", err.text);
        return EXIT_ERROR;
    }
    pub_state st = {.announce = !once};
    for (size_t i = 0; i < c->n_feeds; i++) /* the table in the feeds' order */
        br_category_code(&st.cats, c->feeds[i].category);
    load_set(c, &st);
    load_manifest(c, &st);
    int status = 0;
    /* Cycles start every interval on the dot (not an interval after the
     * last one ended): the manifest announces the period (cycle), and the
     * hosts poll just after each start (docs/fleet.md). --once announces
     * none: it runs when a timer says. */
    uint64_t period = (uint64_t)c->interval_s * 1000000000ull, next = br_clock_now_mono();
    for (;;) {
        st.m.cycle_s = once ? 0 : c->interval_s;
        if (c->kind == BR_KIND_URL_SHA256)
            status = cycle(c, &st, key, once, br_clock_now_real());
        else
            status =
                pub_pw_cycle(c, &st.m, &st.have_manifest, key, st.announce, br_clock_now_real());
        st.announce = st.announce && status != 0;
        if (once)
            break;
        uint64_t now = br_clock_now_mono();
        next += period;
        if (next <= now) /* a cycle longer than the period: the next start */
            next = now + period - (now - next) % period;
        struct timespec ts = {.tv_sec = (time_t)((next - now) / 1000000000u),
                              .tv_nsec = (long)((next - now) % 1000000000u)};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
    free(st.set);
    br_manifest_fini(&st.m);
    return status;
}

int cmd_publish(const ctl_globals *g, int argc, char **argv)
{
    (void)g;
    const char *config = NULL;
    bool once = false;
    const ctl_opt opts[] = {
        CTL_STR("config", &config),
        CTL_FLAG("once", &once),
        CTL_IGNORE("socket"),
        CTL_HELP,
    };
    int first;
    int r = ctl_getopt("publish", opts, BR_ARRAY_SIZE(opts), publish_usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    if (first < argc || !config) {
        ctl_err("publish: %s", first < argc ? "unexpected argument" : "--config FILE is required");
        publish_usage(stderr);
        return EXIT_ERROR;
    }
    pub_conf c;
    if (pub_conf_read(config, &c) < 0)
        return EXIT_ERROR;
    int status = pub_feeds_load(&c) < 0 ? EXIT_ERROR : run(&c, once);
    pub_conf_free(&c);
    return status;
}
