/* SPDX-License-Identifier: MIT */
/* NT hashes (the key of the password-ntlm kind, docs/filter-format.md): the
 * MD4 of the password in UTF-16LE, as Windows and Samba store it and as the
 * Have I Been Pwned NTLM corpus lists it.
 *
 * Text to UTF-16LE (br_utf16le_encode): the password's bytes are read as
 * UTF-8 and each code point is written as UTF-16LE, those above U+FFFF as a
 * surrogate pair. A byte that does not start a well-formed UTF-8 sequence
 * (RFC 3629: a stray continuation byte, C0, C1, F5..FF, an overlong form, an
 * encoded surrogate, a code point above U+10FFFF, a sequence cut short) is
 * taken alone as the Latin-1 character of that value (U+0080..U+00FF), and
 * decoding goes on with the next byte. So a password typed on a Latin-1
 * terminal gets the NT hash Windows gives its characters (except the bytes
 * 0x80..0x9F, which are C1 controls in Latin-1 and printable in
 * Windows-1252); valid UTF-8 always wins where both readings are possible.
 * No normalisation (NFC, case) is applied: Windows applies none either.
 *
 * MD4 comes from OpenSSL. OpenSSL 3 keeps it in its legacy provider, which
 * this module loads into a library context of its own, so that loading it
 * changes nothing for the rest of the process (a PAM host, libcurl's TLS).
 * When the provider cannot be loaded (legacy.so missing from OpenSSL's
 * MODULESDIR or $OPENSSL_MODULES), every NT function fails with -ENOSYS and
 * br_md4_check says so; MD4 is never implemented here. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define BR_NT_LEN 16
/* The NT hash of the empty password: what an account without one holds. */
#define BR_NT_EMPTY_HEX "31D6CFE0D16AE931B73C59D7E0C089C0"

/* 0 when MD4 can be computed; -ENOSYS with a reason naming OpenSSL's legacy
 * provider otherwise. Thread-safe; the lookup is made once per process. */
int br_md4_check(br_error *err);

/* The NT hash of a password of len bytes (text rules above). 0, -ENOSYS or
 * -EIO; the UTF-16LE copy is made in a small buffer that is wiped. */
int br_nt_hash(const void *password, size_t len, uint8_t out[BR_NT_LEN]);

/* A reusable NT hashing context for many passwords (a filter build). NULL
 * when out of memory or without MD4 (err says which). */
typedef struct br_nt_hasher br_nt_hasher;
br_nt_hasher *br_nt_hasher_new(br_error *err);
void br_nt_hasher_free(br_nt_hasher *h);
int br_nt_hasher_digest(br_nt_hasher *h, const void *password, size_t len, uint8_t out[BR_NT_LEN]);

/* Convert in[*pos .. len) to UTF-16LE into out (cap >= 4 bytes) by the rules
 * above, as far as whole characters fit; *pos is advanced past what was
 * converted. Returns the bytes written (even). Call until *pos == len. */
size_t br_utf16le_encode(const uint8_t *in, size_t len, size_t *pos, uint8_t *out, size_t cap);
