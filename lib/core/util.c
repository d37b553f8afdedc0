/* SPDX-License-Identifier: MIT */
/* The shared helpers of util.h: whole writes, the build time, errors
 * (br_error) and the one wipe. */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include <openssl/crypto.h>

#include "error.h"
#include "util.h"

int br_write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int br_read_whole(const char *path, size_t max, uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return -errno;
    int r = fstat(fd, &st) < 0           ? -errno
            : !S_ISREG(st.st_mode)       ? -EINVAL
            : (uint64_t)st.st_size > max ? -EFBIG
                                         : 0;
    if (r == 0 && !(*data = malloc((size_t)st.st_size + 1)))
        r = -ENOMEM;
    size_t got = 0;
    while (r == 0 && got < (size_t)st.st_size) {
        ssize_t n = read(fd, *data + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            r = n < 0 ? -errno : -EIO;
        got += n > 0 ? (size_t)n : 0;
    }
    close(fd);
    if (r < 0) {
        free(*data);
        *data = NULL;
        return r;
    }
    (*data)[got] = '\0';
    *len = got;
    return 0;
}

int br_write_atomic(const char *path, const void *data, size_t len)
{
    char *tmp = NULL;
    if (asprintf(&tmp, "%s.tmp", path) < 0)
        return -ENOMEM;
    int r = 0, fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        r = -errno;
    if (r == 0 && (r = br_write_all(fd, data, len)) == 0 && fsync(fd) < 0)
        r = -errno;
    if (fd >= 0)
        close(fd);
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0)
        unlink(tmp);
    free(tmp);
    return r;
}

int64_t br_build_time_now(void)
{
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    if (sde && *sde) {
        char *end;
        errno = 0;
        long long v = strtoll(sde, &end, 10);
        if (errno == 0 && *end == '\0' && v >= 0)
            return v;
    }
    return br_clock_now_real();
}

int br_error_set(br_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof(err->text), fmt, ap);
        va_end(ap);
    }
    return code;
}

int br_error_prefix(br_error *err, int code, const char *fmt, ...)
{
    if (err) {
        char prefix[256], old[sizeof(err->text)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        memcpy(old, err->text, sizeof(old));
        /* Truncation is fine: the message is for humans. */
        int n = snprintf(err->text, sizeof(err->text), "%s: ", prefix);
        if (n > 0 && (size_t)n < sizeof(err->text))
            memcpy(err->text + n, old, BR_MIN(strlen(old) + 1, sizeof(err->text) - (size_t)n - 1));
        err->text[sizeof(err->text) - 1] = '\0';
    }
    return code;
}

void br_wipe(void *p, size_t n)
{
    OPENSSL_cleanse(p, n);
}

void *br_secret_alloc(size_t n)
{
    if (n == 0)
        n = 1;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (madvise(p, n, MADV_DONTDUMP) < 0) {
        munmap(p, n);
        return NULL;
    }
    (void)mlock(p, n); /* best effort: RLIMIT_MEMLOCK may be small */
    return p;
}

void br_secret_free(void *p, size_t n)
{
    if (!p)
        return;
    if (n == 0)
        n = 1;
    br_wipe(p, n);
    munlock(p, n);
    munmap(p, n);
}
