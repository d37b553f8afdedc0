/* SPDX-License-Identifier: MIT */
/* breachd-squid-helper: a Squid external ACL helper.
 *
 *   external_acl_type breachd concurrency=N ttl=60 %URI /usr/libexec/breachd-squid-helper
 *   acl blocked external breachd
 *   http_access deny blocked
 *
 * Reads "[channel-ID SP] URL [SP extras]" lines, asks breachd "URL <url>"
 * with up to --max-inflight requests pipelined, and answers with the channel
 * ID, possibly out of order: "OK message=... tag=<category>" when blocked
 * (the ACL matches), "ERR" when safe, "BH message=..." when breachd could not
 * answer. Work goes in batches: the request lines of one read from Squid go
 * to breachd in one write, and the answers of one read from breachd go back
 * to Squid in one write, before the helper waits again
 * (breachd-squid-helper(8)). It reconnects to a restarted daemon,
 * resending what was in flight, so no request is lost; while requests wait
 * it retries the connection every 100 ms. A request not answered within
 * --timeout (default 10 s) of its arrival, because breachd is down or does
 * not answer, gets BH. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto/client.h"
#include "config.h"
#include "proto/protocol.h"
#include "squid_out.h"
#include "squid_request.h"
#include "url/url_secret.h"
#include "core/clock.h"
#include "core/util.h"

typedef struct req {
    struct req *next;
    char channel[SQUID_CHANNEL_SIZE]; /* "" without concurrency */
    uint64_t id;                      /* our request id on the daemon connection; 0 = not sent */
    uint64_t deadline_ms;             /* give up (BH) after this */
    size_t url_len;
    size_t cap; /* room in url[] */
    char url[]; /* NUL-terminated */
} req;

/* Answered requests kept for the next ones (a malloc and a free a line
 * were a tenth of the helper's instructions): at most REQ_SPARE, each with
 * room for a URL of REQ_ROOM bytes, or more when one needed it. */
#define REQ_SPARE 1024u
#define REQ_ROOM 240u
static req *spare;
static unsigned n_spare;

/* A request with room for a URL of url_len bytes, zeroed up to url[]. */
static req *req_new(size_t url_len)
{
    req *r = spare;
    if (r && r->cap > url_len) {
        spare = r->next;
        n_spare--;
    } else {
        size_t cap = BR_MAX(url_len + 1, (size_t)REQ_ROOM);
        r = malloc(sizeof(*r) + cap);
        if (!r)
            return NULL;
        r->cap = cap;
    }
    size_t cap = r->cap;
    memset(r, 0, offsetof(req, url));
    r->cap = cap;
    return r;
}

/* Reconnecting: exponential backoff from 50 ms to RECONNECT_MAX_MS while
 * nothing waits, but an attempt at least every RECONNECT_BUSY_MS while
 * requests are queued, so that a daemon back before their --timeout gets
 * them (a refused connect() on a Unix socket costs microseconds). */
#define RECONNECT_MAX_MS 2000u
#define RECONNECT_BUSY_MS 100u
#define EXPIRE_EVERY_MS 100
/* breachd's text for secret-class (daemon/url_check.c). */
#define SECRET_DETAIL                                                                              \
    "e-mail addresses are never looked up" /* how often requests in flight are checked against     \
                                              --timeout */

typedef struct helper {
    const char *socket_path;
    bool unknown_blocks;
    unsigned max_inflight;
    int timeout_ms;
    int fd; /* daemon connection, -1 when down */
    uint64_t next_id;
    uint64_t reconnect_at; /* ms */
    uint64_t last_attempt; /* ms: the last connect() or disconnection */
    unsigned backoff_ms;
    req *queue, **queue_tail; /* not sent yet, in arrival order */
    req *sent, **sent_tail;   /* sent, waiting for their answer, in sending order */
    unsigned inflight;
    char out[1 << 16];
    size_t out_len;
    char in[2 * (BR_PROTO_MAX_LINE + 2)];
    size_t in_len;
    uint64_t now; /* ms, taken once per turn of the loop (run) */
    bool warned_down;
    bool warned_slow;     /* logged an unanswered request (once per connection) */
    uint64_t last_expire; /* ms: the last expire() pass */
    /* URLs let through unchecked (--on-unknown=allow) not yet reported, the
     * last one's reason, and when the last report went out (ms, 0: never). */
    uint64_t unchecked, unchecked_told_at;
    char unchecked_why[64];
} helper;

