/* SPDX-License-Identifier: MIT */
/* Internal to url_secret.c, and to its unit test: the two checks of
 * url_secret.h without their fast path (br_url_may_hold_email), always
 * folding. The test holds the fast path to them: where it says "cannot
 * hold", these must say no. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* br_url_holds_email, always folding. */
bool br_url_holds_email_folded(const char *s, size_t n);

/* br_url_is_email, always folding. */
bool br_url_is_email_folded(const char *s, size_t n);
