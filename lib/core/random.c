/* SPDX-License-Identifier: MIT */
/* The one source of randomness; see random.h. */
#include <errno.h>
#include <sys/random.h>

#include "random.h"

int br_random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

uint32_t br_random_below(uint32_t n)
{
    uint32_t x = 0;
    if (n <= 1 || br_random_bytes(&x, sizeof(x)) < 0)
        return 0;
    /* the bias of x % n is below n / 2^32: nothing here depends on it */
    return x % n;
}
