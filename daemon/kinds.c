/* SPDX-License-Identifier: MIT */
/* The table of filter kinds (kinds.h): one row per kind. */
#include <stdint.h>

#include "conf.h"
#include "kinds.h"

#define CFG(field) offsetof(breachd_config, field)

/* The keys every filter section has: filter, pubkey, max_filter_age,
 * upstream. */
#define SECTION_KEYS(sec)                                                                          \
    .section = #sec, .filter_off = CFG(sec.filter), .filter_key = "filter",                        \
    .pubkey_off = CFG(sec.pubkey), .max_age_off = CFG(sec.max_filter_age_s),                       \
    .upstream_off = CFG(sec.upstream)

/* What to do about a missing filter file (docs/corpus.md). */
#define BUILD "`breachctl filter build` (docs/corpus.md), or leave "

/* The canary's keys (canary.h): the SHA-1 of "password" and its NT hash, in
 * every breach corpus; and Google's public Safe Browsing test page, which
 * blocklists do not hold (a filter's "no" is a pass; a feed that lists it
 * makes the canary go through the URL range API too). */
#define CANARY_SHA1_HEX "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"
#define CANARY_NT_HEX "8846F7EAEE8FB117AD06BDD830B7586C"
#define CANARY_URL_EXPR "testsafebrowsing.appspot.com/s/malware.html"

/* clang-format off */
const bd_kind_row bd_kinds[BD_KINDS_] = {
    [BD_KIND_PW] = {
        SECTION_KEYS(passwords), .name = "password", .checks = "password",
        .prefix = "", .counts_prefix = "pw_",
        .min_count_ok_off = CFG(passwords.min_count_ok), .range_endpoint = true,
        .range = BR_RANGE_PASSWORD_SHA1, .verb = BR_VERB_PW, .filter_kind = BR_KIND_PASSWORD_SHA1,
        .build_hint = BUILD "[passwords] filter empty to send every check to the range API",
        .counts_filter = true, .upstream_figures = true, .damage_figure = true,
        .if_empty = "every check goes to the range API", .canary_hex = CANARY_SHA1_HEX,
        .answers = {{"clean", BD_ANS_PASS}, {"pwned", BD_ANS_HIT}, {"unknown", BD_ANS_UNKNOWN}},
    },
    [BD_KIND_NT] = {
        SECTION_KEYS(ntlm), .name = "NTLM", .checks = "NT",
        .prefix = "nt_", .counts_prefix = "nt_", .stats_what = "NT hashes ([ntlm]): ",
        .min_count_ok_off = CFG(ntlm.min_count_ok), .range_endpoint = true,
        .off_without_filter = true,
        .range = BR_RANGE_PASSWORD_NTLM, .verb = BR_VERB_NT, .filter_kind = BR_KIND_PASSWORD_NTLM,
        .build_hint = BUILD "[ntlm] filter empty to send every check to the range API",
        .counts_filter = true, .upstream_figures = true, .damage_figure = true,
        .if_empty = "every NT check goes to the range API", .canary_hex = CANARY_NT_HEX,
        .answers = {{"clean", BD_ANS_PASS}, {"pwned", BD_ANS_HIT}, {"unknown", BD_ANS_UNKNOWN}},
    },
    [BD_KIND_URL] = {
        SECTION_KEYS(urls), .name = "URL", .checks = "URL",
        .prefix = "url_", .counts_prefix = "url_", .stats_what = "URLs ([urls]): ",
        .upstream_default_none = true, .off_without_filter = true,
        .range = BR_RANGE_URL_SHA256, .verb = BR_VERB_URL, .filter_kind = BR_KIND_URL_SHA256,
        .offline_only = true, .when_stale_off = CFG(urls.when_stale), .filter_figures_last = true,
        .build_hint = BUILD "[urls] filter empty (URL checks then answer UNKNOWN)",
        .counts_filter = true, .damage_figure = true,
        .if_empty = "it blocks no URL", .canary_expr = CANARY_URL_EXPR,
        .answers = {{"safe", BD_ANS_PASS}, {"blocked", BD_ANS_HIT}, {"allowed", BD_ANS_ALLOWED},
                    {"unknown", BD_ANS_UNKNOWN}},
    },
    /* offline only, it never ages, it shares [passwords]' keys */
    [BD_KIND_SIMILAR] = {
        .section = "passwords", .filter_off = CFG(passwords.similar_filter),
        .filter_key = "similar_filter", .pubkey_off = CFG(passwords.pubkey),
        .name = "similar-password", .checks = "SIMILAR",
        .prefix = "similar_", .counts_prefix = "similar_",
        .stats_what = "similar passwords ([passwords] similar_filter): ",
        .range = BR_RANGE_PASSWORD_SHA1, .verb = BR_VERB_SIMILAR,
        .filter_kind = BR_KIND_PASSWORD_SHA1, .offline_only = true,
        .build_hint = "`breachctl filter build --offline --min-count N` (docs/similar.md), or "
                      "leave [passwords] similar_filter empty",
        .if_empty = "SIMILAR finds nothing",
        .answers = {{"hits", BD_ANS_HIT}, {"clean", BD_ANS_PASS}, {"unknown", BD_ANS_UNKNOWN}},
    },
};
/* clang-format on */

bd_kind bd_kind_of_verb(br_verb verb)
{
    int k = 0;
    while (k < BD_KINDS_ && bd_kinds[k].verb != verb)
        k++;
    return (bd_kind)k;
}
