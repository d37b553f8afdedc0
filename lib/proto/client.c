/* SPDX-License-Identifier: MIT */
/* The blocking client of breachd's socket protocol (client.h): connect with
 * a deadline, pipelined batches, answers matched by id, every copy of a
 * password wiped. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "core/br_assert.h"
#include "core/clock.h"
#include "client.h"
#include "protocol.h"
#include "core/util.h"
#include "protocol_similar.h"

struct br_client {
    int fd;
    int timeout_ms;
    char *path;
    /* Ids already used on this connection: a batch numbers its requests
     * from seq + 1, so an answer that arrives after its batch gave up (a
     * timeout) can never be taken for a later request's. */
    uint64_t seq;
    /* The last connection-level refusal ("- ERR ..."), for the message when
     * the daemon then closes the connection. */
    char refusal[160];
    /* Bytes received past the last complete line. */
    char rbuf[2 * (BR_PROTO_MAX_LINE + 2)];
    size_t rlen;
};

void br_client_free(br_client *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    br_wipe(c->rbuf, sizeof(c->rbuf));
    free(c->path);
    free(c);
}

void br_client_set_timeout(br_client *c, int timeout_ms)
{
    c->timeout_ms = timeout_ms;
}

static int wait_fd(int fd, short events, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    for (;;) {
        int r = poll(&p, 1, timeout_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        return r == 0 ? -ETIMEDOUT : 0;
    }
}

static int64_t now_ms(void)
{
    return (int64_t)(br_clock_now_mono() / 1000000u);
}

/* The error of a failed connect(), with what an operator does about it. */
static int connect_error(const char *path, int e, br_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return br_error_set(err, -ENOTSOCK,
                            "cannot connect to %s: it is a directory, not breachd's socket "
                            "(check --socket, $BREACHD_SOCKET or socket=)",
                            path);
    const char *hint = "";
    if (e == ENOENT || e == ECONNREFUSED)
        hint = "; is breachd running? (systemctl status breachd.socket; without systemd: "
               "service breachd status)";
    else if (e == EACCES || e == EPERM)
        hint = "; add the user to the breachd group or to allowed_users";
    else if (e == ENOTSOCK)
        hint = "; check --socket, $BREACHD_SOCKET or socket=";
    return br_error_set(err, -e, "cannot connect to %s: %s%s", path, strerror(e), hint);
}

/* The uid of user name, or (uid_t)-1 when there is none. */
static uid_t uid_of(const char *name)
{
    struct passwd pw, *res = NULL;
    char buf[1024];
    if (getpwnam_r(name, &pw, buf, sizeof(buf), &res) != 0 || !res)
        return (uid_t)-1;
    return res->pw_uid;
}

int br_client_check_peer(int fd, const char *path, br_error *err)
{
    struct ucred cr;
    socklen_t len = sizeof(cr);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
        return br_error_set(err, -errno, "%s: cannot read who serves it (SO_PEERCRED): %s", path,
                            strerror(errno));
    if (cr.uid == 0 || cr.uid == geteuid() || cr.uid == uid_of(BREACHD_DAEMON_USER))
        return 0;
    struct passwd pw, *res = NULL;
    char buf[1024];
    const char *name =
        getpwuid_r(cr.uid, &pw, buf, sizeof(buf), &res) == 0 && res ? res->pw_name : "no such user";
    return br_error_set(err, -ESRCH,
                        "%s is served by uid %u (%s), not breachd (root or user %s): not "
                        "trusted; check who can write to its directory",
                        path, (unsigned)cr.uid, name, BREACHD_DAEMON_USER);
}

int br_client_connect(const char *path, int timeout_ms, br_client **out, br_error *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path))
        return br_error_set(err, -ENAMETOOLONG, "socket %s: path too long", path);
    strcpy(sa.sun_path, path);
    _cleanup_(br_client_freep) br_client *c = calloc(1, sizeof(*c));
    if (!c || !(c->path = strdup(path)))
        return br_error_set(err, -ENOMEM, "out of memory");
    c->timeout_ms = timeout_ms;
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (c->fd < 0)
        return br_error_set(err, -errno, "socket: %s", strerror(errno));
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            break;
        int e = errno;
        int64_t left = deadline - now_ms();
        if (e == EINTR)
            continue;
        if (e == EAGAIN) {
            /* The daemon's listen backlog is full. A non-blocking AF_UNIX
             * connect() does not go on in the background (the socket stays
             * unconnected, and poll() says it is writable): try again until
             * the deadline. */
            if (left <= 0)
                return br_error_set(err, -ETIMEDOUT,
                                    "cannot connect to %s: %s (its listen backlog stayed full "
                                    "for %d ms)",
                                    path, strerror(ETIMEDOUT), timeout_ms);
            poll(NULL, 0, (int)BR_MIN(left, 10));
            continue;
        }
        if (e != EINPROGRESS)
            return connect_error(path, e, err);
        int r = wait_fd(c->fd, POLLOUT, left > 0 ? (int)left : 0);
        socklen_t len = sizeof(e);
        if (r == 0 && getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &len) == 0 && e != 0)
            r = -e;
        if (r < 0)
            return r == -ETIMEDOUT
                       ? br_error_set(err, r, "cannot connect to %s: %s", path, strerror(-r))
                       : connect_error(path, -r, err);
        break;
    }
    int r = br_client_check_peer(c->fd, path, err);
    if (r < 0)
        return r;
    *out = BR_TAKE_PTR(c);
    return 0;
}

