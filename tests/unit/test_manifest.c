/* SPDX-License-Identifier: MIT */
/* The publisher's manifest (lib/filter/manifest.h): format and parse round
 * trip (with and without the publisher's cycle), refusals naming the line (a gap in the chain, a
 * bad name, an unknown keyword, a generation that is not the newest file's), the signature (another
 * key, a changed byte, not a signature), and what a follower fetches (the missing deltas, the base
 * on another base, a replay refused by generation or by publication time). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "filter/filter_file.h"
#include "filter/manifest.h"

static void file(br_manifest_file *f, const char *name, uint64_t gen, uint8_t fill)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->name, sizeof(f->name), "%s", name);
    f->generation = gen;
    memset(f->sha256, fill, 32);
    f->bytes = 4096 + gen;
}

/* base 10, deltas 11 and 12, two feeds (one held). */
static void sample(br_manifest *m, br_manifest_file *d, br_manifest_feed *fd)
{
    memset(m, 0, sizeof(*m));
    m->kind = BR_KIND_URL_SHA256;
    m->generation = 12;
    m->published = 1000;
    file(&m->base, "base-10.bfuse", 10, 0xAA);
    file(&d[0], "delta-11.bfuse", 11, 0x11);
    file(&d[1], "delta-12.bfuse", 12, 0x12);
    m->deltas = d;
    m->n_deltas = 2;
    memset(fd, 0, 2 * sizeof(*fd));
    snprintf(fd[0].name, sizeof(fd[0].name), "urlhaus");
    fd[0].last_success = 990;
    fd[0].entries = 5;
    snprintf(fd[1].name, sizeof(fd[1].name), "phish");
    fd[1].last_success = -1;
    fd[1].held = true;
    snprintf(fd[1].reason, sizeof(fd[1].reason), "fetch failed: HTTP 503");
    m->feeds = fd;
    m->n_feeds = 2;
}

static void test_round_trip(void **state)
{
    (void)state;
    br_manifest m, back;
    br_manifest_file d[2];
    br_manifest_feed fd[2];
    sample(&m, d, fd);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(br_manifest_format(&m, &text, &len), 0);
    br_error err = {{0}};
    assert_int_equal(br_manifest_parse(text, len, &back, &err), 0);
    assert_int_equal(back.generation, 12);
    assert_int_equal(back.published, 1000);
    assert_string_equal(back.base.name, "base-10.bfuse");
    assert_int_equal(back.n_deltas, 2);
    assert_memory_equal(back.deltas[1].sha256, d[1].sha256, 32);
    assert_int_equal(back.n_feeds, 2);
    assert_true(back.feeds[1].held);
    assert_string_equal(back.feeds[1].reason, "fetch failed: HTTP 503");
    assert_int_equal(back.feeds[1].last_success, -1);
    assert_int_equal(back.cycle_s, 0); /* none announced: no line */
    assert_null(strstr(text, "cycle"));
    br_manifest_fini(&back);
    free(text);
    m.cycle_s = 30; /* a publisher's period: announced, read back */
    assert_int_equal(br_manifest_format(&m, &text, &len), 0);
    assert_int_equal(br_manifest_parse(text, len, &back, &err), 0);
    assert_int_equal(back.cycle_s, 30);
    br_manifest_fini(&back);
    free(text);
}

static void refused(const char *text, const char *want)
{
    br_manifest m;
    br_error err = {{0}};
    assert_int_equal(br_manifest_parse(text, strlen(text), &m, &err), -EINVAL);
    if (!strstr(err.text, want))
        fail_msg("'%s': expected '%s'", err.text, want);
}

#define HEAD "breachd-manifest 1\nkind url-sha256\ngeneration 12\npublished 5\n"
#define SHA "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

static void test_refusals(void **state)
{
    (void)state;
    refused(HEAD "base b.bfuse 10 " SHA " 9\ndelta d.bfuse 12 " SHA " 9\n",
            "manifest:6: delta generation 12, expected 11 (a chain with a gap");
    refused(HEAD "base b.bfuse 10 " SHA " 9\ndelta d.bfuse 11 " SHA " 9\n",
            "generation 12, but its newest file is 11");
    refused(HEAD "base ../b 12 " SHA " 9\n", "manifest:5: file name");
    refused(HEAD "base b 12 " SHA " 9\nfeed Bad 1 2 ok\n", "manifest:6: feed name");
    refused(HEAD "base b 12 " SHA " 9\nfrobnicate 1\n", "manifest:6: unknown keyword");
    refused("breachd-manifest 2\n", "manifest:1: not a breachd manifest");
    refused(HEAD, "no base line");
    refused("breachd-manifest 1\nkind password-md5\n", "kind: expected url-sha256");
    refused(HEAD "base b 12 " SHA " 9", "ending in a newline");
}

