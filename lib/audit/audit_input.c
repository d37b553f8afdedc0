/* SPDX-License-Identifier: MIT */
/* Account lines of `breachctl audit`; the formats are in audit_input.h. */
#include <errno.h>
#include <string.h>

#include "audit_input.h"
#include "core/util.h"

#define MAX_FIELDS 8 /* fields looked at; a line may have more */
#define NO_PASSWORD "NO PASSWORD"

typedef struct field {
    const char *p;
    size_t n;
} field;

typedef struct fields {
    field f[MAX_FIELDS];
    size_t n; /* all of them, also those past MAX_FIELDS */
} fields;

static const char *const format_names[] = {
    [BR_AUDIT_AUTO] = "auto",
    [BR_AUDIT_PWDUMP] = "pwdump",
    [BR_AUDIT_SECRETSDUMP] = "secretsdump",
    [BR_AUDIT_PDBEDIT] = "pdbedit",
    [BR_AUDIT_USER_HASH] = "user-hash",
};

static const char *const skip_names[] = {
    [BR_AUDIT_SKIP_OTHER] = "other",         [BR_AUDIT_SKIP_KERBEROS] = "kerberos_keys",
    [BR_AUDIT_SKIP_CLEARTEXT] = "cleartext", [BR_AUDIT_SKIP_DCC2] = "cached_dcc2",
    [BR_AUDIT_SKIP_LSA] = "lsa_secrets",
};

const char *br_audit_skip_name(br_audit_skip k)
{
    return (size_t)k < BR_AUDIT_SKIP_KINDS ? skip_names[k] : "?";
}

const char *br_audit_format_name(br_audit_format f)
{
    return (size_t)f < sizeof(format_names) / sizeof(format_names[0]) ? format_names[f] : "?";
}

int br_audit_format_from_name(const char *name, br_audit_format *f)
{
    for (size_t i = 0; i < sizeof(format_names) / sizeof(format_names[0]); i++)
        if (strcmp(name, format_names[i]) == 0) {
            *f = (br_audit_format)i;
            return 0;
        }
    return -EINVAL;
}

static void split(const char *s, size_t len, fields *out)
{
    out->n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != ':')
            continue;
        if (out->n < MAX_FIELDS)
            out->f[out->n] = (field){s + start, i - start};
        out->n++;
        start = i + 1;
    }
}

static bool is(const field *f, const char *word)
{
    return f->n == strlen(word) && memcmp(f->p, word, f->n) == 0;
}

static bool starts(const field *f, const char *prefix)
{
    size_t n = strlen(prefix);
    return f->n >= n && memcmp(f->p, prefix, n) == 0;
}

/* "NO PASSWORD" and '*' up to 32 characters (pwdump, secretsdump), or 32
 * 'X's (pdbedit): no hash stored. */
static bool no_hash(const field *f, br_audit_format fmt)
{
    if (fmt == BR_AUDIT_PDBEDIT) {
        if (f->n != 32)
            return false;
        for (size_t i = 0; i < f->n; i++)
            if (f->p[i] != 'X')
                return false;
        return true;
    }
    if (!starts(f, NO_PASSWORD))
        return false;
    for (size_t i = strlen(NO_PASSWORD); i < f->n; i++)
        if (f->p[i] != '*')
            return false;
    return true;
}

static bool decimal(const field *f)
{
    if (f->n == 0 || f->n > 10)
        return false;
    for (size_t i = 0; i < f->n; i++)
        if (f->p[i] < '0' || f->p[i] > '9')
            return false;
    return true;
}

/* A RID, or a SID ending in one (S-1-5-21-...-1103): secretsdump forks that
 * print the account's SID in the RID's place. */
static bool rid_field(const field *f)
{
    if (decimal(f))
        return true;
    if (f->n < 6 || memcmp(f->p, "S-1-", 4) != 0)
        return false;
    size_t last = f->n;
    while (last > 4 && f->p[last - 1] != '-')
        last--;
    for (size_t i = 4; i < last; i++)
        if (!(f->p[i] == '-' || (f->p[i] >= '0' && f->p[i] <= '9')))
            return false;
    return decimal(&(field){f->p + last, f->n - last});
}

