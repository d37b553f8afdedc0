/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <openssl/crypto.h>

#include "client.h"
#include "protocol.h"

struct br_client {
    int fd;
    int timeout_ms;
    char *path;
    /* Bytes received past the last complete line. */
    char rbuf[2 * (BR_PROTO_MAX_LINE + 2)];
    size_t rlen;
};

const char *br_answer_kind_name(br_answer_kind k)
{
    static const char *const names[] = {"NONE",    "CLEAN",   "PWNED", "SAFE",
                                        "BLOCKED", "UNKNOWN", "ERR",   "OTHER"};
    return k <= BR_ANSWER_OTHER ? names[k] : "?";
}

void br_client_free(br_client *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    OPENSSL_cleanse(c->rbuf, sizeof(c->rbuf));
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
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        if (e != EINPROGRESS && e != EAGAIN)
            return br_error_set(err, -e, "cannot connect to %s: %s", path, strerror(e));
        /* A full backlog: wait for the daemon to accept. */
        int r = wait_fd(c->fd, POLLOUT, timeout_ms);
        socklen_t len = sizeof(e);
        if (r == 0 && getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &len) == 0 && e == 0)
            r = 0;
        else if (r == 0)
            r = -e;
        if (r < 0)
            return br_error_set(err, r, "cannot connect to %s: %s", path, strerror(-r));
    }
    *out = BR_TAKE_PTR(c);
    return 0;
}

/* ---- answers ---- */

static void parse_answer(const char *s, size_t len, br_answer *a)
{
    memset(a, 0, offsetof(br_answer, detail) + 1);
    const char *sp = memchr(s, ' ', len);
    size_t slen = sp ? (size_t)(sp - s) : len;
    const char *rest = sp ? sp + 1 : s + len;
    size_t rlen = (size_t)(s + len - rest);
#define IS(word) (slen == strlen(word) && memcmp(s, word, slen) == 0)
    if (IS("CLEAN")) {
        a->kind = BR_ANSWER_CLEAN;
    } else if (IS("PWNED")) {
        a->kind = BR_ANSWER_PWNED;
        a->count = strtoull(rest, NULL, 10);
    } else if (IS("SAFE")) {
        a->kind = BR_ANSWER_SAFE;
    } else if (IS("BLOCKED")) {
        a->kind = BR_ANSWER_BLOCKED;
        const char *sp2 = memchr(rest, ' ', rlen);
        size_t clen = sp2 ? (size_t)(sp2 - rest) : rlen;
        snprintf(a->category, sizeof(a->category), "%.*s", (int)clen, rest);
        if (sp2) {
            rest = sp2 + 1;
            rlen = (size_t)(s + len - rest);
        } else {
            rlen = 0;
        }
    } else if (IS("UNKNOWN")) {
        a->kind = BR_ANSWER_UNKNOWN;
    } else if (IS("ERR")) {
        a->kind = BR_ANSWER_ERROR;
    } else {
        a->kind = BR_ANSWER_OTHER;
        rest = s;
        rlen = len;
    }
#undef IS
    if (a->kind == BR_ANSWER_CLEAN || a->kind == BR_ANSWER_PWNED || a->kind == BR_ANSWER_SAFE)
        rlen = 0;
    snprintf(a->detail, sizeof(a->detail), "%.*s", (int)rlen, rest);
}

int br_answer_parse_line(const char *line, size_t len, char id[17], br_answer *a)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    const char *sp = memchr(line, ' ', len);
    if (!sp || sp == line || (size_t)(sp - line) > BR_PROTO_MAX_ID)
        return -EINVAL;
    memcpy(id, line, (size_t)(sp - line));
    id[sp - line] = '\0';
    parse_answer(sp + 1, len - (size_t)(sp - line) - 1, a);
    return 0;
}

/* Index of request id s (decimal, as we number them), or -1. */
static long id_index(const char *s, size_t len, size_t n)
{
    if (len == 0 || len > 10)
        return -1;
    size_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (size_t)(s[i] - '0');
    }
    return v >= 1 && v <= n ? (long)(v - 1) : -1;
}

/* ---- batch ---- */

/* Format request i (1-based id) into buf; 0 or -EINVAL for an argument that
 * cannot be sent (the answer is then set locally). */
static int format_request(const br_client_request *q, size_t i, char *buf, size_t size, size_t *len)
{
    int n;
    switch (q->kind) {
    case BR_REQ_SHA1: {
        char hex[2 * BR_SHA1_LEN + 1];
        br_hex_encode_upper(q->arg, BR_SHA1_LEN, hex);
        n = snprintf(buf, size, "%zu PW %s\n", i, hex);
        OPENSSL_cleanse(hex, sizeof(hex));
        break;
    }
    case BR_REQ_URL:
    case BR_REQ_RAW: {
        const char *arg = q->arg;
        for (size_t k = 0; k < q->arg_len; k++)
            if ((unsigned char)arg[k] < 0x21 && !(q->kind == BR_REQ_RAW && arg[k] == ' '))
                return -EINVAL;
        n = snprintf(buf, size, "%zu %s%.*s\n", i, q->kind == BR_REQ_URL ? "URL " : "",
                     (int)q->arg_len, arg);
        break;
    }
    default:
        return -EINVAL;
    }
    if (n < 0 || (size_t)n >= size || (size_t)n - 1 > BR_PROTO_MAX_LINE)
        return -EINVAL;
    *len = (size_t)n;
    return 0;
}

