/* SPDX-License-Identifier: MIT */
/* breachctl filter fetch | rollback (docs/fleet.md): a conditional,
 * resumable download of signed filters and their .sig (lib/download/
 * fetch_file.h), verified before anything is renamed into place, the old
 * file kept as PATH.prev, then RELOAD. The files beside PATH: fetch.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "breachctl.h"
#include "proto/client.h"
#include "conf.h"
#include "ctl_opts.h"
#include "fetch.h"
#include "download/fetch_file.h"
#include "filter/filter_delta.h"
#include "filter_fleet.h"
#include "filter/filter_record.h"
#include "filter_url.h"
#include "filter/filter_sign.h"
#include "core/util.h"

#define RELOAD_TIMEOUT_MS 600000 /* a reload verifies every filter: GiBs */

typedef struct item {
    const char *url, *path;
    char *part, *sig_new, *sig;
    fetch_state st;
    bool have_file;
    bool new_file, new_sig; /* PATH.part / PATH.sig.new wait to be installed */
    bool installed;
    br_fetch_validators file_got, sig_got;
    br_filter_header hdr;
    fetch_head head; /* what the download's header must say */
    bool resumed;
    uint64_t resumed_at, bytes;
} item;

typedef struct section {
    const char *name; /* "passwords", "urls"; NULL: --url / --output */
    uint32_t kind;    /* the kind its filters must have; 0: any */
    const char *pubkey;
    item items[BREACHD_CONF_MAX_FILES];
    size_t n;
    char **paths, **urls; /* from the config: freed with the section */
    size_t n_paths, n_urls;
    long trusted_uid; /* besides root, whose records breachd trusts: -1 none */
} section;

typedef struct fetch_opts {
    const char *ca_file;
    uint64_t stall_ms, connect_ms;
} fetch_opts;

static int fail(item *it, br_error *err, const char *what)
{
    ctl_err("filter fetch: %s: %s", it->path, err->text[0] ? err->text : what);
    return EXIT_ERROR;
}

/* The signature: unchanged (304), or new in PATH.sig.new. */
static int fetch_sig(item *it, const fetch_opts *fo, br_error *err)
{
    _cleanup_free_ char *url = br_filter_sig_path(it->url);
    if (!url)
        return -ENOMEM;
    struct stat st;
    bool have = !it->new_file && stat(it->sig, &st) == 0;
    br_fetch_opts o = {.url = url,
                       .have = have ? &it->st.sig : NULL,
                       .max_bytes = 4096,
                       .ca_file = fo->ca_file,
                       .connect_timeout_ms = (uint32_t)fo->connect_ms,
                       .stall_timeout_ms = (uint32_t)fo->stall_ms};
    br_fetch_result res;
    int r = br_fetch_file(it->sig_new, &o, &res, err);
    if (r < 0)
        return r;
    it->new_sig = res.status == BR_FETCH_NEW;
    it->sig_got = res.got;
    if (!it->new_sig)
        unlink(it->sig_new);
    return 0;
}

/* Download what changed of one filter. A failure keeps a partial body and
 * its validators for the next run (not when its header was refused), and
 * never touches PATH. */