static size_t skip_blanks(const char *s, size_t len, size_t i)
{
    while (i < len && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i;
}

/* The end of the token at i (up to a blank). */
static size_t token_end(const char *s, size_t len, size_t i)
{
    while (i < len && s[i] != ' ' && s[i] != '\t')
        i++;
    return i;
}

/* NetExec's and CrackMapExec's log prefix, "SMB  10.0.0.5  445  DC01  "
 * (protocol, address, port, host name) before a dump line or a progress
 * line: its length, or 0 for a line without one. */
static size_t log_prefix(const char *s, size_t len)
{
    static const char *const protocols[] = {"SMB", "LDAP", "LDAPS", "WINRM", "MSSQL", "SSH",
                                            "RDP", "WMI",  "FTP",   "VNC",   "NFS"};
    size_t e = token_end(s, len, 0);
    bool known = false;
    for (size_t i = 0; i < sizeof(protocols) / sizeof(protocols[0]); i++)
        known |= e == strlen(protocols[i]) && memcmp(s, protocols[i], e) == 0;
    if (!known || e == len)
        return 0;
    size_t a = skip_blanks(s, len, e), ae = token_end(s, len, a);  /* address */
    size_t p = skip_blanks(s, len, ae), pe = token_end(s, len, p); /* port */
    size_t h = skip_blanks(s, len, pe), he = token_end(s, len, h); /* host name */
    if (ae == a || pe - p > 5 || !decimal(&(field){s + p, pe - p}) || he == h || he == len)
        return 0;
    return skip_blanks(s, len, he);
}

/* Nothing to audit in any format: blank, a comment, secretsdump's banner
 * and progress lines. */
static bool noise(const char *s, size_t len)
{
    if (len == 0 || s[0] == '#')
        return true;
    if (len >= 3 && s[0] == '[' && s[2] == ']' && strchr("*-+!", s[1]))
        return true;
    return len >= 10 && memcmp(s, "Impacket v", 10) == 0;
}

static bool hex_field(const field *f, size_t digits)
{
    if (f->n != digits)
        return false;
    for (size_t i = 0; i < f->n; i++)
        if (!((f->p[i] >= '0' && f->p[i] <= '9') ||
              ((f->p[i] | 0x20) >= 'a' && (f->p[i] | 0x20) <= 'f')))
            return false;
    return true;
}

/* A hex dump line of an LSA secret: blanks, then a 4-hex offset. */
static bool hex_dump(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && s[i] == ' ')
        i++;
    return i > 0 && i + 4 <= len && hex_field(&(field){s + i, 4}, 4) &&
           (i + 4 == len || s[i + 4] == ' ');
}

/* secretsdump's other lines about an account: its Kerberos keys, its
 * cleartext password, a cached credential, an LSA secret; 0 for none. */
static br_audit_skip secretsdump_extra(const char *s, size_t len, const fields *fs)
{
    if (hex_dump(s, len))
        return BR_AUDIT_SKIP_LSA;
    if (fs->n < 2)
        return 0;
    const field *t = &fs->f[1];
    if (is(t, "CLEARTEXT"))
        return BR_AUDIT_SKIP_CLEARTEXT;
    if (starts(t, "$DCC2$") || starts(t, "$DCC$"))
        return BR_AUDIT_SKIP_DCC2;
    if (is(&fs->f[0], "dpapi_machinekey") || is(&fs->f[0], "dpapi_userkey") ||
        is(&fs->f[0], "NL$KM") || is(t, "plain_password_hex"))
        return BR_AUDIT_SKIP_LSA;
    /* $MACHINE.ACC: NAME:LMHASH:NTHASH::: (no RID) */
    if (fs->n >= 3 && hex_field(t, 32) && hex_field(&fs->f[2], 32))
        return BR_AUDIT_SKIP_LSA;
    /* a key type by name, or by number when secretsdump has no name for it */
    if (fs->n == 3 && (starts(t, "aes") || starts(t, "des-") || starts(t, "dec-") ||
                       starts(t, "rc4") || starts(t, "0x") || decimal(t)))
        return BR_AUDIT_SKIP_KERBEROS;
    return 0;
}

static br_audit_format detect(const fields *fs, const char *name, size_t name_len)
{
    if (fs->n == 2)
        return BR_AUDIT_USER_HASH;
    if (fs->n >= 6 && fs->f[4].n >= 2 && fs->f[4].p[0] == '[' &&
        fs->f[4].p[fs->f[4].n - 1] == ']' && starts(&fs->f[5], "LCT-"))
        return BR_AUDIT_PDBEDIT;
    if (fs->n >= 4 && rid_field(&fs->f[1]))
        return memchr(name, '\\', name_len) ? BR_AUDIT_SECRETSDUMP : BR_AUDIT_PWDUMP;
    return BR_AUDIT_AUTO;
}