static void test_signature(void **state)
{
    (void)state;
    br_sign_key *key = NULL, *other = NULL;
    br_error err = {{0}};
    assert_int_equal(br_sign_key_generate(&key, &err), 0);
    assert_int_equal(br_sign_key_generate(&other, &err), 0);
    char text[] = HEAD "base b 12 " SHA " 9\n";
    uint8_t sig[BR_MANIFEST_SIG_SIZE];
    assert_int_equal(br_manifest_sign(key, text, strlen(text), sig, &err), 0);
    assert_int_equal(br_manifest_verify(key, text, strlen(text), sig, sizeof(sig), &err), 0);
    assert_int_equal(br_manifest_verify(other, text, strlen(text), sig, sizeof(sig), &err),
                     -EKEYREJECTED);
    assert_non_null(strstr(err.text, "signed by another key"));
    text[strlen(text) - 2] ^= 1; /* one byte changed */
    assert_int_equal(br_manifest_verify(key, text, strlen(text), sig, sizeof(sig), &err),
                     -EKEYREJECTED);
    assert_non_null(strstr(err.text, "does not verify"));
    assert_int_equal(br_manifest_verify(key, text, strlen(text), sig, 10, &err), -EINVAL);
    br_sign_key_free(key);
    br_sign_key_free(other);
}

static void test_plan(void **state)
{
    (void)state;
    br_manifest m;
    br_manifest_file d[2];
    br_manifest_feed fd[2];
    sample(&m, d, fd);
    br_manifest_plan p;
    br_error err = {{0}};
    uint8_t base[32], other[32];
    memset(base, 0xAA, 32);
    memset(other, 0xBB, 32);
    assert_int_equal(br_manifest_plan_for(&m, false, NULL, 0, -1, &p, &err), 0); /* a new host */
    assert_true(p.take_base);
    assert_int_equal(br_manifest_plan_for(&m, true, base, 11, 900, &p, &err), 0);
    assert_false(p.take_base);
    assert_int_equal(p.first_delta, 1); /* delta 12 only */
    assert_int_equal(br_manifest_plan_for(&m, true, base, 12, 1000, &p, &err), 0);
    assert_int_equal(p.first_delta, 2); /* nothing new */
    assert_int_equal(br_manifest_plan_for(&m, true, other, 9, 900, &p, &err), 0);
    assert_true(p.take_base); /* another base: away past a compaction */
    assert_int_equal(br_manifest_plan_for(&m, true, base, 13, 900, &p, &err), -ESTALE);
    assert_non_null(strstr(err.text, "replayed"));
    assert_int_equal(br_manifest_plan_for(&m, true, base, 12, 1001, &p, &err), -ESTALE);
    assert_non_null(strstr(err.text, "published at 1000, before"));
}

/* A follower's schedule: one interval without a period; with one, just
 * after each cycle start, once a cycle. */
static void test_next_poll(void **state)
{
    (void)state;
    br_manifest_when w = {.last_poll_ms = 1000000, .interval_ms = 30000, .published = -1};
    assert_int_equal(br_manifest_next_poll_ms(&w), 1030000);
    w.cycle_s = 30;
    w.published = 900; /* starts at 900 + 30k s; lag 5 s (draw 0) .. 15 s */
    assert_int_equal(br_manifest_next_poll_ms(&w), 1025000);
    w.lag_draw = 65535;
    assert_int_equal(br_manifest_next_poll_ms(&w), 1035000);
    w.last_poll_ms = 1035020; /* polled at 1035 s (late by 20 ms): the next cycle */
    assert_int_equal(br_manifest_next_poll_ms(&w), 1065000);
    w.interval_ms = 60000; /* every other cycle */
    assert_int_equal(br_manifest_next_poll_ms(&w), 1095000);
    w.interval_ms = 5000; /* shorter than the cycle: once a cycle */
    assert_int_equal(br_manifest_next_poll_ms(&w), 1065000);
    w.interval_ms = 30000;
    w.published = 1200; /* a publisher clock ahead: still within the cycle */
    assert_int_equal(br_manifest_next_poll_ms(&w), 1065000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_signature),  cmocka_unit_test(test_plan),
        cmocka_unit_test(test_next_poll),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
