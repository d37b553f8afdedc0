/* SPDX-License-Identifier: MIT */
/* Shared fixture of the resolver tests against a generated HIBP-style mirror
 * (test_resolver_nginx.c, test_resolver_file.c): the mirror is written to a
 * temp dir of this program by the group setup, served by nginx on 127.0.0.1
 * (mirror_setup_nginx) or only read through file:// (mirror_setup_files),
 * and removed by mirror_teardown. Per test, a resolver with a fresh cache
 * (fx_init, fx_open, fx_close). */
#pragma once

#include <stdint.h>

#include "resolver_fx.h"

#define URLK BR_RANGE_URL_SHA256

/* The mirror: one prefix per body style. */
enum {
    P_CRLF_PADDED,
    P_LOWER_LF,
    P_NO_FINAL,
    P_LOWER_LF_NOFINAL_PADDED,
    P_COALESCE,
    P_STALE,
    N_PREFIX
};
extern const uint32_t prefixes[N_PREFIX];
extern const unsigned styles[N_PREFIX]; /* RT_* body style of each prefix's file */
#define P_MISSING 0x0DEAD               /* no file: 404 */
#define P_500 0xEEEEE                   /* nginx answers 500 */
#define URL_PREFIX 0x3C3C3

extern rt_range ranges[N_PREFIX];
extern rt_range url_range;
extern char *g_dir;      /* this program's temp dir */
extern char *g_www;      /* the document root: the mirror is www/range/XXXXX.txt */
extern rt_nginx g_nginx; /* mirror_setup_nginx only */

/* Config defaults for these tests with the password upstream tmpl. */
void fx_init(fx *x, const char *tmpl);
void fx_open(fx *x); /* fx_open_cache with a 64 MiB cache */
/* Every entry of range i found with its exact count, padding and absent
 * hashes not found; all lookups of a prefix issued together. */
void check_range(fx *x, const rt_range *rg);

/* cmocka group setups (the mirror, with or without nginx) and teardown. */
int mirror_setup_nginx(void **state);
int mirror_setup_files(void **state);
int mirror_teardown(void **state);
