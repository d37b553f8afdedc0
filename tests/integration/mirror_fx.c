/* SPDX-License-Identifier: MIT */
/* The generated-mirror fixture of the resolver tests (see mirror_fx.h). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>
#include <event2/event.h>

#include "mirror_fx.h"

const uint32_t prefixes[N_PREFIX] = {0x00000, 0xABCDE, 0x5BAA6, 0xFFFFF, 0x12345, 0x77777};
const unsigned styles[N_PREFIX] = {
    RT_PADDED,      RT_LOWER | RT_LF,
    RT_NO_FINAL_NL, RT_LOWER | RT_LF | RT_NO_FINAL_NL | RT_PADDED,
    RT_PADDED,      RT_LF,
};

rt_range ranges[N_PREFIX];
rt_range url_range;
char *g_dir;
char *g_www;
rt_nginx g_nginx;

void fx_init(fx *x, const char *tmpl)
{
    memset(x, 0, sizeof(*x));
    snprintf(x->tmpl, sizeof(x->tmpl), "%s", tmpl);
    x->cfg.password_upstream = x->tmpl;
    x->cfg.upstream.timeout_ms = 2000 * (uint32_t)rt_slow(); /* TLS handshakes under valgrind */
    x->cfg.upstream.retry_base_ms = 20;
    x->cfg.upstream.retry_max_ms = 100;
    x->cfg.upstream.max_attempts = 3;
    x->cfg.upstream.rate = -1;
    x->cfg.ttl_s = 60;
    fx_config_common(x);
}

void fx_open(fx *x)
{
    fx_open_cache(x, "nginx-cache", 64 << 20);
}

/* Every entry of range i found with its exact count, padding and absent
 * hashes not found; all lookups of a prefix issued together. */
void check_range(fx *x, const rt_range *rg)
{
    size_t hl = br_range_hash_len(rg->kind);
    size_t n = rg->n + rg->npad + 3;
    rt_ans *a = calloc(n, sizeof(*a));
    uint8_t(*hashes)[32] = calloc(n, sizeof(*hashes));
    for (size_t i = 0; i < n; i++) {
        if (i < rg->n)
            memcpy(hashes[i], rg->e[i].hash, hl);
        else if (i < rg->n + rg->npad)
            memcpy(hashes[i], rg->pad[i - rg->n].hash, hl);
        else
            rt_absent_hash(rg, i, hashes[i]);
        assert_true(rt_resolve(x->r, rg->kind, hashes[i], &a[i]) >= 0);
    }
    assert_true(rt_wait(x->base, a, n, 10000));
    for (size_t i = 0; i < n; i++) {
        if (!a[i].sync)
            assert_int_equal(a[i].calls, 1);
        if (i < rg->n) {
            if (a[i].res.status != BR_RESOLVE_FOUND)
                fail_msg("prefix %05X entry %zu: status %d reason %s", rg->prefix, i,
                         a[i].res.status, a[i].res.reason ? a[i].res.reason : "-");
            if (rg->kind == PW) {
                assert_int_equal(a[i].res.count, rg->e[i].count);
            } else {
                char want[16];
                snprintf(want, sizeof(want), "cat%u", rg->e[i].count % 7);
                assert_string_equal(a[i].res.category, want);
            }
        } else {
            if (a[i].res.status != BR_RESOLVE_NOT_FOUND)
                fail_msg("prefix %05X probe %zu: status %d, want NOT_FOUND", rg->prefix, i,
                         a[i].res.status);
        }
    }
    free(a);
    free(hashes);
}

/* The mirror in g_www/range (nginx's document root when it serves it). */
static int mirror_setup(bool nginx)
{
    rt_clean_env();
    g_dir = rt_mkdtemp(nginx ? "nginx" : "mirror");
    if (nginx) {
        rt_nginx_start(&g_nginx, g_dir, false);
        g_www = strdup(g_nginx.www);
    } else {
        g_www = rt_fmt("%s/www", g_dir);
        char *range = rt_fmt("%s/range", g_www);
        int rc = mkdir(g_www, 0755) < 0 || mkdir(range, 0755) < 0 ? -1 : 0;
        if (rc < 0)
            fprintf(stderr, "mkdir %s: %s\n", range, strerror(errno));
        free(range);
        if (rc < 0)
            return -1;
    }
    for (int i = 0; i < N_PREFIX; i++) {
        rt_range_gen(&ranges[i], PW, prefixes[i], 200 + 37 * (size_t)i, 100, (uint64_t)i + 1);
        char *path = rt_fmt("%s/range/%05X.txt", g_www, prefixes[i]);
        rt_range_write(&ranges[i], styles[i], path);
        free(path);
    }
    rt_range_gen(&url_range, URLK, URL_PREFIX, 50, 0, 77);
    char *path = rt_fmt("%s/range/%05X.txt", g_www, URL_PREFIX);
    rt_range_write(&url_range, RT_LOWER | RT_LF, path);
    free(path);
    /* a file for the 500 location that must never be served */
    path = rt_fmt("%s/range/EEEEE.txt", g_www);
    rt_range_write(&ranges[0], 0, path);
    free(path);
    return 0;
}

int mirror_setup_nginx(void **state)
{
    (void)state;
    return mirror_setup(true);
}

int mirror_setup_files(void **state)
{
    (void)state;
    return mirror_setup(false);
}

int mirror_teardown(void **state)
{
    (void)state;
    if (g_nginx.pid > 0)
        rt_nginx_stop(&g_nginx);
    for (int i = 0; i < N_PREFIX; i++)
        rt_range_free(&ranges[i]);
    rt_range_free(&url_range);
    if (!getenv("RTEST_KEEP"))
        rt_rmrf(g_dir);
    free(g_dir);
    free(g_www);
    return 0;
}
