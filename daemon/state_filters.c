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

/* What a password section wants: [passwords] answers PW from password-sha1
 * filters, [ntlm] answers NT from password-ntlm ones. */
typedef struct pw_section {
    const char *name, *verb, *list, *pubkey;
    uint32_t kind;
    /* files a section's follow fetched: breachd's own, each verified
     * against the pubkey (which follow requires) in place of root's ownership */
    bool followed;
} pw_section;

static int wrong_kind(const pw_section *sec, const char *path, uint32_t kind, br_error *err)
{
    const char *name = br_filter_kind_name(kind);
    return br_error_set(
        err, -EINVAL, "[%s] filter %s: kind %s, but breachd answers %s with %s filters only",
        sec->name, path, name ? name : "?", sec->verb, br_filter_kind_name(sec->kind));
}

/* The kind of an intact header, before the full open: a filter of another
 * kind (a URL filter named by mistake) is refused by its kind, not by the
 * first algorithm field the password filter reader does not expect. */
static int check_kind_first(const pw_section *sec, const char *path, br_error *err)
{
    br_filter_header h;
    if (br_filter_header_read(path, &h) < 0)
        return 0; /* the open below says why */
    return h.kind == sec->kind ? 0 : wrong_kind(sec, path, h.kind, err);
}

/* A filter that would not open, said with the config line that names it
 * and, for a missing file, what to do about it. */
static int filter_error(const breachd_config *cfg, const char *section, int r, br_error *err)
{
    unsigned line = breachd_config_key_line(cfg, section, "filter");
    if (r == -ENOENT) {
        char text[sizeof(err->text)];
        snprintf(text, sizeof(text), "%s", err->text);
        br_error_set(err, r,
                     "%s; build one with `breachctl filter build` (docs/corpus.md), or leave "
                     "[%s] filter empty%s",
                     text, section,
                     strcmp(section, "urls") ? " to send every check to the range API"
                                             : " (URL checks then answer UNKNOWN)");
    }
    if (line)
        return br_error_prefix(err, r, "%s:%u: [%s] filter", cfg->path, line, section);
    return br_error_prefix(err, r, "[%s] filter", section);
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
static int check_signature(const breachd_config *cfg, const char *section, const br_sign_key *key,
                           const char *path, const br_filter_header *h, br_error *err)
{
    if (!key)
        return 0;
    int r = br_filter_sig_verify(key, path, h, err);
    if (r < 0) {
        br_error_prefix(err, r, "%s: refused, its signature does not verify against [%s] pubkey",
                        path, section);
        return filter_error(cfg, section, r, err);
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
static int lease(const char *section, const char *path, br_filter_file *f, br_error *err)
{
    int r = br_filter_file_lease(f, path, err);
    if (r == 0)
        bd_log(LOG_DEBUG,
               "[%s] filter %s: no read lease (not its owner, no CAP_LEASE): a writer is "
               "noticed by its times only",
               section, path);
    return r < 0 ? r : 0;
}

/* Open path's container, refused unless root owns it and no one else may
 * write it (breachd(8), "Files"), or when someone has it open for writing. */
static int open_owned(const breachd_config *cfg, const char *section, const char *path,
                      bool followed, br_filter_file **out, br_error *err)
{
    *out = NULL;
    long also = followed ? (long)geteuid() : also_trusted_uid(cfg);
    int r = br_filter_file_open_trusting(path, also, out, err);
    if (r == 0 && (r = br_filter_file_check_owner(*out, path, also, err)) == 0)
        r = lease(section, path, *out, err);
    if (r < 0 && *out) {
        br_filter_file_free(*out);
        *out = NULL;
    }
    if (r < 0)
        return filter_error(cfg, section, r, err);
    int64_t at = br_filter_file_record_time(*out);
    char when[32];
    time_t t = (time_t)at;
    struct tm tm;
    if (at >= 0 && (!gmtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm)))
        snprintf(when, sizeof(when), "%lld", (long long)at);
    if (at >= 0) /* a date, not a Unix time: the line is read by people */
        bd_log(LOG_INFO,
               "[%s] filter %s: body not hashed: %s" BR_FILTER_RECORD_SUFFIX
               " of %s vouches for it",
               section, path, path, when);
    else
        bd_log(LOG_INFO,
               "[%s] filter %s: body hashed whole (no valid %s" BR_FILTER_RECORD_SUFFIX
               "; `breachctl filter verify` writes one)",
               section, path, path);
    return 0;
}

static int open_pw_member(const breachd_config *cfg, const pw_section *sec, const br_sign_key *key,
                          const char *path, size_t index, br_pwfilter **out, bd_filter_ids *ids,
                          br_error *err)
{
    int r = check_kind_first(sec, path, err);
    if (r < 0)
        return r;
    br_filter_file *file = NULL;
    if ((r = open_owned(cfg, sec->name, path, sec->followed, &file, err)) < 0)
        return r;
    if ((r = br_pwfilter_from_file(file, out, err)) < 0)
        return filter_error(cfg, sec->name, br_error_prefix(err, r, "%s", path), err);
    const br_filter_header *h = br_pwfilter_file_header(*out);
    if (h->kind != sec->kind)
        r = wrong_kind(sec, path, h->kind, err);
    if (r == 0)
        r = check_signature(cfg, sec->name, key, path, h, err);
    if (r == 0 && (r = check_role(path, index, h, err)) < 0)
        r = filter_error(cfg, sec->name, r, err);
    if (r == 0)
        r = note_id(cfg, ids, sec->name, path, h);
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
    int r = load_pubkey(cfg, sec->name, sec->pubkey, &key, err);
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
            r = filter_error(cfg, sec->name, attach_error(paths[i], r, err), err);
    }
    if (r == 0 && br_pwfilter_header(set)->key_count == 0)
        bd_log(LOG_WARNING, "[%s] filter %s holds 0 keys: it finds no password breached", sec->name,
               sec->list);
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
        cfg, sec->name,
        br_error_set(err, -EINVAL,
                     "%s: built with --min-count %" PRIu64 ": every breached password seen fewer "
                     "than %" PRIu64 " times would answer CLEAN; name a filter of the whole "
                     "corpus (a --min-count filter belongs in [passwords] similar_filter), or set "
                     "[%s] min_count_ok = yes to accept that",
                     sec->list, n, n, sec->name),
        err);
}

