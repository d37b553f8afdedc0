/* SPDX-License-Identifier: MIT */
/* br_client_ask (lib/proto/client.h), the one question the PAM and
 * directory modules ask breachd: over a real Unix socket to a peer that a
 * thread serves (answering, silent, hanging up) or to no socket at all.
 * What crosses the socket is "ID PW <SHA-1>" and never the password; every
 * failure is an error code with err set and no answer; a silent peer ends
 * in -ETIMEDOUT, not a hang. The modules' own handling of the outcomes is
 * in test_dirmod and the PAM integration tests. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/hash.h"
#include "proto/client.h"

enum peer_mode {
    PEER_ANSWER, /* answers each request with .answer after its id */
    PEER_SILENT, /* reads and never answers, until the client hangs up */
    PEER_HANGUP, /* closes the connection at once */
};

/* A listening socket served by a thread, which keeps the request line. */
struct peer {
    int fd;
    enum peer_mode mode;
    const char *answer;
    char path[108];
    char got[512];
    pthread_t t;
};

static void *serve(void *arg)
{
    struct peer *p = arg;
    int c = accept(p->fd, NULL, NULL);
    if (c < 0)
        return NULL;
    ssize_t n = p->mode == PEER_HANGUP ? 0 : read(c, p->got, sizeof(p->got) - 1);
    if (n > 0) {
        p->got[n] = '\0';
        if (p->mode == PEER_ANSWER) {
            char out[600];
            int w = snprintf(out, sizeof(out), "%.*s %s\n", (int)strcspn(p->got, " "), p->got,
                             p->answer);
            assert_true(write(c, out, (size_t)w) == w);
        }
    }
    /* hold the connection until the client is done with it */
    char sink[64];
    while (p->mode != PEER_HANGUP && read(c, sink, sizeof(sink)) > 0)
        ;
    close(c);
    return NULL;
}

static void peer_start(struct peer *p, enum peer_mode mode, const char *answer)
{
    memset(p, 0, sizeof(*p));
    p->mode = mode;
    p->answer = answer;
    snprintf(p->path, sizeof(p->path), "/tmp/client-ask-test.%d.%d.sock", (int)getpid(), mode);
    unlink(p->path);
    p->fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(p->fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p->path);
    assert_int_equal(bind(p->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(p->fd, 4), 0);
    assert_int_equal(pthread_create(&p->t, NULL, serve, p), 0);
}

static void peer_stop(struct peer *p)
{
    pthread_join(p->t, NULL);
    close(p->fd);
    unlink(p->path);
}

/* The answer comes back; the line sent is the SHA-1 request, without the
 * password. */
static void test_ask_password(void **state)
{
    (void)state;
    static const char pw[] = "correct horse battery";
    uint8_t sha1[BR_SHA1_LEN];
    char hex[2 * BR_SHA1_LEN + 1], want[80];
    assert_int_equal(br_sha1(pw, strlen(pw), sha1), 0);
    br_hex_encode_upper(sha1, sizeof(sha1), hex);
    struct peer p;
    peer_start(&p, PEER_ANSWER, "PWNED 42");
    br_error err = {{0}};
    br_answer a;
    int r = br_client_ask(p.path, 2000, pw, strlen(pw), &a, &err);
    peer_stop(&p);
    assert_int_equal(r, 0);
    assert_int_equal(a.kind, BR_ANSWER_PWNED);
    assert_int_equal(a.count, 42);
    snprintf(want, sizeof(want), " PW %s\n", hex);
    assert_non_null(strstr(p.got, want));
    assert_null(strstr(p.got, "horse"));
    assert_int_equal(strlen(p.got), strcspn(p.got, " ") + strlen(want));
}

/* No password: PING, and an ERR answer is an answer, not a failure. */
static void test_ask_ping_and_err(void **state)
{
    (void)state;
    struct peer p;
    br_error err = {{0}};
    br_answer a;
    peer_start(&p, PEER_ANSWER, "PONG");
    int r = br_client_ask(p.path, 2000, NULL, 0, &a, &err);
    peer_stop(&p);
    assert_int_equal(r, 0);
    assert_int_equal(a.kind, BR_ANSWER_OTHER);
    assert_string_equal(a.detail, "PONG");
    assert_non_null(strstr(p.got, " PING\n"));
    peer_start(&p, PEER_ANSWER, "ERR busy too many requests");
    r = br_client_ask(p.path, 2000, "x", 1, &a, &err);
    peer_stop(&p);
    assert_int_equal(r, 0);
    assert_int_equal(a.kind, BR_ANSWER_ERROR);
}

/* Failures: an error code, err naming what went wrong (never the
 * password), and no answer. */
static void test_ask_failures(void **state)
{
    (void)state;
    static const char pw[] = "correct horse battery";
    br_error err = {{0}};
    br_answer a;
    int r = br_client_ask("/nonexistent/dir/breachd.sock", 300, pw, strlen(pw), &a, &err);
    assert_true(r == -ENOENT);
    assert_non_null(strstr(err.text, "/nonexistent/dir/breachd.sock"));
    assert_int_equal(a.kind, BR_ANSWER_NONE);
    static const struct {
        enum peer_mode mode;
        int want;
    } cases[] = {{PEER_SILENT, -ETIMEDOUT}, {PEER_HANGUP, 0}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct peer p;
        memset(&err, 0, sizeof(err));
        peer_start(&p, cases[i].mode, NULL);
        r = br_client_ask(p.path, 300, pw, strlen(pw), &a, &err);
        peer_stop(&p);
        assert_true(r < 0);
        if (cases[i].want)
            assert_int_equal(r, cases[i].want);
        assert_true(err.text[0] != '\0');
        assert_null(strstr(err.text, "horse"));
        assert_int_equal(a.kind, BR_ANSWER_NONE);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ask_password),
        cmocka_unit_test(test_ask_ping_and_err),
        cmocka_unit_test(test_ask_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
