/* SPDX-License-Identifier: MIT */
/* The corpus downloader's run (see download.h): its fetch loop, then
 * setting a run up and its end (below). One event loop thread
 * keeps `parallel` fetches in flight through a br_upstream, parses every 200
 * body and hands it to the writer thread (download_writer.c).
 *
 * A prefix's life in one run:
 *   PENDING -> INFLIGHT -> WRITING (200, parsed; the writer commits it)
 *                    -> DONE    (304)
 *                    -> WAIT    (retriable failure: back in after a jittered
 *                                backoff, at most max_fetches fetches)
 *                    -> FAILED  (a 4xx, an oversized body, or out of fetches)
 * Prefixes confirmed earlier in the same session start as DONE (resumed).
 *
 * Network loss: the upstream's breaker opens after consecutive failures;
 * failures seen while it is not closed, and fetches it refuses, do not count
 * against a prefix (they are the network's, not the prefix's). When nothing
 * useful has been answered for stall_ms the run gives up (resumable). */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "download_int.h"
#include "range/range.h"
#include "core/util.h"
#include "core/log_line.h"
#include "core/hash.h"
#include "core/random.h"

#define TICK_MS 20
#define BACKLOG_JOBS 16384
#define BACKLOG_BYTES ((size_t)64 << 20)
#define RETRY_BASE_MS 1000
#define RETRY_MAX_MS 30000
#define CIRCUIT_WAIT_MS 250

static void dl_run_log(dl_run *r, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    br_vlogf(r->o->log, r->o->log_ctx, level, fmt, ap);
    va_end(ap);
}

static void heap_push(dl_run *r, uint32_t prefix, uint64_t due)
{
    if (r->nheap == r->heap_cap) {
        size_t nc = r->heap_cap ? r->heap_cap * 2 : 256;
        dl_wait *nh = realloc(r->heap, nc * sizeof(*nh));
        if (!nh) {
            r->fatal = br_error_set(&r->fatal_err, -ENOMEM, "out of memory");
            return;
        }
        r->heap = nh;
        r->heap_cap = nc;
    }
    size_t i = r->nheap++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (r->heap[parent].due_ns <= due)
            break;
        r->heap[i] = r->heap[parent];
        i = parent;
    }
    r->heap[i] = (dl_wait){due, prefix};
    r->st[prefix - r->first] = PS_WAIT;
}

static uint32_t heap_pop(dl_run *r)
{
    uint32_t top = r->heap[0].prefix;
    dl_wait last = r->heap[--r->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= r->nheap)
            break;
        if (c + 1 < r->nheap && r->heap[c + 1].due_ns < r->heap[c].due_ns)
            c++;
        if (last.due_ns <= r->heap[c].due_ns)
            break;
        r->heap[i] = r->heap[c];
        i = c;
    }
    if (r->nheap)
        r->heap[i] = last;
    return top;
}

static void dl_fill_progress(dl_run *r, br_download_progress *p)
{
    memset(p, 0, sizeof(*p));
    p->total = r->total;
    p->written = __atomic_load_n(&r->w.written, __ATOMIC_ACQUIRE);
    p->unchanged = __atomic_load_n(&r->w.unchanged, __ATOMIC_ACQUIRE);
    p->not_modified = r->not_modified;
    p->resumed = r->resumed;
    p->failed = r->failed;
    p->done = p->written + p->unchanged + p->not_modified + p->resumed;
    if (r->up) {
        br_upstream_stats us;
        br_upstream_get_stats(r->up, &us);
        p->requests = us.transfers;
        p->bytes = us.body_bytes;
    }
    p->elapsed_s = (double)(br_now_ns() - r->start_ns) / 1e9;
}

static bool dl_all_dispatched(dl_run *r)
{
    return r->next > r->last && r->nheap == 0 && r->inflight == 0;
}

/* ---- fetching ---------------------------------------------------------------- */

static void fetch_cb(void *ctx, const br_upstream_response *res);

static int issue(dl_run *r, uint32_t p)
{
    dl_slot *s = r->free_slots;
    if (!s) {
        s = calloc(1, sizeof(*s));
        if (!s)
            return -ENOMEM;
        s->run = r;
        s->all = r->all_slots;
        r->all_slots = s;
        r->free_slots = s;
    }
    const dl_entry *e = &r->ix.e[p];
    const char *etag = NULL, *lm = NULL;
    if (!r->force && e->state == DL_E_OK) {
        etag = dl_entry_etag(e);
        lm = dl_entry_lm(e);
    }
    int rc = br_upstream_fetch(r->up, p, etag, lm, fetch_cb, s);
    if (rc < 0)
        return rc;
    r->free_slots = s->next;
    s->prefix = p;
    r->st[p - r->first] = PS_INFLIGHT;
    r->inflight++;
    return 0;
}

