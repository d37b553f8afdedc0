/* SPDX-License-Identifier: MIT */
/* Fuzz target for the blocklist feed reader (lib/url/url_feed*.c,
 * br_feedset_read) in every format: auto and each of BR_FEED_FORMAT_LIST
 * (url_feed.h: urls, hosts, domains, adblock, dnsmasq, unbound, rpz,
 * urlhaus, phishtank (CSV and JSON), csv, wildcard). The
 * feed goes to a file in a private directory under $TMPDIR.
 *
 * Input: byte 0 the format (0 auto, then the br_feed_format values),
 * byte 1 the options (bit 0 skip_bad; bits 1-2 the csv column: "1", "2",
 * "url" or "URL"), then the feed.
 *
 * Checked (url_feed.h): no crash, leak or sanitizer report; a refusal is
 * -EINVAL or -EPERM (secret-class) with a message naming the file; no
 * message (the error, a bad line, a cut entry) holds an e-mail address
 * (docs/privacy.md: an expression holding one is never logged), and a cut
 * entry is reported as "FILE:LINE: " BR_FEED_CUT_TEXT only; the counts add
 * up (entries = distinct + duplicates; bad lines only with skip_bad); a
 * forced format is the one reported; the format auto-detection found reads
 * the same when forced (the urls rule for a feed reported as domains);
 * without skip_bad an accepted feed reads the same with it and no bad line,
 * a refused one (-EINVAL) is accepted with it and a bad line or refused for
 * the same reason; CRLF line ends read as LF ones do. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "url/url_feed.h"
#include "url/url_secret.h"

#define FUZZ_NAME "fuzz_feed"
#include "fuzz_check.h"
#include "fuzz_bytes.h"

static char dir[256], feed_path[300];

static void cleanup(void)
{
    unlink(feed_path);
    rmdir(dir);
}

static void setup(void)
{
    if (dir[0])
        return;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/fuzz-feed-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir));
    snprintf(feed_path, sizeof(feed_path), "%s/feed.txt", dir);
    atexit(cleanup);
}

typedef struct result {
    int rc;
    br_error err;
    br_feed_stats st;
    br_feedset_stats fst;
    br_feedset *fs;
    uint64_t bad_msgs, cut_msgs;
} result;

static void check_message(const char *msg)
{
    CHECK(strncmp(msg, feed_path, strlen(feed_path)) == 0);
    CHECK(!br_url_holds_email(msg, strlen(msg)));
}

static void on_bad(void *ctx, const char *msg)
{
    result *r = ctx;
    r->bad_msgs++;
    check_message(msg);
}

static void on_cut(void *ctx, const char *msg)
{
    result *r = ctx;
    r->cut_msgs++;
    check_message(msg);
    const char *p = msg + strlen(feed_path);
    CHECK(*p++ == ':');
    CHECK(*p >= '1' && *p <= '9');
    while (*p >= '0' && *p <= '9')
        p++;
    CHECK(strcmp(p, ": " BR_FEED_CUT_TEXT) == 0);
}

static void read_feed(result *r, br_feed_format f, const char *column, bool skip_bad)
{
    memset(r, 0, sizeof(*r));
    CHECK(br_feedset_new(&r->fs) == 0);
    br_feed_opts o = {.format = f,
                      .column = column,
                      .skip_bad = skip_bad,
                      .on_bad = on_bad,
                      .on_cut = on_cut,
                      .ctx = r};
    FILE *in = fopen(feed_path, "re");
    CHECK(in != NULL);
    r->rc = br_feedset_read(r->fs, in, feed_path, "phishing", &o, &r->st, &r->err);
    fclose(in);
    br_feedset_finish(r->fs, &r->fst);
    CHECK(r->rc == 0 || r->rc == -EINVAL || r->rc == -EPERM || r->rc == -ENOMEM);
    if (r->rc < 0)
        check_message(r->err.text);
    if (r->rc == -EPERM)
        CHECK(strstr(r->err.text, BR_FEED_SECRET_TEXT));
    CHECK(r->bad_msgs == r->st.bad && r->cut_msgs == r->st.cut);
    CHECK(skip_bad || r->st.bad == 0);
    if (f != BR_FEED_AUTO)
        CHECK(r->st.format == f);
    CHECK(r->st.format != BR_FEED_AUTO && r->st.format <= BR_FEED_FORMAT_LAST);
    if (r->rc == 0) {
        CHECK(r->fst.distinct + r->fst.duplicates + r->fst.conflicts == r->st.entries);
        CHECK(r->fst.conflicts == 0); /* one category */
        CHECK(br_feedset_count(r->fs) == r->fst.distinct);
        const br_feed_entry *e = br_feedset_entries(r->fs);
        for (size_t i = 1; i < r->fst.distinct; i++)
            CHECK(memcmp(e[i - 1].hash, e[i].hash, BR_SHA256_LEN) < 0);
        CHECK(r->st.cut <= r->st.entries);
    }
}

