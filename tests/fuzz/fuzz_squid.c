/* SPDX-License-Identifier: MIT */
/* Fuzz target for breachd-squid-helper's request lines
 * (client/squid/squid_request.c): the bytes Squid writes to the helper's
 * standard input, cut into lines by squid_input_took() in reads of sizes
 * drawn from the first two input bytes, and each line parsed by
 * squid_request_parse() into channel and URL.
 *
 * Checked against a model of breachd-squid-helper(8), PROTOCOL, and
 * squid_request.h, written apart from the code: the stream is split at LF;
 * a line of SQUID_INPUT_SIZE bytes or more is reported too long once (with
 * its first SQUID_INPUT_SIZE bytes) and skipped up to its LF; any other
 * complete line loses one CR before its LF, ends at its first NUL, and is
 * handed over unless empty; an unfinished last line is not. The events do
 * not depend on how the reads cut the stream. In a line, leading digits
 * (1..31) and a space are the channel, the URL is the next field up to a
 * space (none: url_len 0); the channel of a too long line is found the same
 * way in its first bytes. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "squid_request.h"
#include "core/util.h"

#define FUZZ_NAME "fuzz_squid"
#include "fuzz_check.h"

#define MAX_EVENTS 4096

typedef struct event {
    bool too_long;
    char *text; /* the line, or the channel of a too long line */
} event;

typedef struct events {
    event v[MAX_EVENTS];
    size_t n;
} events;

static events got, want;

static void add(events *e, bool too_long, const char *s, size_t len)
{
    CHECK(e->n < MAX_EVENTS);
    e->v[e->n].too_long = too_long;
    /* Not strndup: s need not be NUL-terminated (the sanitizers' strict
     * string checks read strndup's argument up to its NUL). */
    char *t = malloc(len + 1);
    CHECK(t);
    memcpy(t, s, len);
    t[len] = '\0';
    e->v[e->n].text = t;
    e->n++;
}

static void clear(events *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i].text);
    e->n = 0;
}

/* ---- the model ---- */

static void model_channel(const char *s, size_t len, char *out)
{
    size_t d = 0;
    while (d < len && s[d] >= '0' && s[d] <= '9')
        d++;
    out[0] = '\0';
    if (d >= 1 && d <= SQUID_CHANNEL_SIZE - 1 && d < len && s[d] == ' ') {
        memcpy(out, s, d);
        out[d] = '\0';
    }
}

static void model_stream(const char *s, size_t len)
{
    size_t pos = 0;
    while (pos < len) {
        const char *lf = memchr(s + pos, '\n', len - pos);
        size_t l = lf ? (size_t)(lf - (s + pos)) : len - pos;
        if (l >= SQUID_INPUT_SIZE) {
            char ch[SQUID_CHANNEL_SIZE];
            model_channel(s + pos, SQUID_INPUT_SIZE, ch);
            add(&want, true, ch, strlen(ch));
        } else if (lf) {
            size_t n = l;
            if (n > 0 && s[pos + n - 1] == '\r')
                n--;
            n = strnlen(s + pos, n);
            if (n > 0)
                add(&want, false, s + pos, n);
        }
        if (!lf)
            break;
        pos += l + 1;
    }
}

static void check_parse(const char *line)
{
    squid_request q;
    squid_request_parse(line, &q);
    char ch[SQUID_CHANNEL_SIZE];
    model_channel(line, strlen(line), ch);
    CHECK(strcmp(q.channel, ch) == 0);
    const char *url = line + (ch[0] ? strlen(ch) + 1 : 0);
    size_t ul = strcspn(url, " ");
    CHECK(q.url == url && q.url_len == ul);
    CHECK(memchr(q.url, '\n', q.url_len) == NULL && memchr(q.url, ' ', q.url_len) == NULL);
}

/* ---- the code ---- */

static void on_line(void *ctx, char *line)
{
    (void)ctx;
    CHECK(line[0] != '\0');
    add(&got, false, line, strlen(line));
    check_parse(line);
}

static void on_too_long(void *ctx, const char *buf, size_t len)
{
    (void)ctx;
    CHECK(len == SQUID_INPUT_SIZE);
    char ch[SQUID_CHANNEL_SIZE], model[SQUID_CHANNEL_SIZE];
    squid_request_channel(buf, len, ch);
    model_channel(buf, len, model);
    CHECK(strcmp(ch, model) == 0);
    add(&got, true, ch, strlen(ch));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint64_t seed = (uint64_t)data[0] << 8 | data[1];
    bool small_reads = data[0] & 1;
    const char *s = (const char *)data + 2;
    size_t len = size - 2;
    static squid_input in;
    memset(&in, 0, sizeof(in));
    const squid_input_cb cb = {on_line, on_too_long, NULL};
    size_t pos = 0;
    while (pos < len) {
        size_t room;
        char *to = squid_input_room(&in, &room);
        CHECK(room > 0 && room <= SQUID_INPUT_SIZE);
        size_t want_n = 1 + br_splitmix64(&seed) % (small_reads ? 64 : 3 * SQUID_INPUT_SIZE);
        size_t n = BR_MIN(BR_MIN(room, want_n), len - pos);
        memcpy(to, s + pos, n);
        squid_input_took(&in, n, &cb);
        pos += n;
    }
    model_stream(s, len);
    CHECK(got.n == want.n);
    for (size_t i = 0; i < got.n; i++) {
        CHECK(got.v[i].too_long == want.v[i].too_long);
        CHECK(strcmp(got.v[i].text, want.v[i].text) == 0);
    }
    clear(&got);
    clear(&want);
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
