/* SPDX-License-Identifier: MIT */
/* Fuzz target for breachctl audit's input (lib/audit/audit_input.c): the
 * first byte picks the format (auto, pwdump, secretsdump, pdbedit,
 * user-hash) and the kind (NT or SHA-1), the rest is cut at LF into lines
 * read in order by br_audit_read_line, secretsdump's sections included.
 *
 * Checked against audit_input.h: the result is an account, an account
 * without a hash, a skipped line (of a known kind) or -EINVAL with a static
 * reason; an account's name is a non-empty part of its line (DOMAIN\ kept,
 * a "_historyN" suffix cut off exactly when history is set), its format a
 * concrete one, and a skipped line names nothing; a line read in the
 * accounts section the same way br_audit_parse_line reads it alone. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "audit/audit_input.h"

#define FUZZ_NAME "fuzz_audit"
#include "fuzz_check.h"

static void check_line(br_audit_reader *r, const char *line, size_t len)
{
    br_audit_account a, b;
    const char *why = NULL, *why2 = NULL;
    int sec = r->section;
    int rc = br_audit_read_line(r, line, len, &a, &why);
    if (rc < 0) {
        CHECK(rc == -EINVAL && why && *why);
        return;
    }
    CHECK(rc == BR_AUDIT_LINE_ACCOUNT || rc == BR_AUDIT_LINE_NO_HASH || rc == BR_AUDIT_LINE_SKIP);
    if (rc == BR_AUDIT_LINE_SKIP) {
        CHECK((unsigned)a.skip < BR_AUDIT_SKIP_KINDS);
        return;
    }
    CHECK(a.name && a.name_len > 0 && a.name >= line && a.name + a.name_len <= line + len);
    CHECK(a.format != BR_AUDIT_AUTO);
    if (a.history) {
        const char tag[] = "_history";
        CHECK(a.name + a.name_len + sizeof(tag) - 1 <= line + len);
        CHECK(memcmp(a.name + a.name_len, tag, sizeof(tag) - 1) == 0);
    }
    if (sec == 0) { /* the accounts section: the line alone reads the same */
        int rc2 = br_audit_parse_line(r->fmt, r->ntlm, line, len, &b, &why2);
        CHECK(rc2 == rc && b.name == a.name && b.name_len == a.name_len && b.history == a.history &&
              memcmp(b.hash, a.hash, sizeof(a.hash)) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    br_audit_reader r;
    br_audit_reader_init(&r, (br_audit_format)(data[0] % 5), (data[0] & 0x80) == 0);
    const char *s = (const char *)data + 1;
    size_t n = size - 1, start = 0;
    for (size_t i = 0; i <= n; i++)
        if (i == n || s[i] == '\n') {
            if (i > start || i < n)
                check_line(&r, s + start, i - start);
            start = i + 1;
        }
    return 0;
}

#ifdef BR_FUZZ_STANDALONE
#include "fuzz_replay.h"
#endif