/* secretsdump -history: "NAME_historyN" is NAME's N-th old password. Returns
 * N + 1 and cuts the suffix off *len, or 0. */
static uint32_t history_suffix(const char *name, size_t *len)
{
    static const char tag[] = "_history";
    size_t d = *len;
    while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
        d--;
    size_t digits = *len - d;
    if (digits == 0 || digits > 4 || d <= sizeof(tag) - 1 ||
        memcmp(name + d - (sizeof(tag) - 1), tag, sizeof(tag) - 1) != 0)
        return 0;
    uint32_t n = 0;
    for (size_t i = d; i < *len; i++)
        n = n * 10 + (uint32_t)(name[i] - '0');
    *len = d - (sizeof(tag) - 1);
    return n + 1;
}

static int fail(const char **why, const char *text)
{
    *why = text;
    return -EINVAL;
}

static bool decode_hash(const field *f, size_t hash_len, uint8_t *out)
{
    return f->n == 2 * hash_len && br_hex_decode(f->p, hash_len, out);
}

static bool machine_name(const char *name, size_t len)
{
    return len > 0 && name[len - 1] == '$';
}

/* pwdump, secretsdump, pdbedit: fields 1..3 (and 4, 5 for pdbedit). */
static int parse_sam(br_audit_format fmt, const fields *fs, br_audit_account *acc, const char **why)
{
    if (fmt == BR_AUDIT_PDBEDIT) {
        if (fs->n < 6 || fs->f[4].n < 2 || fs->f[4].p[0] != '[' ||
            fs->f[4].p[fs->f[4].n - 1] != ']' || !starts(&fs->f[5], "LCT-"))
            return fail(why, "not a pdbedit -Lw line (NAME:UID:LMHASH:NTHASH:[FLAGS]:LCT-...:)");
        /* the account's flags decide, not its name: a user account may end
         * in '$' ("svc$" is [U]) */
        const field *fl = &fs->f[4];
        acc->machine =
            memchr(fl->p, 'W', fl->n) || memchr(fl->p, 'S', fl->n) || memchr(fl->p, 'I', fl->n);
    } else if (fs->n < 4) {
        return fail(why, "not a pwdump or secretsdump line (NAME:RID:LMHASH:NTHASH:::)");
    }
    if (fmt == BR_AUDIT_PDBEDIT ? !decimal(&fs->f[1]) : !rid_field(&fs->f[1]))
        return fail(why, fmt == BR_AUDIT_PDBEDIT
                             ? "the UID (field 2) is not a decimal number"
                             : "the RID (field 2) is not a decimal number or a SID: pwdump and "
                               "secretsdump lines are NAME:RID:LMHASH:NTHASH::: (for another "
                               "layout, write NAME:NTHASH lines and use --format user-hash)");
    const field *lm = &fs->f[2], *nt = &fs->f[3];
    uint8_t ignored[BR_NT_LEN];
    bool lm_ok = no_hash(lm, fmt) || decode_hash(lm, BR_NT_LEN, ignored);
    br_wipe(ignored, sizeof(ignored));
    if (!lm_ok)
        return fail(why, "the LM hash (field 3) is not 32 hex digits");
    if (no_hash(nt, fmt))
        return BR_AUDIT_LINE_NO_HASH;
    if (!decode_hash(nt, BR_NT_LEN, acc->hash))
        return fail(why, "the NT hash (field 4) is not 32 hex digits");
    return BR_AUDIT_LINE_ACCOUNT;
}