/* Consume complete lines from the read buffer. Returns the number of answers
 * matched, or a negative errno for a connection-level error ("- ERR ..."). */
static int take_lines(br_client *c, br_client_request *reqs, size_t n, br_error *err)
{
    int got = 0;
    size_t start = 0;
    for (;;) {
        char *lf = memchr(c->rbuf + start, '\n', c->rlen - start);
        if (!lf)
            break;
        size_t len = (size_t)(lf - (c->rbuf + start));
        const char *line = c->rbuf + start;
        if (len > 0 && line[len - 1] == '\r')
            len--;
        const char *sp = memchr(line, ' ', len);
        if (sp) {
            size_t idlen = (size_t)(sp - line);
            long idx = id_index(line, idlen, n);
            if (idx >= 0 && reqs[idx].answer.kind == BR_ANSWER_NONE) {
                parse_answer(sp + 1, len - idlen - 1, &reqs[idx].answer);
                got++;
            } else if (idlen == 1 && line[0] == '-') {
                /* A connection-level refusal (forbidden, busy, bad-id). */
                br_error_set(err, -EPROTO, "%s: %.*s", c->path, (int)(len - 2), sp + 1);
                if (strstr(sp + 1, "forbidden"))
                    return br_error_set(err, -EPERM, "%s refused this client: %.*s", c->path,
                                        (int)(len - 2), sp + 1);
                if (strstr(sp + 1, "closed"))
                    return -EPROTO;
            }
        }
        start = (size_t)(lf - c->rbuf) + 1;
    }
    memmove(c->rbuf, c->rbuf + start, c->rlen - start);
    OPENSSL_cleanse(c->rbuf + c->rlen - start, start);
    c->rlen -= start;
    return got;
}

int br_client_batch(br_client *c, br_client_request *reqs, size_t n, size_t window, br_error *err)
{
    if (window == 0)
        window = 64;
    size_t sent = 0, answered = 0, inflight = 0;
    char out[BR_PROTO_MAX_LINE + 32];
    size_t out_len = 0, out_off = 0;
    int r = 0;
    for (size_t i = 0; i < n; i++)
        reqs[i].answer.kind = BR_ANSWER_NONE;
    while (answered < n) {
        /* Queue the next request when there is room. */
        while (out_off == out_len && sent < n && inflight < window) {
            br_client_request *q = &reqs[sent];
            sent++;
            if (format_request(q, sent, out, sizeof(out), &out_len) < 0) {
                q->answer.kind = BR_ANSWER_ERROR;
                snprintf(q->answer.detail, sizeof(q->answer.detail),
                         "bad-request not sent: the argument is empty, too long or contains "
                         "spaces or control characters");
                answered++;
                out_len = 0;
                continue;
            }
            out_off = 0;
            inflight++;
        }
        if (answered == n)
            break;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (out_off < out_len)
            p.events |= POLLOUT;
        int pr = poll(&p, 1, c->timeout_ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0) {
            r = br_error_set(err, -errno, "poll: %s", strerror(errno));
            break;
        }
        if (pr == 0) {
            r = br_error_set(err, -ETIMEDOUT, "%s: no answer within %d ms", c->path, c->timeout_ms);
            break;
        }
        if (p.revents & POLLOUT) {
            ssize_t w = send(c->fd, out + out_off, out_len - out_off, MSG_NOSIGNAL);
            if (w < 0 && errno != EAGAIN && errno != EINTR) {
                r = br_error_set(err, -errno, "%s: send: %s", c->path, strerror(errno));
                break;
            }
            if (w > 0)
                out_off += (size_t)w;
        }
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t got = recv(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen, 0);
            if (got < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (got <= 0) {
                int e = got < 0 ? errno : ECONNRESET;
                take_lines(c, reqs, n, err);
                r = br_error_set(err, -e, "%s: connection closed by breachd%s%s", c->path,
                                 got < 0 ? ": " : "", got < 0 ? strerror(e) : "");
                break;
            }
            c->rlen += (size_t)got;
            int m = take_lines(c, reqs, n, err);
            if (m < 0) {
                r = m;
                break;
            }
            answered += (size_t)m;
            inflight -= (size_t)m;
            if (c->rlen == sizeof(c->rbuf)) {
                r = br_error_set(err, -EPROTO, "%s: answer line too long", c->path);
                break;
            }
        }
    }
    OPENSSL_cleanse(out, sizeof(out));
    return r;
}

static int one(br_client *c, br_client_request *q, br_answer *a, br_error *err)
{
    int r = br_client_batch(c, q, 1, 1, err);
    *a = q->answer;
    OPENSSL_cleanse(q, sizeof(*q));
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
    OPENSSL_cleanse(sha1, sizeof(sha1));
    return r;
}

int br_client_check_sha1(br_client *c, const uint8_t sha1[BR_SHA1_LEN], br_answer *a, br_error *err)
{
    br_client_request q = {.kind = BR_REQ_SHA1, .arg = sha1, .arg_len = BR_SHA1_LEN};
    return one(c, &q, a, err);
}

int br_client_check_url(br_client *c, const char *url, br_answer *a, br_error *err)
{
    br_client_request q = {.kind = BR_REQ_URL, .arg = url, .arg_len = strlen(url)};
    return one(c, &q, a, err);
}

int br_client_command(br_client *c, const char *verb, br_answer *a, br_error *err)
{
    br_client_request q = {.kind = BR_REQ_RAW, .arg = verb, .arg_len = strlen(verb)};
    return one(c, &q, a, err);
}
