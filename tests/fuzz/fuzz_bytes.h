/* SPDX-License-Identifier: MIT */
/* Helpers the structured fuzz targets share: a reader that takes the
 * target's parameters from the front of the input (zeros once it runs out,
 * so every input means something), and an in-memory file (memfd) for the
 * loaders that want a path. Include after fuzz_check.h. */
#pragma once

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct fz_bytes {
    const uint8_t *p;
    size_t n;
} fz_bytes;

static inline uint8_t fz_u8(fz_bytes *b)
{
    if (b->n == 0)
        return 0;
    b->n--;
    return *b->p++;
}

static inline uint16_t fz_u16(fz_bytes *b)
{
    uint16_t lo = fz_u8(b);
    return (uint16_t)(lo | (uint16_t)fz_u8(b) << 8);
}

static inline uint32_t fz_u32(fz_bytes *b)
{
    uint32_t lo = fz_u16(b);
    return lo | (uint32_t)fz_u16(b) << 16;
}

static inline uint64_t fz_u64(fz_bytes *b)
{
    uint64_t lo = fz_u32(b);
    return lo | (uint64_t)fz_u32(b) << 32;
}

/* The next len bytes (fewer when the input runs out: *got says how many). */
static inline const uint8_t *fz_take(fz_bytes *b, size_t len, size_t *got)
{
    const uint8_t *p = b->p;
    *got = len < b->n ? len : b->n;
    b->p += *got;
    b->n -= *got;
    return p;
}

/* A memfd holding data, and its path through /proc/self/fd (for loaders
 * that open a path). Returns the descriptor (close it after), or aborts:
 * the fuzzer's machine is at fault, not the input. */
static inline int fz_memfd(const void *data, size_t len, char path[64])
{
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    CHECK(fd >= 0);
    const uint8_t *p = data;
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, p + off, len - off);
        CHECK(w > 0);
        off += (size_t)w;
    }
    snprintf(path, 64, "/proc/self/fd/%d", fd);
    return fd;
}

/* Write data to path (created or truncated, mode 0600); aborts on failure. */
static inline void fz_write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    const uint8_t *p = data;
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, p + off, len - off);
        CHECK(w > 0);
        off += (size_t)w;
    }
    CHECK(close(fd) == 0);
}
