/* SPDX-License-Identifier: MIT */
/* breachctl publish of a password set (docs/fleet.md, "Publishing a
 * password set"): when a [corpus NAME] input changed (its size or mtime,
 * or those of a directory's files), build an offline password filter of
 * the inputs with breachctl filter build --offline: the first time, or
 * when the deltas pass a share of the base, a base; otherwise a delta
 * over the published base and deltas (--base), which carries the new keys
 * and the keys whose count went up, and is replaced by a base when it
 * would not be smaller. A delta with no key publishes nothing; a base that
 * would shrink the set past max_shrink is held. Then sign it and write
 * the manifest. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "breachctl.h"
#include "core/util.h"
#include "filter/filter_delta.h"
#include "filter/filter_file.h"
#include "filter_build.h"
#include "publish.h"

/* ---- what the inputs were at the last build: STATE/corpus-stamp ---- */

static void stamp_add(char *s, size_t len, const struct stat *sb)
{
    size_t used = strlen(s);
    snprintf(s + used, len - used, " %lld.%lld.%ld", (long long)sb->st_size,
             (long long)sb->st_mtim.tv_sec, sb->st_mtim.tv_nsec);
}

/* One line per input: its size and mtime, and a directory's files' sum
 * of sizes, newest mtime and count (a load adds or rewrites files). */
static void input_stamp(const pub_feed *f, char *s, size_t len)
{
    struct stat sb;
    snprintf(s, len, "%s", f->name);
    if (stat(f->url, &sb) < 0)
        return;
    stamp_add(s, len, &sb);
    DIR *d = S_ISDIR(sb.st_mode) ? opendir(f->url) : NULL;
    struct stat sum = {0}, e_sb;
    long long files = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' && fstatat(dirfd(d), e->d_name, &e_sb, 0) == 0) {
            sum.st_size += e_sb.st_size;
            if (e_sb.st_mtim.tv_sec > sum.st_mtim.tv_sec ||
                (e_sb.st_mtim.tv_sec == sum.st_mtim.tv_sec &&
                 e_sb.st_mtim.tv_nsec > sum.st_mtim.tv_nsec))
                sum.st_mtim = e_sb.st_mtim;
            files++;
        }
    if (d) {
        closedir(d);
        stamp_add(s, len, &sum);
        size_t used = strlen(s);
        snprintf(s + used, len - used, " %lld", files);
    }
}

/* The stamp of every input (malloc'ed). */
static char *inputs_stamp(const pub_conf *c)
{
    size_t cap = c->n_feeds * 256 + 1;
    char *s = calloc(1, cap), line[256];
    for (size_t i = 0; s && i < c->n_feeds; i++) {
        input_stamp(&c->feeds[i], line, sizeof(line));
        size_t used = strlen(s);
        snprintf(s + used, cap - used, "%s\n", line);
    }
    return s;
}

static bool stamp_same(const pub_conf *c, const char *stamp)
{
    char path[4400];
    snprintf(path, sizeof(path), "%s/corpus-stamp", c->state);
    uint8_t *old = NULL;
    size_t len = 0;
    bool same = br_read_whole(path, 1u << 20, &old, &len) == 0 && len == strlen(stamp) &&
                memcmp(old, stamp, len) == 0;
    free(old);
    return same;
}

static int stamp_save(const pub_conf *c, const char *stamp)
{
    char path[4400];
    snprintf(path, sizeof(path), "%s/corpus-stamp", c->state);
    return br_write_atomic(path, stamp, strlen(stamp));
}

/* ---- one build: breachctl filter build --offline ---- */

/* What a cycle's build gave (or EXIT_ERROR). */
enum { PW_NEW = 0, PW_NOTHING = 1, PW_HELD = 3, PW_BASE = 4 };

#define PW_ARGS_MAX (16 + 2 * (BR_LAYERS_MAX + 64))

/* Build OUTPUT/name of generation gen from the corpora; over the
 * manifest's base and deltas when delta. Returns 0 or an exit status. */
