/* SPDX-License-Identifier: MIT */
/* Fuzz target for the client's answer parser (lib/proto/client.c), the code
 * that reads breachd's answers inside passwd (PAM module), breachctl and the
 * Squid helper: br_client_batch over a real Unix socket whose other end (a
 * listener opened once in a private directory under $TMPDIR) has already
 * written the input and shut down its sending side, and
 * br_answer_parse_line on every line.
 *
 * Input: byte 0 gives the number of requests (1..16) and byte 1 their kinds
 * (PW, URL, or a raw PING, in turn from its bits), byte 2 the window; the
 * rest is what "breachd" answers.
 *
 * Checked against a model of docs/protocol.md's answers and of the batch:
 * lines split at LF, one CR dropped; the batch's turns each queue the next
 * request when the window allows, send it, and read as much as the
 * client's buffer takes (all the answers are there before it starts); a
 * line answers the request of its id (1..n here) when that request was sent
 * and not answered yet; a "- ..." line naming "forbidden" or "closed" ends
 * the batch with -EPERM or -EPROTO, a line longer than the buffer with
 * -EPROTO, the end of the stream with -ECONNRESET while answers are
 * missing. Every answer the client took is the model's (kind, count, which
 * saturates, category, detail), none is missing, the return code is the
 * model's, and every request was sent once in the documented format. */
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "proto/client.h"
#include "proto/protocol.h"

#define FUZZ_NAME "fuzz_client"
#include "fuzz_check.h"
#include "fuzz_bytes.h"

#define MAX_REQ 16
#define RBUF (2 * (BR_PROTO_MAX_LINE + 2)) /* the client's read buffer (client.c) */

static int listen_fd = -1;
static char dir[256], sock_path[300];

static void cleanup(void)
{
    close(listen_fd);
    unlink(sock_path);
    rmdir(dir);
}

static void listener(void)
{
    if (listen_fd >= 0)
        return;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/fuzz-client-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir));
    snprintf(sock_path, sizeof(sock_path), "%s/s", dir);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    CHECK(strlen(sock_path) < sizeof(sa.sun_path));
    strcpy(sa.sun_path, sock_path);
    listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(listen_fd >= 0);
    CHECK(bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    CHECK(listen(listen_fd, 8) == 0);
    atexit(cleanup);
}

/* ---- the model (docs/protocol.md) ---- */

typedef struct model_answer {
    bool set;
    br_answer_kind kind;
    uint64_t count;
    char category[33];
    char detail[8192];
} model_answer;

/* snprintf("%.*s") semantics: up to len bytes, stopping at a NUL, cut to fit. */
static void copy_text(char *dst, size_t size, const char *s, size_t len)
{
    size_t n = strnlen(s, len);
    if (n > size - 1)
        n = size - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static void model_parse(const char *s, size_t len, model_answer *m)
{
    memset(m, 0, sizeof(*m));
    m->set = true;
    size_t w = 0;
    while (w < len && s[w] != ' ')
        w++;
    const char *rest = w < len ? s + w + 1 : s + len;
    size_t rlen = (size_t)(s + len - rest);
#define WORD(x) (w == strlen(x) && memcmp(s, x, w) == 0)
    if (WORD("CLEAN") || WORD("SAFE")) {
        m->kind = WORD("CLEAN") ? BR_ANSWER_CLEAN : BR_ANSWER_SAFE;
    } else if (WORD("PWNED")) {
        m->kind = BR_ANSWER_PWNED;
        /* A count too large for 64 bits is still breached: it saturates. */
        for (size_t k = 0; k < rlen && rest[k] >= '0' && rest[k] <= '9'; k++) {
            unsigned d = (unsigned)(rest[k] - '0');
            m->count = m->count > (UINT64_MAX - d) / 10 ? UINT64_MAX : m->count * 10 + d;
        }
    } else if (WORD("BLOCKED")) {
        m->kind = BR_ANSWER_BLOCKED;
        size_t c = 0;
        while (c < rlen && rest[c] != ' ')
            c++;
        copy_text(m->category, sizeof(m->category), rest, c);
        if (c < rlen)
            copy_text(m->detail, sizeof(m->detail), rest + c + 1, rlen - c - 1);
    } else if (WORD("UNKNOWN") || WORD("ERR")) {
        m->kind = WORD("ERR") ? BR_ANSWER_ERROR : BR_ANSWER_UNKNOWN;
        copy_text(m->detail, sizeof(m->detail), rest, rlen);
    } else {
        m->kind = BR_ANSWER_OTHER;
        copy_text(m->detail, sizeof(m->detail), s, len);
    }
#undef WORD
}

static void check_same(const br_answer *a, const model_answer *m)
{
    CHECK(m->set);
    CHECK(a->kind == m->kind && a->count == m->count);
    CHECK(strcmp(a->category, m->category) == 0 && strcmp(a->detail, m->detail) == 0);
}

/* The batch's id (1..n) of a line's first field, or 0. */
static unsigned model_id(const char *s, size_t len, unsigned n)
{
    if (len == 0 || len > BR_PROTO_MAX_ID)
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (uint64_t)(s[i] - '0'); /* 16 digits: no overflow */
    }
    return v >= 1 && v <= n ? (unsigned)v : 0;
}

