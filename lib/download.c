/* SPDX-License-Identifier: MIT */
/* The corpus downloader's fetch loop (see download.h). One event loop thread
 * keeps `parallel` fetches in flight through a br_upstream, parses every 200
 * body and hands it to the writer thread (download_writer.c).
 *
 * A prefix's life in one run:
 *   TODO -> INFLIGHT -> WRITING (200, parsed; the writer commits it)
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
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <event2/event.h>

#include "download_int.h"
#include "hash.h"
#include "range.h"
#include "util.h"

#define TICK_MS 20
#define BACKLOG_JOBS 16384
#define BACKLOG_BYTES ((size_t)64 << 20)
#define RETRY_BASE_MS 1000
#define RETRY_MAX_MS 30000
#define CIRCUIT_WAIT_MS 250

enum { PS_TODO = 0, PS_INFLIGHT, PS_WAIT, PS_WRITING, PS_DONE, PS_RESUMED, PS_FAILED };

/* Why a prefix is not there: > 0 an HTTP status, else one of these. */
enum {
    WHY_NONE = 0,
    WHY_TIMEOUT = -1,
    WHY_UNAVAILABLE = -2,
    WHY_TOO_LARGE = -3,
    WHY_MALFORMED = -4,
    WHY_EMPTY = -5,
    WHY_ERROR = -6,
    WHY_NOFILE = -7,
};

typedef struct dl_run dl_run;

/* One outstanding fetch. Slots are reused; a fetch waiting in the upstream's
 * retry backoff keeps its slot but not a transfer, so there can be more slots
 * than `parallel`. */
typedef struct slot {
    dl_run *run;
    uint32_t prefix;
    struct slot *next; /* free list */
    struct slot *all;  /* every slot, for freeing */
} slot;

typedef struct wait_ent {
    uint64_t due_ns;
    uint32_t prefix;
} wait_ent;

struct dl_run {
    const br_download_opts *o;
    struct event_base *base;
    br_upstream *up;
    dl_index ix;
    dl_writer w;
    struct event *tick;
    uint32_t first, last, total, parallel, max_fetches;
    bool force, is_file;
    uint8_t *st;    /* per prefix of the range */
    uint8_t *tries; /* fetches that counted */
    int16_t *why;
    uint32_t next; /* the sweep */
    wait_ent *heap;
    size_t nheap, heap_cap;
    slot *all_slots, *free_slots;
    uint32_t inflight;
    uint32_t not_modified, resumed, failed;
    uint64_t start_ns, last_answer_ns, last_progress_ns, stall_ns;
    uint64_t rng;
    bool stopping, interrupted, gave_up;
    int fatal;
    br_error fatal_err;
};

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

