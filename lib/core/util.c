/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <sys/mman.h>
#include <stdio.h>
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
    return (int64_t)time(NULL);
}

uint64_t br_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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