/* Index of request id s (decimal: base + 1 .. base + n, as we number them),
 * or -1. */
static long id_index(const char *s, size_t len, uint64_t base, size_t n)
{
    if (len == 0 || len > BR_PROTO_MAX_ID)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    return v > base && v - base <= n ? (long)(v - base - 1) : -1;
}

/* ---- batch ---- */

/* Format request q with id i into buf; 0 or -EINVAL for an argument that
 * cannot be sent (the answer is then set locally). */
static int format_request(const br_client_request *q, uint64_t i, char *buf, size_t size,
                          size_t *len)
{
    int n;
    switch (q->kind) {
    case BR_REQ_SHA1:
    case BR_REQ_NT: {
        bool nt = q->kind == BR_REQ_NT;
        char hex[2 * BR_SHA1_LEN + 1];
        br_hex_encode_upper(q->arg, nt ? BR_NT_LEN : BR_SHA1_LEN, hex);
        n = snprintf(buf, size, "%" PRIu64 " %s %s\n", i, nt ? "NT" : "PW", hex);
        br_wipe(hex, sizeof(hex));
        break;
    }
    case BR_REQ_SIMILAR_SHA1:
    case BR_REQ_SIMILAR_NT: {
        size_t hlen = q->kind == BR_REQ_SIMILAR_NT ? BR_NT_LEN : BR_SHA1_LEN;
        if (q->arg_len % hlen != 0)
            return -EINVAL;
        return br_similar_request_format(buf, size, i, q->kind == BR_REQ_SIMILAR_NT, q->arg,
                                         q->arg_len / hlen, len);
    }
    case BR_REQ_URL:
    case BR_REQ_RAW: {
        const char *arg = q->arg;
        for (size_t k = 0; k < q->arg_len; k++)
            if ((unsigned char)arg[k] < 0x21 && !(q->kind == BR_REQ_RAW && arg[k] == ' '))
                return -EINVAL;
        n = snprintf(buf, size, "%" PRIu64 " %s%.*s\n", i, q->kind == BR_REQ_URL ? "URL " : "",
                     (int)q->arg_len, arg);
        break;
    }
    default:
        (void)br_fails_assert(!"a request kind without a format");
        return -EINVAL;
    }
    if (n < 0 || (size_t)n >= size || (size_t)n - 1 > BR_PROTO_MAX_LINE)
        return -EINVAL;
    *len = (size_t)n;
    return 0;
}

