/* SPDX-License-Identifier: MIT */
/* The table of filter kinds (daemon/kinds.c) against the configuration
 * schema (daemon/conf_schema.c) and the STATS metadata (daemon/stats_meta.c,
 * daemon/stats_figures.c): a row's offsets are the keys of its own section
 * (filter, pubkey, upstream, max_filter_age, min_count_ok), its STATS prefixes are its own, and
 * every key it puts in STATS has Prometheus help; every upstream and
 * resolver figure shown has a key, a help line and no twin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "conf_schema.h"
#include "kinds.h"
#include "stats_figures.h"
#include "stats_meta.h"

/* The schema row whose field is at off, NULL when none. */
static const bd_conf_key *key_at(size_t off)
{
    for (size_t i = 0; i < bd_conf_n_keys; i++)
        if (bd_conf_keys[i].off == off)
            return &bd_conf_keys[i];
    return NULL;
}

static void assert_key(size_t off, const char *section, const char *name)
{
    const bd_conf_key *k = key_at(off);
    if (!k) {
        fail_msg("no key of [%s] at offset %zu", section, off);
        return;
    }
    assert_string_equal(k->section, section);
    if (name)
        assert_string_equal(k->name, name);
}

static void test_rows_name_their_own_keys(void **state)
{
    (void)state;
    for (int i = 0; i < BD_KINDS_; i++) {
        const bd_kind_row *r = &bd_kinds[i];
        assert_non_null(r->name);
        assert_non_null(r->section);
        assert_non_null(r->checks);
        assert_non_null(r->if_empty);
        assert_key(r->filter_off, r->section, r->filter_key); /* filter, or similar_filter */
        assert_key(r->pubkey_off, r->section, "pubkey");
        assert_non_null(r->build_hint);
        assert_non_null(strstr(r->build_hint, r->filter_key));
        if (r->upstream_off)
            assert_key(r->upstream_off, r->section, "upstream");
        if (r->max_age_off)
            assert_key(r->max_age_off, r->section, "max_filter_age");
        if (r->min_count_ok_off)
            assert_key(r->min_count_ok_off, r->section, "min_count_ok");
        if (r->when_stale_off)
            assert_key(r->when_stale_off, r->section, "when_stale");
        assert_int_equal(bd_kind_of_verb(r->verb), i); /* one kind a verb */
        /* the offline warnings (offline.c) read these of a kind with an upstream */
        if (!r->upstream_off)
            assert_false(r->min_count_ok_off || r->range_endpoint || r->upstream_default_none);
        assert_false(r->canary_hex && r->canary_expr); /* one canary at most */
        assert_non_null(r->answers[0].name);           /* every kind answers */
    }
}

static void test_prefixes_are_apart(void **state)
{
    (void)state;
    for (int i = 0; i < BD_KINDS_; i++)
        for (int j = i + 1; j < BD_KINDS_; j++) {
            assert_string_not_equal(bd_kinds[i].counts_prefix, bd_kinds[j].counts_prefix);
            assert_string_not_equal(bd_kinds[i].prefix, bd_kinds[j].prefix);
        }
}

/* The help of key, which must be documented (not the generic fallback). */
static void assert_documented(const char *prefix, const char *name)
{
    char key[96], help[160];
    snprintf(key, sizeof(key), "%s%s", prefix, name);
    (void)bd_stats_meta(key, help, sizeof(help));
    if (strstr(help, "(docs/protocol.md)"))
        fail_msg("STATS key %s has no Prometheus help", key);
}

static void test_kind_figures_have_help(void **state)
{
    (void)state;
    static const char *const filter[] = {"filter_loaded", "filter_generation", "filter_keys",
                                         "filter_age_seconds", "filter_stale"};
    for (int i = 0; i < BD_KINDS_; i++) {
        const bd_kind_row *r = &bd_kinds[i];
        for (size_t f = 0; f < sizeof(filter) / sizeof(filter[0]); f++)
            assert_documented(r->prefix, filter[f]);
        if (r->counts_filter) {
            assert_documented(r->counts_prefix, "filter_no");
            assert_documented(r->counts_prefix, "filter_maybe");
            assert_documented(r->counts_prefix, "filter_bypassed");
        }
        if (r->damage_figure)
            assert_documented(r->prefix, "filter_damaged");
        if (r->canary_hex || r->canary_expr) {
            assert_documented(r->prefix, "canary_ok");
            assert_documented(r->prefix, "canary_last_time");
            assert_documented(r->prefix, "canary_runs");
            assert_documented(r->prefix, "canary_failures");
        }
    }
}

static void check_rows(const bd_figure_meta *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!rows[i].key)
            continue;
        assert_non_null(rows[i].help);
        assert_ptr_equal(bd_figure_meta_find(rows[i].key), &rows[i]); /* no twin before it */
        assert_documented("", rows[i].key);
    }
}

static void test_figure_rows(void **state)
{
    (void)state;
    check_rows(bd_upstream_meta, BD_UPF_COUNT_);
    check_rows(bd_resolver_meta, BD_RSF_COUNT_);
    check_rows(bd_upstream_sum_meta, BD_UPS_COUNT_);
    /* each sum has a figure in it */
    for (int s = 0; s < BD_UPS_COUNT_; s++) {
        bool any = false;
        for (int f = 0; f < BD_UPF_COUNT_; f++)
            any = any || bd_upstream_meta[f].into == 1 + s;
        assert_true(any);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_name_their_own_keys),
        cmocka_unit_test(test_prefixes_are_apart),
        cmocka_unit_test(test_kind_figures_have_help),
        cmocka_unit_test(test_figure_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
