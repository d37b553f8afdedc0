/* SPDX-License-Identifier: MIT */
/* The corpus downloader: setting a run up (output directory, lock, index,
 * session, upstream, writer), and its end (every requested prefix checked,
 * the report, the index and session files, the single file). The fetch loop
 * itself is download.c; see download.h for the whole. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <event2/event.h>

#include "download_int.h"
#include "core/hash.h"
#include "range/range.h"
#include "core/util.h"
#include "core/random.h"

/* ---- small helpers ---------------------------------------------------------- */

int br_download_parse_range(const char *s, uint32_t *first, uint32_t *last)
{
    if (!s)
        return -EINVAL;
    const char *dash = strchr(s, '-');
    uint32_t v[2];
    const char *parts[2] = {s, dash ? dash + 1 : s};
    size_t lens[2] = {dash ? (size_t)(dash - s) : strlen(s), dash ? strlen(dash + 1) : strlen(s)};
    for (int i = 0; i < 2; i++) {
        if (lens[i] < 1 || lens[i] > 5)
            return -EINVAL;
        v[i] = 0;
        for (size_t k = 0; k < lens[i]; k++) {
            int h = br_hexval((unsigned char)parts[i][k]);
            if (h < 0)
                return -EINVAL;
            v[i] = v[i] << 4 | (uint32_t)h;
        }
    }
    if (v[0] > v[1])
        return -EINVAL;
    *first = v[0];
    *last = v[1];
    return 0;
}

/* ---- the end ----------------------------------------------------------------- */

static void why_text(dl_run *r, uint32_t p, char *out, size_t cap)
{
    size_t i = p - r->first;
    int16_t why = r->why[i];
    const char *state;
    switch (r->st[i]) {
    case PS_FAILED:
        state = "failed";
        break;
    case PS_WRITING:
        state = "fetched, not written";
        break;
    case PS_DONE:
    case PS_RESUMED:
        state = "file changed or removed during the run";
        break;
    default:
        state = "not fetched";
        break;
    }
    char w[48] = "";
    if (why > 0)
        snprintf(w, sizeof(w), "HTTP %d", why);
    else if (why == WHY_TIMEOUT)
        snprintf(w, sizeof(w), "timeout");
    else if (why == WHY_UNAVAILABLE)
        snprintf(w, sizeof(w), "connection failed");
    else if (why == WHY_TOO_LARGE)
        snprintf(w, sizeof(w), "body too large");
    else if (why == WHY_MALFORMED)
        snprintf(w, sizeof(w), "malformed body");
    else if (why == WHY_EMPTY)
        snprintf(w, sizeof(w), "empty body");
    else if (why == WHY_ERROR)
        snprintf(w, sizeof(w), "error");
    else if (why == WHY_NOFILE)
        snprintf(w, sizeof(w), "file missing or unreadable");
    const char *older = r->ix.e[p].state == DL_E_OK ? "; an older copy is kept" : "";
    if (*w && r->st[i] != PS_FAILED)
        snprintf(out, cap, "%s (last try: %s)%s", state, w, older);
    else if (*w)
        snprintf(out, cap, "%s: %s%s", state, w, older);
    else
        snprintf(out, cap, "%s%s", state, older);
}

static void final_check(dl_run *r, br_download_result *res)
{
    dl_index_check_files(&r->ix, r->first, r->last);
    for (uint32_t p = r->first; p <= r->last; p++) {
        if (dl_session_has(&r->ix, p) && r->ix.e[p].state == DL_E_OK)
            continue;
        if (res->n_missing_listed < BR_DOWNLOAD_MISSING_LIST) {
            size_t k = res->n_missing_listed++;
            res->missing_prefix[k] = p;
            why_text(r, p, res->missing_reason[k], sizeof(res->missing_reason[k]));
        }
        res->missing++;
    }
    res->complete = res->missing == 0;
}

/* ---- setup ------------------------------------------------------------------- */