/* Consume complete lines from the read buffer. Only requests already sent
 * (the batch's first `sent`) can be answered: a line with the id of one not
 * sent yet is ignored like an unknown id, so a daemon cannot answer ahead
 * of a question (nor push inflight below zero). Returns the number of answers matched, or
 * a negative errno with err set for a connection-level refusal ("- ERR
 * forbidden ...", "- ERR ... connection closed"); answers matched before it
 * are kept. */
static int take_lines(br_client *c, br_client_request *reqs, uint64_t base, size_t sent,
                      br_error *err)
{
    int got = 0, r = 0;
    size_t start = 0;
    while (r == 0) {
        char *lf = memchr(c->rbuf + start, '\n', c->rlen - start);
        if (!lf)
            break;
        size_t len = (size_t)(lf - (c->rbuf + start));
        const char *line = c->rbuf + start;
        start = (size_t)(lf - c->rbuf) + 1;
        if (len > 0 && line[len - 1] == '\r')
            len--;
        const char *sp = memchr(line, ' ', len);
        if (!sp)
            continue;
        size_t idlen = (size_t)(sp - line);
        long idx = id_index(line, idlen, base, sent);
        if (idx >= 0 && reqs[idx].answer.kind == BR_ANSWER_NONE) {
            br_answer_parse(sp + 1, len - idlen - 1, &reqs[idx].answer);
            got++;
        } else if (idlen == 1 && line[0] == '-') {
            /* A connection-level answer (forbidden, busy, bad-id): the
             * line is not NUL-terminated, so search within it only. */
            const char *msg = sp + 1;
            int mlen = (int)(len - 2);
            snprintf(c->refusal, sizeof(c->refusal), "%.*s", mlen, msg);
            if (memmem(msg, (size_t)mlen, "forbidden", 9))
                r = br_error_set(err, -EPERM, "%s refused this client: %.*s", c->path, mlen, msg);
            else if (memmem(msg, (size_t)mlen, "closed", 6))
                r = br_error_set(err, -EPROTO, "%s: %.*s", c->path, mlen, msg);
        }
    }
    memmove(c->rbuf, c->rbuf + start, c->rlen - start);
    br_wipe(c->rbuf + c->rlen - start, start);
    c->rlen -= start;
    return r < 0 ? r : got;
}

/* After a failed send: read what the daemon wrote before it went away (a
 * refusal, answers), without waiting. The number of answers matched, or a
 * refusal's negative errno. */
static int take_rest(br_client *c, br_client_request *reqs, uint64_t base, size_t sent,
                     br_error *err)
{
    int total = 0;
    while (c->rlen < sizeof(c->rbuf)) {
        ssize_t got = recv(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen, MSG_DONTWAIT);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        c->rlen += (size_t)got;
        int m = take_lines(c, reqs, base, sent, err);
        if (m < 0)
            return m;
        total += m;
    }
    return total;
}

/* " (breachd said: ...)" when it sent a connection-level ERR, else "". */
static const char *said(const br_client *c, char *buf, size_t size)
{
    if (!c->refusal[0])
        return "";
    snprintf(buf, size, " (breachd said: %s)", c->refusal);
    return buf;
}

/* One batch in flight: requests base + 1 .. base + n, the line being sent. */
typedef struct batch {
    br_client *c;
    br_client_request *reqs;
    size_t n, window;
    uint64_t base;
    size_t sent, answered, inflight;
    char out[BR_PROTO_MAX_LINE + 32];
    size_t out_len, out_off;
} batch;

/* Queue the next request when the last one is out and there is room. An
 * argument that cannot be sent is answered here. */
static void queue_next(batch *b)
{
    while (b->out_off == b->out_len && b->sent < b->n && b->inflight < b->window) {
        br_client_request *q = &b->reqs[b->sent];
        b->sent++;
        b->out_off = b->out_len = 0;
        if (format_request(q, b->base + b->sent, b->out, sizeof(b->out), &b->out_len) < 0) {
            q->answer.kind = BR_ANSWER_ERROR;
            snprintf(q->answer.detail, sizeof(q->answer.detail),
                     "bad-request not sent: the argument is empty, too long or contains "
                     "spaces or control characters");
            b->answered++;
            b->out_len = 0;
            continue;
        }
        b->inflight++;
    }
}

