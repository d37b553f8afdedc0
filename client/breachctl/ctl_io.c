/* SPDX-License-Identifier: MIT */
#include <limits.h>
#include <stdlib.h>
#include <string.h>


#include "ctl_io.h"
#include "core/util.h"

ssize_t ctl_read_line_wiped(FILE *in, char **buf, size_t *cap)
{
    size_t len = 0;
    for (;;) {
        if (*cap - len < 2) {
            size_t ncap = *cap ? *cap * 2 : 256;
            char *nb = malloc(ncap);
            if (!nb)
                return -2;
            if (*buf) {
                memcpy(nb, *buf, len);
                br_wipe(*buf, *cap);
                free(*buf);
            }
            *buf = nb;
            *cap = ncap;
        }
        if (!fgets(*buf + len, (int)BR_MIN(*cap - len, (size_t)INT_MAX), in)) {
            if (len == 0)
                return -1;
            break; /* a last line without LF */
        }
        len += strlen(*buf + len);
        if (len > 0 && (*buf)[len - 1] == '\n')
            break;
    }
    if (len > 0 && (*buf)[len - 1] == '\n')
        len--;
    if (len > 0 && (*buf)[len - 1] == '\r')
        len--;
    (*buf)[len] = '\0';
    return (ssize_t)len;
}

void ctl_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}