int br_audit_parse_line(br_audit_format fmt, bool ntlm, const char *line, size_t len,
                        br_audit_account *acc, const char **why)
{
    memset(acc, 0, sizeof(*acc));
    *why = NULL;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (memchr(line, '\033', len))
        return fail(why, "the line holds terminal colour codes (NetExec or CrackMapExec output "
                         "saved from a terminal): audit the tool's own dump file (NetExec: "
                         "~/.nxc/logs/*.ntds, *.sam) or remove the codes first");
    size_t pre = log_prefix(line, len);
    line += pre;
    len -= pre;
    if (noise(line, len))
        return BR_AUDIT_LINE_SKIP;
    if ((fmt == BR_AUDIT_AUTO || fmt == BR_AUDIT_SECRETSDUMP) && hex_dump(line, len)) {
        acc->skip = BR_AUDIT_SKIP_LSA;
        return BR_AUDIT_LINE_SKIP;
    }
    fields fs;
    split(line, len, &fs);
    if (fs.n < 2)
        return fail(why, "not an account line: no ':'");
    if (fmt == BR_AUDIT_AUTO || fmt == BR_AUDIT_SECRETSDUMP) {
        acc->skip = secretsdump_extra(line, len, &fs);
        if (acc->skip)
            return BR_AUDIT_LINE_SKIP;
    }
    acc->name = fs.f[0].p;
    acc->name_len = fs.f[0].n;
    if (acc->name_len == 0)
        return fail(why, "the account name (field 1) is empty");
    br_audit_format f = fmt == BR_AUDIT_AUTO ? detect(&fs, acc->name, acc->name_len) : fmt;
    if (f == BR_AUDIT_AUTO)
        return fail(why, "not an account line of pwdump, secretsdump, pdbedit -Lw or NAME:HASH");
    acc->format = f;
    const char *bs = f == BR_AUDIT_USER_HASH ? NULL : memchr(acc->name, '\\', acc->name_len);
    const char *user = bs ? bs + 1 : acc->name;
    if (f == BR_AUDIT_SECRETSDUMP || f == BR_AUDIT_PWDUMP)
        acc->history = history_suffix(acc->name, &acc->name_len);
    acc->machine = machine_name(user, acc->name_len - (size_t)(user - acc->name));
    int rc;
    if (f == BR_AUDIT_USER_HASH) {
        if (fs.n != 2)
            return fail(why, "not a NAME:HASH line (2 fields)");
        size_t hl = ntlm ? BR_NT_LEN : BR_SHA1_LEN;
        if (!decode_hash(&fs.f[1], hl, acc->hash))
            return fail(why, ntlm ? "the hash is not 32 hex digits (an NT hash)"
                                  : "the hash is not 40 hex digits (a SHA-1)");
        rc = BR_AUDIT_LINE_ACCOUNT;
    } else {
        if (!ntlm)
            return fail(why, "pwdump, secretsdump and pdbedit lines hold NT hashes: use --kind "
                             "password-ntlm");
        rc = parse_sam(f, &fs, acc, why);
    }
    if (rc == BR_AUDIT_LINE_ACCOUNT && ntlm) {
        uint8_t empty[BR_NT_LEN];
        br_hex_decode(BR_NT_EMPTY_HEX, BR_NT_LEN, empty);
        acc->empty = memcmp(acc->hash, empty, BR_NT_LEN) == 0;
    }
    return rc;
}

/* ---- secretsdump's sections --------------------------------------------------- */

enum { SEC_ACCOUNTS = 0, SEC_DCC2, SEC_LSA };

void br_audit_reader_init(br_audit_reader *r, br_audit_format fmt, bool ntlm)
{
    *r = (br_audit_reader){.fmt = fmt, .ntlm = ntlm, .section = SEC_ACCOUNTS};
}

static bool holds(const char *s, size_t len, const char *word)
{
    size_t n = strlen(word);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(s + i, word, n) == 0)
            return true;
    return false;
}

int br_audit_read_line(br_audit_reader *r, const char *line, size_t len, br_audit_account *acc,
                       const char **why)
{
    size_t n = len > 0 && line[len - 1] == '\r' ? len - 1 : len;
    size_t pre = log_prefix(line, n); /* NetExec's dump lines: as secretsdump's */
    line += pre;
    len -= pre;
    n -= pre;
    bool secretsdump = r->fmt == BR_AUDIT_AUTO || r->fmt == BR_AUDIT_SECRETSDUMP;
    if (secretsdump && n >= 4 && memcmp(line, "[*] ", 4) == 0 && holds(line, n, "Dumping ")) {
        r->section = holds(line, n, "LSA Secrets")           ? SEC_LSA
                     : holds(line, n, "cached domain logon") ? SEC_DCC2
                                                             : SEC_ACCOUNTS;
    } else if (secretsdump && r->section != SEC_ACCOUNTS && n > 0 && !noise(line, n)) {
        memset(acc, 0, sizeof(*acc));
        *why = NULL;
        acc->skip = r->section == SEC_LSA ? BR_AUDIT_SKIP_LSA : BR_AUDIT_SKIP_DCC2;
        return BR_AUDIT_LINE_SKIP;
    }
    return br_audit_parse_line(r->fmt, r->ntlm, line, len, acc, why);
}
