/* SPDX-License-Identifier: MIT */
/* The account lines of breachctl audit (lib/audit/audit_input.c): every
 * format as its tools write it, per-line detection, forced formats, machine
 * accounts, accounts without a hash, the empty password, the lines that are
 * skipped, and error reasons that never quote the line. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "audit/audit_input.h"
#include "core/hash.h"
#include "core/nthash.h"

/* The case tables leave the fields a case does not need out. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define NT_PW "8846F7EAEE8FB117AD06BDD830B7586C"
#define LM_EMPTY "aad3b435b51404eeaad3b435b51404ee"
#define XS "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"

typedef struct want {
    const char *line;
    br_audit_format fmt; /* how it is parsed */
    int rc;              /* br_audit_line, or -EINVAL */
    const char *name;    /* ACCOUNT and NO_HASH */
    br_audit_format read_as;
    const char *hash; /* ACCOUNT: hex */
    bool machine, empty;
    const char *why;    /* -EINVAL */
    uint32_t history;   /* ACCOUNT and NO_HASH: NAME_historyN is N + 1 */
    br_audit_skip skip; /* SKIP */
} want;

static void check(const want *w, bool ntlm, size_t i)
{
    br_audit_account a;
    const char *why = NULL;
    int rc = br_audit_parse_line(w->fmt, ntlm, w->line, strlen(w->line), &a, &why);
    if (rc != w->rc)
        fail_msg("case %zu: rc %d (%s), want %d", i, rc, why ? why : "-", w->rc);
    if (rc < 0) {
        assert_string_equal(why, w->why);
        return;
    }
    if (rc == BR_AUDIT_LINE_SKIP) {
        if (a.skip != w->skip)
            fail_msg("case %zu: skipped as %s, want %s", i, br_audit_skip_name(a.skip),
                     br_audit_skip_name(w->skip));
        return;
    }
    if (a.history != w->history)
        fail_msg("case %zu: history %u, want %u", i, a.history, w->history);
    if (a.name_len != strlen(w->name) || memcmp(a.name, w->name, a.name_len) != 0)
        fail_msg("case %zu: name '%.*s', want '%s'", i, (int)a.name_len, a.name, w->name);
    assert_int_equal(a.format, w->read_as);
    if (a.machine != w->machine)
        fail_msg("case %zu: machine %d", i, a.machine);
    if (rc == BR_AUDIT_LINE_ACCOUNT) {
        char hex[2 * BR_SHA1_LEN + 1];
        br_hex_encode_upper(a.hash, strlen(w->hash) / 2, hex);
        assert_string_equal(hex, w->hash);
        if (a.empty != w->empty)
            fail_msg("case %zu: empty %d", i, a.empty);
    }
}