static void feed(dl_run *r)
{
    if (r->stopping || r->fatal)
        return;
    size_t jobs, bytes;
    dl_writer_backlog(&r->w, &jobs, &bytes);
    if (jobs >= BACKLOG_JOBS || bytes >= BACKLOG_BYTES)
        return; /* the writer is behind: the tick feeds again */
    uint64_t now = br_now_ns();
    /* `parallel` transfers running or about to: fetches in a retry backoff
     * do not hold one */
    br_upstream_stats us;
    br_upstream_get_stats(r->up, &us);
    uint32_t busy = us.inflight + us.queued;
    while (busy < r->parallel && !r->fatal) {
        uint32_t p;
        if (r->nheap && r->heap[0].due_ns <= now) {
            p = heap_pop(r);
        } else if (r->next <= r->last) {
            p = r->next++;
            if (r->st[p - r->first] != PS_PENDING)
                continue;
        } else {
            break;
        }
        int rc = issue(r, p);
        if (rc == -EHOSTDOWN) { /* circuit open: wait, this does not count */
            heap_push(r, p, now + CIRCUIT_WAIT_MS * 1000000ull);
            break;
        }
        if (rc < 0) {
            r->fatal = br_error_set(&r->fatal_err, rc, "cannot start a fetch: %s", strerror(-rc));
            break;
        }
        busy++;
    }
}

static void fail(dl_run *r, uint32_t p, int16_t why, bool retriable)
{
    size_t i = p - r->first;
    r->why[i] = why;
    if (retriable && br_upstream_breaker(r->up) != BR_BREAKER_CLOSED) {
        /* the upstream as a whole is failing: not this prefix's fault */
        heap_push(r, p, br_now_ns() + CIRCUIT_WAIT_MS * 1000000ull);
        return;
    }
    r->tries[i]++;
    if (!retriable || r->tries[i] >= r->max_fetches) {
        r->st[i] = PS_FAILED;
        r->failed++;
        return;
    }
    uint64_t d = RETRY_BASE_MS;
    for (unsigned k = 1; k < r->tries[i] && d < RETRY_MAX_MS; k++)
        d *= 2;
    d = BR_MIN(d, (uint64_t)RETRY_MAX_MS) * 1000000u;
    uint64_t wait = d / 2 + br_splitmix64(&r->rng) % (d / 2 + 1);
    heap_push(r, p, br_now_ns() + wait);
}

static void got_body(dl_run *r, uint32_t p, const br_upstream_response *res)
{
    uint8_t *value = NULL;
    size_t vlen = 0;
    br_error perr;
    br_range_kind kind = r->o->ntlm ? BR_RANGE_PASSWORD_NTLM : BR_RANGE_PASSWORD_SHA1;
    int rc = br_range_parse(kind, res->body, res->body_len, 0, &value, &vlen, &perr);
    free(value);
    if (rc == -ENOMEM) {
        r->fatal = br_error_set(&r->fatal_err, rc, "out of memory");
        return;
    }
    if (rc < 0) {
        dl_run_log(r, LOG_INFO, "prefix %05X: unusable body: %s", p, perr.text);
        fail(r, p,
             rc == -ENODATA ? WHY_EMPTY
             : rc == -EFBIG ? WHY_TOO_LARGE
                            : WHY_MALFORMED,
             rc != -EFBIG);
        return;
    }
    dl_job *j = malloc(sizeof(*j) + res->body_len);
    if (!j) {
        r->fatal = br_error_set(&r->fatal_err, -ENOMEM, "out of memory");
        return;
    }
    j->prefix = p;
    j->len = res->body_len;
    j->val = dl_val_make(res->etag, res->last_modified);
    memcpy(j->body, res->body, res->body_len);
    r->st[p - r->first] = PS_WRITING;
    dl_writer_push(&r->w, j);
}