static int fetch_item(item *it, const fetch_opts *fo, uint32_t kind, br_error *err)
{
    int r = fetch_dir_check(it->path, err);
    if (r < 0)
        return r;
    fetch_state_load(it->path, &it->st);
    if (strcmp(it->st.url, it->url) != 0) {
        /* Another source: nothing is known about its versions. */
        memset(&it->st, 0, sizeof(it->st));
        it->st.file.last_modified = it->st.sig.last_modified = it->st.part.last_modified = -1;
        snprintf(it->st.url, sizeof(it->st.url), "%s", it->url);
    }
    struct stat st;
    it->have_file = stat(it->path, &st) == 0 && S_ISREG(st.st_mode);
    it->head.kind = kind;
    it->head.have_old = it->have_file && br_filter_header_read(it->path, &it->head.old) == 0;
    bool partial = lstat(it->part, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
    it->resumed_at = partial ? (uint64_t)st.st_size : 0;
    br_fetch_opts o = {.url = it->url,
                       .have = it->have_file ? &it->st.file : NULL,
                       .partial = partial ? &it->st.part : NULL,
                       .ca_file = fo->ca_file,
                       .connect_timeout_ms = (uint32_t)fo->connect_ms,
                       .stall_timeout_ms = (uint32_t)fo->stall_ms,
                       .check_head = fetch_head_check,
                       .check_ctx = &it->head,
                       .head_len = BR_FILTER_HEADER_SIZE,
                       .drop_cache = true};
    br_fetch_result res;
    r = br_fetch_file(it->part, &o, &res, err);
    if (r < 0) {
        /* Resume next time, if the server named this version and its
         * header was not refused. */
        if (r == -EINVAL || r == -EFBIG || (lstat(it->part, &st) == 0 && st.st_size == 0)) {
            unlink(it->part);
            memset(&res.got, 0, sizeof(res.got));
            res.got.last_modified = -1;
        }
        it->st.part = res.got;
        br_error ignored;
        fetch_state_save(it->path, &it->st, &ignored);
        return r;
    }
    if (res.status == BR_FETCH_NOT_MODIFIED) {
        unlink(it->part);
    } else {
        it->new_file = true;
        it->file_got = res.got;
        it->resumed = res.resumed;
        it->bytes = res.size;
    }
    it->st.part.etag[0] = '\0';
    it->st.part.last_modified = -1;
    return fetch_sig(it, fo, err);
}

static int read_sig(const char *path, uint8_t *buf, size_t *len, br_error *err)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    *len = fread(buf, 1, BR_SIG_SIZE + 1, f);
    fclose(f);
    return 0;
}

/* The file that will serve (new or installed) and its signature (new or
 * installed) against the key, the kind, and the installed generation. */
static int verify_item(const section *s, item *it, const br_sign_key *key, br_error *err)
{
    /* Unchanged: verified when it was installed (and by breachd at each
     * load); a daily run that finds nothing new does not read GiBs. */
    if (!it->new_file && !it->new_sig)
        return 0;
    const char *file = it->new_file ? it->part : it->path;
    int r = fleet_open_verified(file, &it->hdr, err);
    if (r < 0)
        return r;
    if (s->kind && it->hdr.kind != s->kind)
        return br_error_set(err, -EINVAL, "a %s filter in [%s]", br_filter_kind_name(it->hdr.kind),
                            s->name);
    uint8_t sig[BR_SIG_SIZE + 1];
    size_t len = 0;
    r = read_sig(it->new_sig ? it->sig_new : it->sig, sig, &len, err);
    if (r == 0)
        r = br_filter_sig_check(key, &it->hdr, sig, len, err);
    if (r < 0)
        return br_error_prefix(err, r, "signature");
    if (it->new_file && it->head.have_old) {
        /* The installed file's header is enough (and reads 512 bytes, not
         * the whole filter). */
        r = fetch_generation_check(&it->head.old, &it->hdr, err);
        if (r < 0)
            return r;
        if (r == 1)
            it->new_file = false; /* the same file: nothing to install */
    }
    return 0;
}

/* What deltas may name a file by: its body, and a layered file's layers'
 * bodies (read from their headers). */
static int add_names(const char *path, const br_filter_header *h, br_filter_names *names)
{
    int r = br_filter_names_add(names, h->body_sha256);
    if (r < 0 || h->algorithm != BR_ALGO_LAYERS)
        return r;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    uint32_t n = br_load_le32(h->params);
    for (uint32_t i = 0; i < n && n <= BR_LAYERS_MAX && r == 0; i++) {
        uint8_t e[16], raw[BR_FILTER_HEADER_SIZE];
        br_filter_header lh;
        if (fd < 0 || pread(fd, e, sizeof(e), (off_t)(h->payload_offset + 16u * i)) != 16 ||
            pread(fd, raw, sizeof(raw), (off_t)br_load_le64(e)) != (ssize_t)sizeof(raw) ||
            br_filter_header_decode(raw, sizeof(raw), &lh, NULL) < 0)
            return -EIO;
        r = br_filter_names_add(names, lh.body_sha256);
    }
    return r;
}