static int build(const pub_conf *c, const br_manifest *m, bool delta, const char *name,
                 uint64_t gen)
{
    char out[4400], gens[32], files[BR_LAYERS_MAX][4400];
    char *argv[PW_ARGS_MAX];
    int argc = 0;
    snprintf(out, sizeof(out), "%s/%s", c->output, name);
    snprintf(gens, sizeof(gens), "%" PRIu64, gen);
    const char *fixed[] = {"build",
                           "--kind",
                           br_filter_kind_name(c->kind),
                           "--offline",
                           "--output",
                           out,
                           "--generation",
                           gens,
                           "--source",
                           "breachctl publish"};
    for (size_t i = 0; i < BR_ARRAY_SIZE(fixed); i++)
        argv[argc++] = (char *)fixed[i];
    for (size_t i = 0; i < c->n_feeds && argc + 2 < PW_ARGS_MAX; i++) {
        argv[argc++] = (char *)"--input";
        argv[argc++] = (char *)c->feeds[i].url;
    }
    size_t n_files = delta ? 1 + m->n_deltas : 0;
    if (n_files > BR_LAYERS_MAX) {
        ctl_err("publish: more than %d files in the published set", BR_LAYERS_MAX);
        return EXIT_ERROR;
    }
    for (size_t i = 0; i < n_files && argc + 2 < PW_ARGS_MAX; i++) {
        const br_manifest_file *mf = i == 0 ? &m->base : &m->deltas[i - 1];
        snprintf(files[i], sizeof(files[i]), "%s/%s", c->output, mf->name);
        argv[argc++] = (char *)"--base";
        argv[argc++] = files[i];
    }
    argv[argc] = NULL;
    return pw_filter_build(argc, argv);
}

/* Keys of DIR/name (its header), 0 when unreadable. */
static uint64_t file_keys(const pub_conf *c, const char *name)
{
    char path[4400];
    br_filter_header h;
    snprintf(path, sizeof(path), "%s/%s", c->output, name);
    return br_filter_header_read(path, &h) == 0 ? h.key_count : 0;
}

/* Remove OUTPUT/name and its .sig and .gz: a build not published. */
static void drop(const pub_conf *c, const char *name)
{
    char path[4400];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s%s", c->output, name,
                 (const char *[]){"", ".sig", ".gz"}[i]);
        unlink(path);
    }
}

/* The keys of m's set: its base's and its deltas' (a key whose count went
 * up counted again). */
static uint64_t set_keys(const pub_conf *c, const br_manifest *m)
{
    uint64_t keys = file_keys(c, m->base.name);
    for (size_t i = 0; i < m->n_deltas; i++)
        keys += file_keys(c, m->deltas[i].name);
    return keys;
}

/* Build and sign a delta of generation gen over m into *mf: PW_NEW,
 * PW_NOTHING when it holds no key, PW_BASE when it would not be smaller
 * than the base (a base instead), or EXIT_ERROR. */
static int build_delta(const pub_conf *c, const br_manifest *m, const br_sign_key *key,
                       uint64_t gen, br_manifest_file *mf, br_error *err)
{
    char name[80];
    snprintf(name, sizeof(name), "delta-%" PRIu64 ".bfuse", gen);
    if (build(c, m, true, name, gen) != 0)
        return EXIT_ERROR;
    if (file_keys(c, name) == 0) {
        fprintf(stderr, "publish: the corpus changed, but holds no new key or count\n");
        drop(c, name);
        return PW_NOTHING;
    }
    if (pub_sign_file(key, c->output, name, gen, mf, err) < 0)
        return EXIT_ERROR;
    if (mf->bytes < m->base.bytes)
        return PW_NEW;
    fprintf(stderr, "publish: delta %s of %" PRIu64 " bytes is not smaller than the base\n", name,
            mf->bytes);
    drop(c, name);
    return PW_BASE;
}

/* Build and sign a base of generation gen into *mf: PW_NEW, PW_HELD when
 * it would shrink the published base by more than max_shrink (a truncated
 * corpus: the set stays), or EXIT_ERROR. */
