/* SPDX-License-Identifier: MIT */
/* Loading the configured filter (dns_load.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dns_load.h"
#include "filter/filter_file.h"
#include "filter/filter_sign.h"
#include "filter/offline_codes.h"

/* The uid whose files are trusted besides root's (breachd(8), ENVIRONMENT). */
static long also_trusted_uid(void)
{
    const char *v = getenv("BREACHD_TRUST_OWN_FILTERS");
    return v && strcmp(v, "1") == 0 ? (long)geteuid() : -1;
}

/* The next item of a comma-separated list at *s into buf (blanks around
 * it dropped); false at the end. */
static bool next_item(const char **s, char *buf, size_t n)
{
    while (**s == ',' || **s == ' ' || **s == '\t')
        (*s)++;
    if (!**s)
        return false;
    const char *e = strchr(*s, ',');
    size_t len = e ? (size_t)(e - *s) : strlen(*s);
    const char *next = *s + len;
    while (len > 0 && ((*s)[len - 1] == ' ' || (*s)[len - 1] == '\t'))
        len--;
    snprintf(buf, n, "%.*s", (int)len, *s);
    *s = next;
    return true;
}

static int open_member(const char *path, size_t index, const br_sign_key *key, br_pwfilter **out,
                       br_error *err)
{
    long also = also_trusted_uid();
    br_filter_file *file = NULL;
    int r = br_filter_file_open_trusting(path, also, &file, err);
    if (r == 0 && (r = br_filter_file_check_owner(file, path, also, err)) < 0)
        br_filter_file_free(file);
    if (r < 0)
        return r;
    if ((r = br_pwfilter_from_file(file, out, err)) < 0) {
        char why[sizeof(err->text)];
        snprintf(why, sizeof(why), "%s", err->text);
        /* a Bloom URL filter is a br_urlfilter: say why it does not serve */
        br_filter_header h;
        if (br_filter_header_read(path, &h) == 0 && h.kind == BR_KIND_URL_SHA256)
            return br_error_set(err, -EPROTONOSUPPORT,
                                "%s: a Bloom (range) URL filter: refused for DNS, whose lookups "
                                "must all answer on this host (a maybe would send the name's "
                                "range prefix out); build an offline one with `breachctl filter "
                                "build --kind url-sha256 --offline` (docs/dns.md)",
                                path);
        return br_error_set(err, r, "%s", why);
    }
    const br_filter_header *h = br_pwfilter_file_header(*out);
    if (h->kind != BR_KIND_URL_SHA256 || !br_pwfilter_offline(*out))
        r = br_error_set(err, -EINVAL,
                         "%s: kind %s%s, but DNS lookups read offline url-sha256 "
                         "filters only",
                         path, br_filter_kind_name(h->kind) ? br_filter_kind_name(h->kind) : "?",
                         br_pwfilter_offline(*out) ? "" : " (not offline)");
    else if (key && (r = br_filter_sig_verify(key, path, h, err)) < 0)
        br_error_prefix(err, r, "%s: refused, its signature does not verify against [urls] pubkey",
                        path);
    else if (index == 0 && h->role != BR_ROLE_FULL)
        r = br_error_set(err, -EINVAL, "%s: a delta, not a full filter: name its base before it",
                         path);
    if (r < 0) {
        br_pwfilter_free(*out);
        *out = NULL;
    }
    return r;
}

void bdns_ids_clear(bdns_ids *ids)
{
    free(ids->v);
    ids->v = NULL;
    ids->n = 0;
}

/* Note what path held as ids->v[ids->n], and check it against the file
 * served from path, if any. */
static int note_id(const char *path, const br_pwfilter *pf, const bdns_serving *serving,
                   bdns_ids *ids, br_error *err)
{
    br_filter_id *v = realloc(ids->v, (ids->n + 1) * sizeof(*v));
    if (!v)
        return br_error_set(err, -ENOMEM, "out of memory");
    ids->v = v;
    br_filter_id *id = &v[ids->n++];
    br_filter_id_of(path, br_pwfilter_file_header(pf), also_trusted_uid(), id);
    if (!serving)
        return 0;
    const char *s = serving->list;
    char was[PATH_MAX];
    for (size_t i = 0; next_item(&s, was, sizeof(was)) && i < serving->ids->n; i++) {
        const br_filter_id *b = &serving->ids->v[i];
        if (strcmp(was, path) == 0 && !br_filter_generation_ok(id, b))
            return br_error_set(err, -EINVAL,
                                "%s: refused, generation %llu is not newer than the generation "
                                "%llu served from it (an old file served again?); to go back on "
                                "purpose use `breachctl filter rollback %s`",
                                path, (unsigned long long)id->generation,
                                (unsigned long long)b->generation, path);
    }
    return 0;
}

int bdns_load_set(const bdns_conf *c, const bdns_serving *serving, br_pwfilter **out, bdns_ids *ids,
                  br_error *err)
{
    *out = NULL;
    _cleanup_(br_sign_key_freep) br_sign_key *key = NULL;
    int r = 0;
    if (c->pubkey[0] && (r = br_sign_key_load_public(c->pubkey, &key, err)) < 0)
        return br_error_prefix(err, r, "[urls] pubkey");
    _cleanup_(br_pwfilter_freep) br_pwfilter *set = NULL;
    const char *s = c->filter;
    char path[PATH_MAX];
    for (size_t i = 0; r == 0 && next_item(&s, path, sizeof(path)); i++) {
        br_pwfilter *pf = NULL;
        r = open_member(path, i, key, &pf, err);
        if (r == 0 && (r = note_id(path, pf, serving, ids, err)) < 0)
            br_pwfilter_free(pf);
        else if (r == 0 && !set)
            set = pf;
        else if (r == 0 && (r = br_pwfilter_attach(set, pf, err)) < 0)
            br_error_prefix(err, r, "%s: refused", path);
    }
    if (r < 0) {
        bdns_ids_clear(ids);
        return r;
    }
    *out = BR_TAKE_PTR(set);
    return 0;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0x100000001b3ull;
}

static uint64_t stamp_of(uint64_t h, const char *path, const char *suffix)
{
    char p[PATH_MAX + 16];
    snprintf(p, sizeof(p), "%s%s", path, suffix);
    struct stat st;
    if (stat(p, &st) < 0)
        return mix(h, (uint64_t)errno);
    h = mix(h, st.st_dev);
    h = mix(h, st.st_ino);
    h = mix(h, (uint64_t)st.st_size);
    h = mix(h, (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec);
    return mix(h, (uint64_t)st.st_ctim.tv_sec * 1000000000ull + (uint64_t)st.st_ctim.tv_nsec);
}

uint64_t bdns_files_stamp(const char *config_path, const char *filter_list)
{
    uint64_t h = stamp_of(0xcbf29ce484222325ull, config_path, "");
    const char *s = filter_list;
    char path[PATH_MAX];
    while (next_item(&s, path, sizeof(path))) {
        h = stamp_of(h, path, "");
        h = stamp_of(h, path, ".sig");
        h = stamp_of(h, path, ".verified");
        h = stamp_of(h, path, ".rollback");
    }
    return h;
}