/* A section's files chain as breachd will require (filter-format.md, "Deltas
 * and layered files"), from their headers: each file was verified when it
 * was fetched or installed, and breachd verifies all of them at the RELOAD,
 * so a new delta does not make every host read a multi-GiB base twice. */
static int verify_set(const section *s)
{
    bool changed = false;
    for (size_t i = 0; i < s->n; i++)
        changed |= s->items[i].new_file;
    if (!s->name || !changed)
        return 0;
    br_filter_names names = {0};
    br_filter_header first = {0}, h, lh;
    br_error err = {{0}};
    int r = 0;
    bool offline = false; /* the first file (a layered file's first layer) */
    const char *path = NULL;
    for (size_t i = 0; i < s->n && r == 0; i++) {
        path = s->items[i].new_file ? s->items[i].part : s->items[i].path;
        r = br_filter_header_read(path, &h);
        if (r == 0 && i == 0 && (r = br_filter_header_read_first(path, &lh)) == 0)
            offline = lh.algorithm == BR_ALGO_FUSE_OFFLINE;
        if (r < 0)
            r = br_error_set(&err, r, "cannot read its header");
        else if (i == 0 && h.role != BR_ROLE_FULL)
            r = br_error_set(&err, -EINVAL, "a delta, not a full filter: name its base first");
        else if (i > 0 && offline != (h.algorithm == BR_ALGO_FUSE_OFFLINE))
            r = br_error_set(&err, -EINVAL,
                             "a delta %s of a base %s: an offline set holds offline files only",
                             offline ? "not built offline" : "built offline",
                             offline ? "built offline" : "not built offline");
        else if (i > 0)
            r = br_filter_delta_check(&first, &names, &h, &err);
        if (i == 0)
            first = h;
        if (r == 0)
            r = add_names(path, &h, &names);
    }
    br_filter_names_fini(&names);
    if (r < 0) {
        ctl_err("filter fetch: [%s] %s: %s", s->name, path, err.text[0] ? err.text : strerror(-r));
        return EXIT_ERROR;
    }
    return 0;
}

static void discard(item *it)
{
    if (it->new_file)
        unlink(it->part);
    unlink(it->sig_new);
    it->new_file = it->new_sig = false;
}

/* Fetch and verify every file of a section; nothing is installed unless
 * all of it verified. */
static int fetch_section(section *s, const fetch_opts *fo)
{
    br_error err = {{0}};
    _cleanup_(br_sign_key_freep) br_sign_key *key = NULL;
    if (br_sign_key_load_public(s->pubkey, &key, &err) < 0) {
        ctl_err("filter fetch: %s", err.text);
        return EXIT_ERROR;
    }
    int status = 0;
    for (size_t i = 0; i < s->n && !status; i++) {
        item *it = &s->items[i];
        if (fetch_item(it, fo, s->kind, &err) < 0 || verify_item(s, it, key, &err) < 0)
            status = fail(it, &err, "failed");
    }
    if (!status)
        status = verify_set(s);
    if (status)
        for (size_t i = 0; i < s->n; i++)
            discard(&s->items[i]);
    return status;
}

/* PATH.verified for a file just installed, so that the RELOAD and later
 * starts need not hash it (filter-format.md, "Start-up: verification
 * records"). Hashed again: the .part was verified before the rename, and a
 * record names the inode's state after it. A failure only costs breachd a
 * whole hash at its next load. */
static void record_installed(const char *path)
{
    br_error err = {{0}};
    _cleanup_(br_filter_file_freep) br_filter_file *f = NULL;
    if (br_filter_file_open(path, &f, &err) < 0 || br_filter_record_write(f, path, &err) < 0)
        fprintf(stderr, "breachctl: note: filter fetch: no verification record for %s: %s\n", path,
                err.text);
}

/* An installed file that is unchanged but has no valid record (installed
 * before records, or by hand): hashed once, so that later starts are fast. */