static int build_base(const pub_conf *c, const br_manifest *m, bool have, const br_sign_key *key,
                      uint64_t gen, br_manifest_file *mf, br_error *err)
{
    char name[80];
    snprintf(name, sizeof(name), "base-%" PRIu64 ".bfuse", gen);
    if (build(c, m, false, name, gen) != 0)
        return EXIT_ERROR;
    uint64_t keys = file_keys(c, name), had = have ? set_keys(c, m) : 0;
    if (keys * 100 < had * (100 - c->max_shrink_pct)) {
        ctl_err("publish: a base of %" PRIu64 " keys would replace a set of %" PRIu64
                " (more than max_shrink); the published set stays",
                keys, had);
        drop(c, name);
        return PW_HELD;
    }
    return pub_sign_file(key, c->output, name, gen, mf, err) < 0 ? EXIT_ERROR : PW_NEW;
}

/* Build, sign and add generation gen to m: a delta when one is due and
 * smaller than the base, a base otherwise. PW_NEW, PW_NOTHING, PW_HELD or
 * EXIT_ERROR. */
static int write_generation(const pub_conf *c, br_manifest *m, bool have, const br_sign_key *key,
                            uint64_t gen)
{
    br_manifest_file mf;
    br_error err = {{0}};
    bool delta = have && !pub_want_base(m);
    int r = delta ? build_delta(c, m, key, gen, &mf, &err) : PW_BASE;
    if (r == PW_BASE) {
        delta = false;
        r = build_base(c, m, have, key, gen, &mf, &err);
    }
    if (r != PW_NEW) {
        if (err.text[0])
            ctl_err("publish: %s", err.text);
        return r;
    }
    br_manifest_file *v = delta ? realloc(m->deltas, (m->n_deltas + 1) * sizeof(*v)) : NULL;
    if (delta && !v)
        return EXIT_ERROR;
    if (delta) {
        m->deltas = v;
        v[m->n_deltas++] = mf;
    } else {
        free(m->deltas);
        m->deltas = NULL;
        m->n_deltas = 0;
        m->base = mf;
    }
    m->generation = gen;
    fprintf(stderr, "publish: generation %" PRIu64 ": %s, %" PRIu64 " bytes\n", gen, mf.name,
            mf.bytes);
    return 0;
}

/* Each corpus's line in the manifest: its last build (built), the set's
 * keys, held with the reason when a base was refused. */
static void corpus_lines(const pub_conf *c, const br_manifest *m, bool built, const char *held,
                         int64_t now)
{
    uint64_t keys = set_keys(c, m);
    for (size_t i = 0; i < c->n_feeds; i++) {
        pub_feed *f = &c->feeds[i];
        for (size_t j = 0; !built && j < m->n_feeds; j++)
            if (strcmp(m->feeds[j].name, f->name) == 0)
                f->last_success = m->feeds[j].last_success;
        if (built)
            f->last_success = now;
        f->n = keys;
        f->held = held != NULL;
        snprintf(f->reason, sizeof(f->reason), "%s", held ? held : "");
    }
}

int pub_pw_cycle(const pub_conf *c, br_manifest *m, bool *have_manifest, const br_sign_key *key,
                 bool announce, int64_t now)
{
    _cleanup_free_ char *stamp = inputs_stamp(c);
    if (!stamp)
        return EXIT_ERROR;
    bool changed = !*have_manifest || !stamp_same(c, stamp);
    if (!changed && !announce)
        return 0;
    uint64_t gen =
        *have_manifest ? m->generation + 1 : (uint64_t)BR_MAX(br_build_time_now(), (int64_t)1);
    int w = changed ? write_generation(c, m, *have_manifest, key, gen) : PW_NOTHING;
    if (w == EXIT_ERROR)
        return EXIT_ERROR;
    /* a held base is built again at the next cycle: its stamp is not kept */
    br_error err = {{0}};
    int r = changed && w != PW_HELD ? stamp_save(c, stamp) : 0;
    if (r < 0)
        br_error_set(&err, r, "%s: cannot save the corpus stamp", c->state);
    if (r == 0 && (w != PW_NOTHING || announce)) {
        corpus_lines(c, m, w == PW_NEW, w == PW_HELD ? "the corpus shrank past max_shrink" : NULL,
                     now);
        r = pub_write_manifest(c, m, key, now, &err);
        *have_manifest = *have_manifest || r == 0;
    }
    if (r < 0) {
        ctl_err("publish: %s", err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    pub_clean_old(c, m, now);
    return 0;
}