int bd_filters_load_passwords(const breachd_config *cfg, br_pwfilter **out, bd_filter_ids *ids,
                              br_error *err)
{
    const pw_section sec = {"passwords",           "PW",
                            cfg->passwords.filter, cfg->passwords.pubkey,
                            BR_KIND_PASSWORD_SHA1, false};
    int r = load_pw_section(cfg, &sec, out, ids, err);
    return r < 0 ? r : check_min_count(cfg, &sec, cfg->passwords.min_count_ok, out, err);
}

int bd_filters_load_ntlm(const breachd_config *cfg, br_pwfilter **out, bd_filter_ids *ids,
                         br_error *err)
{
    const pw_section sec = {"ntlm", "NT", cfg->ntlm.filter, cfg->ntlm.pubkey, BR_KIND_PASSWORD_NTLM,
                            false};
    int r = load_pw_section(cfg, &sec, out, ids, err);
    return r < 0 ? r : check_min_count(cfg, &sec, cfg->ntlm.min_count_ok, out, err);
}

int bd_filters_load_followed_pw(const breachd_config *cfg, bool ntlm, const char *list,
                                br_pwfilter **out, bd_filter_ids *ids, br_error *err)
{
    const pw_section sec = {ntlm ? "ntlm" : "passwords",
                            ntlm ? "NT" : "PW",
                            list,
                            ntlm ? cfg->ntlm.pubkey : cfg->passwords.pubkey,
                            ntlm ? BR_KIND_PASSWORD_NTLM : BR_KIND_PASSWORD_SHA1,
                            true};
    int r = load_pw_section(cfg, &sec, out, ids, err);
    int ok = ntlm ? cfg->ntlm.min_count_ok : cfg->passwords.min_count_ok;
    return r < 0 ? r : check_min_count(cfg, &sec, ok, out, err);
}