static void record_if_missing(const char *path, long trusted_uid)
{
    uint8_t raw[BR_FILTER_HEADER_SIZE];
    br_filter_header h;
    struct stat st;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0 || pread(fd, raw, sizeof(raw), 0) != (ssize_t)sizeof(raw) ||
        br_filter_header_decode(raw, sizeof(raw), &h, NULL) < 0)
        return;
    if (br_filter_record_check(path, &st, &h, trusted_uid, NULL, NULL) != 0)
        record_installed(path);
}

static int install_section(section *s)
{
    for (size_t i = 0; i < s->n; i++) {
        item *it = &s->items[i];
        if (!it->new_file)
            record_if_missing(it->path, s->trusted_uid);
        if (!it->new_file && !it->new_sig)
            continue;
        br_error err = {{0}};
        if (fetch_install(it->path, it->new_file, it->new_sig, &err) < 0)
            return fail(it, &err, "install failed");
        it->installed = it->new_file;
        if (it->new_file)
            record_installed(it->path);
    }
    return 0;
}

static void report(const section *s, size_t *updated)
{
    for (size_t i = 0; i < s->n; i++) {
        const item *it = &s->items[i];
        if (it->new_file) {
            (*updated)++;
            printf("%s: updated: %s, generation %" PRIu64 ", %" PRIu64 " keys, %" PRIu64 " bytes",
                   it->path, br_filter_kind_name(it->hdr.kind), it->hdr.generation,
                   it->hdr.key_count, it->bytes);
            if (it->resumed)
                printf(" (resumed at byte %" PRIu64 ")", it->resumed_at);
            printf("\n");
        } else if (it->new_sig) {
            (*updated)++;
            printf("%s: new signature\n", it->path);
        } else {
            printf("%s: unchanged\n", it->path);
        }
    }
}

static void save_states(section *s)
{
    for (size_t i = 0; i < s->n; i++) {
        item *it = &s->items[i];
        if (it->new_file)
            it->st.file = it->file_got;
        if (it->new_sig || it->new_file)
            it->st.sig = it->sig_got;
        br_error err = {{0}};
        if (fetch_state_save(it->path, &it->st, &err) < 0)
            ctl_err("warning: %s", err.text);
    }
}

/* RELOAD; 0, 1 when the daemon refused it (reason printed), 2 when it is
 * not reachable (a note printed: it loads the files when it starts). */
static int reload(const char *socket_path)
{
    br_error err = {{0}};
    _cleanup_(br_client_freep) br_client *c = NULL;
    if (br_client_connect(socket_path, 5000, &c, &err) < 0) {
        fprintf(stderr,
                "breachctl: note: breachd not reachable (%s): it loads the new filters "
                "when it starts\n",
                err.text);
        return 2;
    }
    br_client_set_timeout(c, RELOAD_TIMEOUT_MS);
    br_answer *a = calloc(1, sizeof(*a));
    int r = a ? br_client_command(c, "RELOAD", a, &err) : -ENOMEM;
    int status = 0;
    if (r < 0) {
        ctl_err("filter fetch: RELOAD: %s", err.text[0] ? err.text : strerror(-r));
        status = 1;
    } else if (a->kind != BR_ANSWER_OTHER || strcmp(a->detail, "RELOADED") != 0) {
        ctl_err("filter fetch: breachd refused the new filters: %s", a->detail);
        status = 1;
    }
    free(a);
    return status;
}

/* ---- the command ---- */

static int item_init(item *it, const char *url, const char *path)
{
    it->url = url;
    it->path = path;
    it->part = fetch_path(path, ".part");
    it->sig_new = fetch_path(path, ".sig.new");
    it->sig = fetch_path(path, ".sig");
    return it->part && it->sig_new && it->sig ? 0 : -ENOMEM;
}

static void section_fini(section *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->items[i].part);
        free(s->items[i].sig_new);
        free(s->items[i].sig);
    }
    breachd_config_list_free(s->paths, s->n_paths);
    breachd_config_list_free(s->urls, s->n_urls);
}

