/* SPDX-License-Identifier: MIT */
/* Internal to the integration tests' library (rtest.h): what rtest.c and
 * rtest_servers.c share. */
#pragma once

#include <stdio.h>
#include <stdlib.h>

/* A fixture that cannot be set up ends the test program. */
#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, "rtest: " __VA_ARGS__);                                                    \
        fprintf(stderr, "\n");                                                                     \
        abort();                                                                                   \
    } while (0)
