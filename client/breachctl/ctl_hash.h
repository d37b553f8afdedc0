/* SPDX-License-Identifier: MIT */
/* breachctl password --print-hash: a password's SHA-1 (or, with --ntlm, its
 * NT hash) printed, nothing asked of the daemon; for trying breachctl sha1,
 * nt and audit with hand-typed data. */
#pragma once

#include <stdbool.h>

/* Typed at the terminal (no echo), else one password a line on standard
 * input: one uppercase hex hash a line on standard output. Every buffer
 * that held a password is wiped. An exit status: 0, or 2 (EXIT_ERROR)
 * after a message on standard error. */
int ctl_print_password_hashes(bool ntlm);