static void test_formats(void **state)
{
    (void)state;
    const br_audit_format A = BR_AUDIT_AUTO;
    const int ACC = BR_AUDIT_LINE_ACCOUNT, NOH = BR_AUDIT_LINE_NO_HASH;
    const want cases[] = {
        /* pwdump */
        {"alice:1001:" LM_EMPTY ":" NT_PW ":::", A, ACC, "alice", BR_AUDIT_PWDUMP, NT_PW},
        {"alice:1001:NO PASSWORD*********************:8846f7eaee8fb117ad06bdd830b7586c:comment:"
         "/home/alice:",
         A, ACC, "alice", BR_AUDIT_PWDUMP, NT_PW},
        {"bob:1002:NO PASSWORD*********************:NO PASSWORD*********************:::", A, NOH,
         "bob", BR_AUDIT_PWDUMP},
        {"Guest:501:" LM_EMPTY ":31d6cfe0d16ae931b73c59d7e0c089c0:::", A, ACC, "Guest",
         BR_AUDIT_PWDUMP, BR_NT_EMPTY_HEX, false, true},
        {"WS01$:1003:" LM_EMPTY ":" NT_PW ":::\r", A, ACC, "WS01$", BR_AUDIT_PWDUMP, NT_PW, true},
        /* secretsdump: DOMAIN\user, status and pwdLastSet suffixes, history */
        {"CONTOSO\\alice:1103:" LM_EMPTY ":" NT_PW "::: (status=Enabled)", A, ACC, "CONTOSO\\alice",
         BR_AUDIT_SECRETSDUMP, NT_PW},
        {"contoso.local\\bob:1104:" LM_EMPTY ":" NT_PW "::: (pwdLastSet=2024-01-02 10:11) "
         "(status=Disabled)",
         A, ACC, "contoso.local\\bob", BR_AUDIT_SECRETSDUMP, NT_PW},
        {"contoso.local\\bob_history0:1104:" LM_EMPTY ":" NT_PW ":::", A, ACC, "contoso.local\\bob",
         BR_AUDIT_SECRETSDUMP, NT_PW, .history = 1},
        {"bob_history12:1104:" LM_EMPTY ":" NT_PW ":::", A, ACC, "bob", BR_AUDIT_PWDUMP, NT_PW,
         .history = 13},
        {"CONTOSO\\DC01$_history3:1000:" LM_EMPTY ":" NT_PW ":::", A, ACC, "CONTOSO\\DC01$",
         BR_AUDIT_SECRETSDUMP, NT_PW, true, .history = 4},
        /* not history: no digits, or the name is all suffix */
        {"CONTOSO\\bob_history:1104:" LM_EMPTY ":" NT_PW ":::", A, ACC, "CONTOSO\\bob_history",
         BR_AUDIT_SECRETSDUMP, NT_PW},
        {"_history1:1104:" LM_EMPTY ":" NT_PW ":::", A, ACC, "_history1", BR_AUDIT_PWDUMP, NT_PW},
        {"CONTOSO\\DC01$:1000:" LM_EMPTY ":" NT_PW ":::", A, ACC, "CONTOSO\\DC01$",
         BR_AUDIT_SECRETSDUMP, NT_PW, true},
        {"Administrator:500:" LM_EMPTY ":" NT_PW ":::", BR_AUDIT_SECRETSDUMP, ACC, "Administrator",
         BR_AUDIT_SECRETSDUMP, NT_PW},
        /* pdbedit -Lw */
        {"alice:1000:" XS ":" NT_PW ":[U          ]:LCT-5F3A2B1C:", A, ACC, "alice",
         BR_AUDIT_PDBEDIT, NT_PW},
        {"ws01$:1001:" XS ":" NT_PW ":[W          ]:LCT-5F3A2B1C:", A, ACC, "ws01$",
         BR_AUDIT_PDBEDIT, NT_PW, true},
        {"trust:1002:" XS ":" NT_PW ":[I          ]:LCT-5F3A2B1C:", A, ACC, "trust",
         BR_AUDIT_PDBEDIT, NT_PW, true},
        {"nopw:1003:" XS ":" XS ":[DU         ]:LCT-00000000:", A, NOH, "nopw", BR_AUDIT_PDBEDIT},
        /* the flags decide: a user account [U] named svc$ is audited */
        {"svc$:1005:" XS ":" NT_PW ":[U          ]:LCT-5F3A2B1C:", A, ACC, "svc$", BR_AUDIT_PDBEDIT,
         NT_PW},
        {"-V:1006:" XS ":" NT_PW ":[U          ]:LCT-5F3A2B1C:", A, ACC, "-V", BR_AUDIT_PDBEDIT,
         NT_PW},
        {"carol:1004:" XS ":" NT_PW ":[DUX        ]:LCT-5F3A2B1C:", BR_AUDIT_PDBEDIT, ACC, "carol",
         BR_AUDIT_PDBEDIT, NT_PW},
        /* NAME:HASH */
        {"dave:" NT_PW, A, ACC, "dave", BR_AUDIT_USER_HASH, NT_PW},
        {"Dave Smith:8846f7eaee8fb117ad06bdd830b7586c\r", BR_AUDIT_USER_HASH, ACC, "Dave Smith",
         BR_AUDIT_USER_HASH, NT_PW},
        {"m$:" BR_NT_EMPTY_HEX, A, ACC, "m$", BR_AUDIT_USER_HASH, BR_NT_EMPTY_HEX, true, true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check(&cases[i], true, i);
}

static void test_skipped(void **state)
{
    (void)state;
    const int S = BR_AUDIT_LINE_SKIP;
    const want cases[] = {
        {"", BR_AUDIT_AUTO, S},
        {"\r", BR_AUDIT_AUTO, S},
        {"# a comment: with colons", BR_AUDIT_AUTO, S},
        {"Impacket v0.11.0 - Copyright 2023 Fortra", BR_AUDIT_AUTO, S},
        {"[*] Dumping Domain Credentials (domain\\uid:rid:lmhash:nthash)", BR_AUDIT_AUTO, S},
        {"[-] RemoteOperations failed: DCERPC Runtime Error", BR_AUDIT_SECRETSDUMP, S},
        {"[+] done", BR_AUDIT_PDBEDIT, S},
        {"CONTOSO\\alice:aes256-cts-hmac-sha1-96:00112233445566778899aabbccddeeff00112233445566778"
         "899aabbccddeeff",
         BR_AUDIT_AUTO, S, .skip = BR_AUDIT_SKIP_KERBEROS},
        {"CONTOSO\\alice:des-cbc-md5:0011223344556677", BR_AUDIT_SECRETSDUMP, S,
         .skip = BR_AUDIT_SKIP_KERBEROS},
        {"CONTOSO\\alice:23:00112233445566778899aabbccddeeff", BR_AUDIT_AUTO, S,
         .skip = BR_AUDIT_SKIP_KERBEROS},
        {"CONTOSO\\alice:CLEARTEXT:Secret:With:Colons", BR_AUDIT_AUTO, S,
         .skip = BR_AUDIT_SKIP_CLEARTEXT},
        /* secretsdump's cached credentials and LSA secrets, outside their sections */
        {"CONTOSO.LOCAL/alice:$DCC2$10240#alice#00112233445566778899aabbccddeeff: (2024-01-02 "
         "10:11:12)",
         BR_AUDIT_AUTO, S, .skip = BR_AUDIT_SKIP_DCC2},
        {"CONTOSO\\DC01$:" LM_EMPTY ":" NT_PW ":::", BR_AUDIT_AUTO, S, .skip = BR_AUDIT_SKIP_LSA},
        {"CONTOSO\\DC01$:plain_password_hex:0011aabb", BR_AUDIT_SECRETSDUMP, S,
         .skip = BR_AUDIT_SKIP_LSA},
        {"dpapi_machinekey:0x00112233445566778899aabbccddeeff00112233", BR_AUDIT_AUTO, S,
         .skip = BR_AUDIT_SKIP_LSA},
        {"NL$KM:00112233445566778899aabbccddeeff", BR_AUDIT_AUTO, S, .skip = BR_AUDIT_SKIP_LSA},
        {" 0000   8B 2D 5E 8C 39 36 2A 8E  C1 8D DE 9D 41 6A 9F 5B   .-^.96*.....Aj.[",
         BR_AUDIT_AUTO, S, .skip = BR_AUDIT_SKIP_LSA},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check(&cases[i], true, i);
}

static void test_sha1_kind(void **state)
{
    (void)state;
    const want cases[] = {
        {"erin:5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8", BR_AUDIT_AUTO, BR_AUDIT_LINE_ACCOUNT,
         "erin", BR_AUDIT_USER_HASH, "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"},
        {"erin:" NT_PW, BR_AUDIT_AUTO, -EINVAL, .why = "the hash is not 40 hex digits (a SHA-1)"},
        {"alice:1001:" LM_EMPTY ":" NT_PW ":::", BR_AUDIT_AUTO, -EINVAL,
         .why = "pwdump, secretsdump and pdbedit lines hold NT hashes: use --kind password-ntlm"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check(&cases[i], false, i);
}

/* Layouts of the real-data trial: NetExec / CrackMapExec log lines (protocol,
 * address, port, host, then secretsdump's line or a progress line), a SID in
 * the RID's place, -user-status of a local SAM in Impacket 0.12. */
static void test_tool_layouts(void **state)
{
    (void)state;
    const br_audit_format A = BR_AUDIT_AUTO, S = BR_AUDIT_SECRETSDUMP;
    const int ACC = BR_AUDIT_LINE_ACCOUNT, SKIP = BR_AUDIT_LINE_SKIP;
    const want cases[] = {
        {"SMB         10.0.0.5        445    DC01             CONTOSO\\alice:1103:" LM_EMPTY
         ":" NT_PW ":::",
         A, ACC, "CONTOSO\\alice", BR_AUDIT_SECRETSDUMP, NT_PW},
        {"SMB 192.168.56.10 445 WS01 Administrator:500:" LM_EMPTY ":" NT_PW ":::", A, ACC,
         "Administrator", BR_AUDIT_PWDUMP, NT_PW},
        {"SMB         10.0.0.5        445    DC01             [*] Dumping the NTDS, this could "
         "take a while so go grab a redbull...",
         A, SKIP, .skip = BR_AUDIT_SKIP_OTHER},
        {"SMB  10.0.0.5  445  DC01  [+] Dumped 3 NTDS hashes to /root/.nxc/logs/x.ntds", A, SKIP,
         .skip = BR_AUDIT_SKIP_OTHER},
        {"SMB  10.0.0.5  445  DC01  CONTOSO\\alice:aes256-cts-hmac-sha1-96:00112233", A, SKIP,
         .skip = BR_AUDIT_SKIP_KERBEROS},
        {"CONTOSO\\alice:S-1-5-21-3623811015-3361044348-30300820-1103:" LM_EMPTY ":" NT_PW ":::", A,
         ACC, "CONTOSO\\alice", BR_AUDIT_SECRETSDUMP, NT_PW},
        {"CONTOSO\\bob:1104:" LM_EMPTY ":" NT_PW "::: (pwdLastSet=2024-01-02 10:11) "
         "(status=Enabled) (sid=S-1-5-21-1-2-3-1104) (accountType=USER)",
         S, ACC, "CONTOSO\\bob", BR_AUDIT_SECRETSDUMP, NT_PW},
        {"Administrator:500:" LM_EMPTY ":" NT_PW "::: (Enabled=True) (Locked=False) (Admin=True)",
         A, ACC, "Administrator", BR_AUDIT_PWDUMP, NT_PW},
        /* a name that merely starts like a protocol is a name */
        {"SMBadmin:1001:" LM_EMPTY ":" NT_PW ":::", A, ACC, "SMBadmin", BR_AUDIT_PWDUMP, NT_PW},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check(&cases[i], true, i);
}

static void test_errors(void **state)
{
    (void)state;
    const br_audit_format A = BR_AUDIT_AUTO;
    const want cases[] = {
        {"password123", A, -EINVAL, .why = "not an account line: no ':'"},
        {":" NT_PW, A, -EINVAL, .why = "the account name (field 1) is empty"},
        {"x:y:z", A, -EINVAL,
         .why = "not an account line of pwdump, secretsdump, pdbedit -Lw or NAME:HASH"},
        {"frank:" NT_PW "0", A, -EINVAL, .why = "the hash is not 32 hex digits (an NT hash)"},
        {"frank:5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8", A, -EINVAL,
         .why = "the hash is not 32 hex digits (an NT hash)"},
        {"frank:1001:" LM_EMPTY ":8846F7EAEE8FB117AD06BDD830B7586G:::", A, -EINVAL,
         .why = "the NT hash (field 4) is not 32 hex digits"},
        {"frank:1001:" LM_EMPTY "0:" NT_PW ":::", A, -EINVAL,
         .why = "the LM hash (field 3) is not 32 hex digits"},
        {"frank:1001:" XS ":" NT_PW ":::", A, -EINVAL,
         .why = "the LM hash (field 3) is not 32 hex digits"},
        {"frank:" NT_PW, BR_AUDIT_PWDUMP, -EINVAL,
         .why = "not a pwdump or secretsdump line (NAME:RID:LMHASH:NTHASH:::)"},
        {"frank:x1:" LM_EMPTY ":" NT_PW ":::", BR_AUDIT_PWDUMP, -EINVAL,
         .why = "the RID (field 2) is not a decimal number or a SID: pwdump and secretsdump "
                "lines are NAME:RID:LMHASH:NTHASH::: (for another layout, write NAME:NTHASH "
                "lines and use --format user-hash)"},
        {"CONTOSO\\frank:S-1-5-21-x-1103:" LM_EMPTY ":" NT_PW ":::", BR_AUDIT_SECRETSDUMP, -EINVAL,
         .why = "the RID (field 2) is not a decimal number or a SID: pwdump and secretsdump "
                "lines are NAME:RID:LMHASH:NTHASH::: (for another layout, write NAME:NTHASH "
                "lines and use --format user-hash)"},
        /* NetExec saved from a terminal: colour codes, named with the fix */
        {"\033[1m\033[34mSMB\033[0m  10.0.0.5  445  DC01  alice:1001:" LM_EMPTY ":" NT_PW ":::", A,
         -EINVAL,
         .why = "the line holds terminal colour codes (NetExec or CrackMapExec output saved "
                "from a terminal): audit the tool's own dump file (NetExec: ~/.nxc/logs/*.ntds, "
                "*.sam) or remove the codes first"},
        {"frank:1001:" LM_EMPTY ":" NT_PW ":::", BR_AUDIT_PDBEDIT, -EINVAL,
         .why = "not a pdbedit -Lw line (NAME:UID:LMHASH:NTHASH:[FLAGS]:LCT-...:)"},
        {"frank:1001:" LM_EMPTY ":" NT_PW ":::", BR_AUDIT_USER_HASH, -EINVAL,
         .why = "not a NAME:HASH line (2 fields)"},
        {"frank:1001:" XS ":" XS ":[U   ]:LCT-0:", BR_AUDIT_PWDUMP, -EINVAL,
         .why = "the LM hash (field 3) is not 32 hex digits"},
        /* a cleartext line read as pwdump is an error, and says nothing of it */
        {"CONTOSO\\alice:CLEARTEXT:Secret", BR_AUDIT_PWDUMP, -EINVAL,
         .why = "not a pwdump or secretsdump line (NAME:RID:LMHASH:NTHASH:::)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check(&cases[i], true, i);
}

/* secretsdump run with LSA secrets and cached credentials: the sections'
 * lines are skipped and counted by kind, the NT hashes around them read. */
static void test_sections(void **state)
{
    (void)state;
    static const char *const out[] = {
        "Impacket v0.11.0 - Copyright 2023 Fortra",
        "[*] Target system bootKey: 0x0123456789abcdef0123456789abcdef",
        "[*] Dumping local SAM hashes (uid:rid:lmhash:nthash)",
        "Administrator:500:" LM_EMPTY ":" NT_PW ":::",
        "[*] Dumping cached domain logon information (domain/username:hash)",
        "CONTOSO.LOCAL/alice:$DCC2$10240#alice#00112233445566778899aabbccddeeff",
        "CONTOSO.LOCAL/bob:odd-cached-line",
        "[*] Dumping LSA Secrets",
        "[*] $MACHINE.ACC ",
        "CONTOSO\\WS01$:aes256-cts-hmac-sha1-96:00112233445566778899aabbccddeeff",
        "CONTOSO\\WS01$:" LM_EMPTY ":" NT_PW ":::",
        "[*] _SC_MSSQLSERVER ",
        "CONTOSO\\sqlsvc:Summer2024!",
        "[*] NL$KM ",
        " 0000   8B 2D 5E 8C 39 36 2A 8E  C1 8D DE 9D 41 6A 9F 5B   .-^.96*.....Aj.[",
        "[*] Dumping Domain Credentials (domain\\uid:rid:lmhash:nthash)",
        "CONTOSO\\carol:1105:" LM_EMPTY ":" NT_PW ":::",
        "CONTOSO\\carol_history0:1105:" LM_EMPTY ":" NT_PW ":::",
        "[*] Cleaning up...",
    };
    br_audit_reader r;
    br_audit_reader_init(&r, BR_AUDIT_AUTO, true);
    unsigned accounts = 0, history = 0, kinds[BR_AUDIT_SKIP_KINDS] = {0};
    for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
        br_audit_account a;
        const char *why = NULL;
        int rc = br_audit_read_line(&r, out[i], strlen(out[i]), &a, &why);
        if (rc < 0)
            fail_msg("line %zu refused: %s", i + 1, why);
        if (rc == BR_AUDIT_LINE_SKIP)
            kinds[a.skip]++;
        else if (a.history)
            history++;
        else
            accounts++;
    }
    assert_int_equal(accounts, 2);
    assert_int_equal(history, 1);
    assert_int_equal(kinds[BR_AUDIT_SKIP_DCC2], 2);
    assert_int_equal(kinds[BR_AUDIT_SKIP_LSA], 4);
    assert_int_equal(kinds[BR_AUDIT_SKIP_KERBEROS], 0);
}

static void test_format_names(void **state)
{
    (void)state;
    static const char *const names[] = {"auto", "pwdump", "secretsdump", "pdbedit", "user-hash"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        br_audit_format f;
        assert_int_equal(br_audit_format_from_name(names[i], &f), 0);
        assert_int_equal(f, (br_audit_format)i);
        assert_string_equal(br_audit_format_name(f), names[i]);
    }
    br_audit_format f;
    assert_int_equal(br_audit_format_from_name("samba", &f), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats),      cmocka_unit_test(test_skipped),
        cmocka_unit_test(test_tool_layouts), cmocka_unit_test(test_sha1_kind),
        cmocka_unit_test(test_errors),       cmocka_unit_test(test_sections),
        cmocka_unit_test(test_format_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
