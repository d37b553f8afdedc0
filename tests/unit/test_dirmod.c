/* SPDX-License-Identifier: MIT */
/* The directory modules' shared core (client/dirmod/): every option and
 * its bad values, key=value words from a counted, unterminated buffer
 * (ppolicy's pwdCheckModuleArg), the decision for every answer and
 * policy, and one question over a real Unix socket to a breachd that is
 * missing, silent, or answering garbage. */
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

#include "config.h"
#include "dirmod.h"

static int set(dm_options *o, const char *k, const char *v, char *err, size_t size)
{
    return dm_option_set(o, k, strlen(k), v, strlen(v), err, size);
}

static void test_defaults(void **state)
{
    (void)state;
    dm_options o;
    dm_options_init(&o);
    assert_string_equal(o.socket, BREACHD_DEFAULT_SOCKET);
    assert_int_equal(o.min_count, 1);
    assert_int_equal(o.on_error, DM_REJECT);
    assert_int_equal(o.on_unknown, DM_REJECT);
    assert_int_equal(o.timeout_ms, 2000);
}

static void test_good_values(void **state)
{
    (void)state;
    static const struct {
        const char *k, *v;
        int timeout;
        uint64_t min_count;
    } cases[] = {
        {"timeout", "2s", 2000, 1},  {"timeout", "500ms", 500, 1},
        {"timeout", "750", 750, 1},  {"timeout", "60s", 60000, 1},
        {"timeout", "1", 1, 1},      {"min_count", "10", 2000, 10},
        {"min_count", "1", 2000, 1}, {"min_count", "9223372036854775807", 2000, INT64_MAX},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        dm_options o;
        char err[128] = "";
        dm_options_init(&o);
        assert_int_equal(set(&o, cases[i].k, cases[i].v, err, sizeof(err)), 0);
        assert_int_equal(o.timeout_ms, cases[i].timeout);
        assert_int_equal(o.min_count, cases[i].min_count);
    }
    dm_options o;
    char err[128];
    dm_options_init(&o);
    assert_int_equal(set(&o, "socket", "/run/x/b.sock", err, sizeof(err)), 0);
    assert_string_equal(o.socket, "/run/x/b.sock");
    assert_int_equal(set(&o, "on_error", "allow", err, sizeof(err)), 0);
    assert_int_equal(o.on_error, DM_ALLOW);
    assert_int_equal(set(&o, "on_error", "deny", err, sizeof(err)), 0);
    assert_int_equal(o.on_error, DM_REJECT);
    assert_int_equal(set(&o, "on_unknown", "allow", err, sizeof(err)), 0);
    assert_int_equal(o.on_unknown, DM_ALLOW);
    assert_int_equal(set(&o, "on_unknown", "reject", err, sizeof(err)), 0);
    assert_int_equal(o.on_unknown, DM_REJECT);
}

static void test_bad_values(void **state)
{
    (void)state;
    char long_path[200];
    memset(long_path, 'a', sizeof(long_path) - 1);
    long_path[0] = '/';
    long_path[sizeof(long_path) - 1] = '\0';
    static const char *const timeouts[] = {
        "0", "61s", "60001", "s", "ms", "", "-1", "1.5s", "2m", "99999999999999999999999", "2 s"};
    static const char *const counts[] = {
        "0", "", "-3", "1e3", "9223372036854775808", "18446744073709551616", " 5"};
    static const char *const policies[] = {"", "Allow", "yes", "rejected", "allow "};
    struct {
        const char *k, *v, *want;
    } cases[40];
    size_t n = 0;
    for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++)
        cases[n++] = (__typeof__(cases[0])){"timeout", timeouts[i], "option timeout"};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
        cases[n++] = (__typeof__(cases[0])){"min_count", counts[i], "option min_count"};
    for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
        cases[n++] = (__typeof__(cases[0])){"on_error", policies[i], "option on_error"};
        cases[n++] = (__typeof__(cases[0])){"on_unknown", policies[i], "option on_unknown"};
    }
    cases[n++] = (__typeof__(cases[0])){"socket", "relative.sock", "option socket"};
    cases[n++] = (__typeof__(cases[0])){"socket", "", "option socket"};
    cases[n++] = (__typeof__(cases[0])){"socket", long_path, "option socket"};
    cases[n++] = (__typeof__(cases[0])){"colour", "blue", "unknown option 'colour'"};
    cases[n++] = (__typeof__(cases[0])){"Socket", "/x", "unknown option 'Socket'"};
    for (size_t i = 0; i < n; i++) {
        dm_options o, before;
        char err[128] = "";
        dm_options_init(&o);
        before = o;
        assert_int_equal(set(&o, cases[i].k, cases[i].v, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, cases[i].want));
        /* a bad value leaves the options as they were */
        assert_memory_equal(&o, &before, sizeof(o));
    }
}

