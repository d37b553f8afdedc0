/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

char *tu_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char *p = tu_path("%s/breachd-test.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(p))
        abort();
    return p;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void tu_rmrf(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int tu_write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    const char *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            int r = -errno;
            close(fd);
            return r;
        }
        p += n;
        len -= (size_t)n;
    }
    return close(fd) < 0 ? -errno : 0;
}

uint8_t *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct stat st;
    if (fstat(fileno(f), &st) < 0) {
        fclose(f);
        return NULL;
    }
    uint8_t *buf = malloc((size_t)st.st_size + 1);
    if (buf && fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[st.st_size] = '\0'; /* so that text files can be searched as strings */
        *len = (size_t)st.st_size;
    }
    return buf;
}

void *tu_xmalloc(size_t len)
{
    void *p = malloc(len ? len : 1);
    if (!p)
        abort();
    return p;
}

char *tu_path(const char *fmt, ...)
{
    va_list ap;
    char *p;
    va_start(ap, fmt);
    int r = vasprintf(&p, fmt, ap);
    va_end(ap);
    if (r < 0)
        abort();
    return p;
}

void tu_rewrite_in_place(const char *path, long offset, int byte)
{
    struct stat st0, st1;
    FILE *w = fopen(path, "r+b");
    if (!w || stat(path, &st0) < 0)
        abort();
    do {
        if (fseek(w, offset, SEEK_SET) != 0 || fputc(byte, w) != byte || fflush(w) != 0 ||
            stat(path, &st1) < 0)
            abort();
    } while (st1.st_mtim.tv_sec == st0.st_mtim.tv_sec &&
             st1.st_mtim.tv_nsec == st0.st_mtim.tv_nsec);
    fclose(w);
}
