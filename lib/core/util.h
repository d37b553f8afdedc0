/* SPDX-License-Identifier: MIT */
/* Small helpers shared by every module: cleanup attributes, branch hints,
 * endian-explicit loads and stores. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"

#define _cleanup_(f) __attribute__((cleanup(f)))
#define BR_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define br_likely(x) __builtin_expect(!!(x), 1)
#define br_unlikely(x) __builtin_expect(!!(x), 0)
#define BR_MIN(a, b) ((a) < (b) ? (a) : (b))
#define BR_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Define foo_freep() for a foo_free() so that `_cleanup_(foo_freep) foo *x` works. */
#define BR_DEFINE_FREEP(type, fn)                                                                  \
    static inline void fn##p(type **p)                                                             \
    {                                                                                              \
        if (*p)                                                                                    \
            fn(*p);                                                                                \
    }

static inline void br_freep(void *p)
{
    free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(br_freep)

static inline void br_closep(int *fd)
{
    if (*fd >= 0)
        close(*fd);
}
#define _cleanup_close_ _cleanup_(br_closep)

/* Take ownership out of a cleanup variable. */
#define BR_TAKE_PTR(p)                                                                             \
    ({                                                                                             \
        __typeof__(p) _tmp = (p);                                                                  \
        (p) = NULL;                                                                                \
        _tmp;                                                                                      \
    })

static inline uint64_t br_load_be64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}

static inline void br_store_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void br_store_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void br_store_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t br_load_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t br_load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t br_load_le64(const uint8_t *p)
{
    return (uint64_t)br_load_le32(p) | ((uint64_t)br_load_le32(p + 4) << 32);
}

/* splitmix64: a fast, well-mixed PRNG step; used for seeds and test data. */
static inline uint64_t br_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Write all of buf or fail with -errno. */
int br_write_all(int fd, const void *buf, size_t len);
/* The whole of a regular file of at most max bytes, malloc'ed with a NUL
 * after its *len bytes; -errno, -EFBIG past max. */
int br_read_whole(const char *path, size_t max, uint8_t **data, size_t *len);
/* path's new content: written to path.tmp (mode 0644), fsynced, renamed
 * over path; -errno. */
int br_write_atomic(const char *path, const void *data, size_t len);
/* Current time, seconds since the epoch, honouring SOURCE_DATE_EPOCH when set
 * so that builds can be reproduced byte for byte. */
int64_t br_build_time_now(void);
/* Wipe n bytes at p (a password, a hash, a URL) so that the compiler cannot
 * drop the stores as dead: the one wipe every file uses (OPENSSL_cleanse
 * underneath). */
void br_wipe(void *p, size_t n);
/* Memory for many secrets at once (a password's variants and their
 * hashes): n zero bytes on pages of their own, left out of core dumps
 * (MADV_DONTDUMP) and, as far as RLIMIT_MEMLOCK allows, out of swap (mlock,
 * best effort). NULL when out of memory (or the pages cannot be kept out
 * of dumps). br_secret_free wipes and unmaps (p NULL: nothing; n as
 * given to br_secret_alloc). */
void *br_secret_alloc(size_t n);
void br_secret_free(void *p, size_t n);
