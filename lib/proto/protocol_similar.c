/* SPDX-License-Identifier: MIT */
/* SIMILAR requests parsed and formatted, their answer parsed: see
 * protocol_similar.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "protocol_similar.h"
#include "core/util.h"

static bool fail(br_proto_error *e, const char *text)
{
    e->code = BR_PERR_BAD_REQUEST;
    e->text = text;
    return false;
}

bool br_similar_request_parse(const char *arg, size_t len, br_similar_request *out,
                              br_proto_error *e)
{
    memset(out, 0, sizeof(*out));
    size_t hlen;
    if (len > 5 && memcmp(arg, "sha1 ", 5) == 0) {
        hlen = BR_SHA1_LEN;
        arg += 5, len -= 5;
    } else if (len > 3 && memcmp(arg, "nt ", 3) == 0) {
        out->nt = true;
        hlen = BR_NT_LEN;
        arg += 3, len -= 3;
    } else {
        return fail(e, "SIMILAR takes sha1 or nt, a space and hashes separated by commas");
    }
    /* n hashes of 2 * hlen hex digits and n - 1 commas */
    if ((len + 1) % (2 * hlen + 1) != 0)
        return fail(e, "SIMILAR hashes: 40 (sha1) or 32 (nt) hex digits each, separated by commas");
    size_t n = (len + 1) / (2 * hlen + 1);
    if (n > BR_SIMILAR_PER_REQUEST)
        return fail(e, "SIMILAR takes at most 128 hashes per request");
    for (size_t i = 0; i < n; i++) {
        const char *h = arg + i * (2 * hlen + 1);
        if ((i + 1 < n && h[2 * hlen] != ',') || !br_hex_decode(h, hlen, out->hash[i])) {
            br_wipe(out, sizeof(*out));
            return fail(e, "SIMILAR hashes: 40 (sha1) or 32 (nt) hex digits each, separated by "
                           "commas");
        }
    }
    out->n = n;
    return true;
}

int br_similar_request_format(char *buf, size_t size, uint64_t id, bool nt, const uint8_t *hashes,
                              size_t n, size_t *len)
{
    size_t hlen = nt ? BR_NT_LEN : BR_SHA1_LEN;
    if (n == 0 || n > BR_SIMILAR_PER_REQUEST)
        return -EINVAL;
    int k = snprintf(buf, size, "%" PRIu64 " SIMILAR %s ", id, nt ? "nt" : "sha1");
    if (k < 0 || (size_t)k + n * (2 * hlen + 1) + 1 > size)
        return -EINVAL;
    size_t at = (size_t)k;
    for (size_t i = 0; i < n; i++) {
        br_hex_encode_upper(hashes + i * hlen, hlen, buf + at); /* writes a NUL after */
        at += 2 * hlen;
        buf[at++] = i + 1 < n ? ',' : '\n';
    }
    buf[at] = '\0';
    if (at - 1 > BR_PROTO_MAX_LINE) {
        br_wipe(buf, at);
        return -EINVAL;
    }
    *len = at;
    return 0;
}

bool br_similar_answer_parse(const char *s, uint64_t *count, unsigned *hits)
{
    uint64_t c;
    unsigned h;
    char end;
    if (strncmp(s, "SIMILAR ", 8) != 0 || sscanf(s + 8, "%" SCNu64 " %u%c", &c, &h, &end) != 2 ||
        s[8] < '0' || s[8] > '9')
        return false;
    *count = c;
    *hits = h;
    return true;
}
