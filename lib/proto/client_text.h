/* SPDX-License-Identifier: MIT */
/* What a client that stands in front of a user or a server's log (the PAM
 * module, the directory modules) may say of an exchange with breachd: text
 * from the daemon or the client library made safe to show, and a short
 * reason for a failure of the client library. Never a password or a hash:
 * a run of 16 or more hex digits (a hash or part of one, should a peer ever
 * echo it) is replaced by "[hex]". */
#pragma once

#include <stddef.h>

/* in into out (size bytes, NUL-terminated): printable ASCII only, other
 * bytes as '?', hex runs of 16 or more as "[hex]". */
void br_client_safe_text(const char *in, char *out, size_t size);
/* The first word of an answer's detail (an UNKNOWN reason, an ERR code),
 * at most 47 bytes of it, through br_client_safe_text; "no reason given"
 * when there is none. */
void br_client_first_word(const char *detail, char *out, size_t size);
/* A short reason for a user from a client library failure r (a negative
 * errno of br_client_connect or an exchange): "breachd is not running",
 * "no permission to use breachd's socket", "no answer in time",
 * "breachd's socket is served by another user" (-ESRCH, an untrusted
 * peer), or "cannot talk to breachd". */
const char *br_client_failure_reason(int r);
