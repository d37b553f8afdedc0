/* SPDX-License-Identifier: MIT */
/* breachd.conf parsing (daemon/conf.c), the file's syntax: sections, keys,
 * line structure, NUL and control bytes, line length, comments (whole lines
 * only), CRLF and a UTF-8 BOM; every error with its exact FILE:LINE message. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>

#include <cmocka.h>

#include "conf.h"
#include "config_helpers.h"
#include "testutil.h"

static void test_errors_structure(void **state)
{
    (void)state;
    expect_error("[daemon]\nsocket = /x\n[foo]\n",
                 NAME ":3: unknown section [foo]: expected [daemon], [limits], [passwords], "
                      "[ntlm], [urls], [cache], [upstream] or [http]");
    expect_error("[Daemon]\n", NAME ":1: unknown section [Daemon]: expected [daemon], "
                                    "[limits], [passwords], [ntlm], [urls], [cache], [upstream] "
                                    "or [http]");
    expect_error("[]\n", NAME ":1: unknown section []: expected [daemon], [limits], [passwords], "
                              "[ntlm], [urls], [cache], [upstream] or [http]");
    expect_error("\n\n[daemon\n", NAME ":3: section line without a closing ]");
    expect_error("[daemon] # main\n", NAME ":1: text after the section's ] (a comment must be on "
                                           "a line of its own)");
    expect_error("[daemon]\nsockt = /x\n",
                 NAME ":2: [daemon] sockt: unknown key (did you mean socket?)");
    expect_error("[cache]\nttls = 1d\n", NAME ":2: [cache] ttls: unknown key (did you mean ttl?)");
    expect_error("[daemon]\nfrobnicate = 1\n", NAME ":2: [daemon] frobnicate: unknown key");
    expect_error("[cache]\ntimeout = 5s\n",
                 NAME ":2: [cache] timeout: unknown key (timeout is a key of [upstream])");
    expect_error("[upstream]\nrate = 5\ntimeout = 1s\n\nrate = 6\n",
                 NAME ":5: [upstream] rate: duplicate key (first set on line 2)");
    expect_error("[upstream]\nrate = 5\n[daemon]\n[upstream]\nrate = 5\n",
                 NAME ":5: [upstream] rate: duplicate key (first set on line 2)");
    expect_error("# top\nsocket = /x\n",
                 NAME ":2: socket: key outside a section (put it under its [section])");
    expect_error("[daemon]\nsocket /x\n", NAME ":2: expected \"key = value\", \"[section]\" or a "
                                               "comment line starting with # or ;");
    expect_error("[daemon]\nsocket: /x\n", NAME ":2: expected \"key = value\", \"[section]\" or "
                                                "a comment line starting with # or ;");
    expect_error("[daemon]\n = /x\n", NAME ":2: missing key name before =");
    expect_error("[daemon]\nsock et = /x\n", NAME ":2: bad key name \"sock et\"");
    /* An indented line is not a continuation of the previous value. */
    expect_error("[daemon]\nsocket = /x\n  /y\n", NAME ":3: expected \"key = value\", "
                                                       "\"[section]\" or a comment line starting "
                                                       "with # or ;");
    static const char nul[] = "[daemon]\nsocket = /x\0y\n";
    FILE *f = fmemopen((void *)nul, sizeof(nul) - 1, "r");
    assert_non_null(f);
    breachd_config *c = NULL;
    br_error err;
    assert_int_equal(breachd_config_load_stream(f, NAME, &c, &err), -EINVAL);
    assert_string_equal(err.text, NAME ":2: NUL byte in the line");
    fclose(f);
    expect_error("[daemon]\nsocket = /x\x01y\n",
                 NAME ":2: [daemon] socket: control character in the value");

    /* Line length: 16384 bytes is fine (libinih's own limit is 200), one more is not. */
    char *line = tu_xmalloc(20000);
    int n = snprintf(line, 20000, "[upstream]\nca_file = /");
    size_t head = strlen("ca_file = /");
    memset(line + n, 'a', 16384 - head);
    strcpy(line + n + 16384 - head, "\n");
    char want[512];
    snprintf(want, sizeof(want),
             NAME ":2: [upstream] ca_file: path \"%.80s...\" is too long (at most 4095 bytes)",
             line + n - 1);
    expect_error(line, want);
    strcpy(line + n + 16384 - head, "a\n");
    expect_error(line, NAME ":2: line too long (more than 16384 bytes)");
    free(line);
}

static void test_inline_comments(void **state)
{
    (void)state;
    /* A comment is a whole line: text after a value is part of it. */
    expect_error("[upstream]\ntimeout = 5s # timeout\n",
                 NAME ":2: [upstream] timeout: bad duration \"5s # timeout\": the unit must be "
                      "one of ms, s, m, h, d (e.g. 45d, 5s) (a comment must be on a line of its "
                      "own)");
    /* libinih would strip " ; ..." by itself; it must not. */
    expect_error("[upstream]\nrate = 50 ; per second\n",
                 NAME ":2: [upstream] rate: bad number \"50 ; per second\": expected a whole "
                      "number 1 .. 100000 (a comment must be on a line of its own)");
    expect_error("[passwords]\nupstream = https://x/{prefix} # mirror\n",
                 NAME ":2: [passwords] upstream: URL template \"https://x/{prefix} # mirror\" "
                      "holds a blank or control character (a comment must be on a line of its "
                      "own)");
    /* '#' or ';' inside a value without a blank before them is just text. */
    breachd_config *c = load_ok("[passwords]\nupstream = https://x/r;v=1/{prefix}#frag\n"
                                "filter = /srv/a#b;c\n");
    assert_string_equal(c->passwords.upstream, "https://x/r;v=1/{prefix}#frag");
    assert_string_equal(c->passwords.filter, "/srv/a#b;c");
    breachd_config_free(c);
}

static void test_comments_crlf(void **state)
{
    (void)state;
    breachd_config *c = load_ok("# a comment\n"
                                "; another\n"
                                "   # indented comment\n"
                                "\t; indented, with a tab\n"
                                "\n"
                                "[upstream]\n"
                                "# rate = 1\n"
                                "; rate = 2\n"
                                "rate = 3\n"
                                "   \n");
    assert_int_equal(c->upstream.rate, 3);
    breachd_config_free(c);

    /* CRLF endings, a UTF-8 BOM, no final newline; errors keep their line. */
    c = load_ok("\xEF\xBB\xBF[daemon]\r\nlog_level = debug\r\n# x\r\n[cache]\r\nmax_size = 2G");
    assert_int_equal(c->daemon.log_level, LOG_DEBUG);
    assert_int_equal(c->cache.max_size, (uint64_t)2 << 30);
    breachd_config_free(c);
    expect_error("[daemon]\r\n\r\nlog_level = loud\r\n",
                 NAME ":3: [daemon] log_level: bad log level \"loud\": expected error, warning, "
                      "notice, info or debug");
    expect_error("\xEF\xBB\xBF[nope]\r\n", NAME ":1: unknown section [nope]: expected [daemon], "
                                                "[limits], [passwords], [ntlm], [urls], [cache], "
                                                "[upstream] or [http]");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors_structure),
        cmocka_unit_test(test_inline_comments),
        cmocka_unit_test(test_comments_crlf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
