/* SPDX-License-Identifier: MIT */
/* breachctl publish of a password set (docs/fleet.md, "Publishing a
 * password set"): when a [corpus NAME] input changed (its size or mtime,
 * or those of a directory's files), build an offline password filter of
 * the inputs with breachctl filter build --offline: the first time, or
 * when the deltas pass a share of the base, a base; otherwise a delta
 * over the published base and deltas (--base), which carries the new keys
 * and the keys whose count went up, and is replaced by a base when it
 * would not be smaller. Then sign it and write the manifest. */
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

/* Build, sign and add generation gen to m: a delta when one is due and
 * smaller than the base, a base otherwise. */
static int write_generation(const pub_conf *c, br_manifest *m, bool have, const br_sign_key *key,
                            uint64_t gen)
{
    bool delta = have && !pub_want_base(m);
    char name[80];
    br_manifest_file mf;
    br_error err = {{0}};
    snprintf(name, sizeof(name), "delta-%" PRIu64 ".bfuse", gen);
    int r = delta ? build(c, m, true, name, gen) : 0;
    if (r == 0 && delta && (r = pub_sign_file(key, c->output, name, gen, &mf, &err)) == 0 &&
        mf.bytes >= m->base.bytes) { /* a load as large as a base: a base */
        fprintf(stderr, "publish: delta %s of %" PRIu64 " bytes is not smaller than the base\n",
                name, mf.bytes);
        delta = false;
    }
    if (r == 0 && !delta) {
        snprintf(name, sizeof(name), "base-%" PRIu64 ".bfuse", gen);
        if ((r = build(c, m, false, name, gen)) == 0)
            r = pub_sign_file(key, c->output, name, gen, &mf, &err);
    }
    if (r != 0) {
        if (err.text[0])
            ctl_err("publish: %s", err.text);
        return EXIT_ERROR;
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
    fprintf(stderr, "publish: generation %" PRIu64 ": %s, %" PRIu64 " bytes\n", gen, name,
            mf.bytes);
    return 0;
}

/* Each corpus's line in the manifest: its last build, the set's keys (the
 * base's and the deltas', a key whose count went up counted again). */
static void corpus_lines(const pub_conf *c, const br_manifest *m, bool built, int64_t now)
{
    uint64_t keys = file_keys(c, m->base.name);
    for (size_t i = 0; i < m->n_deltas; i++)
        keys += file_keys(c, m->deltas[i].name);
    for (size_t i = 0; i < c->n_feeds; i++) {
        pub_feed *f = &c->feeds[i];
        for (size_t j = 0; !built && j < m->n_feeds; j++)
            if (strcmp(m->feeds[j].name, f->name) == 0)
                f->last_success = m->feeds[j].last_success;
        if (built)
            f->last_success = now;
        f->n = keys;
    }
}

int pub_pw_cycle(const pub_conf *c, br_manifest *m, bool *have_manifest, const br_sign_key *key,
                 bool announce, int64_t now)
{
    _cleanup_free_ char *stamp = inputs_stamp(c);
    if (!stamp)
        return EXIT_ERROR;
    bool news = !*have_manifest || !stamp_same(c, stamp);
    if (!news && !announce)
        return 0;
    uint64_t gen =
        *have_manifest ? m->generation + 1 : (uint64_t)BR_MAX(br_build_time_now(), (int64_t)1);
    if (news && write_generation(c, m, *have_manifest, key, gen) != 0)
        return EXIT_ERROR;
    corpus_lines(c, m, news, now);
    br_error err = {{0}};
    int r = pub_write_manifest(c, m, key, now, &err);
    *have_manifest = *have_manifest || (news && r == 0);
    if (r == 0 && news && (r = stamp_save(c, stamp)) < 0)
        br_error_set(&err, r, "%s: cannot save the corpus stamp", c->state);
    if (r < 0) {
        ctl_err("publish: %s", err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    pub_clean_old(c, m, now);
    return 0;
}