static void fetch_cb(void *ctx, const br_upstream_response *res)
{
    dl_slot *s = ctx;
    dl_run *r = s->run;
    uint32_t p = s->prefix;
    s->next = r->free_slots;
    r->free_slots = s;
    r->inflight--;
    uint64_t now = br_now_ns();

    switch (res->status) {
    case BR_UPSTREAM_OK:
        r->last_answer_ns = now;
        got_body(r, p, res);
        break;
    case BR_UPSTREAM_NOT_MODIFIED:
        r->last_answer_ns = now;
        r->st[p - r->first] = PS_DONE;
        r->not_modified++;
        dl_session_set(&r->ix, p);
        __atomic_store_n(&r->ix.session_dirty, true, __ATOMIC_RELEASE);
        break;
    case BR_UPSTREAM_ERROR: {
        long h = res->http_status;
        bool retriable = h >= 500 || h == 429 || h == 408;
        if (h > 0 && !retriable)
            r->last_answer_ns = now; /* a definite answer, e.g. 404 */
        fail(r, p, h > 0 && h < 1000 ? (int16_t)h : r->is_file ? WHY_NOFILE : WHY_ERROR, retriable);
        break;
    }
    case BR_UPSTREAM_TIMEOUT:
        fail(r, p, WHY_TIMEOUT, true);
        break;
    case BR_UPSTREAM_RATE_LIMITED: /* 429 / 503 with Retry-After until the deadline */
        fail(r, p,
             res->http_status > 0 && res->http_status < 1000 ? (int16_t)res->http_status
                                                             : WHY_TIMEOUT,
             true);
        break;
    case BR_UPSTREAM_UNAVAILABLE:
        fail(r, p, WHY_UNAVAILABLE, true);
        break;
    case BR_UPSTREAM_TOO_LARGE:
        r->last_answer_ns = now;
        fail(r, p, WHY_TOO_LARGE, false);
        break;
    case BR_UPSTREAM_CIRCUIT_OPEN:
        heap_push(r, p, now + CIRCUIT_WAIT_MS * 1000000ull);
        break;
    case BR_UPSTREAM_CANCELLED:
        r->st[p - r->first] = PS_PENDING;
        break;
    }
    if (r->stopping)
        return;
    feed(r);
    if (dl_all_dispatched(r) || r->fatal)
        event_base_loopbreak(r->base);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    dl_run *r = arg;
    uint64_t now = br_now_ns();
    if (r->o->stop && *r->o->stop) {
        r->interrupted = true;
        event_base_loopbreak(r->base);
        return;
    }
    int werr = dl_writer_error(&r->w);
    if (werr && !r->fatal)
        r->fatal = br_error_set(&r->fatal_err, werr, "%s", r->w.errtext);
    if (!dl_all_dispatched(r) && now - r->last_answer_ns > r->stall_ns) {
        r->gave_up = true;
        dl_run_log(r, LOG_ERR, "no usable answer from the upstream for %llu s: giving up",
                   (unsigned long long)(r->stall_ns / 1000000000u));
    }
    if (r->fatal || r->gave_up || dl_all_dispatched(r)) {
        event_base_loopbreak(r->base);
        return;
    }
    uint32_t pms = r->o->progress_ms ? r->o->progress_ms : 250;
    if (r->o->progress && now - r->last_progress_ns >= pms * 1000000ull) {
        r->last_progress_ns = now;
        br_download_progress p;
        dl_fill_progress(r, &p);
        r->o->progress(r->o->progress_ctx, &p, false);
    }
    dl_writer_flush(&r->w); /* at a slow rate, jobs wait at most a tick */
    feed(r);
}

/* Add the tick, start fetching, run the loop until everything was dispatched
 * and answered, or a stop, a give-up or a fatal error. 0 or -ENOMEM. */
static int dl_loop_run(dl_run *r)
{
    r->tick = event_new(r->base, -1, EV_PERSIST, tick_cb, r);
    struct timeval tv = {.tv_sec = 0, .tv_usec = TICK_MS * 1000};
    if (!r->tick || event_add(r->tick, &tv) < 0)
        return -ENOMEM;
    r->start_ns = r->last_answer_ns = br_now_ns();
    feed(r);
    if (!dl_all_dispatched(r) && !r->fatal)
        event_base_dispatch(r->base);
    return 0;
}

/* ---- a run's set-up and end ---- */

/* Setting a run up (output directory, lock, index,
 * session, upstream, writer), and its end (every requested prefix checked,
 * the report, the index and session files, the single file). */

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