/* At most one line a minute on stderr (Squid's cache.log) for the URLs let
 * through unchecked: how many and the last reason, never a URL
 * (docs/operations.md). */
#define UNCHECKED_EVERY_MS 60000u

static void tell_unchecked(helper *h, bool now)
{
    if (!h->unchecked ||
        (!now && h->unchecked_told_at && h->now - h->unchecked_told_at < UNCHECKED_EVERY_MS))
        return;
    fprintf(stderr,
            "breachd-squid-helper: %llu URL(s) allowed unchecked (--on-unknown=allow): breachd "
            "could not tell (last: %s)\n",
            (unsigned long long)h->unchecked, h->unchecked_why);
    h->unchecked = 0;
    h->unchecked_told_at = h->now ? h->now : 1;
}

static uint64_t now_ms(void)
{
    return (uint64_t)(br_clock_now_mono() / 1000000u);
}

/* text is at most an answer line (answer()): it fits the buffer. */
static void reply(const req *r, const char *text)
{
    out_answer(r->channel, strlen(r->channel), text, strlen(text));
}

static void req_free(req *r)
{
    if (n_spare >= REQ_SPARE) {
        free(r);
        return;
    }
    r->next = spare;
    spare = r;
    n_spare++;
}

static void req_spares_free(void)
{
    while (spare) {
        req *r = spare;
        spare = r->next;
        free(r);
    }
    n_spare = 0;
}

/* Append s to line (size bytes, NUL-terminated, o its length), as much as
 * fits: a plain copy, where snprintf was most of a blocked answer's cost. */
static size_t put(char *line, size_t size, size_t o, const char *s)
{
    size_t n = strlen(s);
    if (o + n >= size)
        n = o + 1 < size ? size - o - 1 : 0;
    memcpy(line + o, s, n);
    line[o + n] = '\0';
    return o + n;
}

/* Append " key=\"value\"" with the value whole, quoted as Squid's helper
 * protocol reads a kv-pair value: '"' and '\\' escaped with a backslash,
 * CR and LF as \\r and \\n. */
static void kv_append(char *line, size_t size, const char *key, const char *prefix,
                      const char *value)
{
    size_t o = put(line, size, strlen(line), " ");
    o = put(line, size, o, key);
    o = put(line, size, o, "=\"");
    o = put(line, size, o, prefix);
    for (const char *p = value; *p && o + 3 < size; p++) {
        char c = *p;
        if (c == '"' || c == '\\' || c == '\r' || c == '\n') {
            line[o++] = '\\';
            c = c == '\r' ? 'r' : c == '\n' ? 'n' : c;
        }
        line[o++] = c;
    }
    if (o + 1 < size)
        line[o++] = '"';
    line[o] = '\0';
}

/* " tag=NAME": categories and our tags are [a-z0-9_-], a plain token. */
static void tag_append(char *line, size_t size, const char *tag)
{
    put(line, size, put(line, size, strlen(line), " tag="), tag);
}

static void answer(helper *h, req *r, const br_answer *a)
{
    /* Values are at most the daemon's line (8 KiB), each byte escaped at
     * most once: room for the longest. */
    static char line[2 * BR_PROTO_MAX_LINE + 128];
    if (a->kind == BR_ANSWER_SAFE) {
        reply(r, "ERR");
        return;
    }
    line[0] = '\0';
    bool unknown_like = a->kind == BR_ANSWER_UNKNOWN ||
                        (a->kind == BR_ANSWER_ERROR && strncmp(a->detail, "secret-class", 12) == 0);
    switch (a->kind) {
    case BR_ANSWER_BLOCKED:
        put(line, sizeof(line), 0, "OK");
        kv_append(line, sizeof(line), "message", "blocked: ", a->category);
        tag_append(line, sizeof(line), a->category);
        break;
    case BR_ANSWER_SAFE:
        snprintf(line, sizeof(line), "ERR");
        break;
    case BR_ANSWER_UNKNOWN:
    case BR_ANSWER_ERROR:
        if (unknown_like || strncmp(a->detail, "bad-request", 11) == 0) {
            /* UNKNOWN, and a URL breachd refuses as secret-class (it cannot
             * be checked), follow --on-unknown; one that is not a URL is
             * not blocked by this ACL. */
            bool block = unknown_like && h->unknown_blocks;
            if (unknown_like && !block) { /* the reason or error code, no URL */
                h->unchecked++;
                snprintf(h->unchecked_why, sizeof(h->unchecked_why), "%.*s",
                         (int)strcspn(a->detail, " "), a->detail);
            }
            snprintf(line, sizeof(line), "%s", block ? "OK" : "ERR");
            kv_append(line, sizeof(line), "message",
                      a->kind == BR_ANSWER_UNKNOWN ? "unknown: " : "not checked: ", a->detail);
            if (block)
                tag_append(line, sizeof(line),
                           a->kind == BR_ANSWER_UNKNOWN ? "unknown" : "secret-class");
        } else {
            snprintf(line, sizeof(line), "BH");
            kv_append(line, sizeof(line), "message", "breachd: ", a->detail);
        }
        break;
    default:
        snprintf(line, sizeof(line), "BH message=\"unexpected answer from breachd\"");
        break;
    }
    reply(r, line);
}

