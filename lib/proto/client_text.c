/* SPDX-License-Identifier: MIT */
/* Text of an exchange with breachd, safe to show; see client_text.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "client_text.h"
#include "core/hash.h"
#include "core/util.h"

void br_client_safe_text(const char *in, char *out, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; in[i] && o + 1 < size;) {
        size_t run = 0;
        while (br_hexval((unsigned char)in[i + run]) >= 0)
            run++;
        if (run >= 16) {
            int w = snprintf(out + o, size - o, "[hex]");
            o = w < 0 || (size_t)w >= size - o ? size - 1 : o + (size_t)w;
            i += run;
            continue;
        }
        for (size_t k = 0; k < (run ? run : 1) && o + 1 < size; k++, i++) {
            unsigned char c = (unsigned char)in[i];
            out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
        }
    }
    out[o] = '\0';
}

void br_client_first_word(const char *detail, char *out, size_t size)
{
    char tmp[48];
    size_t n = strcspn(detail, " ");
    snprintf(tmp, sizeof(tmp), "%.*s", (int)BR_MIN(n, sizeof(tmp) - 1), detail);
    br_client_safe_text(tmp[0] ? tmp : "no reason given", out, size);
}

const char *br_client_failure_reason(int r)
{
    switch (r) {
    case -ENOENT:
    case -ECONNREFUSED:
        return "breachd is not running";
    case -EACCES:
    case -EPERM:
        return "no permission to use breachd's socket";
    case -ETIMEDOUT:
        return "no answer in time";
    case -ESRCH:
        return "breachd's socket is served by another user";
    default:
        return "cannot talk to breachd";
    }
}
