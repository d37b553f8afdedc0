/* SPDX-License-Identifier: MIT */
/* Opening the configured filters for a new state (state_filters.h). */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "filter/filter_file.h"
#include "filter/filter_record.h"
#include "filter/filter_sign.h"
#include "core/hash.h"
#include "log.h"
#include "offline.h"
#include "state_filters.h"

/* What a kind's filter key wants (kinds.h: its row says the section, the
 * key, the filter kind and the verb it answers): [passwords] answers PW
 * from password-sha1 filters, [ntlm] answers NT from password-ntlm ones. */
typedef struct pw_section {
    const bd_kind_row *row;
    const char *list, *pubkey;
    /* files a section's follow fetched: breachd's own, each verified
     * against the pubkey (which follow requires) in place of root's ownership */
    bool followed;
} pw_section;

/* The [urls] row, for the range form of its filter (br_urlfilter). */
#define URLS (&bd_kinds[BD_KIND_URL])

/* A filter that would not open, said with the config line that names it
 * and, for a missing file, what to do about it (its row's build_hint). */
static int filter_error(const breachd_config *cfg, const bd_kind_row *row, int r, br_error *err)
{
    unsigned line = breachd_config_key_line(cfg, row->section, row->filter_key);
    if (r == -ENOENT) {
        char text[sizeof(err->text)];
        snprintf(text, sizeof(text), "%s", err->text);
        br_error_set(err, r, "%s; build one with %s", text, row->build_hint);
    }
    if (line)
        return br_error_prefix(err, r, "%s:%u: [%s] %s", cfg->path, line, row->section,
                               row->filter_key);
    return br_error_prefix(err, r, "[%s] %s", row->section, row->filter_key);
}

/* A file of another filter kind than its row's, with its config line. */
static int wrong_kind(const breachd_config *cfg, const pw_section *sec, const char *path,
                      uint32_t kind, br_error *err)
{
    const bd_kind_row *row = sec->row;
    const char *name = br_filter_kind_name(kind);
    br_error_set(err, -EINVAL, "[%s] %s %s: kind %s, but breachd answers %s with %s filters only",
                 row->section, row->filter_key, path, name ? name : "?", br_verb_name(row->verb),
                 br_filter_kind_name(row->filter_kind));
    unsigned line = breachd_config_key_line(cfg, row->section, row->filter_key);
    return line ? br_error_prefix(err, -EINVAL, "%s:%u", cfg->path, line) : -EINVAL;
}

/* The kind of an intact header, before the full open: a filter of another
 * kind (a URL filter named by mistake) is refused by its kind, not by the
 * first algorithm field the password filter reader does not expect. */
static int check_kind_first(const breachd_config *cfg, const pw_section *sec, const char *path,
                            br_error *err)
{
    br_filter_header h;
    if (br_filter_header_read(path, &h) < 0)
        return 0; /* the open below says why */
    return h.kind == sec->row->filter_kind ? 0 : wrong_kind(cfg, sec, path, h.kind, err);
}

/* The section's pubkey, or *out = NULL when it names none. */
static int load_pubkey(const breachd_config *cfg, const char *section, const char *path,
                       br_sign_key **out, br_error *err)
{
    *out = NULL;
    if (!path[0])
        return 0;
    int r = br_sign_key_load_public(path, out, err);
    if (r < 0) {
        unsigned line = breachd_config_key_line(cfg, section, "pubkey");
        if (line)
            return br_error_prefix(err, r, "%s:%u: [%s] pubkey", cfg->path, line, section);
        return br_error_prefix(err, r, "[%s] pubkey", section);
    }
    return 0;
}

/* With a pubkey, a filter loads only when FILE.sig verifies against it
 * and the filter's (verified) header. */
static int check_signature(const breachd_config *cfg, const bd_kind_row *row,
                           const br_sign_key *key, const char *path, const br_filter_header *h,
                           br_error *err)
{
    if (!key)
        return 0;
    int r = br_filter_sig_verify(key, path, h, err);
    if (r < 0) {
        br_error_prefix(err, r, "%s: refused, its signature does not verify against [%s] pubkey",
                        path, row->section);
        return filter_error(cfg, row, r, err);
    }
    return 0;
}