/* ---- the daemon connection ---- */

static void disconnect(helper *h)
{
    if (h->fd >= 0)
        close(h->fd);
    h->fd = -1;
    h->out_len = 0;
    h->in_len = 0;
    /* Everything in flight goes back to the front of the queue, in order. */
    if (h->sent) {
        for (req *r = h->sent; r; r = r->next)
            r->id = 0;
        *h->sent_tail = h->queue;
        if (!h->queue)
            h->queue_tail = h->sent_tail;
        h->queue = h->sent;
        h->sent = NULL;
        h->sent_tail = &h->sent;
    }
    h->inflight = 0;
    h->backoff_ms = h->backoff_ms ? BR_MIN(h->backoff_ms * 2, RECONNECT_MAX_MS) : 50;
    h->last_attempt = now_ms();
    h->reconnect_at = h->last_attempt + h->backoff_ms;
}

/* A failed attempt (why: one line, said once until the next success):
 * retried after a growing backoff. */
static void connect_failed(helper *h, const char *why)
{
    if (!h->warned_down)
        fprintf(stderr, "breachd-squid-helper: %s (retrying)\n", why);
    h->warned_down = true;
    h->backoff_ms = h->backoff_ms ? BR_MIN(h->backoff_ms * 2, RECONNECT_MAX_MS) : 50;
    h->reconnect_at = h->last_attempt + h->backoff_ms;
}

static void try_connect(helper *h)
{
    /* Non-blocking: a Unix socket connect either succeeds at once or fails
     * (a full backlog is retried like a refusal). A socket served by
     * another uid than breachd's is refused alike (br_client_check_peer). */
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", h->socket_path);
    h->last_attempt = now_ms();
    br_error err = {{0}};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        br_error_set(&err, -errno, "cannot connect to %s: %s", h->socket_path, strerror(errno));
    else if (br_client_check_peer(fd, h->socket_path, &err) == 0) {
        h->fd = fd;
        h->backoff_ms = 0;
        h->warned_slow = false;
        if (h->warned_down)
            fprintf(stderr, "breachd-squid-helper: reconnected to %s\n", h->socket_path);
        h->warned_down = false;
        return;
    }
    if (fd >= 0)
        close(fd);
    connect_failed(h, err.text);
}

/* While requests wait, the next attempt is at most RECONNECT_BUSY_MS away. */
static void busy_reconnect(helper *h)
{
    if (h->fd < 0 && h->queue && h->reconnect_at > h->last_attempt + RECONNECT_BUSY_MS)
        h->reconnect_at = h->last_attempt + RECONNECT_BUSY_MS;
}

/* id in decimal into buf (at least 20 bytes); its length. */
static size_t u64_dec(uint64_t id, char *buf)
{
    char t[20];
    size_t n = 0;
    do {
        t[n++] = (char)('0' + id % 10);
        id /= 10;
    } while (id);
    for (size_t i = 0; i < n; i++)
        buf[i] = t[n - 1 - i];
    return n;
}

/* Take r (at *pp) out of the sent list. */
static void sent_unlink(helper *h, req **pp)
{
    req *r = *pp;
    *pp = r->next;
    if (h->sent_tail == &r->next)
        h->sent_tail = pp;
    h->inflight--;
}