/* A section of the config with filter_url: its filters and URLs pair up. */
static int section_from_config(const breachd_config *cfg, const char *name, section *s)
{
    const char *filter = cfg->urls.filter, *urls = cfg->urls.filter_url;
    s->kind = BR_KIND_URL_SHA256;
    s->pubkey = cfg->urls.pubkey;
    if (strcmp(name, "passwords") == 0) {
        filter = cfg->passwords.filter;
        urls = cfg->passwords.filter_url;
        s->kind = BR_KIND_PASSWORD_SHA1;
        s->pubkey = cfg->passwords.pubkey;
    } else if (strcmp(name, "ntlm") == 0) {
        filter = cfg->ntlm.filter;
        urls = cfg->ntlm.filter_url;
        s->kind = BR_KIND_PASSWORD_NTLM;
        s->pubkey = cfg->ntlm.pubkey;
    }
    s->name = name;
    /* breachd.conf(5) [daemon] trust_own_filters: the records breachd trusts */
    s->trusted_uid = cfg->daemon.trust_own_filters ? (long)geteuid() : -1;
    if (breachd_config_list_split(filter, &s->paths, &s->n_paths) < 0 ||
        breachd_config_list_split(urls, &s->urls, &s->n_urls) < 0)
        return -ENOMEM;
    if (s->n_urls != s->n_paths) {
        ctl_err("filter fetch: %s: [%s] filter_url names %zu URLs for %zu filter files", cfg->path,
                name, s->n_urls, s->n_paths);
        return EXIT_ERROR;
    }
    if (!s->pubkey[0]) {
        ctl_err("filter fetch: %s: [%s] filter_url without a pubkey: only signed filters are "
                "fetched",
                cfg->path, name);
        return EXIT_ERROR;
    }
    for (size_t i = 0; i < s->n_paths; i++)
        if (item_init(&s->items[s->n++], s->urls[i], s->paths[i]) < 0)
            return -ENOMEM;
    return 0;
}

/* Put back what was installed: the daemon refused it. */
static void undo(section *sections, size_t n)
{
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < sections[k].n; i++) {
            item *it = &sections[k].items[i];
            br_error err = {{0}};
            if (it->installed && fetch_rollback(it->path, &err) < 0)
                ctl_err("filter fetch: putting back %s: %s", it->path, err.text);
            else if (it->installed)
                fprintf(stderr, "breachctl: %s: the previous file is back in place\n", it->path);
            it->new_file = it->new_sig = false;
        }
}

/* Fetch, verify and install every section, then RELOAD once. */
static int run(section *sections, size_t n, const fetch_opts *fo, const char *socket_path,
               bool no_reload)
{
    for (size_t k = 0; k < n; k++)
        if (fetch_section(&sections[k], fo))
            return EXIT_ERROR;
    size_t changed = 0;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < sections[k].n; i++)
            changed += sections[k].items[i].new_file || sections[k].items[i].new_sig;
    int status = 0;
    for (size_t k = 0; k < n && !status; k++)
        status = install_section(&sections[k]);
    if (!status && changed && !no_reload && reload(socket_path) == 1) {
        undo(sections, n);
        if (reload(socket_path) != 0)
            ctl_err("filter fetch: the RELOAD of the previous files failed too");
        return EXIT_ERROR;
    }
    if (status) {
        undo(sections, n);
        return status;
    }
    size_t updated = 0;
    for (size_t k = 0; k < n; k++) {
        report(&sections[k], &updated);
        save_states(&sections[k]);
    }
    if (!updated)
        printf("unchanged\n");
    return 0;
}

static void fetch_usage(FILE *out)
{
    filter_usage_of(out, "filter fetch");
}

/* The socket of a config run: --socket given anywhere wins over the
 * config's [daemon] socket. */
static const char *config_socket(const ctl_globals *g, const char *own, const breachd_config *cfg)
{
    if (own)
        return own;
    const char *env = getenv("BREACHD_SOCKET");
    const char *dflt = env && *env ? env : BREACHD_DEFAULT_SOCKET;
    return strcmp(g->socket_path, dflt) != 0 ? g->socket_path : cfg->daemon.socket;
}