static int open_dir(const char *path, int *dirfd, int *lockfd, br_error *err)
{
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    int lfd = openat(fd, BR_DOWNLOAD_LOCK_NAME, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lfd < 0) {
        int e = errno;
        close(fd);
        return br_error_set(err, -e, "%s/%s: %s", path, BR_DOWNLOAD_LOCK_NAME, strerror(e));
    }
    if (flock(lfd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        close(lfd);
        close(fd);
        if (e == EWOULDBLOCK)
            return br_error_set(err, -EBUSY, "%s: another download is running there", path);
        return br_error_set(err, -e, "%s: lock: %s", path, strerror(e));
    }
    *dirfd = fd;
    *lockfd = lfd;
    return 0;
}

static int prepare(dl_run *r, br_error *err)
{
    const br_download_opts *o = r->o;
    dl_clean_temp(r->ix.dirfd);
    dl_index_check_files(&r->ix, r->first, r->last);
    if (r->ix.jrecords > 0 || r->ix.rewrite) {
        int rc = dl_index_compact(&r->ix, err);
        if (rc < 0)
            return rc;
    }
    int rc = dl_index_journal_open(&r->ix, err);
    if (rc < 0)
        return rc;
    r->ix.jbytes = 0;
    dl_session_begin(&r->ix, o->force, o->ntlm);
    r->force = r->ix.session_force;
    if (r->ix.session_resumed)
        dl_run_log(r, LOG_NOTICE, "resuming an interrupted download");
    for (uint32_t p = r->first; p <= r->last; p++) {
        if (!dl_session_has(&r->ix, p))
            continue;
        if (r->ix.e[p].state == DL_E_OK) {
            r->st[p - r->first] = PS_RESUMED;
            r->resumed++;
        } else {
            dl_session_clear(&r->ix, p);
        }
    }
    return 0;
}

static int make_upstream(dl_run *r, const char *tmpl, br_error *err)
{
    const br_download_opts *o = r->o;
    br_upstream_config uc = {
        .url_template = tmpl,
        .timeout_ms = 120000,
        .connect_timeout_ms = 15000,
        .attempt_timeout_ms = 60000,
        .max_inflight = r->parallel,
        .rate = -1,
        .max_body = BR_RANGE_DEFAULT_MAX_BODY,
        .max_attempts = 3,
        .retry_base_ms = 250,
        .retry_max_ms = 4000,
        .breaker_threshold = 16,
        .breaker_cooldown_ms = 2000,
        .proxy = o->proxy,
        .ca_file = o->ca_file,
        .no_padding = true,
        .h2_max_streams = o->h2_streams ? o->h2_streams : BR_MAX(8u, r->parallel / 4),
        .log = o->log,
        .log_ctx = o->log_ctx,
    };
    return br_upstream_new(r->base, &uc, &r->up, err);
}

static void run_free(dl_run *r)
{
    if (r->up)
        br_upstream_free(r->up);
    r->up = NULL;
    if (r->tick)
        event_free(r->tick);
    if (r->base)
        event_base_free(r->base);
    free(r->st);
    free(r->tries);
    free(r->why);
    free(r->heap);
    while (r->all_slots) {
        dl_slot *s = r->all_slots;
        r->all_slots = s->all;
        free(s);
    }
}

/* The run's settings from the options (defaults and caps). */
static void run_init(dl_run *r, const br_download_opts *o, const char *tmpl)
{
    *r = (dl_run){.o = o, .first = o->first, .last = o->last};
    r->total = o->last - o->first + 1;
    r->parallel = o->parallel ? BR_MIN(o->parallel, (uint32_t)BR_DOWNLOAD_MAX_PARALLEL)
                              : BR_DOWNLOAD_DEFAULT_PARALLEL;
    r->max_fetches =
        o->max_fetches ? BR_MIN(o->max_fetches, 255u) : BR_DOWNLOAD_DEFAULT_MAX_FETCHES;
    r->stall_ns = (uint64_t)(o->stall_ms ? o->stall_ms : BR_DOWNLOAD_DEFAULT_STALL_MS) * 1000000u;
    r->next = r->first;
    r->ix.jfd = -1;
    r->is_file = strncasecmp(tmpl, "file://", 7) == 0;
    if (br_random_bytes(&r->rng, sizeof(r->rng)) < 0)
        r->rng = br_now_ns();
}

/* Everything the fetch loop needs: per-prefix state, the index and its
 * session, the event base, the upstream and the writer threads. */
static int run_start(dl_run *r, int dirfd, const char *tmpl, br_error *err)
{
    r->st = calloc(r->total, 1);
    r->tries = calloc(r->total, 1);
    r->why = calloc(r->total, sizeof(*r->why));
    if (!r->st || !r->tries || !r->why)
        return br_error_set(err, -ENOMEM, "download: out of memory");
    int rc = dl_index_load(&r->ix, dirfd, tmpl, err);
    if (rc < 0 || (rc = prepare(r, err)) < 0)
        return rc;
    r->base = event_base_new();
    if (!r->base)
        return br_error_set(err, -ENOMEM, "download: event_base_new failed");
    rc = make_upstream(r, tmpl, err);
    if (rc < 0)
        return rc;
    const br_download_opts *o = r->o;
    return dl_writer_start(&r->w, &r->ix, o->temp_files, o->batch_files, o->batch_ms, err);
}

/* After the loop: stop the network first (in-flight fetches are
 * cancelled), then let the writer commit what it holds; the end check, the
 * session and the journal. A failure on the way is kept in r->fatal. */
static void run_stop(dl_run *r, int dirfd, br_download_result *res)
{
    r->stopping = true;
    dl_fill_progress(r, &res->p);
    br_upstream_free(r->up);
    r->up = NULL;
    int werr = dl_writer_stop(&r->w);
    if (werr && !r->fatal)
        r->fatal = br_error_set(&r->fatal_err, werr, "%s", r->w.errtext);
    uint64_t req = res->p.requests, bytes = res->p.bytes;
    dl_fill_progress(r, &res->p);
    res->p.requests = req;
    res->p.bytes = bytes;
    res->interrupted = r->interrupted;
    res->gave_up = r->gave_up;

    final_check(r, res);
    if (res->complete)
        dl_session_remove(&r->ix);
    else
        dl_session_save(&r->ix);
    if (r->ix.jbytes == 0) { /* nothing appended: the journal holds its header only */
        close(r->ix.jfd);
        r->ix.jfd = -1;
        unlinkat(dirfd, BR_DOWNLOAD_JOURNAL_NAME, 0);
    } else {
        br_error cerr;
        int crc = dl_index_promote_journal(&r->ix, &cerr);
        if (crc < 0 && !r->fatal)
            r->fatal = br_error_set(&r->fatal_err, crc, "%s", cerr.text);
    }
}

/* The run in its directory (open and locked): 0 or -errno with err set. */
static int run_in(dl_run *r, int dirfd, const char *tmpl, br_download_result *res, br_error *err)
{
    const br_download_opts *o = r->o;
    int rc = run_start(r, dirfd, tmpl, err);
    if (rc < 0)
        return rc;
    if (dl_loop_run(r) < 0)
        return br_error_set(err, -ENOMEM, "download: event_new failed");
    run_stop(r, dirfd, res);
    if (r->fatal) {
        res->complete = false;
        return br_error_set(err, r->fatal, "%s", r->fatal_err.text);
    }
    if (o->progress)
        o->progress(o->progress_ctx, &res->p, true);
    if (res->complete && o->single_file)
        return dl_write_single(dirfd, r->first, r->last, o->single_file, &res->single_file_lines,
                               err);
    return 0;
}

int br_download_run(const br_download_opts *o, br_download_result *res, br_error *err)
{
    memset(res, 0, sizeof(*res));
    if (!o || !o->out_dir || !*o->out_dir)
        return br_error_set(err, -EINVAL, "download: no output directory");
    if (o->first > o->last || o->last > 0xFFFFF)
        return br_error_set(err, -EINVAL, "download: bad prefix range");
    const char *tmpl = o->url_template && *o->url_template ? o->url_template
                       : o->ntlm                           ? BR_DOWNLOAD_DEFAULT_NTLM_UPSTREAM
                                                           : BR_DOWNLOAD_DEFAULT_UPSTREAM;
    dl_run r;
    run_init(&r, o, tmpl);
    int dirfd = -1, lockfd = -1;
    int rc = open_dir(o->out_dir, &dirfd, &lockfd, err);
    if (rc < 0)
        return rc;
    rc = run_in(&r, dirfd, tmpl, res, err);
    if (r.w.started)
        dl_writer_stop(&r.w);
    run_free(&r);
    dl_index_free(&r.ix);
    if (lockfd >= 0)
        close(lockfd);
    if (dirfd >= 0)
        close(dirfd);
    return rc;
}