/* Send what the socket takes: 0, or -errno with err set once the daemon
 * closed the connection (what it wrote before, a refusal or answers, is
 * read first). */
static int send_some(batch *b, br_error *err)
{
    br_client *c = b->c;
    ssize_t w = send(c->fd, b->out + b->out_off, b->out_len - b->out_off, MSG_NOSIGNAL);
    if (w < 0 && errno != EAGAIN && errno != EINTR) {
        int e = errno;
        char why[sizeof(c->refusal) + 32];
        /* Requests on the wire: all queued but one still being sent. */
        int m = take_rest(c, b->reqs, b->base, b->sent - (b->out_off < b->out_len), err);
        if (m < 0)
            return m;
        b->answered += (size_t)m;
        return br_error_set(err, -e, "%s: connection closed by breachd: send: %s%s", c->path,
                            strerror(e), said(c, why, sizeof(why)));
    }
    if (w > 0)
        b->out_off += (size_t)w;
    return 0;
}

/* Read what arrived and take the answers in it: 0, or -errno with err set. */
static int receive_some(batch *b, br_error *err)
{
    br_client *c = b->c;
    ssize_t got = recv(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen, 0);
    if (got < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (got <= 0) {
        int e = got < 0 ? errno : ECONNRESET;
        char why[sizeof(c->refusal) + 32];
        return br_error_set(err, -e, "%s: connection closed by breachd%s%s%s", c->path,
                            got < 0 ? ": " : "", got < 0 ? strerror(e) : "",
                            said(c, why, sizeof(why)));
    }
    c->rlen += (size_t)got;
    int m = take_lines(c, b->reqs, b->base, b->sent - (b->out_off < b->out_len), err);
    if (m < 0)
        return m;
    b->answered += (size_t)m;
    b->inflight -= (size_t)m;
    if (c->rlen == sizeof(c->rbuf))
        return br_error_set(err, -EPROTO, "%s: answer line too long", c->path);
    return 0;
}

int br_client_batch(br_client *c, br_client_request *reqs, size_t n, size_t window, br_error *err)
{
    /* Ids base + 1 .. base + n, never used before on this connection. */
    batch b = {.c = c, .reqs = reqs, .n = n, .window = window ? window : 64, .base = c->seq};
    c->seq += n;
    int r = 0;
    for (size_t i = 0; i < n; i++)
        reqs[i].answer.kind = BR_ANSWER_NONE;
    while (r == 0 && b.answered < n) {
        queue_next(&b);
        if (b.answered == n)
            break;
        /* The timeout is for a lack of progress: each event (bytes sent or
         * received) starts it again, so a long batch that keeps moving
         * never times out, and one that stalls does after timeout_ms. */
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (b.out_off < b.out_len)
            p.events |= POLLOUT;
        int pr = poll(&p, 1, c->timeout_ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            r = br_error_set(err, -errno, "poll: %s", strerror(errno));
        else if (pr == 0)
            r = br_error_set(err, -ETIMEDOUT, "%s: timed out: no answer from breachd for %d ms",
                             c->path, c->timeout_ms);
        if (r == 0 && (p.revents & POLLOUT))
            r = send_some(&b, err);
        if (r == 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)))
            r = receive_some(&b, err);
    }
    br_wipe(b.out, sizeof(b.out));
    return r;
}

static int one(br_client *c, br_client_request *q, br_answer *a, br_error *err)
{
    int r = br_client_batch(c, q, 1, 1, err);
    *a = q->answer;
    br_wipe(q, sizeof(*q));
    if (r == 0 && a->kind == BR_ANSWER_NONE)
        r = br_error_set(err, -EPROTO, "no answer");
    return r;
}