/* load_pw_section's errors name "[passwords] filter" and its line: name
 * similar_filter and its line instead, and how to build one. */
static int similar_error(const breachd_config *cfg, int r, br_error *err)
{
    static const char tag[] = "[passwords] filter", hint[] = "; build one with";
    const char *p = strstr(err->text, tag);
    if (!p)
        return r;
    char rest[sizeof(err->text)];
    snprintf(rest, sizeof(rest), "%s", p + strlen(tag));
    char *h = strstr(rest, hint);
    if (h)
        snprintf(h, sizeof(rest) - (size_t)(h - rest),
                 "; build one with `breachctl filter build --offline --min-count N` "
                 "(docs/similar.md), or leave [passwords] similar_filter empty");
    unsigned line = breachd_config_key_line(cfg, "passwords", "similar_filter");
    if (line)
        return br_error_set(err, r, "%s:%u: [passwords] similar_filter%s", cfg->path, line, rest);
    return br_error_set(err, r, "[passwords] similar_filter%s", rest);
}

int bd_filters_load_similar(const breachd_config *cfg, br_pwfilter **out, bd_filter_ids *ids,
                            br_error *err)
{
    const pw_section sec = {
        "passwords",           "SIMILAR", cfg->passwords.similar_filter, cfg->passwords.pubkey,
        BR_KIND_PASSWORD_SHA1, false};
    int r = load_pw_section(cfg, &sec, out, ids, err);
    if (r == 0 && *out && !br_pwfilter_offline(*out)) {
        br_pwfilter_free(*out);
        *out = NULL;
        r = filter_error(
            cfg, "passwords",
            br_error_set(err, -EINVAL, "%s: not an offline filter", cfg->passwords.similar_filter),
            err);
    }
    return r < 0 ? similar_error(cfg, r, err) : r;
}

int bd_filters_load_urls_offline(const breachd_config *cfg, br_pwfilter **out, bd_filter_ids *ids,
                                 br_error *err)
{
    return bd_filters_load_urls_list(cfg, cfg->urls.filter, false, out, ids, err);
}

int bd_filters_load_urls_list(const breachd_config *cfg, const char *list, bool followed,
                              br_pwfilter **out, bd_filter_ids *ids, br_error *err)
{
    const pw_section sec = {"urls", "URL", list, cfg->urls.pubkey, BR_KIND_URL_SHA256, followed};
    int r = load_pw_section(cfg, &sec, out, ids, err);
    if (r == 0 && *out && !br_pwfilter_offline(*out)) {
        br_pwfilter_free(*out);
        *out = NULL;
        r = filter_error(cfg, "urls", br_error_set(err, -EINVAL, "%s: not an offline filter", list),
                         err);
    }
    return r;
}

static int open_url_member(const breachd_config *cfg, const br_sign_key *key, const char *path,
                           size_t index, br_urlfilter **out, bd_filter_ids *ids, br_error *err)
{
    br_filter_file *file = NULL;
    int r = open_owned(cfg, "urls", path, false, &file, err);
    if (r < 0)
        return r;
    if ((r = br_urlfilter_from_file(file, out, err)) < 0)
        return filter_error(cfg, "urls", br_error_prefix(err, r, "%s", path), err);
    const br_filter_header *h = br_urlfilter_file_header(*out);
    r = check_signature(cfg, "urls", key, path, h, err);
    if (r == 0 && (r = check_role(path, index, h, err)) < 0)
        r = filter_error(cfg, "urls", r, err);
    if (r == 0)
        r = note_id(cfg, ids, "urls", path, h);
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
    int r = load_pubkey(cfg, "urls", cfg->urls.pubkey, &key, err);
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
            r = filter_error(cfg, "urls", attach_error(paths[i], r, err), err);
    }
    breachd_config_list_free(paths, n);
    if (r < 0)
        return r;
    *out = BR_TAKE_PTR(set);
    return 0;
}