/* Move queued requests into the output buffer while there is room. */
static void send_queued(helper *h)
{
    while (h->fd >= 0 && h->queue && h->inflight < h->max_inflight) {
        req *r = h->queue;
        char idbuf[24];
        uint64_t id = h->next_id + 1;
        size_t il = u64_dec(id, idbuf);
        size_t n = il + 5 + r->url_len + 1; /* "ID URL <url>\n" */
        /* A line over the protocol's limit would be refused (line-too-long);
         * breachd takes no URL that long anyway: not checked. */
        if (n - 1 <= BR_PROTO_MAX_LINE && n > sizeof(h->out) - h->out_len)
            return; /* the buffer is full: later */
        h->queue = r->next;
        if (!h->queue)
            h->queue_tail = &h->queue;
        if (n - 1 > BR_PROTO_MAX_LINE) {
            reply(r, "ERR message=\"not checked: URL too long\"");
            req_free(r);
            continue;
        }
        char *o = h->out + h->out_len;
        memcpy(o, idbuf, il);
        memcpy(o + il, " URL ", 5);
        memcpy(o + il + 5, r->url, r->url_len);
        o[n - 1] = '\n';
        h->out_len += n;
        h->next_id = id;
        r->id = id;
        r->next = NULL;
        *h->sent_tail = r;
        h->sent_tail = &r->next;
        h->inflight++;
    }
}

/* The number of an id the helper gave: decimal digits, at most 16 (a
 * strtoull of each answer's id was a tenth of the helper's instructions). */
static uint64_t id_number(const char *id)
{
    uint64_t n = 0;
    for (; *id >= '0' && *id <= '9'; id++)
        n = n * 10 + (uint64_t)(*id - '0');
    return n;
}

static void on_daemon_line(helper *h, const char *line, size_t len)
{
    char id[17];
    br_answer a;
    if (br_answer_parse_line(line, len, id, &a) < 0)
        return;
    if (strcmp(id, "-") == 0) {
        /* A connection-level refusal: try again later. */
        fprintf(stderr, "breachd-squid-helper: breachd: %s\n", a.detail);
        disconnect(h);
        return;
    }
    uint64_t n = id_number(id);
    /* Answers mostly come in sending order: the first is the usual one. */
    for (req **pp = &h->sent; *pp; pp = &(*pp)->next) {
        if ((*pp)->id == n) {
            req *r = *pp;
            sent_unlink(h, pp);
            answer(h, r, &a);
            req_free(r);
            return;
        }
    }
}

static void daemon_io(helper *h, short revents)
{
    if (revents & POLLOUT && h->out_len) {
        ssize_t w = send(h->fd, h->out, h->out_len, MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EINTR) {
            disconnect(h);
            return;
        }
        if (w > 0) {
            memmove(h->out, h->out + w, h->out_len - (size_t)w);
            h->out_len -= (size_t)w;
        }
    }
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t got = recv(h->fd, h->in + h->in_len, sizeof(h->in) - h->in_len, 0);
        if (got < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (got <= 0) {
            fprintf(stderr, "breachd-squid-helper: breachd closed the connection; reconnecting\n");
            h->warned_down = true;
            disconnect(h);
            return;
        }
        h->in_len += (size_t)got;
        size_t start = 0;
        char *lf;
        while ((lf = memchr(h->in + start, '\n', h->in_len - start))) {
            on_daemon_line(h, h->in + start, (size_t)(lf - (h->in + start)));
            if (h->fd < 0)
                return;
            start = (size_t)(lf - h->in) + 1;
        }
        memmove(h->in, h->in + start, h->in_len - start);
        h->in_len -= start;
        if (h->in_len == sizeof(h->in))
            disconnect(h); /* a line longer than the protocol allows */
    }
}

/* ---- Squid's side ---- */