static void run_log(dl_run *r, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void run_log(dl_run *r, int level, const char *fmt, ...)
{
    if (!r->o->log)
        return;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r->o->log(r->o->log_ctx, level, msg);
}

static void heap_push(dl_run *r, uint32_t prefix, uint64_t due)
{
    if (r->nheap == r->heap_cap) {
        size_t nc = r->heap_cap ? r->heap_cap * 2 : 256;
        wait_ent *nh = realloc(r->heap, nc * sizeof(*nh));
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
    r->heap[i] = (wait_ent){due, prefix};
    r->st[prefix - r->first] = PS_WAIT;
}

static uint32_t heap_pop(dl_run *r)
{
    uint32_t top = r->heap[0].prefix;
    wait_ent last = r->heap[--r->nheap];
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

static void fill_progress(dl_run *r, br_download_progress *p)
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

static bool all_dispatched(dl_run *r)
{
    return r->next > r->last && r->nheap == 0 && r->inflight == 0;
}

/* ---- fetching ---------------------------------------------------------------- */

static void fetch_cb(void *ctx, const br_upstream_response *res);

static int issue(dl_run *r, uint32_t p)
{
    slot *s = r->free_slots;
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
            if (r->st[p - r->first] != PS_TODO)
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
    int rc = br_range_parse(BR_RANGE_PASSWORD_SHA1, res->body, res->body_len, 0, &value, &vlen, &perr);
    free(value);
    if (rc == -ENOMEM) {
        r->fatal = br_error_set(&r->fatal_err, rc, "out of memory");
        return;
    }
    if (rc < 0) {
        run_log(r, LOG_INFO, "prefix %05X: unusable body: %s", p, perr.text);
        fail(r, p, rc == -ENODATA ? WHY_EMPTY : rc == -EFBIG ? WHY_TOO_LARGE : WHY_MALFORMED,
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
    slot *s = ctx;
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
        r->st[p - r->first] = PS_TODO;
        break;
    }
    if (r->stopping)
        return;
    feed(r);
    if (all_dispatched(r) || r->fatal)
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
    if (!all_dispatched(r) && now - r->last_answer_ns > r->stall_ns) {
        r->gave_up = true;
        run_log(r, LOG_ERR, "no usable answer from the upstream for %llu s: giving up",
                (unsigned long long)(r->stall_ns / 1000000000u));
    }
    if (r->fatal || r->gave_up || all_dispatched(r)) {
        event_base_loopbreak(r->base);
        return;
    }
    uint32_t pms = r->o->progress_ms ? r->o->progress_ms : 250;
    if (r->o->progress && now - r->last_progress_ns >= pms * 1000000ull) {
        r->last_progress_ns = now;
        br_download_progress p;
        fill_progress(r, &p);
        r->o->progress(r->o->progress_ctx, &p, false);
    }
    feed(r);
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
    dl_session_begin(&r->ix, o->force);
    r->force = r->ix.session_force;
    if (r->ix.session_resumed)
        run_log(r, LOG_NOTICE, "resuming an interrupted download");
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
        slot *s = r->all_slots;
        r->all_slots = s->all;
        free(s);
    }
}

int br_download_run(const br_download_opts *o, br_download_result *res, br_error *err)
{
    memset(res, 0, sizeof(*res));
    if (!o || !o->out_dir || !*o->out_dir)
        return br_error_set(err, -EINVAL, "download: no output directory");
    if (o->first > o->last || o->last > 0xFFFFF)
        return br_error_set(err, -EINVAL, "download: bad prefix range");
    const char *tmpl = o->url_template && *o->url_template ? o->url_template
                                                           : BR_DOWNLOAD_DEFAULT_UPSTREAM;
    dl_run r = {.o = o, .first = o->first, .last = o->last};
    r.total = o->last - o->first + 1;
    r.parallel = o->parallel ? BR_MIN(o->parallel, (uint32_t)BR_DOWNLOAD_MAX_PARALLEL)
                             : BR_DOWNLOAD_DEFAULT_PARALLEL;
    r.max_fetches = o->max_fetches ? o->max_fetches : BR_DOWNLOAD_DEFAULT_MAX_FETCHES;
    r.stall_ns = (uint64_t)(o->stall_ms ? o->stall_ms : BR_DOWNLOAD_DEFAULT_STALL_MS) * 1000000u;
    r.next = r.first;
    r.ix.jfd = -1;
    r.is_file = strncasecmp(tmpl, "file://", 7) == 0;
    if (getrandom(&r.rng, sizeof(r.rng), GRND_NONBLOCK) != (ssize_t)sizeof(r.rng))
        r.rng = br_now_ns();

    int dirfd = -1, lockfd = -1;
    int rc = open_dir(o->out_dir, &dirfd, &lockfd, err);
    if (rc < 0)
        return rc;
    r.st = calloc(r.total, 1);
    r.tries = calloc(r.total, 1);
    r.why = calloc(r.total, sizeof(*r.why));
    if (!r.st || !r.tries || !r.why) {
        rc = br_error_set(err, -ENOMEM, "download: out of memory");
        goto out;
    }
    rc = dl_index_load(&r.ix, dirfd, tmpl, err);
    if (rc < 0)
        goto out;
    rc = prepare(&r, err);
    if (rc < 0)
        goto out;

    r.base = event_base_new();
    if (!r.base) {
        rc = br_error_set(err, -ENOMEM, "download: event_base_new failed");
        goto out;
    }
    rc = make_upstream(&r, tmpl, err);
    if (rc < 0)
        goto out;
    rc = dl_writer_start(&r.w, &r.ix, o->batch_files, o->batch_ms, err);
    if (rc < 0)
        goto out;
    r.tick = event_new(r.base, -1, EV_PERSIST, tick_cb, &r);
    struct timeval tv = {.tv_sec = 0, .tv_usec = TICK_MS * 1000};
    if (!r.tick || event_add(r.tick, &tv) < 0) {
        rc = br_error_set(err, -ENOMEM, "download: event_new failed");
        goto out;
    }
    r.start_ns = r.last_answer_ns = br_now_ns();
    feed(&r);
    if (!all_dispatched(&r) && !r.fatal)
        event_base_dispatch(r.base);

    /* Stop the network first (in-flight fetches are cancelled), then let the
     * writer commit what it holds. */
    r.stopping = true;
    fill_progress(&r, &res->p);
    br_upstream_free(r.up);
    r.up = NULL;
    int werr = dl_writer_stop(&r.w);
    if (werr && !r.fatal)
        r.fatal = br_error_set(&r.fatal_err, werr, "%s", r.w.errtext);
    uint64_t req = res->p.requests, bytes = res->p.bytes;
    fill_progress(&r, &res->p);
    res->p.requests = req;
    res->p.bytes = bytes;
    res->interrupted = r.interrupted;
    res->gave_up = r.gave_up;

    final_check(&r, res);
    if (res->complete)
        dl_session_remove(&r.ix);
    else
        dl_session_save(&r.ix);
    if (r.ix.jbytes == 0) { /* nothing appended: the journal holds its header only */
        close(r.ix.jfd);
        r.ix.jfd = -1;
        unlinkat(dirfd, BR_DOWNLOAD_JOURNAL_NAME, 0);
    } else {
        br_error cerr;
        int crc = dl_index_promote_journal(&r.ix, &cerr);
        if (crc < 0 && !r.fatal)
            r.fatal = br_error_set(&r.fatal_err, crc, "%s", cerr.text);
    }
    if (r.fatal) {
        rc = br_error_set(err, r.fatal, "%s", r.fatal_err.text);
        res->complete = false;
        goto out;
    }
    if (o->progress)
        o->progress(o->progress_ctx, &res->p, true);
    if (res->complete && o->single_file) {
        rc = dl_write_single(dirfd, r.first, r.last, o->single_file, &res->single_file_lines, err);
        if (rc < 0)
            goto out;
    }
    rc = 0;
out:
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
