/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test_config*.c programs (tests of daemon/conf.c):
 * load a config text as file NAME and expect success or an exact error, dump
 * a config to a string, and a config that sets every key with its checks. */
#pragma once

#include "conf.h"

#define NAME "t.conf"

/* Load text (as file NAME); fails the test on an error. */
breachd_config *load_ok(const char *text);
/* Loading text (as file NAME) fails with -EINVAL and exactly the message want. */
void expect_error(const char *text, const char *want);
/* breachd_config_dump into a malloc'd string. */
char *dump_to_string(const breachd_config *c);
/* c holds the built-in defaults. */
void check_defaults(const breachd_config *c);

/* A config that sets every key to a value other than its default, and the
 * check that c holds exactly those values. */
extern const char full_config[];
void check_full(const breachd_config *c);
