/* SPDX-License-Identifier: MIT */
/* breachctl url-canon | url-expressions: offline URL canonicalization v1 and
 * the Safe Browsing lookup expressions, for feed authors and debugging.
 *
 * url-canon prints one canonical URL per input line. url-expressions prints
 * each input's expressions one per line, most specific first, leaving out
 * those that hold an e-mail address (url_secret.h: a lookup never uses them;
 * stderr says how many, never which); a URL with none left is refused; with several
 * inputs the groups are separated by one empty line, and a refused input has
 * an empty group, so that group N always belongs to input N. A refused input
 * is reported on stderr as "breachctl: COMMAND: URL N: reason" (never the
 * URL itself: it may be secret-class) and makes the exit status 2. Without
 * URL arguments the URLs are read from stdin, one per line; blank lines are
 * skipped and N is then the line number. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breachctl.h"
#include "ctl_opts.h"
#include "core/hash.h"
#include "url/url_canon.h"
#include "url/url_expr.h"
#include "url/url_secret.h"
#include "core/util.h"

typedef struct url_opts {
    const char *cmd;
    bool expressions;
    bool hash;
    size_t done; /* inputs handled so far, for the group separator */
} url_opts;

#define FROM_STDIN                                                                                 \
    " Without URL arguments, reads URLs from standard input, one per line (blank "                 \
    "lines skipped; URL N in a message is then line N)."

static const ctl_usage url_usage[] = {
    {"url-canon", "[URL...]",
     "Prints the canonical form (URL canonicalization v1) of each URL, one per line." FROM_STDIN},
    {"url-expressions", "[--hash] [URL...]",
     "Prints the lookup expressions of each URL, one per line, most specific first, "
     "without those holding an e-mail address (never looked up: stderr says how many); "
     "the groups of several URLs are separated by an empty line (a refused URL has an "
     "empty group). --hash: each expression after its SHA-256 (64 uppercase hex digits) "
     "and a space." FROM_STDIN},
};

void cmd_url_summary(FILE *out)
{
    ctl_usage_summary(out, url_usage, BR_ARRAY_SIZE(url_usage));
}

/* Handle input number idx; false when it was refused. */
static bool one_url(url_opts *o, size_t idx, const char *url, size_t len)
{
    if (o->expressions && o->done++ > 0)
        putchar('\n');
    br_error err = {{0}};
    if (!o->expressions) {
        char *canon = NULL;
        if (br_url_canonicalize(url, len, &canon, &err) < 0) {
            ctl_err("%s: URL %zu: %s", o->cmd, idx, err.text[0] ? err.text : "refused");
            return false;
        }
        puts(canon);
        free(canon);
        return true;
    }
    /* Only the expressions a lookup would use: those free of e-mail
     * addresses (url_secret.h). */
    br_url_exprs ex = {0};
    size_t dropped = 0;
    if (br_url_lookup_expressions(url, len, BR_URL_SB_HOST_COMPONENTS, &ex, &dropped, &err) < 0) {
        ctl_err("%s: URL %zu: %s", o->cmd, idx, err.text[0] ? err.text : "refused");
        return false;
    }
    if (dropped)
        ctl_err("%s: URL %zu: %zu expression%s holding an e-mail address not shown (never looked "
                "up)",
                o->cmd, idx, dropped, dropped == 1 ? "" : "s");
    bool ok = true;
    for (size_t i = 0; i < ex.n; i++) {
        if (o->hash) {
            uint8_t h[BR_SHA256_LEN];
            char hex[2 * BR_SHA256_LEN + 1];
            if (br_url_expr_hash(ex.expr[i], h) < 0) {
                ctl_err("%s: URL %zu: SHA-256 failed", o->cmd, idx);
                ok = false;
                break;
            }
            br_hex_encode_upper(h, sizeof(h), hex);
            printf("%s %s\n", hex, ex.expr[i]);
        } else {
            puts(ex.expr[i]);
        }
    }
    br_url_exprs_clear(&ex);
    return ok;
}

static void canon_usage(FILE *out)
{
    ctl_usage_command(out, url_usage, BR_ARRAY_SIZE(url_usage), "url-canon");
}

static void expressions_usage(FILE *out)
{
    ctl_usage_command(out, url_usage, BR_ARRAY_SIZE(url_usage), "url-expressions");
}

int cmd_url(const ctl_globals *g, int argc, char **argv)
{
    (void)g;
    url_opts o = {.cmd = argv[0], .expressions = strcmp(argv[0], "url-expressions") == 0};
    const ctl_opt opts[] = {
        CTL_HELP, CTL_IGNORE("socket"), /* accepted everywhere; offline */
        CTL_FLAG("hash", &o.hash),      /* url-expressions only: the last row */
    };
    int first;
    int r = ctl_getopt(o.cmd, opts, BR_ARRAY_SIZE(opts) - !o.expressions,
                       o.expressions ? expressions_usage : canon_usage, argc, argv, &first);
    if (r != 0)
        return r > 0 ? EXIT_CLEAN : EXIT_ERROR;
    bool failed = false;
    if (first < argc) {
        for (int i = first; i < argc; i++)
            if (!one_url(&o, (size_t)(i - first + 1), argv[i], strlen(argv[i])))
                failed = true;
    } else {
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        size_t idx = 0;
        while ((n = getline(&line, &cap, stdin)) >= 0) {
            idx++;
            size_t len = (size_t)n;
            while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
                len--;
            size_t k = 0;
            while (k < len && (line[k] == ' ' || line[k] == '\t'))
                k++;
            if (k == len)
                continue; /* blank line: skipped, but counted */
            if (!one_url(&o, idx, line, len))
                failed = true;
        }
        free(line);
        if (ferror(stdin)) {
            ctl_err("%s: reading stdin failed", o.cmd);
            failed = true;
        }
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        ctl_err("%s: writing stdout failed", o.cmd);
        return EXIT_ERROR;
    }
    return failed ? EXIT_ERROR : EXIT_CLEAN;
}
