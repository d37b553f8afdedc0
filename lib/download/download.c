/* SPDX-License-Identifier: MIT */
/* The corpus downloader's fetch loop (see download.h). One event loop thread
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <event2/event.h>

#include "download_int.h"
#include "range/range.h"
#include "core/util.h"
#include "core/log_line.h"

#define TICK_MS 20
#define BACKLOG_JOBS 16384
#define BACKLOG_BYTES ((size_t)64 << 20)
#define RETRY_BASE_MS 1000
#define RETRY_MAX_MS 30000
#define CIRCUIT_WAIT_MS 250

void dl_run_log(dl_run *r, int level, const char *fmt, ...)
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

void dl_fill_progress(dl_run *r, br_download_progress *p)
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

bool dl_all_dispatched(dl_run *r)
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
        fail(r, p, res->http_status > 0 && res->http_status < 1000 ? (int16_t)res->http_status
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

int dl_loop_run(dl_run *r)
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