static model_answer want[MAX_REQ + 1];

/* One line as the batch takes it, with `on_wire` requests sent: 1 when it
 * answers one, 0 for none, or the code of a refusal that ends the batch. */
static int model_line(const char *line, size_t l, unsigned on_wire)
{
    char id[BR_PROTO_MAX_ID + 1];
    br_answer a;
    int pr = br_answer_parse_line(line, l, id, &a);
    if (l > 0 && line[l - 1] == '\r')
        l--;
    const char *sp = memchr(line, ' ', l);
    if (!sp) {
        CHECK(pr == -EINVAL);
        return 0;
    }
    size_t idlen = (size_t)(sp - line);
    if (idlen >= 1 && idlen <= BR_PROTO_MAX_ID) {
        model_answer m;
        model_parse(sp + 1, l - idlen - 1, &m);
        CHECK(pr == 0 && strlen(id) == strnlen(line, idlen) && memcmp(id, line, strlen(id)) == 0);
        check_same(&a, &m);
    } else {
        CHECK(pr == -EINVAL);
    }
    unsigned k = model_id(line, idlen, on_wire);
    if (k && !want[k].set) {
        model_parse(sp + 1, l - idlen - 1, &want[k]);
        return 1;
    }
    if (idlen == 1 && line[0] == '-') {
        if (memmem(sp + 1, l - 2, "forbidden", 9))
            return -EPERM;
        if (memmem(sp + 1, l - 2, "closed", 6))
            return -EPROTO;
    }
    return 0;
}

/* The batch of n requests (at most window in flight) over answers d that
 * are all there before it starts, followed by the end of the stream: each
 * turn queues the next request when the window allows, sends it, and reads
 * as much as the client's buffer takes. Returns the batch's code. */
static int model_run(const char *d, size_t len, unsigned n, size_t window)
{
    memset(want, 0, sizeof(want));
    if (window == 0)
        window = 64;
    size_t pos = 0, rlen = 0; /* bytes read; of them, not yet a complete line */
    unsigned sent = 0, answered = 0, inflight = 0;
    while (answered < n) {
        if (sent < n && inflight < window) {
            sent++;
            inflight++;
        }
        size_t take = len - pos < RBUF - rlen ? len - pos : RBUF - rlen;
        if (take == 0)
            return -ECONNRESET;
        pos += take;
        rlen += take;
        const char *buf = d + pos - rlen, *lf;
        int code = 0;
        unsigned m = 0;
        while (code >= 0 && (lf = memchr(buf, '\n', (size_t)(d + pos - buf)))) {
            code = model_line(buf, (size_t)(lf - buf), sent);
            if (code > 0)
                m++;
            buf = lf + 1;
        }
        if (code < 0)
            return code;
        rlen = (size_t)(d + pos - buf);
        answered += m;
        inflight -= m;
        if (rlen == RBUF)
            return -EPROTO;
    }
    return 0;
}