int br_client_hash_password(const void *password, size_t len, uint8_t sha1[BR_SHA1_LEN])
{
    return br_sha1(password, len, sha1);
}

int br_client_check_password(br_client *c, const void *password, size_t len, br_answer *a,
                             br_error *err)
{
    uint8_t sha1[BR_SHA1_LEN];
    int r = br_client_hash_password(password, len, sha1);
    if (r < 0)
        return br_error_set(err, r, "SHA-1 failed");
    r = br_client_check_sha1(c, sha1, a, err);
    br_wipe(sha1, sizeof(sha1));
    return r;
}

int br_client_check_sha1(br_client *c, const uint8_t sha1[BR_SHA1_LEN], br_answer *a, br_error *err)
{
    br_client_request q = {.kind = BR_REQ_SHA1, .arg = sha1, .arg_len = BR_SHA1_LEN};
    return one(c, &q, a, err);
}

int br_client_hash_password_nt(const void *password, size_t len, uint8_t nt[BR_NT_LEN])
{
    return br_nt_hash(password, len, nt);
}

int br_client_check_nt(br_client *c, const uint8_t nt[BR_NT_LEN], br_answer *a, br_error *err)
{
    br_client_request q = {.kind = BR_REQ_NT, .arg = nt, .arg_len = BR_NT_LEN};
    return one(c, &q, a, err);
}

int br_client_check_password_nt(br_client *c, const void *password, size_t len, br_answer *a,
                                br_error *err)
{
    uint8_t nt[BR_NT_LEN];
    int r = br_md4_check(err);
    if (r < 0)
        return r;
    r = br_client_hash_password_nt(password, len, nt);
    if (r < 0)
        return br_error_set(err, r, "NT hash failed");
    r = br_client_check_nt(c, nt, a, err);
    br_wipe(nt, sizeof(nt));
    return r;
}

int br_client_command(br_client *c, const char *verb, br_answer *a, br_error *err)
{
    br_client_request q = {.kind = BR_REQ_RAW, .arg = verb, .arg_len = strlen(verb)};
    return one(c, &q, a, err);
}

int br_client_ask(const char *path, int timeout_ms, const void *password, size_t len, br_answer *a,
                  br_error *err)
{
    memset(a, 0, sizeof(*a));
    int64_t deadline = now_ms() + timeout_ms;
    _cleanup_(br_client_freep) br_client *c = NULL;
    int r = br_client_connect(path, timeout_ms, &c, err);
    if (r < 0)
        return r;
    int64_t left = deadline - now_ms();
    br_client_set_timeout(c, left < 1 ? 1 : (int)left);
    if (password)
        return br_client_check_password(c, password, len, a, err);
    return br_client_command(c, "PING", a, err);
}

int br_client_set_lane(br_client *c, br_lane lane, br_error *err)
{
    char verb[32];
    snprintf(verb, sizeof(verb), "LANE %s", br_lane_name(lane));
    br_answer a;
    int r = br_client_command(c, verb, &a, err);
    if (r < 0)
        return r;
    if (a.kind == BR_ANSWER_OTHER && strcmp(a.detail, "OK") == 0)
        return 0;
    if (a.kind == BR_ANSWER_ERROR && strncmp(a.detail, "unknown-verb", 12) == 0)
        return br_error_set(err, -EOPNOTSUPP,
                            "%s: this breachd does not know LANE (an older version): no %s lane",
                            c->path, br_lane_name(lane));
    return br_error_set(err, -EPROTO, "%s: LANE %s answered %.*s", c->path, br_lane_name(lane), 100,
                        a.detail);
}

/* One page of BANNED from start: 0 with *page, -EOPNOTSUPP (an older
 * daemon), -EPROTO, or a failure of the exchange. */
