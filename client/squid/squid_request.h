/* SPDX-License-Identifier: MIT */
/* breachd-squid-helper's input: request lines from Squid, "[channel-ID SP]
 * URL [SP extras]" (breachd-squid-helper(8), PROTOCOL), cut from the bytes
 * read on standard input. Pure functions, apart from the helper's I/O, so
 * that they can be tested and fuzzed alone (tests/fuzz/fuzz_squid.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "proto/protocol.h"

/* The read buffer: a line that does not fit (LF included) is too long for
 * any URL breachd takes. */
#define SQUID_INPUT_SIZE (BR_PROTO_MAX_LINE + 64)
#define SQUID_CHANNEL_SIZE 32

typedef struct squid_request {
    char channel[SQUID_CHANNEL_SIZE]; /* "" when the line has none */
    const char *url;                  /* inside the line, not NUL-terminated */
    size_t url_len;                   /* 0: no URL in the line */
} squid_request;

/* One request line (NUL-terminated, without its line end). With
 * concurrency Squid sends a numeric channel first: leading digits (fewer
 * than SQUID_CHANNEL_SIZE) followed by a space are the channel; a URL is
 * never all digits. The URL is the next field, up to a space. */
void squid_request_parse(const char *line, squid_request *out);

/* The channel at the start of a line too long to read (len bytes, not
 * NUL-terminated), so that its answer can carry it: "" when none. */
void squid_request_channel(const char *buf, size_t len, char channel[SQUID_CHANNEL_SIZE]);

typedef struct squid_input {
    char buf[SQUID_INPUT_SIZE];
    size_t fill;     /* bytes in buf: the start of an unfinished line */
    bool discarding; /* the rest of a too long line is being skipped */
} squid_input;

typedef struct squid_input_cb {
    /* A complete line, NUL-terminated, without its LF and one CR before it;
     * never empty (empty lines are skipped). */
    void (*line)(void *ctx, char *line);
    /* A line that filled the buffer: its first bytes (not NUL-terminated);
     * the rest of it, up to its LF, is skipped. */
    void (*too_long)(void *ctx, const char *buf, size_t len);
    void *ctx;
} squid_input_cb;

/* Where the next read goes, and how many bytes fit there (never 0). */
static inline char *squid_input_room(squid_input *in, size_t *room)
{
    *room = sizeof(in->buf) - in->fill;
    return in->buf + in->fill;
}

/* After a read of n bytes into the room: hand over every complete line. */
void squid_input_took(squid_input *in, size_t n, const squid_input_cb *cb);
