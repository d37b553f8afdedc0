/* SPDX-License-Identifier: MIT */
/* A terms file (docs/banned.md, "The terms file"): one term a line, UTF-8,
 * '#' comments; each bad line reported as FILE:LINE and skipped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "banned_int.h"
#include "core/util.h"

static void trim(const char **s, size_t *len)
{
    while (*len && ((*s)[0] == ' ' || (*s)[0] == '\t')) {
        (*s)++;
        (*len)--;
    }
    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t' || (*s)[*len - 1] == '\r'))
        (*len)--;
}

/* One line: 1 when a term was added, 0 when it is a comment or a
 * duplicate, -1 when bad (reported), -ENOMEM. */
static int one_line(br_banned *b, br_banned_kind kind, const char *path, unsigned no, const char *s,
                    size_t len, br_banned_bad_fn bad, void *ctx)
{
    br_error e = {{0}};
    char msg[sizeof(e.text) + 256];
    trim(&s, &len);
    if (len && s[0] == '#')
        return 0;
    int r = len ? br_banned_add(b, kind, s, len, &e)
                : br_error_set(&e, -EINVAL, "empty line (a comment starts with #)");
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        snprintf(msg, sizeof(msg), "%s:%u: %s", path, no, e.text);
        if (bad)
            bad(ctx, msg);
        return -1;
    }
    return r == 0;
}

int br_banned_load(br_banned *b, br_banned_kind kind, const char *path, br_banned_bad_fn bad,
                   void *ctx, br_error *err)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return br_error_set(err, -errno, "%s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    unsigned no = 0;
    int added = 0, r = 0;
    while ((got = getline(&line, &cap, f)) >= 0) {
        size_t len = (size_t)got;
        if (len && line[len - 1] == '\n')
            len--;
        int k = one_line(b, kind, path, ++no, line, len, bad, ctx);
        if (k == -ENOMEM) {
            r = br_error_set(err, k, "%s:%u: out of memory", path, no);
            break;
        }
        added += k > 0;
    }
    if (r == 0 && ferror(f))
        r = br_error_set(err, -EIO, "%s: read error after line %u", path, no);
    free(line);
    fclose(f);
    return r < 0 ? r : added;
}
