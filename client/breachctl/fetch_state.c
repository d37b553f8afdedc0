/* SPDX-License-Identifier: MIT */
/* The files breachctl filter fetch keeps beside a filter (fetch.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch.h"
#include "core/util.h"

#define STATE_MAGIC "breachctl-fetch-state 1"

char *fetch_path(const char *path, const char *suffix)
{
    char *p = NULL;
    return asprintf(&p, "%s%s", path, suffix) < 0 ? NULL : p;
}

static void unset(br_fetch_validators *v)
{
    v->etag[0] = '\0';
    v->last_modified = -1;
}

/* "NAME VALUE" into the validators of one file (NAME etag or mtime). */
static void take(br_fetch_validators *v, const char *name, const char *value)
{
    if (strcmp(name, "etag") == 0 && strlen(value) < sizeof(v->etag))
        snprintf(v->etag, sizeof(v->etag), "%s", value);
    else if (strcmp(name, "mtime") == 0)
        v->last_modified = strtoll(value, NULL, 10);
}

void fetch_state_load(const char *path, fetch_state *st)
{
    memset(st, 0, sizeof(*st));
    unset(&st->file);
    unset(&st->sig);
    unset(&st->part);
    _cleanup_free_ char *sp = fetch_path(path, ".fetch");
    int fd = sp ? open(sp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return;
    }
    char line[2304];
    bool ok =
        fgets(line, sizeof(line), f) && strncmp(line, STATE_MAGIC "\n", sizeof(STATE_MAGIC)) == 0;
    while (ok && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *sp1 = strchr(line, ' ');
        if (!sp1)
            continue;
        *sp1 = '\0';
        const char *key = line, *value = sp1 + 1;
        char *dot = strchr(line, '.');
        if (strcmp(key, "url") == 0 && strlen(value) < sizeof(st->url))
            snprintf(st->url, sizeof(st->url), "%s", value);
        else if (dot) {
            *dot = '\0';
            br_fetch_validators *v = strcmp(key, "file") == 0   ? &st->file
                                     : strcmp(key, "sig") == 0  ? &st->sig
                                     : strcmp(key, "part") == 0 ? &st->part
                                                                : NULL;
            if (v)
                take(v, dot + 1, value);
        }
    }
    fclose(f);
}

static void put(FILE *f, const char *what, const br_fetch_validators *v)
{
    if (v->etag[0])
        fprintf(f, "%s.etag %s\n", what, v->etag);
    if (v->last_modified >= 0)
        fprintf(f, "%s.mtime %" PRId64 "\n", what, v->last_modified);
}

int fetch_create(const char *path, br_error *err)
{
    if (unlink(path) < 0 && errno != ENOENT)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || fchmod(fd, 0644) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return br_error_set(err, -e, "%s: %s", path, strerror(e));
    }
    return fd;
}

static int fsync_dir(const char *path)
{
    _cleanup_free_ char *copy = strdup(path);
    if (!copy)
        return -ENOMEM;
    _cleanup_close_ int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) < 0)
        return -errno;
    return 0;
}

int fetch_state_save(const char *path, const fetch_state *st, br_error *err)
{
    _cleanup_free_ char *sp = fetch_path(path, ".fetch");
    _cleanup_free_ char *tmp = fetch_path(path, ".fetch.tmp");
    if (!sp || !tmp)
        return -ENOMEM;
    int fd = fetch_create(tmp, err);
    if (fd < 0)
        return fd;
    FILE *f = fdopen(fd, "we");
    if (!f) {
        close(fd);
        return br_error_set(err, -errno, "%s: %s", tmp, strerror(errno));
    }
    fprintf(f, STATE_MAGIC "\nurl %s\n", st->url);
    put(f, "file", &st->file);
    put(f, "sig", &st->sig);
    put(f, "part", &st->part);
    int r = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -errno;
    if (fclose(f) != 0 && r == 0)
        r = -errno;
    if (r == 0 && rename(tmp, sp) < 0)
        r = -errno;
    if (r < 0) {
        unlink(tmp);
        return br_error_set(err, r, "%s: %s", sp, strerror(-r));
    }
    return 0;
}

/* dst becomes a second name of src (atomically replacing dst); -ENOENT when
 * there is no src. */
static int keep_as(const char *src, const char *dst)
{
    _cleanup_free_ char *tmp = fetch_path(dst, ".tmp");
    if (!tmp)
        return -ENOMEM;
    unlink(tmp);
    if (link(src, tmp) < 0)
        return -errno;
    if (rename(tmp, dst) < 0) {
        int r = -errno;
        unlink(tmp);
        return r;
    }
    return 0;
}

static int move(const char *from, const char *to, br_error *err)
{
    if (rename(from, to) < 0)
        return br_error_set(err, -errno, "rename %s -> %s: %s", from, to, strerror(errno));
    return 0;
}

int fetch_install(const char *path, bool file, bool sig_new, br_error *err)
{
    _cleanup_free_ char *prev = fetch_path(path, ".prev");
    _cleanup_free_ char *part = fetch_path(path, ".part");
    _cleanup_free_ char *sig = fetch_path(path, ".sig");
    _cleanup_free_ char *sig_prev = fetch_path(path, ".sig.prev");
    _cleanup_free_ char *sig_tmp = fetch_path(path, ".sig.new");
    if (!prev || !part || !sig || !sig_prev || !sig_tmp)
        return -ENOMEM;
    int r = 0;
    if (file) {
        /* The pair that was serving becomes PATH.prev / PATH.sig.prev. */
        r = keep_as(path, prev);
        if (r < 0 && r != -ENOENT)
            return br_error_set(err, r, "keeping %s as %s: %s", path, prev, strerror(-r));
        r = keep_as(sig, sig_prev);
        if (r == -ENOENT)
            unlink(sig_prev);
        else if (r < 0)
            return br_error_set(err, r, "keeping %s as %s: %s", sig, sig_prev, strerror(-r));
        r = move(part, path, err);
    }
    if (r == 0 && sig_new)
        r = move(sig_tmp, sig, err);
    if (r == 0 && file)
        fetch_rollback_unmark(path);
    int d = fsync_dir(path);
    if (r == 0 && d < 0)
        r = br_error_set(err, d, "%s: fsync of its directory: %s", path, strerror(-d));
    return r;
}

int fetch_rollback(const char *path, br_error *err)
{
    _cleanup_free_ char *prev = fetch_path(path, ".prev");
    _cleanup_free_ char *sig = fetch_path(path, ".sig");
    _cleanup_free_ char *sig_prev = fetch_path(path, ".sig.prev");
    if (!prev || !sig || !sig_prev)
        return -ENOMEM;
    struct stat st;
    if (stat(prev, &st) < 0)
        return br_error_set(err, -errno, "%s: %s (nothing to roll back to)", prev, strerror(errno));
    int r = 0;
    if (stat(sig_prev, &st) == 0)
        r = move(sig_prev, sig, err);
    else
        unlink(sig); /* it was the newer file's */
    if (r == 0)
        r = move(prev, path, err);
    int d = fsync_dir(path);
    if (r == 0 && d < 0)
        r = br_error_set(err, d, "%s: fsync of its directory: %s", path, strerror(-d));
    return r;
}