/* ---- the requests, and what the client sent ---- */

static const char *const url_arg = "http://example.test/x";

static void check_sent(int sfd, const br_client_request *q, unsigned n, bool sent[MAX_REQ + 1])
{
    static char buf[MAX_REQ * 128 + 1];
    size_t len = 0;
    for (;;) {
        ssize_t r = recv(sfd, buf + len, sizeof(buf) - 1 - len, MSG_DONTWAIT);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *sp = strchr(line, ' ');
        CHECK(sp);
        unsigned k = model_id(line, (size_t)(sp - line), n);
        CHECK(k && !sent[k]);
        sent[k] = true;
        const br_client_request *r = &q[k - 1];
        if (r->kind == BR_REQ_SHA1) {
            char hex[41];
            br_hex_encode_upper(r->arg, 20, hex);
            CHECK(strncmp(sp + 1, "PW ", 3) == 0 && strcmp(sp + 4, hex) == 0);
        } else if (r->kind == BR_REQ_URL) {
            CHECK(strncmp(sp + 1, "URL ", 4) == 0 && strcmp(sp + 5, url_arg) == 0);
        } else {
            CHECK(strcmp(sp + 1, "PING") == 0);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_bytes in = {data, size};
    unsigned n = 1 + fz_u8(&in) % MAX_REQ;
    uint8_t kinds = fz_u8(&in);
    size_t window = fz_u8(&in) % (MAX_REQ + 1);
    const char *d = (const char *)in.p;
    size_t len = in.n;

    listener();
    br_client *c = NULL;
    br_error err = {{0}};
    CHECK(br_client_connect(sock_path, 5000, &c, &err) == 0);
    int sfd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    CHECK(sfd >= 0);
    int sz = 1 << 20;
    CHECK(setsockopt(sfd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)) == 0);
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(sfd, d + off, len - off, MSG_NOSIGNAL);
        CHECK(w > 0);
        off += (size_t)w;
    }
    CHECK(shutdown(sfd, SHUT_WR) == 0);

    br_client_request q[MAX_REQ];
    uint8_t sha[MAX_REQ][20];
    for (unsigned i = 0; i < n; i++) {
        memset(&q[i], 0, sizeof(q[i]));
        unsigned kind = (kinds >> (i % 4 * 2)) & 3;
        if (kind <= 1) {
            for (int j = 0; j < 20; j++)
                sha[i][j] = (uint8_t)(i * 31 + j * 7);
            q[i].kind = BR_REQ_SHA1;
            q[i].arg = sha[i];
            q[i].arg_len = 20;
        } else if (kind == 2) {
            q[i].kind = BR_REQ_URL;
            q[i].arg = url_arg;
            q[i].arg_len = strlen(url_arg);
        } else {
            q[i].kind = BR_REQ_RAW;
            q[i].arg = "PING";
            q[i].arg_len = 4;
        }
    }
    br_client_set_timeout(c, 5000);
    int r = br_client_batch(c, q, n, window, &err);

    int want_r = model_run(d, len, n, window);
    CHECK(r == want_r);
    CHECK(r == 0 || err.text[0] != '\0');
    for (unsigned i = 0; i < n; i++) {
        if (q[i].answer.kind == BR_ANSWER_NONE)
            CHECK(!want[i + 1].set && r < 0);
        else
            check_same(&q[i].answer, &want[i + 1]);
    }

    bool sent[MAX_REQ + 1] = {0};
    check_sent(sfd, q, n, sent);
    for (unsigned i = 0; i < n; i++)
        CHECK(q[i].answer.kind == BR_ANSWER_NONE || sent[i + 1]);
    close(sfd);
    br_client_free(c);
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