/* One file of the list: a full filter first, deltas after it. */
static int check_role(const char *path, size_t index, const br_filter_header *h, br_error *err)
{
    if (index == 0 && h->role != BR_ROLE_FULL)
        return br_error_set(err, -EINVAL, "%s: a delta, not a full filter: name its base before it",
                            path);
    return 0;
}

/* A delta that does not extend the set loaded so far is refused by name. */
static int attach_error(const char *path, int r, br_error *err)
{
    return br_error_prefix(err, r, "%s: refused", path);
}

/* The uid whose files are trusted besides root's: none, unless the
 * development key [daemon] trust_own_filters is on (breachd.conf(5)). */
static long also_trusted_uid(const breachd_config *cfg)
{
    return cfg->daemon.trust_own_filters ? (long)geteuid() : -1;
}

/* Remember what path holds, for bd_filters_check_order. */
static int note_id(const breachd_config *cfg, bd_filter_ids *ids, const char *section,
                   const char *path, const br_filter_header *h)
{
    if (!ids)
        return 0;
    bd_filter_id *v = realloc(ids->v, (ids->n + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    ids->v = v;
    bd_filter_id *id = &v[ids->n];
    memset(id, 0, sizeof(*id));
    id->path = strdup(path);
    if (!id->path)
        return -ENOMEM;
    ids->n++;
    snprintf(id->section, sizeof(id->section), "%s", section);
    br_filter_id_of(path, h, also_trusted_uid(cfg), &id->id);
    return 0;
}

void bd_filter_ids_clear(bd_filter_ids *ids)
{
    for (size_t i = 0; i < ids->n; i++)
        free(ids->v[i].path);
    free(ids->v);
    ids->v = NULL;
    ids->n = 0;
}

int bd_filters_check_order(const bd_filter_ids *now, const bd_filter_ids *before, br_error *err)
{
    for (size_t i = 0; before && i < now->n; i++) {
        const bd_filter_id *a = &now->v[i];
        for (size_t j = 0; j < before->n; j++) {
            const bd_filter_id *b = &before->v[j];
            if (strcmp(a->path, b->path) != 0 || strcmp(a->section, b->section) != 0)
                continue;
            if (!br_filter_generation_ok(&a->id, &b->id))
                return br_error_set(err, -EINVAL,
                                    "[%s] filter %s: refused, generation %llu is not newer than "
                                    "the generation %llu breachd serves from it (an old file "
                                    "served again?); to go back on purpose use `breachctl filter "
                                    "rollback %s`",
                                    a->section, a->path, (unsigned long long)a->id.generation,
                                    (unsigned long long)b->id.generation, a->path);
        }
    }
    return 0;
}

/* A read lease on the file (filter_file.h): a writer that opens it later is
 * noticed; one that has it open now refuses it. Without a lease (breachd's
 * user neither owns the file nor has CAP_LEASE: root's files, the
 * packaged setup, where only root may write them) fstat alone watches it
 * (breachd(8), FILES). */
static int lease(const bd_kind_row *row, const char *path, br_filter_file *f, br_error *err)
{
    int r = br_filter_file_lease(f, path, err);
    if (r == 0)
        bd_log(LOG_DEBUG,
               "[%s] %s %s: no read lease (not its owner, no CAP_LEASE): a writer is "
               "noticed by its times only",
               row->section, row->filter_key, path);
    return r < 0 ? r : 0;
}

/* Open path's container, refused unless root owns it and no one else may
 * write it (breachd(8), "Files"), or when someone has it open for writing. */
static int open_owned(const breachd_config *cfg, const bd_kind_row *row, const char *path,
                      bool followed, br_filter_file **out, br_error *err)
{
    *out = NULL;
    long also = followed ? (long)geteuid() : also_trusted_uid(cfg);
    int r = br_filter_file_open_trusting(path, also, out, err);
    if (r == 0 && (r = br_filter_file_check_owner(*out, path, also, err)) == 0)
        r = lease(row, path, *out, err);
    if (r < 0 && *out) {
        br_filter_file_free(*out);
        *out = NULL;
    }
    if (r < 0)
        return filter_error(cfg, row, r, err);
    int64_t at = br_filter_file_record_time(*out);
    char when[32];
    time_t t = (time_t)at;
    struct tm tm;
    if (at >= 0 && (!gmtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm)))
        snprintf(when, sizeof(when), "%lld", (long long)at);
    if (at >= 0) /* a date, not a Unix time: the line is read by people */
        bd_log(LOG_INFO,
               "[%s] %s %s: body not hashed: %s" BR_FILTER_RECORD_SUFFIX " of %s vouches for it",
               row->section, row->filter_key, path, path, when);
    else
        bd_log(LOG_INFO,
               "[%s] %s %s: body hashed whole (no valid %s" BR_FILTER_RECORD_SUFFIX
               "; `breachctl filter verify` writes one)",
               row->section, row->filter_key, path, path);
    return 0;
}

static int open_pw_member(const breachd_config *cfg, const pw_section *sec, const br_sign_key *key,
                          const char *path, size_t index, br_pwfilter **out, bd_filter_ids *ids,
                          br_error *err)
{
    int r = check_kind_first(cfg, sec, path, err);
    if (r < 0)
        return r;
    br_filter_file *file = NULL;
    if ((r = open_owned(cfg, sec->row, path, sec->followed, &file, err)) < 0)
        return r;
    if ((r = br_pwfilter_from_file(file, out, err)) < 0)
        return filter_error(cfg, sec->row, br_error_prefix(err, r, "%s", path), err);
    const br_filter_header *h = br_pwfilter_file_header(*out);
    if (h->kind != sec->row->filter_kind)
        r = wrong_kind(cfg, sec, path, h->kind, err);
    if (r == 0)
        r = check_signature(cfg, sec->row, key, path, h, err);
    if (r == 0 && (r = check_role(path, index, h, err)) < 0)
        r = filter_error(cfg, sec->row, r, err);
    if (r == 0)
        r = note_id(cfg, ids, sec->row->section, path, h);
    if (r < 0) {
        br_pwfilter_free(*out);
        *out = NULL;
    }
    return r;
}

static int load_pw_section(const breachd_config *cfg, const pw_section *sec, br_pwfilter **out,
                           bd_filter_ids *ids, br_error *err)
{
    *out = NULL;
    if (!sec->list[0])
        return 0;
    _cleanup_(br_sign_key_freep) br_sign_key *key = NULL;
    int r = load_pubkey(cfg, sec->row->section, sec->pubkey, &key, err);
    if (r < 0)
        return r;
    char **paths;
    size_t n;
    if (breachd_config_list_split(sec->list, &paths, &n) < 0)
        return -ENOMEM;
    _cleanup_(br_pwfilter_freep) br_pwfilter *set = NULL;
    for (size_t i = 0; i < n && r == 0; i++) {
        br_pwfilter *pf = NULL;
        r = open_pw_member(cfg, sec, key, paths[i], i, &pf, ids, err);
        if (r == 0 && i == 0)
            set = pf;
        else if (r == 0 && (r = br_pwfilter_attach(set, pf, err)) < 0)
            r = filter_error(cfg, sec->row, attach_error(paths[i], r, err), err);
    }
    if (r == 0 && br_pwfilter_header(set)->key_count == 0)
        bd_log(LOG_WARNING, "[%s] %s %s holds 0 keys: it finds no password breached",
               sec->row->section, sec->row->filter_key, sec->list);
    breachd_config_list_free(paths, n);
    if (r < 0)
        return r;
    *out = BR_TAKE_PTR(set);
    return 0;
}

/* A main filter built with --min-count N (an offline filter records N)
 * answers CLEAN for breached passwords seen fewer than N times: refused
 * unless the section's min_count_ok = yes (breachd.conf(5)). */
static int check_min_count(const breachd_config *cfg, const pw_section *sec, bool ok,
                           br_pwfilter **out, br_error *err)
{
    uint64_t n = bd_filter_min_count(*out);
    if (n <= 1 || ok)
        return 0;
    br_pwfilter_free(*out);
    *out = NULL;
    return filter_error(
        cfg, sec->row,
        br_error_set(err, -EINVAL,
                     "%s: built with --min-count %" PRIu64 ": every breached password seen fewer "
                     "than %" PRIu64 " times would answer CLEAN; name a filter of the whole "
                     "corpus (a --min-count filter belongs in [passwords] similar_filter), or set "
                     "[%s] min_count_ok = yes to accept that",
                     sec->list, n, n, sec->row->section),
        err);
}

int bd_filters_load_kind(const breachd_config *cfg, bd_kind k, const char *list, bool followed,
                         br_pwfilter **out, bd_filter_ids *ids, br_error *err)
{
    const bd_kind_row *row = &bd_kinds[k];
    const pw_section sec = {row, list ? list : bd_kind_filter_path(cfg, k),
                            BD_KIND_CFG_(cfg, row->pubkey_off, char *), followed};
    int r = load_pw_section(cfg, &sec, out, ids, err);
    if (r == 0 && *out && row->offline_only && !br_pwfilter_offline(*out)) {
        br_pwfilter_free(*out);
        *out = NULL;
        return filter_error(cfg, row,
                            br_error_set(err, -EINVAL, "%s: not an offline filter", sec.list), err);
    }
    if (r < 0 || !row->min_count_ok_off)
        return r;
    return check_min_count(cfg, &sec, BD_KIND_CFG_(cfg, row->min_count_ok_off, int), out, err);
}

static int open_url_member(const breachd_config *cfg, const br_sign_key *key, const char *path,
                           size_t index, br_urlfilter **out, bd_filter_ids *ids, br_error *err)
{
    br_filter_file *file = NULL;
    int r = open_owned(cfg, URLS, path, false, &file, err);
    if (r < 0)
        return r;
    if ((r = br_urlfilter_from_file(file, out, err)) < 0)
        return filter_error(cfg, URLS, br_error_prefix(err, r, "%s", path), err);
    const br_filter_header *h = br_urlfilter_file_header(*out);
    r = check_signature(cfg, URLS, key, path, h, err);
    if (r == 0 && (r = check_role(path, index, h, err)) < 0)
        r = filter_error(cfg, URLS, r, err);
    if (r == 0)
        r = note_id(cfg, ids, URLS->section, path, h);
    if (r < 0) {
        br_urlfilter_free(*out);
        *out = NULL;
    }
    return r;
}

int bd_filters_load_urls(const breachd_config *cfg, br_urlfilter **out, bd_filter_ids *ids,
                         br_error *err)
{
    *out = NULL;
    if (!cfg->urls.filter[0])
        return 0;
    _cleanup_(br_sign_key_freep) br_sign_key *key = NULL;
    int r = load_pubkey(cfg, URLS->section, cfg->urls.pubkey, &key, err);
    if (r < 0)
        return r;
    char **paths;
    size_t n;
    if (breachd_config_list_split(cfg->urls.filter, &paths, &n) < 0)
        return -ENOMEM;
    _cleanup_(br_urlfilter_freep) br_urlfilter *set = NULL;
    for (size_t i = 0; i < n && r == 0; i++) {
        br_urlfilter *uf = NULL;
        r = open_url_member(cfg, key, paths[i], i, &uf, ids, err);
        if (r == 0 && i == 0)
            set = uf;
        else if (r == 0 && (r = br_urlfilter_attach(set, uf, err)) < 0)
            r = filter_error(cfg, URLS, attach_error(paths[i], r, err), err);
    }
    breachd_config_list_free(paths, n);
    if (r < 0)
        return r;
    *out = BR_TAKE_PTR(set);
    return 0;
}