static int terms_page(br_client *c, uint32_t start, br_terms_page *page, br_terms_fn fn, void *ctx,
                      br_error *err)
{
    char verb[32];
    snprintf(verb, sizeof(verb), "BANNED %" PRIu32, start);
    br_answer a;
    int r = br_client_command(c, verb, &a, err);
    if (r < 0)
        return r;
    if (a.kind == BR_ANSWER_ERROR && strncmp(a.detail, "unknown-verb", 12) == 0)
        return br_error_set(err, -EOPNOTSUPP,
                            "%s: this breachd does not know BANNED (an older version)", c->path);
    r = a.kind == BR_ANSWER_OTHER ? br_terms_answer_parse(a.detail, page, fn, ctx) : -EPROTO;
    if (r == -EPROTO)
        return br_error_set(err, r, "%s: BANNED answered %.*s", c->path, 100, a.detail);
    if (r == 0 && page->next <= start && page->next < page->total)
        return br_error_set(err, -EPROTO, "%s: BANNED %" PRIu32 " did not move on", c->path, start);
    return r;
}

int br_client_banned_terms(br_client *c, br_terms_fn fn, void *ctx, unsigned *min_score,
                           br_error *err)
{
    for (int attempt = 0; attempt < 4; attempt++) {
        br_terms_page first = {0}, page = {0};
        uint32_t start = 0;
        int r;
        if (attempt > 0 && fn && (r = fn(ctx, 0, NULL, 0)) < 0)
            return r;
        do {
            r = terms_page(c, start, &page, fn, ctx, err);
            if (r < 0)
                return r;
            if (start == 0)
                first = page;
            start = page.next;
        } while (page.generation == first.generation && page.next < page.total);
        if (page.generation == first.generation) {
            *min_score = page.min_score;
            return (int)page.total;
        }
    }
    return br_error_set(err, -EAGAIN, "%s: the banned terms kept changing (reloads)", c->path);
}

/* One SIMILAR answer folded into *a (br_client_check_similar). */
static void fold_similar(const br_answer *ans, br_similar_answer *a)
{
    uint64_t count;
    unsigned hits;
    if (ans->kind == BR_ANSWER_OTHER && br_similar_answer_parse(ans->detail, &count, &hits)) {
        a->similar = true;
        a->count = BR_MAX(a->count, count);
        a->hits += hits;
    } else if (ans->kind != BR_ANSWER_CLEAN && !a->unknown) {
        a->unknown = true;
        /* the reason, or the ERR code: never more than its first word */
        size_t w = strcspn(ans->detail, " ");
        snprintf(a->reason, sizeof(a->reason), "%.*s", (int)BR_MIN(w, sizeof(a->reason) - 1),
                 ans->kind == BR_ANSWER_UNKNOWN || ans->kind == BR_ANSWER_ERROR ? ans->detail
                                                                                : "bad-answer");
    }
}

int br_client_check_similar(br_client *c, bool nt, const uint8_t *hashes, size_t n,
                            br_similar_answer *a, br_error *err)
{
    memset(a, 0, sizeof(*a));
    size_t hlen = nt ? BR_NT_LEN : BR_SHA1_LEN;
    size_t nreq = (n + BR_SIMILAR_PER_REQUEST - 1) / BR_SIMILAR_PER_REQUEST;
    if (nreq == 0)
        return 0;
    br_client_request *q = calloc(nreq, sizeof(*q));
    if (!q)
        return br_error_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < nreq; i++) {
        size_t k = BR_MIN(BR_SIMILAR_PER_REQUEST, n - i * BR_SIMILAR_PER_REQUEST);
        q[i] = (br_client_request){.kind = nt ? BR_REQ_SIMILAR_NT : BR_REQ_SIMILAR_SHA1,
                                   .arg = hashes + i * BR_SIMILAR_PER_REQUEST * hlen,
                                   .arg_len = k * hlen};
    }
    int r = br_client_batch(c, q, nreq, nreq, err);
    for (size_t i = 0; r == 0 && i < nreq; i++)
        fold_similar(&q[i].answer, a);
    if (a->similar)
        a->unknown = false, a->reason[0] = '\0';
    br_wipe(q, nreq * sizeof(*q));
    free(q);
    return r;
}