int filter_fetch_cmd(const ctl_globals *g, int argc, char **argv)
{
    const char *url = NULL, *pubkey = NULL, *output = NULL, *config = NULL, *sock = NULL;
    bool no_reload = false;
    uint64_t timeout_s = 60;
    fetch_opts fo = {0};
    const ctl_opt opts[] = {
        CTL_STR("url", &url),
        CTL_STR("pubkey", &pubkey),
        CTL_STR("output", &output),
        CTL_STR("config", &config),
        CTL_STR("socket", &sock),
        CTL_STR("ca-file", &fo.ca_file),
        CTL_FLAG("no-reload", &no_reload),
        CTL_UINT("timeout", &timeout_s, 1, 86400, "seconds, 1..86400"),
        CTL_HELP,
    };
    int first;
    int r = ctl_getopt("filter fetch", opts, BR_ARRAY_SIZE(opts), fetch_usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    bool single = url || pubkey || output;
    if (first < argc || (config && single) || (!config && !(url && pubkey && output))) {
        ctl_err("filter fetch: expected --url URL --pubkey PUB --output PATH, or --config FILE");
        fetch_usage(stderr);
        return EXIT_ERROR;
    }
    fo.stall_ms = timeout_s * 1000;
    fo.connect_ms = BR_MIN(timeout_s, 10) * 1000;
    section sections[3] = {{0}};
    size_t n = 0;
    _cleanup_(breachd_config_freep) breachd_config *cfg = NULL;
    const char *socket_path = sock ? sock : g->socket_path;
    if (single) {
        sections[0].pubkey = pubkey;
        sections[0].trusted_uid = -1;
        r = item_init(&sections[0].items[sections[0].n++], url, output);
        n = 1;
    } else {
        br_error err = {{0}};
        if (breachd_config_load(config, &cfg, &err) < 0) {
            ctl_err("filter fetch: %s", err.text);
            return EXIT_ERROR;
        }
        socket_path = config_socket(g, sock, cfg);
        if (cfg->passwords.filter_url[0])
            r = section_from_config(cfg, "passwords", &sections[n++]);
        if (r == 0 && cfg->ntlm.filter_url[0])
            r = section_from_config(cfg, "ntlm", &sections[n++]);
        if (r == 0 && cfg->urls.filter_url[0])
            r = section_from_config(cfg, "urls", &sections[n++]);
        if (r == 0 && n == 0) {
            ctl_err("filter fetch: %s names no filter_url", config);
            r = EXIT_ERROR;
        }
    }
    if (r == -ENOMEM)
        ctl_err("filter fetch: out of memory");
    int status = r ? EXIT_ERROR : run(sections, n, &fo, socket_path, no_reload);
    for (size_t k = 0; k < BR_ARRAY_SIZE(sections); k++)
        section_fini(&sections[k]);
    return status;
}

/* ---- rollback ---- */

static void rollback_usage(FILE *out)
{
    filter_usage_of(out, "filter rollback");
}

int filter_rollback_cmd(const ctl_globals *g, int argc, char **argv)
{
    const char *sock = NULL;
    bool no_reload = false;
    const ctl_opt opts[] = {
        CTL_STR("socket", &sock),
        CTL_FLAG("no-reload", &no_reload),
        CTL_HELP,
    };
    int first;
    int r = ctl_getopt("filter rollback", opts, BR_ARRAY_SIZE(opts), rollback_usage, argc, argv,
                       &first);
    if (r != 0)
        return r > 0 ? 0 : EXIT_ERROR;
    if (first + 1 != argc) {
        ctl_err("filter rollback: expected one PATH");
        return EXIT_ERROR;
    }
    br_error err = {{0}};
    if (fetch_rollback(argv[first], &err) < 0 || fetch_rollback_mark(argv[first], &err) < 0) {
        ctl_err("filter rollback: %s", err.text);
        return EXIT_ERROR;
    }
    printf("%s: the previous file is back in place\n", argv[first]);
    record_installed(argv[first]); /* the hash breachd's RELOAD then skips */
    if (!no_reload && reload(sock ? sock : g->socket_path) == 1)
        return EXIT_ERROR;
    return 0;
}
