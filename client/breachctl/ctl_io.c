/* SPDX-License-Identifier: MIT */
/* What breachctl's checks and audit share for input and output (ctl_io.h):
 * a line reader that leaves no copy behind, JSON strings, STATS output. */
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

/* The key=value pairs of a STATS answer: one a line, or as one JSON object
 * where a value of decimal digits (no leading zero) is a number, anything
 * else a string. */
void ctl_print_stats(FILE *out, const char *kv, bool json)
{
    if (json)
        fputc('{', out);
    bool firstkv = true;
    for (const char *p = kv; *p;) {
        size_t n = strcspn(p, " ");
        const char *eq = memchr(p, '=', n);
        if (!json) {
            fprintf(out, "%.*s\n", (int)n, p);
        } else if (eq && eq > p) {
            size_t vlen = (size_t)(p + n - eq - 1);
            bool num =
                vlen > 0 && strspn(eq + 1, "0123456789") >= vlen && (vlen == 1 || eq[1] != '0');
            char key[128], val[512];
            snprintf(key, sizeof(key), "%.*s", (int)(eq - p), p);
            snprintf(val, sizeof(val), "%.*s", (int)vlen, eq + 1);
            fputs(firstkv ? "" : ",", out);
            ctl_json_string(out, key);
            fputc(':', out);
            if (num)
                fputs(val, out);
            else
                ctl_json_string(out, val);
            firstkv = false;
        }
        p += n;
        while (*p == ' ')
            p++;
    }
    if (json)
        fputs("}\n", out);
}