static void on_squid_line(void *ctx, char *line)
{
    helper *h = ctx;
    squid_request q;
    squid_request_parse(line, &q);
    req *r = req_new(q.url_len);
    if (!r) {
        req nomem = {0};
        memcpy(nomem.channel, q.channel, sizeof(nomem.channel));
        reply(&nomem, "BH message=\"out of memory\"");
        return;
    }
    memcpy(r->channel, q.channel, sizeof(r->channel));
    if (q.url_len == 0) {
        reply(r, "BH message=\"no URL in the request\"");
        req_free(r);
        return;
    }
    memcpy(r->url, q.url, q.url_len);
    r->url[q.url_len] = '\0';
    r->url_len = q.url_len;
    r->deadline_ms = h->now + (uint64_t)h->timeout_ms;
    /* A URL whose every lookup expression holds an e-mail address
     * (url_secret.h) is answered here, as breachd would, and not sent. A
     * URL that cannot hold one needs no canonicalization to tell. */
    if (br_url_may_hold_email(r->url, r->url_len)) {
        br_url_exprs ex;
        int rc = br_url_lookup_expressions(r->url, q.url_len, BR_URL_SB_HOST_COMPONENTS, &ex, NULL,
                                           NULL);
        br_url_exprs_clear(&ex);
        if (rc == -EPERM) {
            static br_answer a = {.kind = BR_ANSWER_ERROR};
            snprintf(a.detail, sizeof(a.detail), "secret-class %s", SECRET_DETAIL);
            answer(h, r, &a);
            req_free(r);
            return;
        }
    }
    *h->queue_tail = r;
    h->queue_tail = &r->next;
}

/* A request line that does not fit the input buffer: not a URL breachd
 * would take (8 KiB at most), so not a blocked one. The answer must carry
 * the line's channel ID, or Squid could not match it. */
static void line_too_long(void *ctx, const char *buf, size_t len)
{
    (void)ctx;
    req r = {0};
    squid_request_channel(buf, len, r.channel);
    reply(&r, "ERR message=\"not checked: URL too long\"");
}

/* Requests older than --timeout get BH: those waiting while breachd is
 * unreachable, and those sent to a breachd that does not answer (stopped,
 * hung): Squid would otherwise wait for them forever. A late answer to an
 * expired request is ignored (its id is no longer in flight). */
static void expire(helper *h)
{
    uint64_t now = now_ms();
    h->last_expire = now;
    for (req **pp = &h->queue; *pp;) {
        req *r = *pp;
        if (now < r->deadline_ms) {
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        reply(r, "BH message=\"breachd unavailable\"");
        req_free(r);
    }
    h->queue_tail = &h->queue;
    while (*h->queue_tail)
        h->queue_tail = &(*h->queue_tail)->next;
    for (req **pp = &h->sent; *pp;) {
        req *r = *pp;
        if (now < r->deadline_ms) {
            pp = &r->next;
            continue;
        }
        sent_unlink(h, pp);
        if (!h->warned_slow)
            fprintf(stderr, "breachd-squid-helper: breachd did not answer within %d ms\n",
                    h->timeout_ms);
        h->warned_slow = true;
        reply(r, "BH message=\"breachd did not answer in time\"");
        req_free(r);
    }
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: breachd-squid-helper [--socket PATH] [--on-unknown=block|allow]\n"
               "                            [--max-inflight N] [--timeout MS]\n");
}

static void help(void)
{
    usage(stdout);
    printf("\n"
           "Squid's external ACL helper backed by breachd: reads \"[ID] URL\" lines from Squid\n"
           "(concurrency or not) and answers OK (blocked: the ACL matches), ERR (not\n"
           "blocked) or BH (breachd cannot be asked), with message= and tag=.\n"
           "\n"
           "Options:\n"
           "  --socket PATH          breachd's socket (default $BREACHD_SOCKET, else\n"
           "                         %s)\n"
           "  --on-unknown=block|allow\n"
           "                         what an UNKNOWN answer is: OK tag=unknown, or ERR\n"
           "                         (the default: allow)\n"
           "  --max-inflight N       requests sent to breachd and not yet answered, at\n"
           "                         most (1 to 65536, default 256)\n"
           "  --timeout MS           no answer this long after Squid asked: BH (default\n"
           "                         10000)\n"
           "  -h, --help             this text\n"
           "  --version              print the version\n"
           "Exit status: 0 at the end of Squid's input, 2 a usage error.\n"
           "See breachd-squid-helper(8).\n",
           BREACHD_DEFAULT_SOCKET);
}

/* The options into h: -1 to go on, else the exit status (after --help,
 * --version or an error). */
