/* SPDX-License-Identifier: MIT */
/* Bench tools' input files (see bench_lines.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "bench_lines.h"

int bench_read_lines(const char *prog, const char *path, char ***out, size_t *n, size_t *longest)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
        return -1;
    }
    char **lines = NULL, *line = NULL;
    size_t cap = 0, alloc = 0, count = 0, max = 0;
    ssize_t len;
    int rc = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0)
            continue;
        if (count == alloc) {
            alloc = alloc ? alloc * 2 : 4096;
            char **l = realloc(lines, alloc * sizeof(*l));
            if (!l) {
                rc = -1;
                break;
            }
            lines = l;
        }
        if (!(lines[count] = strdup(line))) {
            rc = -1;
            break;
        }
        count++;
        if ((size_t)len > max)
            max = (size_t)len;
    }
    free(line);
    fclose(f);
    if (rc < 0)
        fprintf(stderr, "%s: %s: out of memory\n", prog, path);
    else if (count == 0)
        fprintf(stderr, "%s: %s: no line\n", prog, path);
    if (rc < 0 || count == 0) {
        for (size_t i = 0; i < count; i++)
            free(lines[i]);
        free(lines);
        return -1;
    }
    *out = lines;
    *n = count;
    if (longest)
        *longest = max;
    return 0;
}
