/* SPDX-License-Identifier: MIT */
/* What every fuzz target shares: define FUZZ_NAME to the target's name (and,
 * optionally, FUZZ_ON_FAILURE() to clean up before an abort), then include
 * this. CHECK aborts on a violated invariant (the fuzzer, or the replay in CI,
 * reports it); hexval decodes one hex digit of either case. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef FUZZ_NAME
#error "define FUZZ_NAME before including fuzz_check.h"
#endif

#ifndef FUZZ_ON_FAILURE
#define FUZZ_ON_FAILURE() ((void)0)
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, FUZZ_NAME ": check failed at line %d: %s\n", __LINE__, #cond);         \
            FUZZ_ON_FAILURE();                                                                     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static inline int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}