static void test_words(void **state)
{
    (void)state;
    dm_options o;
    char err[128] = "";
    /* counted and unterminated: the bytes after len must not be read */
    char buf[64];
    const char *text = " socket=/tmp/b.sock\tmin_count=5\n timeout=1s  on_error=allow";
    size_t len = strlen(text);
    memcpy(buf, text, len);
    memset(buf + len, 'X', sizeof(buf) - len);
    dm_options_init(&o);
    assert_int_equal(dm_options_parse_words(&o, buf, len, err, sizeof(err)), 0);
    assert_string_equal(o.socket, "/tmp/b.sock");
    assert_int_equal(o.min_count, 5);
    assert_int_equal(o.timeout_ms, 1000);
    assert_int_equal(o.on_error, DM_ALLOW);
    /* a length that cuts a value: what is inside counts */
    dm_options_init(&o);
    assert_int_equal(dm_options_parse_words(&o, "min_count=12345", 12, err, sizeof(err)), 0);
    assert_int_equal(o.min_count, 12);
    /* empty and blank arguments: the defaults */
    dm_options_init(&o);
    assert_int_equal(dm_options_parse_words(&o, "", 0, err, sizeof(err)), 0);
    assert_int_equal(dm_options_parse_words(&o, " \t\n", 3, err, sizeof(err)), 0);
    assert_int_equal(o.min_count, 1);
    /* not key=value, an empty key, a bad value, a control byte in a key */
    static const struct {
        const char *s, *want;
    } bad[] = {
        {"socket", "not key=value"},
        {"min_count=2 allow", "'allow' is not key=value"},
        {"=5", "unknown option ''"},
        {"min_count=", "option min_count"},
        {"on_error=allow timeout=0", "option timeout"},
        {"ke\x01y=1", "unknown option 'ke?y'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        dm_options_init(&o);
        err[0] = '\0';
        assert_int_equal(dm_options_parse_words(&o, bad[i].s, strlen(bad[i].s), err, sizeof(err)),
                         -EINVAL);
        assert_non_null(strstr(err, bad[i].want));
    }
    /* a long word is cut in the message, never overflowing it */
    char big[600];
    memset(big, 'k', sizeof(big));
    char small[24];
    dm_options_init(&o);
    assert_int_equal(dm_options_parse_words(&o, big, sizeof(big), small, sizeof(small)), -EINVAL);
    assert_true(strlen(small) < sizeof(small));
}

static void decide(dm_kind kind, uint64_t count, const char *reason, const dm_options *o,
                   dm_result *r)
{
    dm_answer a = {.kind = kind, .count = count};
    snprintf(a.reason, sizeof(a.reason), "%s", reason);
    dm_decide(o, &a, r);
}

static void test_decide(void **state)
{
    (void)state;
    dm_options o;
    dm_result r;
    dm_options_init(&o);
    decide(DM_CLEAN, 0, "", &o, &r);
    assert_true(r.accept);
    assert_string_equal(r.log, "");
    decide(DM_PWNED, 3861493, "", &o, &r);
    assert_false(r.accept);
    assert_true(r.breached);
    assert_string_equal(r.message,
                        "Password rejected: it has been seen 3,861,493 times in data breaches");
    assert_string_equal(r.log, ""); /* a refusal is no error: the server logs it its way */
    decide(DM_PWNED, 1, "", &o, &r);
    assert_false(r.accept);
    assert_non_null(strstr(r.message, "seen once in"));
    o.min_count = 10;
    decide(DM_PWNED, 9, "", &o, &r);
    assert_true(r.accept);
    assert_false(r.breached);
    decide(DM_PWNED, 10, "", &o, &r);
    assert_false(r.accept);
    assert_non_null(strstr(r.message, "seen 10 times"));
    /* unknown and error: the policy decides; one log line, never the count */
    decide(DM_UNKNOWN, 0, "upstream-down", &o, &r);
    assert_false(r.accept);
    assert_false(r.breached);
    assert_non_null(strstr(r.message, "could not be checked"));
    assert_non_null(strstr(r.log, "upstream-down"));
    assert_non_null(strstr(r.log, "refused"));
    o.on_unknown = DM_ALLOW;
    decide(DM_UNKNOWN, 0, "upstream-down", &o, &r);
    assert_true(r.accept);
    assert_non_null(strstr(r.log, "accepted (on_unknown=allow)"));
    decide(DM_ERROR, 0, "breachd is not running", &o, &r);
    assert_false(r.accept); /* on_unknown does not cover errors */
    assert_non_null(strstr(r.log, "breachd is not running"));
    o.on_error = DM_ALLOW;
    decide(DM_ERROR, 0, "no answer in time", &o, &r);
    assert_true(r.accept);
    assert_non_null(strstr(r.log, "accepted (on_error=allow)"));
}

/* similar=: decided after an accepted exact check only. */
static void test_decide_similar(void **state)
{
    (void)state;
    dm_options o;
    dm_result r;
    dm_options_init(&o);
    assert_int_equal(o.similar, DM_SIMILAR_WARN);
    assert_int_equal(o.similar_min_count, 1000);
    char err[200];
    const char *words = "similar=reject similar_min_count=5";
    assert_int_equal(dm_options_parse_words(&o, words, strlen(words), err, sizeof(err)), 0);
    assert_int_equal(o.similar, DM_SIMILAR_REJECT);
    assert_int_equal(o.similar_min_count, 5);
    assert_int_equal(dm_options_parse_words(&o, "similar=maybe", 13, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "reject, warn or off"));
    dm_answer a = {.kind = DM_CLEAN, .similar = true, .similar_count = 1234567};
    dm_decide(&o, &a, &r);
    assert_false(r.accept);
    assert_true(r.breached);
    assert_string_equal(r.message, "Password rejected: it is a small change of a password seen "
                                   "1,234,567 times in data breaches");
    assert_null(strstr(r.log, "1,234,567")); /* the log line holds no count */
    assert_non_null(strstr(r.log, "refused (similar=reject)"));
    o.similar = DM_SIMILAR_WARN;
    dm_decide(&o, &a, &r);
    assert_true(r.accept);
    assert_non_null(strstr(r.log, "accepted (similar=warn)"));
    o.similar = DM_SIMILAR_OFF;
    dm_decide(&o, &a, &r);
    assert_true(r.accept);
    assert_string_equal(r.log, "");
    /* an exact hit stays an exact refusal */
    o.similar = DM_SIMILAR_REJECT;
    a.kind = DM_PWNED;
    a.count = 7;
    dm_decide(&o, &a, &r);
    assert_false(r.accept);
    assert_non_null(strstr(r.message, "has been seen 7 times"));
}

/* banned=: decided first under reject, after the rest under warn. */
static void test_decide_banned(void **state)
{
    (void)state;
    dm_options o;
    dm_result r;
    char err[200];
    dm_options_init(&o);
    assert_int_equal(o.banned, DM_BANNED_DEFAULT);
    assert_int_equal(dm_options_parse_words(&o, "banned=warn", 11, err, sizeof(err)), 0);
    assert_int_equal(o.banned, DM_BANNED_WARN);
    assert_int_equal(dm_options_parse_words(&o, "banned=maybe", 12, err, sizeof(err)), -EINVAL);
    dm_answer a = {
        .kind = DM_CLEAN, .banned = true, .banned_kinds = 1u << 2, .banned_reject = true};
    dm_decide(&o, &a, &r);
    assert_false(r.accept);
    assert_true(r.breached);
    assert_string_equal(r.message, "Password rejected: it is made of the user's own name");
    assert_string_equal(r.log, "a new password is made of the user's own name: refused "
                               "(banned=reject)");
    a.banned_reject = false; /* warn: accepted with a log line ... */
    dm_decide(&o, &a, &r);
    assert_true(r.accept);
    assert_non_null(strstr(r.log, "accepted (banned=warn)"));
    a.kind = DM_PWNED; /* ... unless the corpus refuses it */
    a.count = 3;
    dm_decide(&o, &a, &r);
    assert_false(r.accept);
    assert_non_null(strstr(r.message, "has been seen 3 times"));
    dm_names n = {0};
    for (int i = 0; i < DM_MAX_NAMES + 3; i++)
        dm_names_add(&n, "name", 4);
    dm_names_add(&n, "", 0);
    assert_int_equal(n.n, DM_MAX_NAMES);
}

static void test_seen_times(void **state)
{
    (void)state;
    char b[40];
    static const struct {
        uint64_t n;
        const char *s;
    } cases[] = {{0, "0 times"},
                 {1, "once"},
                 {2, "2 times"},
                 {999, "999 times"},
                 {1000, "1,000 times"},
                 {123456, "123,456 times"},
                 {1234567, "1,234,567 times"},
                 {UINT64_MAX, "18,446,744,073,709,551,615 times"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        dm_seen_times(cases[i].n, b, sizeof(b));
        assert_string_equal(b, cases[i].s);
    }
    char tiny[5];
    dm_seen_times(1234567, tiny, sizeof(tiny));
    assert_int_equal(strlen(tiny), 4);
}

/* A listening socket served by a thread: mode 0 never answers, 1 answers
 * each request with a status breachd never sends, 2 with a line of no
 * id, 3 closes at once. */
struct fake {
    int fd, mode;
    char path[108];
    pthread_t t;
};

static void *serve(void *arg)
{
    struct fake *f = arg;
    int c = accept(f->fd, NULL, NULL);
    if (c < 0)
        return NULL;
    char line[512];
    ssize_t n = f->mode == 3 ? 0 : read(c, line, sizeof(line) - 1);
    if (n > 0 && f->mode != 0) {
        char out[600];
        line[n] = '\0';
        line[strcspn(line, " ")] = '\0';
        int w = f->mode == 1 ? snprintf(out, sizeof(out), "%s FROB \x01garbage\n", line)
                             : snprintf(out, sizeof(out), "\x02 no id at all\n");
        assert_true(write(c, out, (size_t)w) == w);
    }
    if (f->mode == 0 || f->mode == 2) {
        /* hold the connection until the client gives up */
        while (read(c, line, sizeof(line)) > 0)
            ;
    }
    close(c);
    return NULL;
}

static void fake_start(struct fake *f, int mode)
{
    f->mode = mode;
    snprintf(f->path, sizeof(f->path), "/tmp/dirmod-test.%d.%d.sock", (int)getpid(), mode);
    unlink(f->path);
    f->fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(f->fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
    assert_int_equal(bind(f->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(f->fd, 4), 0);
    assert_int_equal(pthread_create(&f->t, NULL, serve, f), 0);
}

static void fake_stop(struct fake *f)
{
    pthread_join(f->t, NULL);
    close(f->fd);
    unlink(f->path);
}

static void ask(const char *sock, int timeout_ms, dm_answer *a)
{
    dm_options o;
    dm_options_init(&o);
    snprintf(o.socket, sizeof(o.socket), "%s", sock);
    o.timeout_ms = timeout_ms;
    dm_ask(&o, "correct horse", 13, a);
}

static void test_ask_failures(void **state)
{
    (void)state;
    dm_answer a;
    ask("/nonexistent/dir/breachd.sock", 200, &a);
    assert_int_equal(a.kind, DM_ERROR);
    assert_non_null(strstr(a.reason, "breachd is not running"));
    static const struct {
        int mode;
        const char *want;
    } cases[] = {{0, "no answer in time"},
                 {1, "unexpected answer"},
                 {2, "no answer in time"},
                 {3, "breachd"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fake f;
        fake_start(&f, cases[i].mode);
        ask(f.path, 300, &a);
        fake_stop(&f);
        assert_int_equal(a.kind, DM_ERROR);
        assert_non_null(strstr(a.reason, cases[i].want));
        /* printable, and no hash in the reason */
        for (const char *p = a.reason; *p; p++)
            assert_true(*p >= 0x20 && *p < 0x7f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),      cmocka_unit_test(test_good_values),
        cmocka_unit_test(test_bad_values),    cmocka_unit_test(test_words),
        cmocka_unit_test(test_decide),        cmocka_unit_test(test_seen_times),
        cmocka_unit_test(test_ask_failures),  cmocka_unit_test(test_decide_similar),
        cmocka_unit_test(test_decide_banned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
