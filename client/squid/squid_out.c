/* SPDX-License-Identifier: MIT */
/* breachd-squid-helper's answers to Squid: see squid_out.h. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "squid_out.h"
#include "core/br_assert.h"

/* Answers to Squid, written together before the helper waits again
 * (out_flush): one write for a batch of answers, not one each. */
static struct {
    char buf[1 << 16];
    size_t len;
} sq_out;

/* Write every buffered answer; stdout may be non-blocking (Squid may hand
 * one socket as stdin and stdout), so a full pipe is waited for. */
void out_flush(void)
{
    size_t off = 0;
    while (off < sq_out.len) {
        ssize_t w = write(STDOUT_FILENO, sq_out.buf + off, sq_out.len - off);
        if (w > 0) {
            off += (size_t)w;
        } else if (w < 0 && errno == EAGAIN) {
            struct pollfd p = {.fd = STDOUT_FILENO, .events = POLLOUT};
            poll(&p, 1, 1000);
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else {
            break; /* Squid is gone: stdin's EOF ends the helper */
        }
    }
    sq_out.len = 0;
}

void out_answer(const char *channel, size_t cl, const char *text, size_t tl)
{
    size_t n = cl + (cl > 0) + tl + 1;
    if (br_fails_assert(n <= sizeof(sq_out.buf)))
        return;
    if (n > sizeof(sq_out.buf) - sq_out.len)
        out_flush();
    char *o = sq_out.buf + sq_out.len;
    if (cl) {
        memcpy(o, channel, cl);
        o[cl] = ' ';
        o += cl + 1;
    }
    memcpy(o, text, tl);
    o[tl] = '\n';
    sq_out.len += n;
}
