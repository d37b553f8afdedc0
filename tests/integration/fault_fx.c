/* SPDX-License-Identifier: MIT */
/* The fault-server fixture of the resolver tests (see fault_fx.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <event2/event.h>

#include "fault_fx.h"

#ifndef FAULTSERVER
#error "FAULTSERVER must name the fault server executable"
#endif

rt_fault g_fault;
char *g_fault_dir;
static uint32_t g_next_prefix = 0x10000;

void hash_of(uint32_t prefix, const char *suffix, uint8_t out[20])
{
    char hex[41];
    snprintf(hex, sizeof(hex), "%05X%s", prefix, suffix);
    for (int i = 0; i < 20; i++) {
        unsigned b;
        sscanf(hex + 2 * i, "%2x", &b);
        out[i] = (uint8_t)b;
    }
}

uint32_t fresh_prefix(void)
{
    return g_next_prefix++;
}

/* Defaults for these tests: quick retries, no rate limit, a breaker that
 * stays out of the way unless a test wants it; the fault cases shorten the
 * deadline to 700 ms. */
void fx_config(fx *x, const char *mode)
{
    memset(&x->cfg, 0, sizeof(x->cfg));
    snprintf(x->tmpl, sizeof(x->tmpl), "http://127.0.0.1:%d/%s/{prefix}", g_fault.port, mode);
    x->cfg.password_upstream = x->tmpl;
    x->cfg.upstream.timeout_ms = 3000;
    x->cfg.upstream.retry_base_ms = 20;
    x->cfg.upstream.retry_max_ms = 80;
    x->cfg.upstream.breaker_threshold = 1000;
    x->cfg.upstream.rate = -1;
    fx_config_common(x);
}

void fx_open(fx *x)
{
    fx_open_cache(x, "faults", 16 << 20);
}

int fault_group_setup(void **state)
{
    (void)state;
    rt_clean_env();
    g_fault_dir = rt_mkdtemp("faultserver");
    rt_fault_start(&g_fault, FAULTSERVER, g_fault_dir);
    srand((unsigned)time(NULL));
    g_next_prefix = 0x10000 + (uint32_t)(rand() % 0x1000) * 16;
    return 0;
}

int fault_group_teardown(void **state)
{
    (void)state;
    rt_fault_stop(&g_fault);
    rt_rmrf(g_fault_dir);
    free(g_fault_dir);
    return 0;
}