static int parse_args(helper *h, int argc, char **argv)
{
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'},
        {"on-unknown", required_argument, NULL, 'u'},
        {"max-inflight", required_argument, NULL, 'm'},
        {"timeout", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            h->socket_path = optarg;
            break;
        case 'u':
            if (strcmp(optarg, "block") && strcmp(optarg, "allow")) {
                fprintf(stderr, "breachd-squid-helper: --on-unknown must be block or allow\n");
                return 2;
            }
            h->unknown_blocks = optarg[0] == 'b';
            break;
        case 'm':
            h->max_inflight = (unsigned)strtoul(optarg, NULL, 10);
            if (h->max_inflight < 1 || h->max_inflight > 65536) {
                fprintf(stderr, "breachd-squid-helper: --max-inflight must be 1..65536\n");
                return 2;
            }
            break;
        case 't':
            h->timeout_ms = atoi(optarg);
            if (h->timeout_ms < 1) {
                fprintf(stderr, "breachd-squid-helper: --timeout must be milliseconds > 0\n");
                return 2;
            }
            break;
        case 'V':
            printf("breachd-squid-helper %s\n", BREACHD_VERSION);
            return 0;
        case 'h':
            help();
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    return -1;
}

/* What Squid sent that is not a whole line yet (squid_request.h). */
typedef struct squid_in {
    squid_input input;
    bool eof;
} squid_in;

/* Read what Squid sent and take each whole line. */
static void read_squid(helper *h, squid_in *in)
{
    const squid_input_cb cb = {on_squid_line, line_too_long, h};
    size_t room;
    char *to = squid_input_room(&in->input, &room);
    ssize_t got = read(STDIN_FILENO, to, room);
    if (got == 0)
        in->eof = true;
    else if (got > 0)
        squid_input_took(&in->input, (size_t)got, &cb);
}

/* Until Squid closes stdin and every request is answered. */
static void run(helper *h)
{
    static squid_in in; /* a line's worth of buffer: not on the stack */
    h->now = now_ms();
    fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
    while (!in.eof || h->queue || h->sent) {
        busy_reconnect(h);
        if (h->fd < 0 && now_ms() >= h->reconnect_at)
            try_connect(h);
        send_queued(h);
        /* Write at once (the socket almost always has room) rather than
         * after another poll: one wake-up less per request. */
        if (h->fd >= 0 && h->out_len)
            daemon_io(h, POLLOUT);
        struct pollfd p[2] = {{.fd = in.eof ? -1 : STDIN_FILENO, .events = POLLIN},
                              {.fd = h->fd, .events = POLLIN}};
        if (h->fd >= 0 && h->out_len)
            p[1].events |= POLLOUT;
        /* Stop taking work from Squid while a lot is queued (backpressure). */
        if (h->inflight >= h->max_inflight && h->queue)
            p[0].fd = -1;
        busy_reconnect(h);
        /* The answers of this turn, in one write, before waiting. */
        out_flush();
        /* Wake up for reconnecting, and every EXPIRE_EVERY_MS while
         * requests wait for an answer. */
        int wait = h->fd < 0 ? (int)BR_MAX((int64_t)h->reconnect_at - (int64_t)now_ms(), 1)
                   : h->sent || h->queue ? EXPIRE_EVERY_MS
                                         : 1000;
        if (poll(p, 2, wait) < 0 && errno != EINTR)
            break;
        h->now = now_ms();
        if (p[0].revents & (POLLIN | POLLHUP))
            read_squid(h, &in);
        if (h->fd >= 0 && p[1].revents)
            daemon_io(h, p[1].revents);
        if (h->fd < 0 || h->now - h->last_expire >= EXPIRE_EVERY_MS)
            expire(h);
        tell_unchecked(h, false);
    }
    out_flush();
    tell_unchecked(h, true);
}

int main(int argc, char **argv)
{
    helper h = {.fd = -1, .max_inflight = 256, .timeout_ms = 10000};
    h.queue_tail = &h.queue;
    h.sent_tail = &h.sent;
    h.socket_path = getenv("BREACHD_SOCKET");
    if (!h.socket_path || !*h.socket_path)
        h.socket_path = BREACHD_DEFAULT_SOCKET;
    int status = parse_args(&h, argc, argv);
    if (status >= 0)
        return status;
    try_connect(&h);
    run(&h);
    if (h.fd >= 0)
        close(h.fd);
    req_spares_free();
    return 0;
}
