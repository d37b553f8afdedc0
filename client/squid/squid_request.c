/* SPDX-License-Identifier: MIT */
/* breachd-squid-helper's request lines: see squid_request.h. */
#include <string.h>

#include "squid_request.h"

void squid_request_parse(const char *line, squid_request *out)
{
    out->channel[0] = '\0';
    const char *tok = line, *sp = strchr(line, ' ');
    if (sp && sp > line && strspn(line, "0123456789") == (size_t)(sp - line) &&
        (size_t)(sp - line) < sizeof(out->channel)) {
        memcpy(out->channel, line, (size_t)(sp - line));
        out->channel[sp - line] = '\0';
        tok = sp + 1;
    }
    out->url = tok;
    out->url_len = strcspn(tok, " ");
}

void squid_request_channel(const char *buf, size_t len, char channel[SQUID_CHANNEL_SIZE])
{
    size_t digits = 0; /* buf is not NUL-terminated: count within len */
    while (digits < len && buf[digits] >= '0' && buf[digits] <= '9')
        digits++;
    channel[0] = '\0';
    if (digits > 0 && digits < len && buf[digits] == ' ' && digits < SQUID_CHANNEL_SIZE) {
        memcpy(channel, buf, digits);
        channel[digits] = '\0';
    }
}

void squid_input_took(squid_input *in, size_t n, const squid_input_cb *cb)
{
    in->fill += n;
    size_t start = 0;
    char *lf;
    if (in->discarding) { /* the rest of a line too long to read */
        lf = memchr(in->buf, '\n', in->fill);
        start = lf ? (size_t)(lf - in->buf) + 1 : in->fill;
        in->discarding = !lf;
    }
    while ((lf = memchr(in->buf + start, '\n', in->fill - start))) {
        *lf = '\0';
        if (lf > in->buf + start && lf[-1] == '\r')
            lf[-1] = '\0';
        if (in->buf[start])
            cb->line(cb->ctx, in->buf + start);
        start = (size_t)(lf - in->buf) + 1;
    }
    memmove(in->buf, in->buf + start, in->fill - start);
    in->fill -= start;
    if (in->fill == sizeof(in->buf)) {
        /* Longer than any URL breachd takes: answered at once, on its
         * channel, and the rest of the line skipped. */
        cb->too_long(cb->ctx, in->buf, in->fill);
        in->fill = 0;
        in->discarding = true;
    }
}