static void same_set(const result *a, const result *b)
{
    CHECK(a->rc == b->rc);
    if (a->rc != 0)
        return;
    size_t n = br_feedset_count(a->fs);
    CHECK(n == br_feedset_count(b->fs));
    const br_feed_entry *x = br_feedset_entries(a->fs), *y = br_feedset_entries(b->fs);
    for (size_t i = 0; i < n; i++)
        CHECK(memcmp(x[i].hash, y[i].hash, BR_SHA256_LEN) == 0);
    CHECK(a->st.entries == b->st.entries && a->st.cut == b->st.cut);
}

static void done(result *r)
{
    br_feedset_free(r->fs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    fz_bytes in = {data, size};
    br_feed_format f = (br_feed_format)(fz_u8(&in) % (BR_FEED_FORMAT_LAST + 1));
    uint8_t flags = fz_u8(&in);
    bool skip_bad = flags & 1;
    static const char *const columns[] = {"1", "2", "url", "URL"};
    const char *column = f == BR_FEED_CSV ? columns[flags >> 1 & 3] : NULL;
    fz_write_file(feed_path, in.p, in.n);

    result a;
    read_feed(&a, f, column, skip_bad);

    if (f == BR_FEED_AUTO && a.rc == 0) {
        /* What detection found, forced, reads the same. */
        br_feed_format found = a.st.format == BR_FEED_DOMAINS ? BR_FEED_URLS : a.st.format;
        result b;
        read_feed(&b, found, NULL, skip_bad);
        same_set(&a, &b);
        done(&b);
    }
    if (!skip_bad) {
        result b;
        read_feed(&b, f, column, true);
        if (a.rc == 0) {
            same_set(&a, &b);
            CHECK(b.st.bad == 0);
        } else if (a.rc == -EINVAL) {
            CHECK((b.rc == 0 && b.st.bad > 0) || b.rc == -EINVAL || b.rc == -EPERM);
        } else if (a.rc == -EPERM) {
            CHECK(b.rc == -EPERM);
        }
        done(&b);
    }

    /* The same feed with CRLF line ends. */
    size_t lf = 0;
    for (size_t i = 0; i < in.n; i++)
        lf += in.p[i] == '\n' && (i == 0 || in.p[i - 1] != '\r');
    if (lf > 0) {
        char *crlf = malloc(in.n + lf);
        CHECK(crlf);
        size_t o = 0;
        for (size_t i = 0; i < in.n; i++) {
            if (in.p[i] == '\n' && (i == 0 || in.p[i - 1] != '\r'))
                crlf[o++] = '\r';
            crlf[o++] = (char)in.p[i];
        }
        fz_write_file(feed_path, crlf, o);
        free(crlf);
        result b;
        read_feed(&b, f, column, skip_bad);
        same_set(&a, &b);
        done(&b);
    }
    done(&a);
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
