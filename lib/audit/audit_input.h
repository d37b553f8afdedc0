/* SPDX-License-Identifier: MIT */
/* The account lines of `breachctl audit` (docs/audit.md): one line of a
 * password-hash export into an account name and its hash, never keeping or
 * naming anything else of the line.
 *
 * Formats (fields separated by ':'):
 *  - pwdump:      NAME:RID:LMHASH:NTHASH:COMMENT:HOME:   (any fields after NTHASH);
 *  - secretsdump: the same with DOMAIN\NAME, and a " (status=...)",
 *                 " (pwdLastSet=...)" suffix (which lands in the fields after
 *                 NTHASH, so it needs no rule of its own); its progress lines
 *                 ("[*] ...", "[-] ...", "[+] ...", "[!] ..."), its banner
 *                 ("Impacket v..."), its Kerberos key lines
 *                 (NAME:aes256-cts-hmac-sha1-96:KEY, des-cbc-md5, rc4_hmac, a
 *                 type number, ...)
 *                 and its cleartext lines (NAME:CLEARTEXT:...) are skipped;
 *                 with -history, NAME_historyN lines are old passwords of
 *                 NAME (acc->history = N + 1, the name without the suffix);
 *  - pdbedit:     Samba's `pdbedit -Lw`: NAME:UID:LMHASH:NTHASH:[FLAGS]:LCT-HEX:
 *  - user-hash:   NAME:HASH, the hash of the audit's kind (32 hex digits
 *                 for password-ntlm, 40 for password-sha1).
 * RID and UID are decimal; a RID may also be a SID ending in it
 * (S-1-5-21-...-1103). Any " (key=value)" suffixes after the fields are
 * ignored (-pwd-last-set, -user-status, a SID or an account type). Lines of
 * NetExec and CrackMapExec (--ntds, --sam) start with a log prefix
 * "SMB  ADDRESS  PORT  HOST  " (or LDAP, WINRM, ...): it is skipped and the
 * rest read as above. A line with terminal colour codes is refused with the
 * fix (the tool's own dump file). A hash is hex in any case. In pwdump and
 * secretsdump an NT field of "NO PASSWORD" followed by '*'s, and in
 * pdbedit one of 32 'X's, means the account has no NT hash. Blank lines
 * and lines starting with '#' are skipped in every format.
 *
 * Auto-detection (BR_AUDIT_AUTO) is per line: 2 fields are user-hash; a
 * 5th field in brackets followed by an "LCT-" field is pdbedit; 4 or more
 * fields with a decimal second field are pwdump, or secretsdump when the
 * name holds a '\'. pwdump, secretsdump and pdbedit lines hold NT hashes: they
 * are refused with password-sha1.
 *
 * A machine account is, on a pdbedit line, one flagged W (workstation), S
 * (server) or I (interdomain trust), whatever its name (a user account
 * [U] may end in '$'); in the formats without flags, one whose name (after
 * DOMAIN\) ends with '$'.
 * The empty password's NT hash (BR_NT_EMPTY_HEX) is flagged.
 *
 * secretsdump's other sections (br_audit_reader, which follows its "[*]"
 * headers): after "Dumping cached domain logon information" every line is a
 * cached credential (DCC2), after "Dumping LSA Secrets" every line is an LSA
 * secret (the machine account's keys and hash, DPAPI keys, NL$KM, service
 * passwords in clear, their hex dumps), until the next "Dumping" header.
 * Wherever they stand, "$DCC2$" credentials, "dpapi_machinekey:",
 * "dpapi_userkey:", "NL$KM:", ":plain_password_hex:", hex dump lines and
 * "$MACHINE.ACC" hash lines (NAME:LMHASH:NTHASH:::, no RID) are recognised
 * too. Such lines are skipped and counted by kind (acc->skip), never parsed
 * further: they hold secrets.
 *
 * Errors never quote the line (it holds hashes, and a secretsdump cleartext
 * line holds a password): the reason is a static text. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hash.h"
#include "core/nthash.h"

typedef enum br_audit_format {
    BR_AUDIT_AUTO = 0,
    BR_AUDIT_PWDUMP,
    BR_AUDIT_SECRETSDUMP,
    BR_AUDIT_PDBEDIT,
    BR_AUDIT_USER_HASH,
} br_audit_format;

typedef enum br_audit_line {
    BR_AUDIT_LINE_ACCOUNT = 0, /* an account and its hash */
    BR_AUDIT_LINE_NO_HASH,     /* an account without an NT hash (name set, hash not) */
    BR_AUDIT_LINE_SKIP,        /* nothing to audit: blank, comment, a tool's message, keys */
} br_audit_line;

typedef enum br_audit_skip {
    BR_AUDIT_SKIP_OTHER = 0, /* blank, comment, a tool's banner or progress */
    BR_AUDIT_SKIP_KERBEROS,  /* a Kerberos key line */
    BR_AUDIT_SKIP_CLEARTEXT, /* a CLEARTEXT password line */
    BR_AUDIT_SKIP_DCC2,      /* a cached domain credential ($DCC2$) */
    BR_AUDIT_SKIP_LSA,       /* an LSA secret */
    BR_AUDIT_SKIP_KINDS
} br_audit_skip;

typedef struct br_audit_account {
    const char *name; /* points into the line; DOMAIN\ included */
    size_t name_len;
    uint8_t hash[BR_SHA1_LEN]; /* BR_NT_LEN bytes for password-ntlm */
    br_audit_format format;    /* what the line was read as */
    bool machine;
    bool empty;         /* the NT hash of the empty password */
    uint32_t history;   /* 0: the current password; N + 1: NAME_historyN */
    br_audit_skip skip; /* BR_AUDIT_LINE_SKIP: what was skipped */
} br_audit_account;

/* Lines read in order, for secretsdump's sections (above). */
typedef struct br_audit_reader {
    br_audit_format fmt;
    bool ntlm;
    int section; /* internal */
} br_audit_reader;

/* "pwdump", "secretsdump", "pdbedit", "user-hash", "auto". */
const char *br_audit_format_name(br_audit_format f);
/* 0 and *f set, or -EINVAL for an unknown name. */
int br_audit_format_from_name(const char *name, br_audit_format *f);

/* Parse one line (without its LF; a final CR is ignored) read as format fmt
 * (BR_AUDIT_AUTO: detected) for hashes of ntlm ? NT : SHA-1. Returns a
 * br_audit_line and fills acc (ACCOUNT: all of it; NO_HASH: the name, format
 * and machine flag), or -EINVAL with *why a static reason. */
int br_audit_parse_line(br_audit_format fmt, bool ntlm, const char *line, size_t len,
                        br_audit_account *acc, const char **why);

/* The same for the next line of an input: br_audit_parse_line within the
 * section that secretsdump's headers opened. */
void br_audit_reader_init(br_audit_reader *r, br_audit_format fmt, bool ntlm);
int br_audit_read_line(br_audit_reader *r, const char *line, size_t len, br_audit_account *acc,
                       const char **why);

/* "kerberos_keys", "cleartext", "cached_dcc2", "lsa_secrets" ("other"). */
const char *br_audit_skip_name(br_audit_skip k);
